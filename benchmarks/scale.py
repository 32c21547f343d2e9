"""How each method's cost grows with the collection: per-query latency, peak memory, index size.

Usage::

    nice .venv/bin/python benchmarks/scale.py --model DIR --index small=INDEX --index large=INDEX2 \\
        --corpus small=CORPUS --corpus large=CORPUS2 --topics ../shared/data/manclir-de/topics.dev.jsonl \\
        --methods bm25 dt psq bowfd boost [--options 'OPTIONS.{field}.json'] [--limit 100] [--fields title desc] \\
        [--k 1000] [--decode] [--baseline dt]

Each method is built through the registry (:func:`clirplug.api.compose`) from the collection's index and corpus,
the model folder ``--model`` (loaded with the flat grammar, for the methods that need one) and ``--options``: a
JSON file (``{field}`` in its name is replaced by the field measured) of each method's searcher arguments
(``{"psq": {"settings": "..."}, "bowfd": {"first_stage": "dt", "weights": "{model}/bowfd.bowfd.{field}.weights",
"settings": {"field": "{field}"}}, "boost": {"model": "{model}/boost.boost.{field}.npz"}}``: ``{model}`` and
``{field}`` are replaced in every string); a searcher that reads queries by ``field`` reads the field measured.
The experiment writes the models named there in the model folder. Each (collection, method, field) runs in a
fresh spawned process, which loads its searcher and answers the first topic once (both timed apart: a searcher reads some
data on first use, e.g. PSQ the document vectors), then searches the first ``--limit`` topics one at a time
through the Python API (``searcher.search(query, k)``, ``--k`` 1000 by default), timing each query's wall clock;
the process's peak resident memory (Python, the JVM and the models) is read at its end.

Translations: DT's 1-best and PSQ's n-best lists come from the model's translation cache
(``MODEL/cache/``) when it holds them (one entry per sentence, the longest list computed so far: an
experiment's PSQ stages, or ``clirplug translate --nbest N``, fill it for both), so their latencies are
then the cache read, the query's table and the search; with ``--decode`` the cache is off and both
decode every query (DT its 1-best, PSQ its ``nbest`` list off the same forest). Prints a markdown
table with the growth ratio (large / small) per method and field, and with ``--baseline METHOD`` each
method's median latency as a multiple of that method's in the same collection and field, and the median CPU time
of the process per query (all its threads, the JVM's too: less sensitive than the latency to other jobs sharing
the machine) as one.
"""

import argparse
import json
import multiprocessing
import resource
import statistics
import time
from pathlib import Path


def _filled(value, **names):
    """``value`` (JSON) with ``{model}`` and ``{field}`` replaced in every string."""
    if isinstance(value, str):
        return value.format(**names)
    if isinstance(value, dict):
        return {key: _filled(item, **names) for key, item in value.items()}
    if isinstance(value, list):
        return [_filled(item, **names) for item in value]
    return value


def _searcher(method, field, index, corpus, model_dir, options, cache=True):
    import inspect

    from clirplug import api
    from clirplug.methods import METHODS

    options = _filled(options, model=model_dir, field=field)
    for name in api.system(method, options):
        if "field" in inspect.signature(METHODS[name].searcher_class()).parameters:
            options.setdefault(name, {}).setdefault("field", field)
    model = (api.TranslationModel(model_dir, kind="flat", cache=cache) if "model" in api.needs(method, options)
             else None)
    return api.compose(method, options, index=index, model=model, corpus=corpus)


def measure(task) -> dict:
    """One (collection, method, field): load the searcher, then time each query; peak memory at the end."""
    method, field, index, corpus, model_dir, options, topics_path, limit, k, cache = task
    from clirplug.io.topics import read_topics, topic_field

    start = time.perf_counter()
    searcher = _searcher(method, field, index, corpus, model_dir, options, cache)
    load = time.perf_counter() - start
    topics = read_topics(topics_path)[:limit]
    start = time.perf_counter()
    searcher.search(topic_field(topics[0], field), k=k)  # loads what a searcher reads on first use
    first = time.perf_counter() - start
    seconds, cpu = [], []
    for topic in topics:
        start, start_cpu = time.perf_counter(), time.process_time()
        searcher.search(topic_field(topic, field), k=k)
        seconds.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    seconds.sort()
    return {"load_s": load, "first_s": first, "median_ms": 1000 * statistics.median(seconds),
            "p90_ms": 1000 * seconds[int(0.9 * (len(seconds) - 1))], "cpu_median_ms": 1000 * statistics.median(cpu),
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "queries": len(seconds)}


def folder_mb(path) -> float:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file()) / 2 ** 20


def index_mb(index) -> tuple[float, float]:
    """MB of the Lucene index and of clirplug's document-vector cache in it (``clirplug/``, written on first use)."""
    cache = Path(index) / "clirplug"
    cached = folder_mb(cache) if cache.is_dir() else 0.0
    return folder_mb(index) - cached, cached


def read_options(pattern, field) -> dict:
    """The searcher arguments of ``--options`` for ``field``; a one-line exit when the file is missing or not JSON."""
    path = Path(pattern.format(field=field))
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise SystemExit(f"--options {pattern}: {path}: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise SystemExit(f"--options {pattern}: {path}: line {error.lineno}: {error.msg}") from None


def pairs(values, what):
    result = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep:
            raise SystemExit(f"--{what} {value!r}: expected NAME=PATH")
        result[name] = path
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--index", action="append", required=True, help="NAME=INDEX, e.g. small=indexes/manclir-de")
    parser.add_argument("--corpus", action="append", default=[], help="NAME=CORPUS (boosting reads the documents)")
    parser.add_argument("--topics", required=True)
    parser.add_argument("--options", help="JSON file of each method's searcher arguments; {field} is replaced (see above)")
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--fields", nargs="+", default=["title", "desc"])
    parser.add_argument("--methods", nargs="+", required=True, help="methods of clirplug.methods.METHODS")
    parser.add_argument("--k", type=int, default=1000, help="documents per query (default: 1000)")
    parser.add_argument("--decode", action="store_true", help="no translation cache: DT and PSQ decode every query")
    parser.add_argument("--baseline", help="a method of --methods: each median latency as a multiple of its own")
    args = parser.parse_args()
    if args.baseline is not None and args.baseline not in args.methods:
        raise SystemExit(f"--baseline {args.baseline}: not one of --methods")
    indexes, corpora = pairs(args.index, "index"), pairs(args.corpus, "corpus")
    options = {field: read_options(args.options, field) if args.options else {} for field in args.fields}
    context = multiprocessing.get_context("spawn")
    sizes = {}
    for name, index in indexes.items():
        with context.Pool(1) as pool:  # the JVM stays out of this process
            sizes[name] = pool.apply(_documents, (index,))
    results = {}
    for method in args.methods:
        for field in args.fields:
            for name, index in indexes.items():
                task = (method, field, index, corpora.get(name), args.model, options[field], args.topics, args.limit,
                        args.k, not args.decode)
                with context.Pool(1, maxtasksperchild=1) as pool:
                    results[method, field, name] = pool.apply(measure, (task,))
                print(f"measured {method} {field} {name}: {results[method, field, name]}", flush=True)
    print("\n| collection | documents | Lucene index MB | document-vector cache MB |\n|---|---|---|---|")
    for name, index in indexes.items():
        lucene, cached = index_mb(index)
        print(f"| {name} | {sizes[name]:,} | {lucene:.0f} | {cached:.0f} |")
    names = list(indexes)
    print("\n| method | field | " + " | ".join(f"{n} first query s | {n} median ms | {n} p90 ms | {n} peak MB"
                                              for n in names) + " | median ratio | peak ratio |")
    print("|---|---|" + "---|---|---|---|" * len(names) + "---|---|")
    for method in args.methods:
        for field in args.fields:
            rows = [results[method, field, n] for n in names]
            cells = " | ".join(f"{r['first_s']:.1f} | {r['median_ms']:.1f} | {r['p90_ms']:.1f} | {r['peak_mb']:.0f}"
                               for r in rows)
            print(f"| {method} | {field} | {cells} | {rows[-1]['median_ms'] / rows[0]['median_ms']:.2f} | "
                  f"{rows[-1]['peak_mb'] / rows[0]['peak_mb']:.2f} |")
    if args.baseline is not None:
        print("\n| method | field | " + " | ".join(f"{n}: median / {args.baseline}'s | {n}: CPU ms median | "
                                              f"{n}: CPU / {args.baseline}'s" for n in names) + " |")
        print("|---|---|" + "---|---|---|" * len(names))
        for method in args.methods:
            for field in args.fields:
                ratios = " | ".join(f"{r['median_ms'] / base['median_ms']:.2f} | {r['cpu_median_ms']:.1f} | "
                                    f"{r['cpu_median_ms'] / base['cpu_median_ms']:.2f}" for n in names
                                    for r, base in [(results[method, field, n], results[args.baseline, field, n])])
                print(f"| {method} | {field} | {ratios} |")


def _documents(index) -> int:
    from clirplug.lucene.reader import LuceneIndex

    return LuceneIndex(index, progress=False).num_docs


if __name__ == "__main__":
    main()
