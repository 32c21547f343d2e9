"""BM25 search over Lucene, ranked exactly as Anserini's ``SimpleSearcher`` ranks.

The query is built by Anserini's ``BagOfWordsQueryGenerator`` and run by Lucene's
``IndexSearcher`` with ``BM25Similarity``, sorted by score then docid as
``SimpleSearcher`` sorts. Anserini's score-ties adjustment (scores rounded to 1e-4,
ties lowered by 1e-6 each) is applied here exactly as Java computes it, so scores and
ranks equal ``SimpleSearcher``'s; the stored documents are never loaded, which makes a
query several times faster than through ``SimpleSearcher``.
"""

from collections.abc import Mapping

import numpy as np

from clirplug.bm25 import ANSERINI_B, ANSERINI_K1, check_bm25
from clirplug.io.runs import search_each
from clirplug.lucene._cache import load_docids
from clirplug.lucene._jvm import jclass
from clirplug.lucene.index import FIELD, ID_FIELD, analyzer_for, check_index, index_metadata, open_reader
from clirplug.lucene.rm3 import RERANK_CUTOFF, Rm3


def anserini_score_ties(scores) -> np.ndarray:
    """Anserini's ``ScoreTiesAdjusterReranker``, computed as Java computes it.

    Each float32 score is rounded to 1e-4 (in double, then back to float); a score
    within 1e-4 of the previous (already adjusted) one is lowered by 1e-6 per tie, so
    that the file's scores keep Lucene's order (score, then docid) in any tool.
    """
    f32 = np.float32
    scaled = np.asarray(scores, dtype=f32).astype(np.float64) * 1e4
    rounded = np.floor(scaled)
    rounded += (scaled - rounded) >= 0.5  # Math.round(double): half up
    adjusted = (rounded / 1e4).astype(f32)
    dup = 0
    for i in range(1, len(adjusted)):
        if adjusted[i - 1] - adjusted[i] > f32(1e-4):
            dup = 0
        else:
            dup += 1
            adjusted[i] = adjusted[i] - f32(1e-6) * f32(dup)
    return adjusted


def bm25_index_searcher(reader, k1: float, b: float):
    """Lucene's ``IndexSearcher`` over ``reader`` scoring with ``BM25Similarity(k1, b)``."""
    searcher = jclass("org.apache.lucene.search.IndexSearcher")(reader)
    searcher.setSimilarity(jclass("org.apache.lucene.search.similarities.BM25Similarity")(float(k1), float(b)))
    return searcher

class Bm25Searcher:
    """BM25 over one Lucene index with the analyzer the index was built with."""

    def __init__(self, index, k1: float = ANSERINI_K1, b: float = ANSERINI_B):
        check_bm25(k1, b)
        self.index = check_index(index)
        self.language = index_metadata(self.index)["language"]
        self.k1, self.b = k1, b
        self._reader = open_reader(self.index)
        self._searcher = bm25_index_searcher(self._reader, k1, b)
        self._analyzer = analyzer_for(self.language)
        self._generator = jclass("io.anserini.search.query.BagOfWordsQueryGenerator")()
        # SimpleSearcher.BREAK_SCORE_TIES_BY_DOCID, built here: loading SimpleSearcher costs over a second
        sort_field = jclass("org.apache.lucene.search.SortField")
        string_type = jclass("org.apache.lucene.search.SortField$Type").STRING_VAL
        self._sort = jclass("org.apache.lucene.search.Sort")(sort_field.FIELD_SCORE, sort_field(ID_FIELD, string_type))
        self.docids = load_docids(self.index, self._reader)
        self._relevance = None  # RM3's, made on first use (relevance_model)

    def search_query(self, query, hits: int = 1000) -> list[tuple[str, float]]:
        """Top ``hits`` (docid, score) pairs of a Lucene ``Query`` object, ranked as Anserini ranks them."""
        top = self._searcher.search(query, hits, self._sort, True).scoreDocs
        if len(top) == 0:
            return []
        docids = [str(self.docids[hit.doc]) for hit in top]
        scores = anserini_score_ties(np.fromiter((hit.score for hit in top), dtype=np.float32, count=len(top)))
        return list(zip(docids, scores.astype(np.float64).tolist()))

    def search(self, query: str, hits: int = 1000, rm3: Rm3 | None = None) -> list[tuple[str, float]]:
        """Top ``hits`` (docid, score) pairs for a bag-of-words ``query``; [] when it analyzes to nothing.
        With ``rm3``, the query expanded by RM3 (:meth:`search_rm3`)."""
        if not query.strip():
            return []
        lucene_query = self._generator.buildQuery(FIELD, self._analyzer, query)
        if rm3 is not None:
            return self.search_rm3(lucene_query, query, hits, rm3)
        return self.search_query(lucene_query, hits)

    def search_rm3(self, lucene_query, query: str, hits: int, rm3: Rm3) -> list[tuple[str, float]]:
        """Anserini's RM3 (``io.anserini.rerank.lib.Rm3Reranker``) as ``SimpleSearcher`` runs it after
        ``set_rm3``: the relevance model of the query's top :data:`RERANK_CUTOFF` documents
        (:class:`~clirplug.lucene.feedback.RelevanceModel`), the expanded query searched for ``hits``
        documents; scores adjusted for ties as Anserini's cascade adjusts them."""
        feedback = self.relevance_model()
        return self.search_query(feedback.expanded_query(self._mixed_model(lucene_query, query, rm3)), hits)

    def rm3_terms(self, query: str, rm3: Rm3) -> dict[str, float]:
        """The terms of ``query`` expanded by RM3 and their weights, in the expanded query's order (the feedback
        terms of Anserini's ``Rm3Reranker``); {} when it analyzes to nothing."""
        from clirplug.lucene.feedback import term_weights

        if not query.strip():
            return {}
        return term_weights(self._mixed_model(self._generator.buildQuery(FIELD, self._analyzer, query), query, rm3))

    def _mixed_model(self, lucene_query, query: str, rm3: Rm3):
        first = self._searcher.search(lucene_query, RERANK_CUTOFF, self._sort, True).scoreDocs
        docs = [hit.doc for hit in first]
        scores = np.fromiter((hit.score for hit in first), dtype=np.float32, count=len(docs))
        tokens = jclass("io.anserini.analysis.AnalyzerUtils").analyze(self._analyzer, query)
        return self.relevance_model().mixed_model(tokens, docs, scores, rm3)

    def relevance_model(self, progress: bool = False):
        """The index's :class:`~clirplug.lucene.feedback.RelevanceModel` (loaded once; its first use on an index
        reads every document vector into the index's cache, with a progress bar if ``progress``)."""
        if self._relevance is None:
            from clirplug.lucene.feedback import RelevanceModel
            from clirplug.lucene.reader import LuceneIndex

            self._relevance = RelevanceModel(LuceneIndex(self.index, progress=progress), self._reader)
        return self._relevance

    def search_all(self, queries: Mapping[str, str], hits: int = 1000, progress: bool = True,
                   latencies: dict[str, float] | None = None, rm3: Rm3 | None = None):
        """Search every ``qid -> text`` of ``queries`` (with ``rm3``, expanded by RM3); a run frame
        (:func:`clirplug.io.runs.run_frame`).

        With ``latencies``, each query's search seconds are added to its entry (0 when absent).
        """
        if rm3 is not None:
            self.relevance_model(progress)
        return search_each(queries, lambda qid, text: self.search(text, hits, rm3), progress=progress,
                           latencies=latencies)

    def close(self):
        if self._relevance is not None:
            self._relevance.index.close()
        self._reader.close()


def bm25_search(index, queries: Mapping[str, str], hits: int = 1000, k1: float = ANSERINI_K1, b: float = ANSERINI_B,
                progress: bool = True, rm3: Rm3 | None = None):
    """BM25 run for ``queries`` (``qid -> text``) over ``index`` (with ``rm3``, expanded by RM3): a frame qid,
    docid, rank, score."""
    searcher = Bm25Searcher(index, k1, b)
    try:
        return searcher.search_all(queries, hits, progress, rm3=rm3)
    finally:
        searcher.close()
