"""Parallel queries for query-genre tuning of decoder weights (Nikoulina et al. 2012, §3.1).

PRO tunes the decoder on line-aligned source and reference text; tuned on bitext paragraphs,
the weights fit that genre. Query-genre tuning feeds it parallel *queries* instead, built
from topics whose id names their English mate (the document with the same id):

``title``
    the topic's title and its mate's title (:func:`clirplug.monolingual.mate_titles`);
    topics whose mate is not in the corpus are skipped.
``desc``
    the mate's opening as aligned in the bitext: of the lines whose page id
    (``bitext.<split>.ids``) is the topic id, in file order, the first whose German side
    occurs in the desc or begins with the whole desc (:func:`opening_line`), German side and
    English side as they are. Topics with no such line are skipped.

The target sides of the desc pairs are also the monolingual ceiling's desc queries (:func:`mate_desc_queries`).
All text is whitespace-normalised (one line each); ``docs/models.md`` describes the use.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from clirplug.atomic import atomic_open
from clirplug.crossfit import read_ids
from clirplug.errors import ClirplugError
from clirplug.io.text import read_lines
from clirplug.monolingual import mate_title_queries, mate_titles

FIELDS = ("title", "desc")


def _one_line(text: str) -> str:
    """``text`` on one line: runs of white space (newlines included) become one space."""
    return " ".join(text.split())


def page_lines(src, tgt, ids) -> dict[str, list[tuple[str, str]]]:
    """Page id -> its bitext line pairs ``(source, target)`` in file order, whitespace-normalised.

    ``src``, ``tgt`` and ``ids`` are the line-aligned files ``bitext.<split>.<lang>``,
    ``bitext.<split>.en`` and ``bitext.<split>.ids``; lines of page ``-`` are left out.
    """
    sources, targets = read_lines(Path(src)), read_lines(Path(tgt))
    if len(sources) != len(targets):
        raise ClirplugError(f"{src} has {len(sources)} lines but {tgt} has {len(targets)}")
    pages: dict[str, list[tuple[str, str]]] = {}
    for page, f, e in zip(read_ids(Path(ids), len(sources)), sources, targets):
        if page != "-":
            pages.setdefault(page, []).append((_one_line(f), _one_line(e)))
    return pages


def opening_line(desc: str, lines: Iterable[tuple[str, str]]) -> tuple[str, str] | None:
    """The first pair of ``lines`` whose source side occurs in ``desc`` or begins with it.

    A desc is whole sentences from the first paragraph(s) of a page; a bitext line is one
    paragraph. The line either lies inside the desc (the desc spans several paragraphs) or
    begins with it (the desc ends inside that paragraph). None when no line does.
    """
    desc = _one_line(desc)
    if not desc:
        return None
    for f, e in lines:
        if f and e and (f in desc or f.startswith(desc)):
            return f, e
    return None


def parallel_queries(topics, field: str, corpus=None, bitext=None,
                     topic_ids: Iterable[str] | None = None) -> dict[str, tuple[str, str]]:
    """Topic id -> ``(source query, target query)`` of ``field``, in topic order; skipped topics absent.

    Parameters
    ----------
    topics
        :class:`clirplug.io.topics.Topic` list (e.g. ``read_topics("topics.train.jsonl")``).
    field
        ``title`` (needs ``corpus``, a path for :func:`clirplug.corpus.read_corpus`) or
        ``desc`` (needs ``bitext``, the paths ``(src, tgt, ids)`` for :func:`page_lines`).
    topic_ids
        Keep only these topics (e.g. one cross-fitting fold); an id not among ``topics`` is an error.
    """
    if field not in FIELDS:
        raise ClirplugError(f"parallel queries of field {field!r}: choose one of {', '.join(FIELDS)}")
    if field == "title" and corpus is None:
        raise ClirplugError("parallel title queries need the corpus (the English mates' titles)")
    if field == "desc" and bitext is None:
        raise ClirplugError("parallel desc queries need the bitext with its page ids")
    if topic_ids is not None:
        wanted = set(topic_ids)
        unknown = sorted(wanted - {t.id for t in topics})
        if unknown:
            raise ClirplugError(f"{len(unknown)} of the requested topic ids are not among the topics, e.g. {unknown[0]!r}")
        topics = [t for t in topics if t.id in wanted]
    pairs = {}
    if field == "title":
        titles = mate_titles(corpus, {t.id for t in topics})
        for t in topics:
            f, e = _one_line(t.title), _one_line(titles.get(t.id, ""))
            if f and e:
                pairs[t.id] = (f, e)
    else:
        pages = page_lines(*bitext)
        for t in topics:
            line = opening_line(t.desc, pages.get(t.id, ()))
            if line is not None:
                pairs[t.id] = line
    return pairs


def write_parallel(pairs: Iterable[tuple[str, str]], src_path, tgt_path) -> None:
    """Write ``(source, target)`` pairs as two line-aligned files, atomically."""
    pairs = [(_one_line(f), _one_line(e)) for f, e in pairs]
    with atomic_open(src_path) as src, atomic_open(tgt_path) as tgt:
        src.writelines(f + "\n" for f, _ in pairs)
        tgt.writelines(e + "\n" for _, e in pairs)


def mate_desc_queries(topics, qrels, corpus, bitext) -> tuple[dict[str, str], int]:
    """``qid -> English desc query`` of each query with a mate, and how many are desc openings.

    The query is the mate's desc opening as aligned in ``bitext`` (the paths ``(src, tgt, ids)`` of the split's
    bitext with its page ids): the English side of the topic's desc opening line, the target query of a parallel
    desc query (:func:`parallel_queries`); a topic whose page the bitext does not align (a bitext holding only part
    of the split's pages) keeps its mate's title (:func:`clirplug.monolingual.mate_title_queries`), so that every
    query with a mate has one. The experiment's desc ceiling searches them.
    """
    queries = mate_title_queries(qrels, corpus)
    openings = parallel_queries([t for t in topics if t.id in queries], "desc", bitext=bitext)
    return {qid: openings[qid][1] if qid in openings else title for qid, title in queries.items()}, len(openings)
