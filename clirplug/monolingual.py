"""The monolingual ceiling: query with the English mate's own title (the relevance-2 document), and for desc queries
with the mate's desc opening."""

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


def mate_desc_queries(topics, qrels, corpus, bitext) -> tuple[dict[str, str], int]:
    """``qid -> English desc query`` of each query with a mate, and how many are desc openings.

    The query is the mate's desc opening as aligned in ``bitext`` (the paths ``(src, tgt, ids)`` of the split's
    bitext with its page ids): the English side of the topic's desc opening line, the target query of a parallel
    desc query (:func:`clirplug.mt.queries.parallel_queries`); a topic whose page the bitext does not align (a
    bitext holding only part of the split's pages) keeps its mate's title (:func:`mate_title_queries`), so that
    every query with a mate has one.
    """
    from clirplug.mt.queries import parallel_queries

    queries = mate_title_queries(qrels, corpus)
    openings = parallel_queries([t for t in topics if t.id in queries], "desc", bitext=bitext)
    return {qid: openings[qid][1] if qid in openings else title for qid, title in queries.items()}, len(openings)


def floor_and_ceiling_queries(topics, qrels, corpus) -> dict[str, dict[str, str]]:
    """The reference query sets: the untranslated ``title`` and ``desc`` (the floor) and the mates' titles (the ceiling)."""
    return {
        "floor.title": {t.id: t.title for t in topics},
        "floor.desc": {t.id: t.desc for t in topics},
        "ceiling.title": mate_title_queries(qrels, corpus),
    }
