"""PSQ tuning speed: the coordinate search of a ``psq-tune`` stage, current code against a git revision.

Usage::

    nice .venv/bin/python benchmarks/psq_tune_speed.py --record runs/manclir-de/stages/tune.psq-hiero.desc.json
        --model models/manclir-de/fold-0 --topics runs/manclir-de/folds/f0.topics.jsonl --qrels QRELS
        --index indexes/manclir-de --ref main [--first 40] [--cold] [--dense-docs 48]

The stage record gives the search (grid, start, field, kind, BM25); the search runs on one
part (``--model`` and the first ``--first`` topics of ``--topics``), as the stage's
``measure`` does: Builders, MAP by :class:`clirplug.qt.psq_tune.TuningAP` (a revision without it: the run of
:func:`clirplug.qt.psq_tune.run_settings` evaluated). Each side runs
in a fresh process, the reference from ``git archive REF`` in a temporary folder, the
current code from this checkout, one after the other on a copy of the model folder whose
n-best cache is kept (warm: the n-best lists are read, not decoded) or, with ``--cold``,
dropped (every sentence decoded once). Prints, per side: wall and CPU seconds, peak RSS, the
seconds per setting and the milliseconds per topic and setting (median / p90); and whether
every evaluated setting has the same MAP (floats compared exactly) and the same best setting.

``--dense-docs N`` adds the document embedding rate of the dense peer
(:func:`clirplug.dense.embed_passages` on the first N documents of ``--corpus``, each
``--words`` value, 1 and 2 threads, in CPU and wall time).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r'''
import json, resource, sys, time
import clirplug
from clirplug.eval.measures import evaluate
from clirplug.io.qrels import read_qrels
from clirplug.io.topics import read_topics
from clirplug.qt.psq import PsqScorer
from clirplug.qt.psq_tables import PsqSettings
from clirplug.qt.psq_tune import Builders, coordinate_search, run_settings

args = json.loads(sys.argv[1])
s = json.loads(open(args["record"], encoding="utf-8").read())["settings"]
topics = read_topics(args["topics"])[: args["first"]]
qrels = read_qrels(args["qrels"])
wall, cpu = time.perf_counter(), time.process_time()
scorer = PsqScorer(args["index"], s["bm25"]["k1"], s["bm25"]["b"])
builders = Builders(args["model"], s["kind"], topics, s["lang"])
seconds = {}
try:  # the stage's MAP from its topics' APs, each distinct query searched once (since 2026-11-28)
    from clirplug.qt.psq_tune import TuningAP, settings_queries
    by_topic = TuningAP(scorer, qrels, s["hits"])
except ImportError:  # an earlier revision: the run evaluated
    by_topic = None

def measure(settings):
    start = time.perf_counter()
    if by_topic is not None:
        value = by_topic.mean(settings_queries(builders, s["field"], settings))
    else:
        run = run_settings(scorer, builders, s["field"], settings, hits=s["hits"])
        value = float(evaluate(qrels, {"run": run}, ["MAP"])["value"].iloc[0])
    seconds[settings.spec()] = time.perf_counter() - start
    return value

best, results = coordinate_search(measure, PsqSettings.parse(s["psq"]), s["grid"])
print(json.dumps({"code": clirplug.__file__, "best": best.spec(), "results": {k: v.hex() for k, v in results.items()}, "seconds": seconds,
                  "topics": len(topics), "wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
'''

DENSE = r'''
import json, sys, time
from clirplug.corpus import read_corpus
from clirplug.dense import embed_passages, load_model, passage_text

args = json.loads(sys.argv[1])
docs = [doc for _, doc in zip(range(args["docs"]), read_corpus(args["corpus"]))]
model = load_model(args["threads"])
rates = {}
for words in args["words"]:
    texts = [passage_text(doc, words) for doc in docs]
    wall, cpu = time.perf_counter(), time.process_time()
    embed_passages(model, texts)
    rates[words] = {"wall": len(texts) / (time.perf_counter() - wall), "cpu": len(texts) / (time.process_time() - cpu)}
print(json.dumps(rates))
'''


def percentile(values, q: float) -> float:
    """The ``q`` quantile by the nearest-rank method."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def child(code: str, root: Path, arguments: dict) -> dict:
    """Run ``code`` in ``root`` (first on the import path: ``-c`` puts the working folder first); its last
    output line, as JSON."""
    done = subprocess.run([sys.executable, "-c", code, json.dumps(arguments)], check=True, capture_output=True,
                          text=True, cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    return json.loads(done.stdout.strip().splitlines()[-1])


def model_copy(model: Path, folder: Path, cold: bool) -> Path:
    """A copy of the model folder, without its n-best cache when ``cold``."""
    shutil.copytree(model, folder, ignore=shutil.ignore_patterns("cache") if cold else None)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--record", required=True, help="the psq-tune stage record (stages/tune.*.json)")
    parser.add_argument("--model", required=True, type=Path, help="the part's model folder")
    parser.add_argument("--topics", required=True, help="the part's topics")
    parser.add_argument("--qrels", required=True)
    parser.add_argument("--index", required=True)
    parser.add_argument("--ref", default="main", help="the git revision to compare against (default main)")
    parser.add_argument("--first", type=int, default=40, help="topics of the part searched (default 40)")
    parser.add_argument("--cold", action="store_true", help="decode every sentence (drop the n-best cache)")
    parser.add_argument("--dense-docs", type=int, default=0, help="documents embedded for the dense rate (0: none)")
    parser.add_argument("--corpus", default=str(REPO.parent / "shared/data/manclir-de/corpus.jsonl"))
    parser.add_argument("--words", default="24,48,96")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        reference = Path(tmp) / "ref"
        reference.mkdir()
        archive = subprocess.run(["git", "-C", str(REPO), "archive", args.ref, "clirplug"], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(reference)], input=archive, check=True)
        out = {}
        for name, root in (("reference", reference), ("current", REPO)):
            model = model_copy(args.model, Path(tmp) / f"model-{name}", args.cold)
            out[name] = child(CHILD, root, {"record": args.record, "model": str(model), "topics": args.topics,
                                            "qrels": args.qrels, "index": args.index, "first": args.first})
            print(f"{name} ({out[name]['code']}): {out[name]['wall']:.1f} s", file=sys.stderr, flush=True)

    print("| code | wall s | CPU s | peak RSS MB | s per setting (median / p90) | ms per topic and setting "
          "(median / p90) |\n|---|---|---|---|---|---|")
    for name in ("reference", "current"):
        result = out[name]
        per_setting = list(result["seconds"].values())
        per_topic = [1000 * s / result["topics"] for s in per_setting]
        label = args.ref if name == "reference" else "this checkout"
        print(f"| {label} | {result['wall']:.1f} | {result['cpu']:.1f} | {result['peak_rss_mb']:.0f} "
              f"| {statistics.median(per_setting):.2f} / {percentile(per_setting, 0.9):.2f} "
              f"| {statistics.median(per_topic):.1f} / {percentile(per_topic, 0.9):.1f} |")
    same = out["reference"]["results"] == out["current"]["results"] and out["reference"]["best"] == out["current"]["best"]
    print(f"\n{len(out['current']['results'])} settings, {out['current']['topics']} topics, "
          f"{'cold' if args.cold else 'warm'} n-best cache; every MAP and the best setting identical: {same}")
    if args.dense_docs:
        words = [int(w) for w in args.words.split(",")]
        print(f"\n| threads | {' | '.join(f'w{w} docs/s (wall / CPU)' for w in words)} |\n|---|{'---|' * len(words)}")
        for threads in (1, 2):
            rates = child(DENSE, REPO, {"docs": args.dense_docs, "corpus": args.corpus, "threads": threads,
                                        "words": words})
            print(f"| {threads} | " + " | ".join(f"{rates[str(w)]['wall']:.1f} / {rates[str(w)]['cpu']:.1f}"
                                                 for w in words) + " |")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
