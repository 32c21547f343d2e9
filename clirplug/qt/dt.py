"""Direct translation (DT): translate the query, search its 1-best with BM25.

A ``desc`` query is split into sentences, each translated on its own, and the 1-best
translations are joined into one query (as the BOW-FD and boosting papers did); a
``title`` is translated whole. The joined text is analyzed by the index's own Lucene
analyzer, so the query terms are exactly the index's terms.
"""

from collections.abc import Iterable

from clirplug.bm25 import ANSERINI_B, ANSERINI_K1


def translate_query(translator, topic, field: str, stopwords: Iterable[str] = ()) -> str:
    """The 1-best translation of a topic's ``field`` (a title whole, other fields sentence by sentence,
    :meth:`clirplug.mt.translator.Translator.topic_sentences`), stopwords removed."""
    stop = frozenset(stopwords)
    words = []
    for tokens in translator.topic_sentences(topic, field):
        best = translator.translate(tokens, nbest=1)
        if best:
            words.extend(w for w in best[0].words if w.lower() not in stop)
    return " ".join(words)


def dt_queries(topics, field: str, translator, stopwords: Iterable[str] = (), progress: bool = True,
               latencies: dict[str, float] | None = None) -> dict[str, str]:
    """``qid -> translated query`` for every topic (the translator restricted to the topics' sentences first).

    With ``latencies``, each topic's translation seconds are added to its entry (0 when absent).
    """
    import sys
    import time

    from tqdm import tqdm

    from clirplug.io.runs import add_latency

    translator.restrict_topics(topics, field)
    queries = {}
    for topic in tqdm(topics, desc="translating", unit=" topics", disable=not progress, file=sys.stderr):
        start = time.perf_counter()
        queries[topic.id] = translate_query(translator, topic, field, stopwords)
        add_latency(latencies, topic.id, start)
    return queries


def dt_run(topics, *, index, model, field: str = "title", kind: str = "hiero", src_lang: str = "de",
           stopwords: Iterable[str] = (), hits: int = 1000, k1: float = ANSERINI_K1, b: float = ANSERINI_B,
           progress: bool = True):
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

    Returns
    -------
    DataFrame
        The run (qid, docid, rank, score).
    """
    from clirplug.lucene.search import bm25_search
    from clirplug.mt.translator import Translator

    translator = Translator(model, kind=kind, src_lang=src_lang)
    queries = dt_queries(topics, field, translator, stopwords, progress=progress)
    return bm25_search(index, queries, hits=hits, k1=k1, b=b, progress=progress)
