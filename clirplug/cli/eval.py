"""``clirplug eval``: evaluate TREC runs (trec_eval-compatible measures, PRES, significance)."""

from clirplug.cli import add_max_passage, max_passage_run

HELP = "evaluate TREC runs against qrels (MAP, nDCG, P@k, R@k, PRES@N; paired randomization tests)"

EPILOG = """\
Measures: ir_measures names (AP, nDCG@10, P@10, R@1000, RR, Rprec, Bpref, NumRelRet, ...),
trec_eval names (map, P_10, ndcg_cut_10, ...), the aliases MAP=AP, NDCG=nDCG, MRR=RR, and
PRES@N (Magdy & Jones 2010). Runs are ordered as trec_eval orders them (score descending,
ties by docid descending). Queries of the qrels missing from a run count as 0 (trec_eval -c);
run queries absent from the qrels are ignored. With --baseline, every other run is compared
with it by a two-sided paired randomization test (10,000 permutations, fixed seed) over the
queries of the qrels; in the table, '*' marks p < 0.05. With --correction holm, the p-values
of the runs tested on one measure are adjusted together (Holm-Bonferroni): '*' then marks an
adjusted p < 0.05, and the output has both p_value and p_holm.
"""


def add_arguments(parser):
    import argparse

    from clirplug.eval.measures import DEFAULT_MEASURES
    from clirplug.eval.significance import CORRECTIONS

    measures = " ".join(DEFAULT_MEASURES)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EPILOG
    parser.add_argument("runs", nargs="+", metavar="RUN", help="TREC run files (qid Q0 docid rank score tag)")
    parser.add_argument("--qrels", required=True,
                        help="TREC qrels file (qid iter docid relevance), or irds:ID (the qrels of an ir_datasets id)")
    parser.add_argument("--measures", default=measures, help=f"space-separated measures (default: {measures})")
    parser.add_argument("--baseline", metavar="RUN", help="run to test the others against (added if not among RUN)")
    parser.add_argument("--per-query", action="store_true", help="also print the value of every query")
    add_max_passage(parser, "1000")
    parser.add_argument("--format", choices=("table", "csv", "json"), default="table", help="output format (default: table)")
    parser.add_argument("--permutations", type=int, default=None, help="randomization-test permutations (default: 10000)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the randomization test (default: fixed)")
    parser.add_argument("--correction", choices=CORRECTIONS, default=None,
                        help="adjust the p-values for multiple comparisons over the runs tested on each measure "
                             "(holm: Holm-Bonferroni; default: none)")


def _with_p_values(results, baseline, permutations, seed, correction):
    """Add a ``p_value`` column to the aggregate rows of the non-baseline runs, and ``p_<correction>`` with one."""
    import numpy as np

    from clirplug.eval import significance
    from clirplug.eval.measures import ALL

    per_query = results[results["qid"] != ALL]
    table = per_query.pivot_table(index="qid", columns=["run", "measure"], values="value", sort=True)
    measures = list(dict.fromkeys(results["measure"]))
    base = table[baseline][measures].to_numpy()
    tested = [run for run in dict.fromkeys(results["run"]) if run != baseline]
    p_values = {}
    for run in tested:
        values = significance.randomization_test(table[run][measures].to_numpy(), base, permutations, seed)
        p_values.update({(run, measure): float(p) for measure, p in zip(measures, np.atleast_1d(values))})
    is_all = results["qid"] == ALL
    keys = list(zip(results["run"], results["measure"]))
    results["p_value"] = [p_values.get(key) if aggregate else None for key, aggregate in zip(keys, is_all)]
    if correction is not None:
        adjusted = {}
        for measure in measures:  # one family per measure: every run tested against the baseline on it
            family = significance.CORRECTIONS[correction]([p_values[(run, measure)] for run in tested])
            adjusted.update({(run, measure): float(p) for run, p in zip(tested, family)})
        results[f"p_{correction}"] = [adjusted.get(key) if aggregate else None for key, aggregate in zip(keys, is_all)]
    return results


def _table(results, per_query, marked):
    """Runs (and queries) as rows, measures as columns, values to 4 decimals plus markers."""
    from clirplug.eval.measures import ALL
    from clirplug.eval.significance import marker

    shown = results if per_query else results[results["qid"] == ALL]
    keys = ["run", "qid"] if per_query else ["run"]
    measures = list(dict.fromkeys(shown["measure"]))
    rows = {}
    for record in shown.itertuples(index=False):
        cell = f"{record.value:.4f}" + (marker(getattr(record, marked)) if marked else "")
        rows.setdefault(tuple(getattr(record, key) for key in keys), {})[record.measure] = cell
    lines = [keys + measures] + [[*key, *(cells[name] for name in measures)] for key, cells in rows.items()]
    widths = [max(len(line[column]) for line in lines) for column in range(len(lines[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) if column < len(keys) else cell.rjust(width)
                  for column, (cell, width) in enumerate(zip(line, widths))).rstrip()
        for line in lines
    )


def run(args):
    import json
    import sys

    from clirplug.errors import ClirplugError, warn
    from clirplug.eval.measures import ALL, evaluate, parse_measures
    from clirplug.eval.significance import ALPHA, MARKER, PERMUTATIONS, SEED
    from clirplug.io.qrels import read_qrels
    from clirplug.io.runs import read_run

    permutations = PERMUTATIONS if args.permutations is None else args.permutations
    seed = SEED if args.seed is None else args.seed
    if permutations < 1:
        raise ClirplugError(f"--permutations must be at least 1, got {permutations}")
    if args.correction is not None and args.baseline is None:
        raise ClirplugError(f"--correction {args.correction} needs --baseline RUN (the p-values it adjusts)")
    measures = parse_measures(args.measures)  # reports bad names before reading any file
    names = list(dict.fromkeys(args.runs))
    if args.baseline is not None and args.baseline not in names:
        names.insert(0, args.baseline)
    qrels = read_qrels(args.qrels)
    runs = {name: max_passage_run(read_run(name), args, 1000) for name in names}
    judged = set(qrels["qid"])
    for name, frame in runs.items():
        if judged.isdisjoint(frame["qid"]):
            warn(f"{name}: no query in common with {args.qrels}: every query scores 0 (qrels of other topics?)")
    has_p = args.baseline is not None and len(names) > 1
    p_columns = ["p_value"] + ([f"p_{args.correction}"] if args.correction else [])  # the last one marks '*'
    results = evaluate(qrels, runs, [m.name for m in measures], per_query=True)
    if has_p:
        results = _with_p_values(results, args.baseline, permutations, seed, args.correction)
    output = results if args.per_query else results[results["qid"] == ALL].drop(columns="qid")

    if args.format == "json":
        records = []
        for record in output.to_dict(orient="records"):
            if record.get("qid") == ALL:
                del record["qid"]
            for key in p_columns:
                p_value = record.pop(key, None)
                if p_value is not None and p_value == p_value:  # None/NaN: no test for this record
                    record[key] = p_value
            if record["value"] != record["value"]:  # NaN (a measure undefined on these qrels): JSON null
                record["value"] = None
            records.append(record)
        print(json.dumps(records, indent=1, allow_nan=False))
    elif args.format == "csv":
        output.to_csv(sys.stdout, index=False, float_format="%.6g", lineterminator="\n")
    else:
        print(_table(results, args.per_query, p_columns[-1] if has_p else None))
        if has_p:
            adjusted = "" if args.correction is None else (f"; {args.correction}-adjusted over the {len(names) - 1}"
                                                            " runs tested on each measure")
            print(f"\n{MARKER} p < {ALPHA} against {args.baseline} (two-sided paired randomization test,"
                  f" {permutations} permutations, seed {seed}{adjusted})")
    return 0
