"""How dense vectors are searched, and the parameters of a Lucene HNSW graph (:mod:`clirplug.lucene.vectors`):
clirplug's defaults, Lucene's bounds and their one check.

Free of numpy and Java, for the method registry's settings (:class:`clirplug.methods.DenseRun`) as for the
library (:class:`clirplug.dense.DenseSearcher`). The defaults keep 99.7% of the exact top 1000 and 99.99% of the
top 100 of dense retrieval on manclir-de (``docs/scaling.md``).
"""

from clirplug.errors import ClirplugError

SEARCHES = ("exact", "hnsw")  # every document's cosine; the candidates of an HNSW graph, rescored
M = 16  # neighbours per node (Lucene99HnswVectorsFormat's maxConn, and its default)
EF_CONSTRUCTION = 100  # beam width building the graph (its beamWidth, and its default)
EF_SEARCH = 1000  # beam width searching it (KnnFloatVectorQuery's k)
BOUNDS = {"m": (2, 512),  # Lucene99HnswVectorsFormat.MAXIMUM_MAX_CONN
          "ef_construction": (1, 3200),  # Lucene99HnswVectorsFormat.MAXIMUM_BEAM_WIDTH
          "ef_search": (1, 2**31 - 1)}


def check_search(search: str, m: int, ef_construction: int, ef_search: int, name_of=str) -> None:
    """Raise ``ClirplugError`` unless ``search`` is one of :data:`SEARCHES` and each HNSW parameter a whole number
    within Lucene's :data:`BOUNDS`; ``name_of(parameter)`` names it in the error (``--m``, ``runs.dense.m``)."""
    if search not in SEARCHES:
        raise ClirplugError(f"{name_of('search')}: expected one of {', '.join(SEARCHES)}, got {search!r}")
    for name, value in (("m", m), ("ef_construction", ef_construction), ("ef_search", ef_search)):
        low, high = BOUNDS[name]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ClirplugError(f"{name_of(name)}: must be a whole number from {low} to {high}, got {value!r}")
