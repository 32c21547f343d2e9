"""clirplug: cross-language information retrieval on top of Pyserini/Anserini.

The Python API (:mod:`clirplug.api`): a searcher per method (Pyserini's ``search``, ``batch_search``, ``doc``, and
``batch_search_frame``;
PyTerrier transformers of them in :mod:`clirplug.pyterrier`), built by class or by method name
(``clirplug.searcher("dense", index=..., corpus=...)``), and the translation model as an object.
Its names are imported on first use, so that ``clirplug --help`` loads neither numpy nor Java.
"""

import importlib
import os
import sys

from clirplug.errors import ClirplugError

# The same numbers on every machine: where the processor has AVX-512, numpy computes float64 exp and log with its
# own AVX-512 code, whose results differ in the last bit from the C library's, which every other x86-64 processor
# gets (RankBoost's weight updates, the log semiring). clirplug turns numpy's AVX-512 paths off, before numpy is
# first imported (a process that imported numpy before clirplug keeps them); the variable is inherited by workers.
if "numpy" not in sys.modules:
    os.environ.setdefault("NPY_DISABLE_CPU_FEATURES", "X86_V4 AVX512_ICL AVX512_SPR")

__version__ = "0.1.0"
__all__ = [
    "Bm25Run",
    "BoostSearcher",
    "BowfdConfig",
    "BowfdSearcher",
    "ClirplugError",
    "DenseSearcher",
    "DtMiraSearcher",
    "DtSearcher",
    "Document",
    "FusionSearcher",
    "Hit",
    "LuceneSearcher",
    "PsqSearcher",
    "PsqSettings",
    "Searcher",
    "TranslationModel",
    "__version__",
    "load_system",
    "searcher",
]

# name -> the module defining it, imported by __getattr__ when the name is first used
_LAZY = {
    **dict.fromkeys(["BoostSearcher", "BowfdSearcher", "DenseSearcher", "Document", "DtMiraSearcher", "DtSearcher",
                     "FusionSearcher", "Hit", "LuceneSearcher", "PsqSearcher", "Searcher", "TranslationModel",
                     "load_system", "searcher"], "clirplug.api"),
    "Bm25Run": "clirplug.methods",
    "BowfdConfig": "clirplug.rerank.config",
    "PsqSettings": "clirplug.qt.psq_tables",
}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'clirplug' has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)
