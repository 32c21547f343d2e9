"""RM3 pseudo-relevance feedback as Anserini runs it: its parameters, Anserini's defaults and their one check.

Free of numpy and Java, for the method registry's settings (:class:`clirplug.methods.DtRun`) as for the search
(:meth:`clirplug.lucene.search.Bm25Searcher.search_rm3`, which expands the query as Anserini's ``Rm3Reranker`` does,
:mod:`clirplug.lucene.feedback`).
"""

from dataclasses import dataclass

from clirplug.errors import ClirplugError

PRFS = ("none", "rm3")  # pseudo-relevance feedback of a BM25 query: none, or Anserini's RM3
FB_TERMS, FB_DOCS, ORIGINAL_QUERY_WEIGHT = 10, 10, 0.5  # Anserini's defaults (SearchCollection.Args rm3_*)
RERANK_CUTOFF = 50  # Anserini's rerankcutoff: the first-stage documents RM3 is handed (SearchCollection.Args)


@dataclass(frozen=True)
class Rm3:
    """RM3 (``SimpleSearcher.set_rm3``): the ``fb_terms`` heaviest terms of the ``fb_docs`` best documents'
    relevance model, interpolated with the query by ``original_query_weight``."""

    fb_terms: int = FB_TERMS
    fb_docs: int = FB_DOCS
    original_query_weight: float = ORIGINAL_QUERY_WEIGHT

    def __post_init__(self):
        check_rm3(self.fb_terms, self.fb_docs, self.original_query_weight)


def check_rm3(fb_terms: int, fb_docs: int, original_query_weight: float, name_of=str) -> None:
    """Raise ``ClirplugError`` unless ``fb_terms`` and ``fb_docs`` are whole numbers of at least 1 and
    ``original_query_weight`` lies in [0, 1]; ``name_of(parameter)`` names it in the error."""
    for name, value in (("fb_terms", fb_terms), ("fb_docs", fb_docs)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ClirplugError(f"{name_of(name)}: must be a whole number of at least 1, got {value!r}")
    if isinstance(original_query_weight, bool) or not 0 <= original_query_weight <= 1:
        raise ClirplugError(f"{name_of('original_query_weight')}: must be in [0, 1], got {original_query_weight!r}")


def rm3_of(prf: str, fb_terms: int = FB_TERMS, fb_docs: int = FB_DOCS,
           original_query_weight: float = ORIGINAL_QUERY_WEIGHT) -> Rm3 | None:
    """The :class:`Rm3` of a method's ``prf`` setting and RM3 parameters; None for ``prf="none"``."""
    if prf not in PRFS:
        raise ClirplugError(f"prf: expected one of {', '.join(PRFS)}, got {prf!r}")
    return None if prf == "none" else Rm3(fb_terms, fb_docs, original_query_weight)


PARAMETERS = ("fb_terms", "fb_docs", "original_query_weight")  # the parameters a grid may list


def rm3_grid(grid, name_of=str) -> list[Rm3]:
    """The :class:`Rm3` settings of ``grid`` (``{fb_terms: [...], fb_docs: [...], original_query_weight: [...]}``,
    each optional: Anserini's default alone), every combination in the lists' order; a :class:`ClirplugError`
    naming ``name_of(key)`` otherwise."""
    if not isinstance(grid, dict) or not grid or set(grid) - set(PARAMETERS):
        raise ClirplugError(f"{name_of('grid')}: expected a mapping of {', '.join(PARAMETERS)} to lists of values")
    axes = []
    for key in PARAMETERS:
        values = grid.get(key, [getattr(Rm3(), key)])
        if not isinstance(values, list) or not values:
            raise ClirplugError(f"{name_of('grid')}.{key}: expected a non-empty list, got {values!r}")
        axes.append(list(dict.fromkeys(values)))
    import itertools

    settings = []
    for values in itertools.product(*axes):
        for key, value in zip(PARAMETERS, values):
            check_rm3(**{**dict(zip(PARAMETERS, (FB_TERMS, FB_DOCS, ORIGINAL_QUERY_WEIGHT))), key: value},
                      name_of=lambda parameter: f"{name_of('grid')}.{parameter}")
        settings.append(Rm3(*values))
    return settings
