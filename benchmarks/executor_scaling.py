"""Wall time of topic-parallel translation (the experiment's translate stage) by executor and workers.

Usage: nice .venv/bin/python benchmarks/executor_scaling.py --model DIR [--kind flat] --topics FILE
           [--field desc] [--limit 1000] [--jobs 1 2 4] [--executors local ray]

Each (executor, jobs) translates the same topics with :func:`clirplug.experiment.planners.dt.translate_topics`
(the topics dealt into ``jobs`` chunks, one task each; every task loads the model restricted to its
topics). Each row reads the model through a fresh folder of symbolic links to its files, so that the
translation cache (``cache/``) starts empty and every topic is decoded. Ray is started on this machine for
each row with ``num_cpus = jobs`` and a 200 MB object store; its start-up is timed apart from the translation.
Prints a markdown table and whether every row's 1-best translations equal the first row's.
"""

import argparse
import os
import tempfile
import time
from pathlib import Path

from clirplug.executor import ExecutorSettings, native_signal_handlers_kept
from clirplug.experiment.planners.dt import translate_topics
from clirplug.io.topics import read_topics


def cold_model(model: Path, folder: Path) -> Path:
    """``folder`` holding a link to every file of ``model`` but its translation cache."""
    for path in model.iterdir():
        if path.is_file():
            (folder / path.name).symlink_to(path.resolve())
    return folder


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="model folder (docs/models.md)")
    parser.add_argument("--kind", default="flat", choices=["flat", "hiero"])
    parser.add_argument("--topics", required=True, help="topics JSONL")
    parser.add_argument("--field", default="desc", choices=["title", "desc"])
    parser.add_argument("--lang", default="de")
    parser.add_argument("--limit", type=int, default=1000, help="the first N topics (default: 1000)")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--executors", nargs="+", default=["local", "ray"], choices=["local", "ray"])
    args = parser.parse_args()
    topics = read_topics(args.topics)[: args.limit]
    print(f"{len(topics)} {args.field} topics of {args.topics}, model {args.model} ({args.kind}), "
          f"load before: {os.getloadavg()[0]:.2f}\n")
    print("| executor | workers | Ray start s | translation wall s | topics/s | identical to the first row |")
    print("|---|---|---|---|---|---|")
    first = None
    for executor in args.executors:
        for jobs in args.jobs:
            started = 0.0
            if executor == "ray":
                import ray

                start = time.perf_counter()
                with native_signal_handlers_kept():
                    ray.init(num_cpus=jobs, object_store_memory=200 * 1024 * 1024, include_dashboard=False,
                             log_to_driver=False)
                started = time.perf_counter() - start
            try:
                with tempfile.TemporaryDirectory(prefix="clirplug-model-") as folder:
                    model = cold_model(Path(args.model), Path(folder))
                    start = time.perf_counter()
                    texts, _, _ = translate_topics(topics, model, args.kind, args.lang, args.field, None,
                                                   ExecutorSettings(executor, jobs))
                    seconds = time.perf_counter() - start
            finally:
                if executor == "ray":
                    with native_signal_handlers_kept():
                        ray.shutdown()
            first = first or texts
            print(f"| {executor} | {jobs} | {started:.1f} | {seconds:.1f} | {len(topics) / seconds:.2f} | "
                  f"{'yes' if texts == first else 'NO'} |", flush=True)
    print(f"\nload after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
