"""clirplug's compiled kernels (numba): how they are compiled and how callers find them, or learn that numba is
missing and run their numpy code instead."""

import importlib
from types import ModuleType


def compiled(function):
    """``numba.njit``, its machine code cached on disk when a cache folder is writable (else compiled per process):
    beside the module, or in numba's user-wide cache, so that worker processes load it instead of compiling again."""
    import numba

    try:
        return numba.njit(cache=True)(function)
    except RuntimeError:  # numba finds no writable cache folder
        return numba.njit(function)


def kernels(module: str) -> ModuleType | None:
    """The kernel module ``module`` (e.g. ``clirplug._dense_kernels``), or None without numba."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        if error.name != "numba":
            raise
        return None
