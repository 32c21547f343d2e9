"""Evaluate runs against qrels: ir_measures measures plus PRES, trec_eval-compatible.

Measure names
-------------
Any ir_measures name (``AP``, ``nDCG``, ``nDCG@10``, ``P@10``, ``R@1000``, ``RR``,
``Rprec``, ``Bpref``, ``NumRelRet``...), any trec_eval name ir_measures understands
(``map``, ``P_10``, ``ndcg_cut_10``, ``recip_rank``...), the aliases of ``ALIASES``
(``MAP`` -> ``AP``, as papers write it) and ``PRES@N`` (Magdy & Jones 2010, N = N_max).
Results keep the name the user wrote.

Semantics (those of ``trec_eval -c``)
-------------------------------------
* Each run is put in trec_eval's order first (``sort_run``: score descending, ties by
  docid descending) and handed to ir_measures with that order as its only score, so
  every provider evaluates the ranking trec_eval would. The pytrec_eval provider (NIST
  trec_eval's own code) computes every measure it supports; the others go to
  ir_measures' default pipeline.
* Binary measures count ``relevance >= 1`` as relevant; nDCG uses the grades as gains.
* The evaluated queries are those of the qrels. A query of the qrels that a run
  lacks counts as 0 for that run (trec_eval's ``-c``), so all runs are averaged, and
  compared, over the same queries. Queries of a run that are not in the qrels are ignored.
* Aggregates are means over those queries, except counts (``NumRet``, ``NumRelRet``,
  ``NumRel``, ``NumQ``), which are summed, as trec_eval does.
"""

import re
from typing import NamedTuple

from clirplug.errors import ClirplugError
from clirplug.eval.pres import ranked_pres
from clirplug.io.qrels import QRELS_COLUMNS
from clirplug.io.runs import sort_run

# user-facing name -> ir_measures name
ALIASES = {"MAP": "AP", "NDCG": "nDCG", "MRR": "RR"}

# measure family -> function(run in trec_eval's order, qrels, cutoff) -> per-query Series indexed by qid
CUSTOM_MEASURES = {"PRES": ranked_pres}

DEFAULT_MEASURES = ["MAP", "nDCG", "nDCG@10", "P@10", "R@1000", "PRES@1000"]

ALL = "all"  # the qid of aggregate rows, as in trec_eval


class Measure(NamedTuple):
    """A parsed measure: the user's name and either an ir_measures measure or a custom one."""

    name: str
    ir_measure: object = None  # an ir_measures measure, or None for a custom measure
    custom: str = ""  # a key of CUSTOM_MEASURES
    cutoff: int = 0


_CUSTOM = re.compile(r"^(?P<family>[A-Za-z_]+)@(?P<cutoff>\d+)$")


def average_precision(hits, num_relevant: int) -> float:
    """trec_eval's AP of one ranking, for training loops that score many rankings.

    ``hits[i]`` is true (non-zero) when the document at rank ``i + 1`` is relevant;
    ``num_relevant`` counts every relevant document, so unretrieved ones contribute 0.
    """
    import numpy as np

    if num_relevant == 0:
        return 0.0
    ranks = np.flatnonzero(np.asarray(hits, dtype=bool)) + 1
    return float((np.arange(1, len(ranks) + 1) / ranks).sum() / num_relevant)


def is_trec_ap(measure: Measure) -> bool:
    """True when ``measure`` is trec_eval's ``map`` (AP at relevance level 1, no cutoff), which
    :func:`trec_average_precision` computes."""
    import ir_measures

    return measure.ir_measure is not None and measure.ir_measure == ir_measures.AP


def trec_average_precision(qids, relevant, num_relevant) -> dict:
    """trec_eval's AP of each query of a ranking, bit for bit as ``evaluate`` gives it (trec_eval's ``map``).

    ``qids`` (one per row, each query's rows together, best first: trec_eval's order) and
    ``relevant`` (bool per row) describe the ranking; ``num_relevant`` maps a qid to its number of
    relevant documents in the qrels. As trec_eval does: the sum, in rank order, of relevant-so-far
    / rank at each relevant row, divided by the number of relevant documents. Returns {qid: AP} for
    the queries with a relevant row (every other query's AP is 0).
    """
    import numpy as np

    from clirplug.io.runs import ranks_within

    qids, relevant = np.asarray(qids), np.asarray(relevant, dtype=bool)
    if len(qids) == 0:
        return {}
    new_query = np.r_[True, qids[1:] != qids[:-1]]
    rank = ranks_within(np.cumsum(new_query))
    found = np.cumsum(relevant)
    found_before = np.maximum.accumulate(np.where(new_query, found - relevant, 0))
    hits = np.flatnonzero(relevant)
    sums: dict = {}
    for qid, term in zip(qids[hits].tolist(), ((found - found_before)[hits] / rank[hits]).tolist()):
        sums[qid] = sums.get(qid, 0.0) + term  # in rank order, as trec_eval's loop adds
    return {qid: total / num_relevant[qid] for qid, total in sums.items()}


def _parse_one(name):
    import ir_measures

    match = _CUSTOM.match(name)
    if match and match["family"] in CUSTOM_MEASURES:
        cutoff = int(match["cutoff"])
        if cutoff < 1:
            raise ClirplugError(f"measure {name!r}: the cutoff must be at least 1")
        return Measure(name, custom=match["family"], cutoff=cutoff)
    if name in CUSTOM_MEASURES:
        raise ClirplugError(f"measure {name!r} needs a cutoff N_max, e.g. {name}@1000")
    family, at, rest = name.partition("@")
    try:
        return Measure(name, ir_measures.parse_measure(ALIASES.get(family, family) + at + rest))
    except (ValueError, NameError, TypeError, SyntaxError, AttributeError):
        pass
    try:
        parsed = ir_measures.parse_trec_measure(name)
    except (ValueError, NameError, TypeError, SyntaxError, AttributeError, KeyError, IndexError):
        parsed = []
    if len(parsed) == 1:
        return Measure(name, parsed[0])
    raise ClirplugError(
        f"unknown measure {name!r}: use an ir_measures name (AP, nDCG@10, P@10, R@1000, RR, ...),"
        f" {', '.join(f'{alias} (= {target})' for alias, target in ALIASES.items())}"
        f" or {', '.join(f'{family}@N' for family in CUSTOM_MEASURES)}"
    )


def parse_measures(names) -> list[Measure]:
    """Parse measure names (a list, or one string separated by spaces or commas).

    Every unknown name is reported at once in a single ``ClirplugError``; duplicates
    are dropped.
    """
    if isinstance(names, str):
        names = names.replace(",", " ").split()
    measures, errors = [], []
    for name in dict.fromkeys(names):
        try:
            measures.append(_parse_one(name))
        except ClirplugError as error:
            errors.append(str(error))
    if errors:
        raise ClirplugError("; ".join(errors))
    if not measures:
        raise ClirplugError("no measure given")
    return measures


def _check_qrels(qrels):
    missing = [name for name in QRELS_COLUMNS if name not in qrels.columns]
    if missing:
        raise ClirplugError(f"qrels frame lacks column(s) {', '.join(missing)}")


def _ir_measures_values(measures, qrels, runs):
    """Per-query values of the ir_measures measures, as {run: {measure name: {qid: value}}}."""
    import ir_measures

    if not measures:
        return {name: {} for name in runs}
    by_measure = {}  # ir_measures measure -> the user's names for it ("MAP" and "AP" may both be asked)
    for measure in measures:
        by_measure.setdefault(measure.ir_measure, []).append(measure.name)
    qrels_frame = qrels.rename(columns={"qid": "query_id", "docid": "doc_id"})[["query_id", "doc_id", "relevance"]]
    trec_eval = ir_measures.pytrec_eval
    groups = {}
    for measure in by_measure:
        groups.setdefault(trec_eval if trec_eval.supports(measure) else ir_measures.DefaultPipeline, []).append(measure)
    evaluators = [provider.evaluator(group, qrels_frame) for provider, group in groups.items()]
    values = {}
    for run_name, run in runs.items():
        ranking = _ranking(run)
        per_measure = {measure: {} for measure in by_measure}
        for evaluator in evaluators:
            for metric in evaluator.iter_calc(ranking):
                per_measure[metric.measure][metric.query_id] = float(metric.value)
        values[run_name] = {name: per_measure[measure] for measure, names in by_measure.items() for name in names}
    return values


def _ranking(run) -> dict:
    """``{qid: {docid: -rank}}`` of a run in trec_eval's order (each query's rows together): minus the rank as the
    only score, every provider then sees trec_eval's order, ties included."""
    import numpy as np

    if run.empty:
        return {}
    qids = run["qid"].to_numpy()
    starts = np.flatnonzero(np.r_[True, qids[1:] != qids[:-1], True]).tolist()
    docids, scores = run["docid"].tolist(), (-run["rank"].to_numpy(dtype=np.float64)).tolist()
    return {qids[start]: dict(zip(docids[start:end], scores[start:end])) for start, end in zip(starts, starts[1:])}


def aggregate(measure: Measure, values) -> float:
    """The aggregate of one measure's per-query ``values``, as ``evaluate`` reports it (mean, or sum for counts)."""
    if measure.ir_measure is None:
        return float(sum(values) / len(values)) if len(values) else 0.0
    aggregator = measure.ir_measure.aggregator()
    for value in values:
        aggregator.add(value)
    return float(aggregator.result())


def evaluate(qrels, runs, measures=DEFAULT_MEASURES, per_query=False):
    """Evaluate ``runs`` against ``qrels`` (see the module docstring for the semantics).

    Parameters
    ----------
    qrels : pandas.DataFrame
        Columns ``qid``, ``docid``, ``relevance`` (as from ``read_qrels``).
    runs : dict of str to pandas.DataFrame
        Run name -> frame with ``qid``, ``docid``, ``score`` (as from ``read_run``),
        or ``{qid: {docid: score}}``.
    measures : list of str or str
        Measure names; see the module docstring.
    per_query : bool
        Also return one row per query of the qrels (besides the ``qid == "all"`` rows).

    Returns
    -------
    pandas.DataFrame
        Long format with columns ``run``, ``measure``, ``value``, plus ``qid`` when
        ``per_query`` (queries in string order, then ``"all"``). Runs and measures keep
        the given order.
    """
    import pandas as pd

    _check_qrels(qrels)
    measures = parse_measures(measures)
    qrels = qrels.assign(qid=qrels["qid"].astype(str), docid=qrels["docid"].astype(str))
    qids = sorted(set(qrels["qid"]))
    runs = {name: sort_run(run, ties="trec_eval") for name, run in runs.items()}
    ir_values = _ir_measures_values([m for m in measures if m.ir_measure is not None], qrels, runs)
    rows = []
    for run_name, run in runs.items():
        for measure in measures:
            if measure.ir_measure is None:
                by_qid = CUSTOM_MEASURES[measure.custom](run, qrels, measure.cutoff).to_dict()
            else:
                by_qid = ir_values[run_name][measure.name]
            default = 0.0 if measure.ir_measure is None else float(measure.ir_measure.DEFAULT)
            values = [by_qid.get(qid, default) for qid in qids]
            if per_query:
                rows.extend((run_name, measure.name, qid, value) for qid, value in zip(qids, values))
            rows.append((run_name, measure.name, ALL, aggregate(measure, values)))
    frame = pd.DataFrame(rows, columns=["run", "measure", "qid", "value"])
    return frame if per_query else frame.drop(columns="qid")
