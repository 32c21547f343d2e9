"""Direct translation (DT): translate the query, search its 1-best with BM25.

A ``desc`` query is split into sentences, each translated on its own, and the 1-best
translations are joined into one query (as the BOW-FD and boosting papers did); a
``title`` is translated whole. The joined text is analyzed by the index's own Lucene
analyzer, so the query terms are exactly the index's terms.
"""

from collections.abc import Iterable

from clirplug.errors import ClirplugError


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


def dt_queries(topics, field: str, translator, stopwords: Iterable[str] = (), progress: bool = True) -> dict[str, str]:
    """``qid -> translated query`` for every topic."""
    import sys

    from tqdm import tqdm

    return {topic.id: translate_query(translator, topic, field, stopwords)
            for topic in tqdm(topics, desc="translating", unit=" topics", disable=not progress, file=sys.stderr)}


def dt_run(args, topics):
    """``clirplug search --method dt``: translate every topic, then BM25 over the index."""
    from clirplug.lucene.search import bm25_search
    from clirplug.mt.translator import Translator
    from clirplug.stopwords import read_stopwords

    if not args.model:
        raise ClirplugError("--method dt needs --model DIR (a model trained by `clirplug train`)")
    translator = Translator(args.model, kind=args.kind)
    translator.restrict_topics(topics, args.field)
    stopwords = read_stopwords(args.stopwords) if args.stopwords else ()
    queries = dt_queries(topics, args.field, translator, stopwords, progress=not args.quiet)
    return bm25_search(args.index, queries, hits=args.hits, k1=args.k1, b=args.b, progress=not args.quiet)
