"""Relevance judgements in TREC qrels format: ``qid iter docid relevance`` a line."""

from pathlib import Path

from clirplug.errors import ClirplugError, where

QRELS_COLUMNS = ["qid", "docid", "relevance"]


def _read_trec_qrels(path):
    """Yield ``(line number, (qid, docid, relevance))`` of a TREC qrels file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ClirplugError(f"{path}: cannot read qrels ({error})") from error
    for lineno, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 4:
            raise ClirplugError(
                f"{where(path, lineno)}: expected 4 fields 'qid iter docid relevance', got {len(fields)}"
            )
        qid, _, docid, grade = fields
        try:
            relevance = int(grade)
        except ValueError:
            raise ClirplugError(f"{where(path, lineno)}: relevance {grade!r} is not an integer") from None
        yield lineno, (qid, docid, relevance)


def read_qrels(path):
    """Read a TREC qrels file, or the qrels of ``irds:<id>``, an ir_datasets dataset (:mod:`clirplug.irds`).

    Each non-blank line holds four whitespace-separated fields ``qid iter docid
    relevance``; ``iter`` is ignored, as trec_eval does. Relevance may be graded
    (e.g. 2/1/0) or negative; binary measures count ``relevance >= 1`` as relevant.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    pandas.DataFrame
        Columns ``qid`` (str), ``docid`` (str), ``relevance`` (int64), in file order.

    Raises
    ------
    ClirplugError
        ``file:line: ...`` on a wrong field count, a non-integer relevance or a
        duplicate (qid, docid); a file without judgements.
    """
    import pandas as pd

    from clirplug.irds import irds_id, irds_qrels

    dataset_id = irds_id(path)
    records = enumerate(irds_qrels(dataset_id), 1) if dataset_id is not None else _read_trec_qrels(path)
    qids, docids, grades, seen = [], [], [], {}
    for lineno, (qid, docid, relevance) in records:
        key = (qid, docid)
        if key in seen:
            raise ClirplugError(
                f"{where(path, lineno)}: duplicate judgement for query {qid!r}, document {docid!r}"
                f" (first at line {seen[key]})"
            )
        seen[key] = lineno
        qids.append(qid)
        docids.append(docid)
        grades.append(relevance)
    if not qids:
        raise ClirplugError(f"{path}: no judgements")
    return pd.DataFrame(
        {"qid": pd.Series(qids, dtype=str), "docid": pd.Series(docids, dtype=str),
         "relevance": pd.Series(grades, dtype="int64")}
    )
