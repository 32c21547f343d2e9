"""Ranked result lists ("runs") in TREC format: ``qid Q0 docid rank score tag`` a line.

Ordering contract (``sort_run``): queries in string order of their id; within a query by
score descending, ties broken by docid. Files are written with ties by docid ascending,
as Anserini and Pyserini write them, so ``clirplug search`` ranks equal Anserini's. The
evaluator sorts ties by docid descending (``ties="trec_eval"``): trec_eval ignores the rank
column and reads each query that way (score descending, then docno descending, ``strcmp``).
"""

import csv
import io
import math
import sys
import time
from pathlib import Path

from clirplug.atomic import open_output
from clirplug.errors import ClirplugError, where

# The columns of a run frame, and those a run needs when its ranks are (re)computed from the
# scores (sort_run, write_run, the fusion methods).
RUN_COLUMNS = ["qid", "docid", "rank", "score"]
SCORED_COLUMNS = ["qid", "docid", "score"]


def read_run(path, empty: bool = True):
    """Read a TREC run file.

    Parameters
    ----------
    path : str or Path
        Six whitespace-separated fields a line: ``qid Q0 docid rank score tag``.
    empty : bool
        Whether a run without a line is accepted (a run of queries that found nothing); ``False`` where
        an empty run can only be a mistake (the runs fused, the candidates reranked).

    Returns
    -------
    pandas.DataFrame
        Columns ``qid``, ``docid`` (str), ``rank`` (int64), ``score`` (float64) and
        ``tag`` (str), in file order (use ``sort_run`` for the evaluated order).

    Raises
    ------
    ClirplugError
        ``file:line: ...`` on a wrong field count, a non-integer rank, a non-numeric
        or non-finite (NaN, infinite) score, or a duplicate (qid, docid).
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ClirplugError(f"{path}: cannot read run ({error})") from error
    try:
        frame = _run_columns(text)
    except ValueError:
        _raise_first_error(path, text)
        raise
    if not empty and frame.empty:
        raise ClirplugError(f"{path}: an empty run (no result line)")
    frame.attrs["path"] = str(path)  # named by check_shared_topics
    return frame


def check_shared_topics(candidates, topics) -> None:
    """Refuse ``candidates`` (a run frame) that rank documents but none for the ``topics``: reranking them would
    silently give an empty run (they are another topic set's). The error names the run's file when
    :func:`read_run` read it."""
    qids = set(candidates["qid"])
    if qids and not qids & {topic.id for topic in topics}:
        name = candidates.attrs.get("path", "the candidates")
        first = sorted(qids)[0]
        raise ClirplugError(f"{name}: the candidates share no topic with the topics ({len(qids)} topics, e.g. "
                            f"{first!r}, none of the {len(topics)} topics searched): are they another topic set's?")


# Whitespace that str.split() splits on but pandas' reader does not (vertical tab, form feed, the file, group,
# record and unit separators; Unicode spaces and a leading byte-order mark, which pandas' reader drops, are not
# ASCII): a text holding one is read by str.split()
_OTHER_SPACE = "\x0b\x0c\x1c\x1d\x1e\x1f"
_FIELDS = ["qid", "q0", "docid", "rank", "score", "tag"]


def _run_columns(text):
    """The frame of :func:`read_run` from a run file's ``text``, all lines at once (pandas' C reader, the fields
    split as ``str.split`` splits them); ``ValueError`` when any line is wrong (then :func:`_raise_first_error`
    says which)."""
    import pandas as pd

    if not text.isascii() or any(space in text for space in _OTHER_SPACE):
        return _split_columns(text)
    frame = pd.read_csv(io.StringIO(text), sep=r"\s+", header=None, names=_FIELDS, quoting=csv.QUOTE_NONE,
                        na_filter=False, engine="c",
                        dtype={"qid": str, "q0": str, "docid": str, "rank": str, "score": "float64", "tag": str})
    if not isinstance(frame.index, pd.RangeIndex):  # every line had more than 6 fields: the first became the index
        raise ValueError("a line with more than 6 fields")
    return _checked(frame.drop(columns="q0").assign(rank=_ranks(frame["rank"].tolist())))  # a list: iterating a str Series is slow


def _split_columns(text):
    """:func:`_run_columns` by ``str.split``."""
    import numpy as np
    import pandas as pd

    fields = np.fromiter(map(len, map(str.split, text.splitlines())), dtype=np.int64)
    if ((fields != 6) & (fields != 0)).any():
        raise ValueError("a line without 6 fields")
    tokens = text.split()  # the lines' fields in line order, as every line has 6 or none
    return _checked(pd.DataFrame({"qid": pd.Series(tokens[0::6], dtype=str), "docid": pd.Series(tokens[2::6], dtype=str),
                                  "rank": _ranks(tokens[3::6]),
                                  "score": pd.Series(list(map(float, tokens[4::6])), dtype="float64"),
                                  "tag": pd.Series(tokens[5::6], dtype=str)}))


def _ranks(tokens):
    """The rank column of the rank fields ``tokens``, read as Python reads integers."""
    import pandas as pd

    ranks = list(map(int, tokens))
    if ranks and not -2**63 <= min(ranks) <= max(ranks) < 2**63:
        raise ValueError("a rank beyond int64")
    return pd.Series(ranks, dtype="int64")


def _checked(frame):
    """``frame`` if every line had its 6 fields (no empty tag), finite scores and no (qid, docid) twice."""
    import numpy as np

    if (frame["tag"] == "").any() or not np.isfinite(frame["score"].to_numpy()).all() \
            or frame.duplicated(["qid", "docid"]).any():
        raise ValueError("a line without 6 fields, a non-finite score or a duplicate (qid, docid)")
    return frame


def _raise_first_error(path, text) -> None:
    """Raise the error of the first wrong line of a run file's ``text`` (see :func:`read_run`)."""
    seen: dict[tuple[str, str], int] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 6:
            raise ClirplugError(
                f"{where(path, lineno)}: expected 6 fields 'qid Q0 docid rank score tag', got {len(fields)}"
            )
        qid, _, docid, rank, score, _ = fields
        try:
            if not -2**63 <= int(rank) < 2**63:
                raise ClirplugError(f"{where(path, lineno)}: rank {rank} is out of range (a 64-bit integer)")
        except ValueError:
            raise ClirplugError(f"{where(path, lineno)}: rank {rank!r} is not an integer") from None
        try:
            value = float(score)
        except ValueError:
            raise ClirplugError(f"{where(path, lineno)}: score {score!r} is not a number") from None
        if not math.isfinite(value):
            raise ClirplugError(f"{where(path, lineno)}: score {score!r} is not a finite number")
        key = (qid, docid)
        if key in seen:
            raise ClirplugError(
                f"{where(path, lineno)}: document {docid!r} listed twice for query {qid!r} (first at line {seen[key]})"
            )
        seen[key] = lineno


def add_latency(latencies: dict | None, key: str, start: float, extra: float = 0.0) -> None:
    """Add the seconds since ``start`` (a ``time.perf_counter()``), plus ``extra``, to ``latencies[key]``
    (0 when absent); nothing without ``latencies``. The per-query seconds of a run's sidecar."""
    if latencies is not None:
        latencies[key] = latencies.get(key, 0.0) + time.perf_counter() - start + extra


def run_frame(ranked):
    """A run frame (:data:`RUN_COLUMNS`) of ranked lists: ``(qid, [(docid, score), ...])`` pairs, each list
    best first; ranks count from 1 within each list."""
    import pandas as pd

    rows = [(qid, docid, rank, score) for qid, hits in ranked for rank, (docid, score) in enumerate(hits, 1)]
    return pd.DataFrame(rows, columns=RUN_COLUMNS)


def search_each(queries, search, *, desc: str = "searching", progress: bool = True, latencies: dict | None = None,
                extra=None):
    """A run frame of ``search(qid, query)`` (ranked ``(docid, score)`` pairs) for every ``qid -> query``, with a
    progress bar; with ``latencies``, each query's seconds, plus its ``extra`` seconds, are added to its entry."""
    from tqdm import tqdm

    extra = extra or {}
    ranked = []
    for qid, query in tqdm(queries.items(), desc=desc, unit=" queries", disable=not progress, file=sys.stderr,
                           leave=False):
        start = time.perf_counter()
        ranked.append((qid, search(qid, query)))
        add_latency(latencies, qid, start, extra.get(qid, 0.0))
    return run_frame(ranked)


def _as_frame(run):
    """A copy of ``run`` (DataFrame with qid, docid, score, or {qid: {docid: score}}) as a frame."""
    import pandas as pd

    if isinstance(run, dict):
        rows = [(str(qid), str(docid), score) for qid, docs in run.items() for docid, score in docs.items()]
        return pd.DataFrame(rows, columns=SCORED_COLUMNS)
    if isinstance(run, pd.DataFrame):
        missing = [name for name in SCORED_COLUMNS if name not in run.columns]
        if missing:
            raise ClirplugError(f"run frame lacks column(s) {', '.join(missing)}; it has {', '.join(map(str, run.columns))}")
        return run.copy()
    raise ClirplugError(f"a run must be a DataFrame (qid, docid, score) or a dict {{qid: {{docid: score}}}}, got {type(run).__name__}")


def _codes(values):
    """Integer codes of strings, increasing in code-point order (= ``strcmp`` order of UTF-8)."""
    import numpy as np

    code = {value: number for number, value in enumerate(sorted(set(values)))}
    return np.fromiter(map(code.__getitem__, values), dtype=np.int64, count=len(values))


def ranks_within(sorted_keys):
    """1-based rank of each row within its block of equal keys (``sorted_keys`` grouped, e.g. qid codes in run order)."""
    import numpy as np

    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    positions = np.arange(len(sorted_keys))
    return (positions - np.repeat(starts, np.diff(np.r_[starts, len(sorted_keys)])) + 1).astype(np.int64)


# How equal scores are ordered: by docid ascending, as Anserini's TiebreakerReranker and
# Pyserini's run files do, or descending, the order in which trec_eval itself reads ties.
TIE_BREAKS = {"anserini": True, "trec_eval": False}


def sort_run(frame, ties="anserini"):
    """Order a run and recompute its ranks.

    Queries in string order of ``qid``; within a query, ``score`` descending with ties
    broken by ``docid`` (ascending for ``ties="anserini"``, the order of Anserini's and
    Pyserini's run files; descending for ``ties="trec_eval"``, the order in which
    trec_eval evaluates ties whatever the file's ranks say), ranks 1, 2, ...

    Parameters
    ----------
    frame : pandas.DataFrame or dict
        Columns ``qid``, ``docid``, ``score`` (others are kept), or ``{qid: {docid: score}}``.
    ties : {"anserini", "trec_eval"}

    Returns
    -------
    pandas.DataFrame
        A new frame with a fresh index; ``qid``/``docid`` as str, ``score`` float64,
        ``rank`` int64.

    Raises
    ------
    ClirplugError
        On missing columns, non-finite scores or a duplicate (qid, docid).
    """
    import numpy as np

    frame = _as_frame(frame)
    frame["qid"] = frame["qid"].astype(str)
    frame["docid"] = frame["docid"].astype(str)
    try:
        frame["score"] = frame["score"].astype("float64")
    except (TypeError, ValueError) as error:
        raise ClirplugError(f"run scores must be numbers ({error})") from error
    scores = frame["score"].to_numpy()
    if not np.isfinite(scores).all():
        row = frame.iloc[int(np.flatnonzero(~np.isfinite(scores))[0])]
        raise ClirplugError(f"run score {row.score} is not finite for query {row.qid!r}, document {row.docid!r}")
    qid_codes, doc_codes = _codes(frame["qid"].tolist()), _codes(frame["docid"].tolist())
    order = np.lexsort((doc_codes if TIE_BREAKS[ties] else -doc_codes, -scores, qid_codes))
    keys = qid_codes * (len(doc_codes) + 1) + doc_codes
    _, first, counts = np.unique(keys, return_index=True, return_counts=True)
    if (counts > 1).any():
        row = frame.iloc[int(first[counts > 1].min())]
        raise ClirplugError(f"run lists document {row.docid!r} twice for query {row.qid!r}")
    frame = frame.iloc[order].reset_index(drop=True)
    frame["rank"] = ranks_within(qid_codes[order])
    return frame[RUN_COLUMNS + [name for name in frame.columns if name not in RUN_COLUMNS]]


def is_token(value: str) -> bool:
    """True when ``value`` can be a field of a TREC run line: not empty, no white space."""
    return bool(value) and not any(char.isspace() for char in value)


def _check_token(kind, value):
    if not is_token(value):
        raise ClirplugError(f"{kind} {value!r} cannot be written to a TREC run: it is empty or contains whitespace")


# How write_run prints a score: "exact" is Python's shortest round-trip repr of the float64 value;
# "pyserini" has six decimals, as Pyserini's TrecWriter prints them (pyserini/output_writer.py: {score:.6f}).
SCORE_FORMATS = {"exact": repr, "pyserini": "{:.6f}".format}
DEFAULT_TAG = "clirplug"  # the run tag when none is given


def write_run(run, path, tag=DEFAULT_TAG, depth=None, score_format="exact") -> None:
    """Write a run in TREC format, atomically and reproducibly.

    Rows are ordered by ``sort_run`` and ranks recomputed. Scores are printed with
    Python's shortest round-trip ``repr`` of the float64 value: the file then holds
    exactly the scores in memory, so no artificial ties appear (as with ``%.6f``,
    whose ties trec_eval would reorder by docid), re-reading gives the same floats,
    and the same inputs always give byte-identical files. ``score_format="pyserini"``
    prints ``%.6f`` instead, for files that diff cleanly against Pyserini's; the rows
    are still ordered by the unrounded scores.

    Parameters
    ----------
    run : pandas.DataFrame or dict
        Columns ``qid``, ``docid``, ``score`` (any ``rank`` is recomputed), or
        ``{qid: {docid: score}}``.
    path : str or Path
        The file, or ``-`` for standard output.
    tag : str
        The run tag (last column); no whitespace.
    depth : int, optional
        Keep at most this many documents per query.
    score_format : {"exact", "pyserini"}
        How scores are printed (:data:`SCORE_FORMATS`).
    """
    _check_token("run tag", tag)
    if score_format not in SCORE_FORMATS:
        raise ClirplugError(f"score format {score_format!r}: choose one of {', '.join(SCORE_FORMATS)}")
    shown = SCORE_FORMATS[score_format]
    if depth is not None and depth < 1:
        raise ClirplugError(f"run depth must be at least 1, got {depth}")
    frame = sort_run(run)
    if depth is not None:
        frame = frame[frame["rank"] <= depth]
    for kind, column in (("query id", "qid"), ("document id", "docid")):
        for value in frame[column].unique().tolist():  # each distinct id once, in the file's order
            _check_token(kind, value)
    qids, docids = frame["qid"].tolist(), frame["docid"].tolist()
    lines = [
        f"{qid} Q0 {docid} {rank} {shown(score)} {tag}\n"
        for qid, docid, rank, score in zip(qids, docids, frame["rank"].tolist(), frame["score"].tolist())
    ]
    with open_output(path) as handle:
        handle.writelines(lines)
