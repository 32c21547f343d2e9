"""clirplug.compiled.kernels: the compiled kernel module, or None when numba is missing (its callers then run their
numpy code)."""

import sys

import pytest

from clirplug.compiled import kernels

pytestmark = pytest.mark.unit


def test_kernels_imports_the_compiled_module():
    assert kernels("clirplug._dense_kernels").__name__ == "clirplug._dense_kernels"


def test_kernels_is_none_without_numba(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)
    monkeypatch.delitem(sys.modules, "clirplug._dense_kernels", raising=False)
    assert kernels("clirplug._dense_kernels") is None


def test_a_missing_kernel_module_is_an_error():
    with pytest.raises(ModuleNotFoundError, match="clirplug._no_such_kernels"):
        kernels("clirplug._no_such_kernels")
