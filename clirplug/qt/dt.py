"""Direct translation (DT): translate the query, search its 1-best with BM25.

A ``desc`` query is split into sentences, each translated on its own, and the 1-best
translations are joined into one query (as the BOW-FD and boosting papers did); a
``title`` is translated whole. The joined text is analyzed by the index's own Lucene
analyzer, so the query terms are exactly the index's terms.
"""

from collections.abc import Iterable

from clirplug.bm25 import ANSERINI_B, ANSERINI_K1
from clirplug.lucene.rm3 import FB_DOCS, FB_TERMS, ORIGINAL_QUERY_WEIGHT, rm3_of
from clirplug.mt.one_best import dt_queries


def dt_run(topics, *, index, model, field: str = "title", kind: str = "hiero", src_lang: str = "de",
           stopwords: Iterable[str] = (), hits: int = 1000, k1: float = ANSERINI_K1, b: float = ANSERINI_B,
           prf: str = "none", fb_terms: int = FB_TERMS, fb_docs: int = FB_DOCS,
           original_query_weight: float = ORIGINAL_QUERY_WEIGHT, progress: bool = True):
    """DT: translate every topic's ``field`` with the model folder ``model``, then BM25 over ``index``.

    Parameters
    ----------
    topics : list of Topic
    index : path
        Lucene index of the target-language documents.
    model : path
        Model folder (``docs/models.md``) decoded with its ``kind`` grammar; ``src_lang`` is the
        language of the topics (its tokenizer).
    stopwords : iterable of str
        Target-language words removed from the 1-best before search.
    hits, k1, b
        Documents per query and the BM25 parameters (Anserini's by default).
    prf, fb_terms, fb_docs, original_query_weight
        ``rm3``: the translated query expanded by Anserini's RM3 with these parameters (Anserini's defaults).

    Returns
    -------
    DataFrame
        The run (qid, docid, rank, score).
    """
    from clirplug.lucene.search import bm25_search
    from clirplug.mt.translator import Translator

    rm3 = rm3_of(prf, fb_terms, fb_docs, original_query_weight)
    translator = Translator(model, kind=kind, src_lang=src_lang)
    queries = dt_queries(topics, field, translator, stopwords, progress=progress)
    return bm25_search(index, queries, hits=hits, k1=k1, b=b, progress=progress, rm3=rm3)


def choose_rm3(searcher, queries, qrels, grid, *, hits: int = 1000, measure: str = "MAP",
               max_passage_hits: int | None = None):
    """The :class:`~clirplug.lucene.rm3.Rm3` of ``grid`` (a list of them) whose expansion of ``queries``
    (``qid -> translated query``) by ``searcher`` (:class:`~clirplug.lucene.search.Bm25Searcher`) gives the best
    ``measure`` on ``qrels`` (the first in ``grid``'s order on ties), and each setting's value, in grid order.
    With ``max_passage_hits``, the searcher's documents are passages, each run measured as the page run of its
    best passages (:func:`clirplug.passages.max_passage`)."""
    from clirplug.eval.measures import evaluate
    from clirplug.passages import max_passage

    values = []
    for rm3 in grid:
        run = searcher.search_all(queries, hits, progress=False, rm3=rm3)
        if max_passage_hits is not None:
            run = max_passage(run, max_passage_hits)
        values.append(float(evaluate(qrels, {"run": run}, [measure])["value"].iloc[0]))
    best = max(range(len(grid)), key=lambda i: (values[i], -i))
    return grid[best], values
