"""clirplug: cross-language information retrieval on top of Pyserini/Anserini."""

from clirplug.errors import ClirplugError

__version__ = "0.1.0"
__all__ = ["ClirplugError", "__version__"]
