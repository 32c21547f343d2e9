"""The 1-best translation of topics as query text: DT's queries (:mod:`clirplug.qt.dt`), and the translated queries
that dense retrieval embeds (:func:`clirplug.dense.dense_run` with ``query="translation"``).

A ``desc`` query is split into sentences, each translated on its own, and the 1-best translations are joined into
one query; a ``title`` is translated whole.
"""

from collections.abc import Iterable

QUERIES = ("source", "translation")  # the query a method may search with: the topic itself, or its 1-best


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
