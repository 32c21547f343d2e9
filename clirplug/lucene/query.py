"""Lucene queries built from Python, and Lucene's own answers to them.

A term is matched as Anserini indexes it (already analyzed, in the ``contents`` field); an
expression is one term or a phrase, a tuple of ``(term, position)`` pairs as
:meth:`clirplug.lucene.reader.LuceneIndex.analyze_phrase` gives them. The queries run through
:meth:`clirplug.lucene.search.Bm25Searcher.search_query`; :class:`LuceneScores` asks Lucene
itself how it counts and scores them, the reference clirplug's own BM25 and PSQ scoring is
checked against.
"""

from clirplug.bm25 import ANSERINI_B, ANSERINI_K1, check_bm25
from clirplug.lucene._jvm import jcast, jclass
from clirplug.lucene.index import FIELD, analyzer_for, check_index, open_reader
from clirplug.lucene.search import bm25_index_searcher


def term_query(term: str, field: str = FIELD):
    """Lucene ``TermQuery`` of one analyzed ``term``."""
    query = jclass("org.apache.lucene.search.TermQuery")(jclass("org.apache.lucene.index.Term")(field, term))
    return jcast("org.apache.lucene.search.Query", query)


def phrase_query(expression, field: str = FIELD):
    """Lucene ``PhraseQuery`` of ``(term, position)`` pairs; a ``TermQuery`` for a one-term expression."""
    if len(expression) == 1:
        return term_query(expression[0][0], field)
    builder = jclass("org.apache.lucene.search.PhraseQuery$Builder")()
    for term, position in expression:
        builder.add(jclass("org.apache.lucene.index.Term")(field, term), int(position))
    return jcast("org.apache.lucene.search.Query", builder.build())


def text_phrase_query(text: str, language: str = "en", field: str = FIELD):
    """The ``PhraseQuery`` Lucene's own ``QueryBuilder`` makes of ``text`` with the ``language`` analyzer."""
    return jclass("org.apache.lucene.util.QueryBuilder")(analyzer_for(language)).createPhraseQuery(field, text)


def weighted_query(expressions, weights, field: str = FIELD):
    """Lucene ``BooleanQuery`` of SHOULD clauses, each expression's query boosted by its weight (a weighted sum).

    Lucene refuses more clauses than ``IndexSearcher.getMaxClauseCount()`` (1024 by default): the
    limit is raised to the number of clauses when needed.
    """
    searcher = jclass("org.apache.lucene.search.IndexSearcher")
    if len(expressions) > searcher.getMaxClauseCount():
        searcher.setMaxClauseCount(len(expressions))
    boost = jclass("org.apache.lucene.search.BoostQuery")
    should = jclass("org.apache.lucene.search.BooleanClause$Occur").SHOULD
    builder = jclass("org.apache.lucene.search.BooleanQuery$Builder")()
    for expression, weight in zip(expressions, weights, strict=True):
        builder.add(boost(phrase_query(expression, field), float(weight)), should)
    return jcast("org.apache.lucene.search.Query", builder.build())


class LuceneScores:
    """Lucene's own counts, document frequencies and BM25 scores over one index (``BM25Similarity(k1, b)``).

    Documents are Lucene's internal numbers, as in :class:`clirplug.lucene.reader.LuceneIndex`.
    """

    def __init__(self, index, k1: float = ANSERINI_K1, b: float = ANSERINI_B):
        check_bm25(k1, b)
        self._reader = open_reader(check_index(index))
        self._searcher = bm25_index_searcher(self._reader, k1, b)

    def count(self, query) -> int:
        """How many documents match ``query``."""
        return int(self._searcher.count(query))

    def df(self, term: str, field: str = FIELD) -> int:
        """How many documents hold ``term``, from Lucene's reader."""
        return int(self._reader.docFreq(jclass("org.apache.lucene.index.Term")(field, term)))

    def score(self, query, doc: int) -> float:
        """Lucene's score (float32) of document ``doc`` for ``query``; 0.0 when it does not match."""
        explanation = self._searcher.explain(query, int(doc))
        return float(explanation.getValue().floatValue()) if explanation.isMatch() else 0.0

    def explain(self, query, doc: int) -> str:
        """Lucene's explanation of the score of document ``doc`` for ``query``, as text."""
        return str(self._searcher.explain(query, int(doc)).toString())

    def close(self):
        self._reader.close()
