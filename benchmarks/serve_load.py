"""Load test of `clirplug serve` on this machine: throughput and p50/p99 latency of GET /search.

Starts `clirplug serve` (a separate process, on 127.0.0.1 and a free port) with the given index,
model and method, sends --requests searches (the topics' titles in turn) from --clients concurrent
clients, and stops by itself once they are answered or --time-limit seconds have passed; then stops
the server and prints one Markdown row. Only 127.0.0.1 is ever sent a request.

Usage: .venv/bin/python benchmarks/serve_load.py --index demo-output/indexes/demo --model demo-output/models/demo
       --kind flat --method psq --topics "$(clirplug demo --path)/topics.dev.jsonl" [--requests 200] [--clients 4]
"""

import argparse
import json
import math
import re
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

CLI = [sys.executable, "-m", "clirplug"]


def load(url: str, queries: list[str], requests: int, clients: int, k: int = 10, time_limit: float = 300.0) -> dict:
    """Send ``requests`` ``GET url/search?q=...&k=k`` (``queries`` in turn) from ``clients`` threads.

    Returns ``{"seconds", "answers": [(query, status, latency, body), ...]}`` in the order sent; no
    request starts after ``time_limit`` seconds, and each waits at most 60 s for its answer.
    """
    if not url.startswith(("http://127.", "http://localhost", "http://[::1]")):
        raise ValueError(f"{url}: the load test sends requests to this machine only")
    answers: list = [None] * requests
    next_request, lock = iter(range(requests)), threading.Lock()
    start = time.perf_counter()

    def client():
        while time.perf_counter() - start < time_limit:
            with lock:
                i = next(next_request, None)
            if i is None:
                return
            query = queries[i % len(queries)]
            sent = time.perf_counter()
            try:
                with urllib.request.urlopen(f"{url}/search?" + urllib.parse.urlencode({"q": query, "k": k}),
                                            timeout=60) as response:
                    status, body = response.status, response.read()
            except urllib.error.HTTPError as error:
                status, body = error.code, error.read()
            answers[i] = (query, status, time.perf_counter() - sent, json.loads(body))

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"seconds": time.perf_counter() - start, "answers": [a for a in answers if a is not None]}


def percentile(values, q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def start_server(args) -> tuple[subprocess.Popen, str]:
    """`clirplug serve` on 127.0.0.1 and a free port; its process and base URL once it answers."""
    command = [*CLI, "serve", "--index", args.index, "--method", args.method, "--host", "127.0.0.1", "--port", "0"]
    if args.model:
        command += ["--model", args.model, "--kind", args.kind]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    found = re.search(r"http://[\d.]+:\d+", line)
    if not found:
        server.kill()
        raise SystemExit(f"clirplug serve did not start: {line.strip() or 'no output'}")
    return server, found.group(0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", required=True)
    parser.add_argument("--model")
    parser.add_argument("--kind", default="hiero")
    parser.add_argument("--method", default="dt")
    parser.add_argument("--topics", required=True, help="JSONL topics whose titles are the queries")
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--time-limit", type=float, default=300.0, help="no request starts after this many seconds")
    args = parser.parse_args()
    with open(args.topics, encoding="utf-8") as lines:
        queries = [json.loads(line)["title"] for line in lines if line.strip()]
    server, url = start_server(args)
    try:
        load(url, queries[:1], 1, 1, args.k)  # warm-up: the first query loads the language model
        result = load(url, queries, args.requests, args.clients, args.k, args.time_limit)
    finally:
        server.terminate()
        server.wait(timeout=60)
    answers = result["answers"]
    ok = sum(status == 200 for _, status, _, _ in answers)
    latencies = [latency * 1000 for _, _, latency, _ in answers]
    print("| method | requests (200 OK) | clients | seconds | requests/s | p50 ms | p99 ms | mean ms |")
    print("|---|---|---|---|---|---|---|---|")
    print(f"| {args.method} | {len(answers)} ({ok}) | {args.clients} | {result['seconds']:.2f} | "
          f"{len(answers) / result['seconds']:.1f} | {percentile(latencies, 0.5):.1f} | {percentile(latencies, 0.99):.1f} | "
          f"{statistics.mean(latencies):.1f} |")


if __name__ == "__main__":
    main()
