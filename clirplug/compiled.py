"""numba's ``njit`` for clirplug's compiled kernels (:mod:`clirplug._boost_kernels`, :mod:`clirplug._dense_kernels`)."""

import numba


def compiled(function):
    """``numba.njit``, its machine code cached on disk when a cache folder is writable (else compiled per process):
    beside the module, or in numba's user-wide cache, so that worker processes load it instead of compiling again."""
    try:
        return numba.njit(cache=True)(function)
    except RuntimeError:  # numba finds no writable cache folder
        return numba.njit(function)
