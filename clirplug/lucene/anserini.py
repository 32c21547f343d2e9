"""Anserini's own tools, called as Pyserini calls them: the reference clirplug's search, topic
reading and indexing are checked against (clirplug's own code paths avoid them for speed)."""

from collections.abc import Mapping

from clirplug.bm25 import ANSERINI_B, ANSERINI_K1
from clirplug.lucene._jvm import jclass


class SimpleSearcher:
    """Anserini's ``SimpleSearcher`` over ``index`` with BM25(k1, b), and with ``rm3`` its RM3 (``set_rm3``)."""

    def __init__(self, index, k1: float = ANSERINI_K1, b: float = ANSERINI_B, rm3=None):
        self._searcher = jclass("io.anserini.search.SimpleSearcher")(str(index))
        self._searcher.set_bm25(float(k1), float(b))
        if rm3 is not None:  # a clirplug.lucene.search.Rm3
            self._searcher.set_rm3(int(rm3.fb_terms), int(rm3.fb_docs), float(rm3.original_query_weight))

    def search(self, query: str, hits: int = 1000) -> list[tuple[str, float]]:
        """Top ``hits`` (docid, score) pairs for ``query``; [] for a blank query."""
        if not query.strip():
            return []
        return [(str(hit.docid), float(hit.score)) for hit in self._searcher.search(query, hits)]

    def close(self):
        self._searcher.close()


def rm3_feedback_terms(searcher, query: str, rm3) -> dict[str, float]:
    """The terms and weights of ``query`` expanded by Anserini's own ``Rm3Reranker`` (a ``clirplug.lucene.rm3.Rm3``),
    as its ``rerank`` leaves them in its context, over the index and BM25 of ``searcher`` (a
    :class:`clirplug.lucene.search.Bm25Searcher`), handed the query's top 50 as ``SimpleSearcher.set_rm3`` hands them."""
    from clirplug.lucene.index import FIELD
    from clirplug.lucene.rm3 import RERANK_CUTOFF

    lucene_query = searcher._generator.buildQuery(FIELD, searcher._analyzer, query)
    args = jclass("io.anserini.search.SearchCollection$Args")()
    args.hits = 10
    tokens = jclass("io.anserini.analysis.AnalyzerUtils").analyze(searcher._analyzer, query)
    first = searcher._searcher.search(lucene_query, RERANK_CUTOFF, searcher._sort, True)
    context = jclass("io.anserini.rerank.RerankerContext")(searcher._searcher, None, lucene_query, None, query, tokens,
                                                           None, args)
    reranker = jclass("io.anserini.rerank.lib.Rm3Reranker")(searcher._analyzer, None, FIELD, int(rm3.fb_terms),
                                                            int(rm3.fb_docs), float(rm3.original_query_weight),
                                                            False, True)
    reranker.rerank(jclass("io.anserini.search.ScoredDocs").fromTopDocs(first, searcher._searcher), context)
    terms = context.feedbackTerms
    return {name: terms.get(name) for name in terms.keySet().toArray()}


def simple_search(index, queries: Mapping[str, str], hits: int = 1000, k1: float = ANSERINI_K1,
                  b: float = ANSERINI_B) -> dict[str, list[tuple[str, float]]]:
    """``qid -> [(docid, score), ...]`` for every ``qid -> text`` of ``queries``, from :class:`SimpleSearcher`."""
    searcher = SimpleSearcher(index, k1, b)
    try:
        return {qid: searcher.search(text, hits) for qid, text in queries.items()}
    finally:
        searcher.close()


def read_tsv_topics(path) -> dict[str, str]:
    """``qid -> title`` as Pyserini reads ``--topics FILE.tsv``: Anserini's ``TsvStringTopicReader``."""
    reader = jclass("io.anserini.search.topicreader.TopicReader")
    topics = reader.getTopicsWithStringIdsFromFileWithTopicReaderClass(
        "io.anserini.search.topicreader.TsvStringTopicReader", str(path))
    return {str(qid): str(topics.get(qid).get("title")) for qid in topics.keySet().toArray()}


def index_collection(corpus, index, language: str, threads: int = 1) -> None:
    """Index ``corpus`` (a folder of JSON lines) as ``python -m pyserini.index.lucene`` does: Anserini's
    ``IndexCollection`` with Pyserini's arguments (positions, document vectors, raw text), so no clirplug.json."""
    jclass("io.anserini.index.IndexCollection").main([
        "-collection", "JsonCollection", "-generator", "DefaultLuceneDocumentGenerator", "-input", str(corpus),
        "-index", str(index), "-threads", str(threads), "-storePositions", "-storeDocvectors", "-storeRaw",
        "-language", language])
