"""The monolingual ceiling: query with the English mate's own title (the relevance-2 document); for desc queries,
with its desc opening (:func:`clirplug.mt.queries.mate_desc_queries`)."""

from clirplug.corpus import read_corpus
from clirplug.errors import ClirplugError

MATE_RELEVANCE = 2


def mate_titles(corpus, docids: set[str]) -> dict[str, str]:
    """``docid -> title`` of the documents ``docids`` found in ``corpus`` (the contents' first 200
    characters for a document without a title): the English query of a mate."""
    return {doc.id: doc.title or doc.contents[:200] for doc in read_corpus(corpus) if doc.id in docids}


def mate_title_queries(qrels, corpus) -> dict[str, str]:
    """``qid -> title`` of each query's mate, the document judged relevance 2.

    Queries without a mate are left out; a query with several mates uses the first
    in qrels order. Raises when a mate is missing from the corpus.
    """
    mates = qrels[qrels["relevance"] == MATE_RELEVANCE].drop_duplicates("qid")
    wanted = dict(zip(mates["docid"], mates["qid"]))
    titles = mate_titles(corpus, set(wanted))
    missing = sorted(set(wanted) - set(titles))
    if missing:
        raise ClirplugError(f"{corpus}: {len(missing)} mate documents of the qrels are not in the corpus, e.g. {missing[0]!r}")
    return {qid: titles[docid] for docid, qid in sorted(wanted.items(), key=lambda item: item[1])}


def floor_and_ceiling_queries(topics, qrels, corpus) -> dict[str, dict[str, str]]:
    """The reference query sets: the untranslated ``title`` and ``desc`` (the floor) and the mates' titles (the ceiling)."""
    return {
        "floor.title": {t.id: t.title for t in topics},
        "floor.desc": {t.id: t.desc for t in topics},
        "ceiling.title": mate_title_queries(qrels, corpus),
    }
