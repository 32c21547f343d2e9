"""clirplug's e5 engine (clirplug/e5engine/e5.c), compiled at install and loaded by clirplug.dense with ctypes.

The build is optional: without a C compiler (or off x86-64 with AVX2 and FMA) clirplug installs without it, and the
dense peer cannot run (clirplug.dense says so in one line). The engine spells out every float operation in a fixed
order, so that its vectors are the same on every processor; the compiler must neither fuse nor reorder them: no
-ffast-math, -ffp-contract=off.
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension(
    "clirplug._e5engine", sources=["clirplug/e5engine/e5.c"],
    depends=["clirplug/e5engine/e5.h", "clirplug/e5engine/erf_table.h"],
    extra_compile_args=["-O3", "-mavx2", "-mfma", "-ffp-contract=off", "-fno-math-errno", "-fopenmp"],
    extra_link_args=["-fopenmp"], libraries=["m"], optional=True)])
