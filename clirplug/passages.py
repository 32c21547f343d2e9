"""Passage collections: pages cut into passages of at most N words, and page runs by the best passage (MaxP).

A passage keeps its page's title and holds at most ``words`` words of its contents (words are split at white
space and joined by one space); its id is ``<page id>#<k>``, ``k`` counting from 0, as the segmented MS MARCO v2
documents are named and as Pyserini's ``--max-passage-delimiter`` expects. A page without contents is one
passage (its title). :func:`max_passage` turns a run over passages into a run over pages, each page scored by its
best passage (MaxP; Dai and Callan, SIGIR 2019), as Pyserini's ``--max-passage`` does.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

from clirplug.corpus import Document, corpus_size, read_corpus
from clirplug.errors import ClirplugError

WORDS = 100  # words of contents per passage (NeuCLIR's and MS MARCO v2's segments are of this order)
DELIMITER = "#"  # between a page id and a passage number, Pyserini's --max-passage-delimiter default
MAX_PASSAGE_HITS = 100  # pages per query of a MaxP run, Pyserini's --max-passage-hits default


def check_words(words: int, name: str = "--words") -> int:
    """``words`` when it is a whole number of at least 1; a one-line error naming ``name`` otherwise."""
    if isinstance(words, bool) or not isinstance(words, int) or words < 1:
        raise ClirplugError(f"{name}: a passage holds at least 1 word, got {words!r}")
    return words


def passages_of(page: Document, words: int = WORDS) -> list[Document]:
    """The passages of ``page``: its title with each run of at most ``words`` words of its contents, in order;
    one passage of the title alone when it has no contents."""
    tokens = page.contents.split()
    chunks = [" ".join(tokens[start:start + words]) for start in range(0, len(tokens), words)] or [""]
    return [Document(f"{page.id}{DELIMITER}{k}", page.title, chunk) for k, chunk in enumerate(chunks)]


def read_passages(corpus, words: int = WORDS) -> Iterator[Document]:
    """The passages of every page of ``corpus`` (any corpus :func:`clirplug.corpus.read_corpus` reads), streamed."""
    check_words(words)
    for page in read_corpus(corpus):
        yield from passages_of(page, words)


def write_passages(corpus, output, words: int = WORDS, progress: bool = True) -> dict:
    """Write the passages of ``corpus`` to the JSONL file ``output`` (``{"id", "title", "contents"}`` a line),
    streamed page by page and atomically (nothing is left at ``output`` unless complete); return the counts."""
    from tqdm import tqdm

    from clirplug.atomic import atomic_open

    check_words(words)
    total = corpus_size(corpus) if progress else None
    pages = passages = 0
    with atomic_open(output) as handle, tqdm(total=total, desc=f"cutting passages of {words} words", unit=" pages",
                                             disable=None if progress else True, file=sys.stderr) as bar:
        for page in read_corpus(corpus):
            for passage in passages_of(page, words):
                handle.write(json.dumps(passage._asdict(), ensure_ascii=False) + "\n")
                passages += 1
            pages += 1
            bar.update()
    return {"pages": pages, "passages": passages, "words": words, "output": str(Path(output))}


def page_id(passage_id: str, delimiter: str = DELIMITER) -> str:
    """The page id of a passage id: the part before the last ``delimiter``, the whole id when it has none."""
    page, found, _ = passage_id.rpartition(delimiter)
    return page if found else passage_id


def max_passage(run, hits: int = MAX_PASSAGE_HITS, delimiter: str = DELIMITER):
    """The page run of a run over passages: each page scored by its best passage (MaxP), ranks recomputed with
    equal scores in page id order (:func:`clirplug.io.runs.sort_run`), at most ``hits`` pages per query.

    ``run`` is a frame with ``qid``, ``docid`` and ``score`` (or ``{qid: {docid: score}}``); the result has the
    columns of :data:`clirplug.io.runs.RUN_COLUMNS`. Each distinct passage id is split once, and the best passage
    found by integer codes of (query, page), so that a run of millions of passages takes seconds.
    """
    import numpy as np
    import pandas as pd

    from clirplug.io.runs import RUN_COLUMNS, SCORED_COLUMNS, sort_run

    if isinstance(hits, bool) or not isinstance(hits, int) or hits < 1:
        raise ClirplugError(f"--max-passage-hits must be at least 1, got {hits!r}")
    if not delimiter:
        raise ClirplugError("--max-passage-delimiter: the delimiter cannot be empty")
    if isinstance(run, dict):
        run = pd.DataFrame([(qid, docid, score) for qid, docs in run.items() for docid, score in docs.items()],
                           columns=SCORED_COLUMNS)
    if not isinstance(run, pd.DataFrame) or not set(SCORED_COLUMNS) <= set(run.columns) \
            or not np.isfinite(pd.to_numeric(run["score"], errors="coerce")).all():
        sort_run(run)  # raises the error naming what is wrong
    if run.empty:
        return pd.DataFrame({name: pd.Series(dtype=dtype) for name, dtype in
                             zip(RUN_COLUMNS, ("str", "str", "int64", "float64"))})
    passage_codes, passages = pd.factorize(run["docid"].astype(str), sort=False)
    page_codes, pages = pd.factorize(np.array([page_id(p, delimiter) for p in passages.tolist()], dtype=object), sort=False)
    qid_codes, qids = pd.factorize(run["qid"].astype(str), sort=False)
    keys = qid_codes.astype(np.int64) * len(pages) + page_codes[passage_codes]
    best = pd.Series(run["score"].astype("float64").to_numpy()).groupby(keys, sort=False).max()
    key_values = best.index.to_numpy()
    ranked = sort_run(pd.DataFrame({"qid": np.asarray(qids, dtype=object)[key_values // len(pages)],
                                    "docid": np.asarray(pages, dtype=object)[key_values % len(pages)],
                                    "score": best.to_numpy()}))
    return ranked[ranked["rank"] <= hits][RUN_COLUMNS].reset_index(drop=True)
