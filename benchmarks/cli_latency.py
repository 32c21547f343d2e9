"""Start-up latency of the CLI: `clirplug --help`, and the time until `clirplug search` on the
manclir-de index has answered its first query (JVM start, index open, first search).

Usage: .venv/bin/python benchmarks/cli_latency.py [--index indexes/manclir-de] [--repeat 5]
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = str(Path(sys.executable).with_name("clirplug"))


def seconds(command):
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", default="indexes/manclir-de")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        topic = Path(tmp) / "one.tsv"
        topic.write_text("ls.1\tVerzeichnisinhalte auflisten\n", encoding="utf-8")
        search = [CLI, "search", "--index", args.index, "--topics", str(topic), "--output", str(Path(tmp) / "r.trec"), "--quiet"]
        help_times = [seconds([CLI, "--help"]) for _ in range(args.repeat)]
        search_times = [seconds(search) for _ in range(args.repeat)]
    print("| command | median s | max s |")
    print("|---|---|---|")
    print(f"| `clirplug --help` | {statistics.median(help_times):.3f} | {max(help_times):.3f} |")
    print(f"| `clirplug search` (1 topic, manclir-de, whole process) | {statistics.median(search_times):.3f} | {max(search_times):.3f} |")


if __name__ == "__main__":
    main()
