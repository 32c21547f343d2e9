"""clirplug: cross-language information retrieval on top of Pyserini/Anserini.

The Python API (:mod:`clirplug.api`): a searcher per method (``search``, ``batch_search``;
PyTerrier transformers of them in :mod:`clirplug.pyterrier`), built by class or by method name
(``clirplug.searcher("dense", index=..., corpus=...)``), and the translation model as an object.
Its names are imported on first use, so that ``clirplug --help`` loads neither numpy nor Java.
"""

import importlib

from clirplug.errors import ClirplugError

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
    "FusionSearcher",
    "Hit",
    "LuceneSearcher",
    "PsqSearcher",
    "PsqSettings",
    "Searcher",
    "TranslationModel",
    "__version__",
    "searcher",
]

# name -> the module defining it, imported by __getattr__ when the name is first used
_LAZY = {
    **dict.fromkeys(["BoostSearcher", "BowfdSearcher", "DenseSearcher", "DtMiraSearcher", "DtSearcher",
                     "FusionSearcher", "Hit", "LuceneSearcher", "PsqSearcher", "Searcher", "TranslationModel",
                     "searcher"], "clirplug.api"),
    "Bm25Run": "clirplug.methods",
    "BowfdConfig": "clirplug.rerank.config",
    "PsqSettings": "clirplug.qt.psq_tables",
}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'clirplug' has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)
