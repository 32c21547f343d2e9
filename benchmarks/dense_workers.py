"""Wall time of embedding a collection (``clirplug.dense.embed_corpus``) by workers and engine threads.

Usage: nice .venv/bin/python benchmarks/dense_workers.py --corpus FILE [--limit 640] [--words 48] [--chunk 64]
           [--encoder e5] [--rows 1x2 2x1 2x1 1x2]

Each row ``WxT`` embeds the first ``limit`` documents of the corpus into an empty folder in a new Python process
(the first model of a process sets its OpenMP threads): ``W`` = 1 embeds here on ``T`` engine threads, ``W`` > 1
over that many local workers of one thread each (``T`` must then be 1). The timed part is the whole
``embed_corpus`` call: the model loaded (by each worker, after its spawning), every chunk embedded and saved,
``embeddings.npy`` written. Prints a markdown table, the load average around each row, and whether each row's
``embeddings.npy`` and ``docids.json`` are byte-identical to the first row's.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def one_row(corpus: str, folder: str, words: int, chunk: int, encoder: str, workers: int, threads: int) -> None:
    """Embed ``corpus`` into ``folder`` and print the wall seconds (run in its own process)."""
    from clirplug import dense

    start = time.perf_counter()
    dense.embed_corpus(corpus, folder, words, chunk=chunk, progress=False, encoder=encoder, workers=workers,
                       threads=threads)
    print(time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True, help="JSONL documents")
    parser.add_argument("--limit", type=int, default=640, help="the first N documents (default: 640)")
    parser.add_argument("--words", type=int, default=48)
    parser.add_argument("--chunk", type=int, default=64, help="documents a chunk (a task; default: 64)")
    parser.add_argument("--encoder", default="e5", choices=["e5", "use-m3"])
    parser.add_argument("--rows", nargs="+", default=["1x2", "2x1", "2x1", "1x2"], help="WORKERSxTHREADS each")
    parser.add_argument("--one", nargs=3, help=argparse.SUPPRESS)  # folder workers threads: a row's process
    args = parser.parse_args()
    if args.one:
        folder, workers, threads = args.one
        one_row(args.corpus, folder, args.words, args.chunk, args.encoder, int(workers), int(threads))
        return
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.jsonl"
        with open(args.corpus, encoding="utf-8") as source:
            corpus.write_text("".join(line for _, line in zip(range(args.limit), source)), encoding="utf-8")
        documents = len(corpus.read_text(encoding="utf-8").splitlines())
        print(f"{documents} documents of {args.corpus}, {args.encoder}, words {args.words}, chunks of {args.chunk}\n")
        print("| workers x threads | wall s | documents/s | load avg before / after | identical to the first row |")
        print("|---|---|---|---|---|")
        first = None
        for number, row in enumerate(args.rows):
            workers, threads = (int(part) for part in row.split("x"))
            if workers > 1 and threads != 1:
                parser.error(f"--rows {row}: workers embed on one thread each")
            folder = Path(tmp) / f"row{number}"
            before = os.getloadavg()[0]
            done = subprocess.run([sys.executable, __file__, "--corpus", str(corpus), "--words", str(args.words), "--chunk", str(args.chunk),
                                   "--encoder", args.encoder, "--one", str(folder), str(workers),
                                   str(threads)], capture_output=True, text=True, check=True)
            seconds = float(done.stdout.split()[-1])
            files = tuple((folder / name).read_bytes() for name in ("embeddings.npy", "docids.json"))
            first = first or files
            assert json.loads(files[1])["docids"], "no documents embedded"
            print(f"| {workers} x {threads} | {seconds:.1f} | {documents / seconds:.1f} | "
                  f"{before:.1f} / {os.getloadavg()[0]:.1f} | {'yes' if files == first else 'NO'} |", flush=True)


if __name__ == "__main__":
    main()
