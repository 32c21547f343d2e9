"""``clirplug demo``: the whole job on the embedded German-English demo collection."""

HELP = ("index the embedded German-English demo and score its BM25 floor and ceiling runs "
        "(the whole demo experiment: make demo)")


def add_arguments(parser):
    parser.add_argument("--workdir", default="demo-output", metavar="DIR",
                        help="folder for the demo's index, runs and scores (default: demo-output)")


def run(args):
    import shutil
    from pathlib import Path

    from clirplug.data import demo_path
    from clirplug.errors import ClirplugError
    from clirplug.eval.measures import evaluate
    from clirplug.io.qrels import read_qrels
    from clirplug.io.runs import write_run
    from clirplug.io.topics import read_topics
    from clirplug.lucene.index import build_index, index_metadata
    from clirplug.lucene.search import Bm25Searcher
    from clirplug.monolingual import floor_and_ceiling_queries

    demo, work = demo_path(), Path(args.workdir)
    index = work / "indexes" / "demo"
    if index.exists():  # rebuilt, but only when it is the index an earlier demo built
        if not (index.is_dir() and index_metadata(index).get("corpus") == str(demo / "corpus.jsonl")):
            raise ClirplugError(f"{index}: exists and is not the demo's index; choose another --workdir")
        shutil.rmtree(index)
    build_index(demo / "corpus.jsonl", index, language="en", progress=False)
    print(f"indexed the demo collection into {index}")
    topics = read_topics(demo / "topics.dev.jsonl")
    qrels = read_qrels(demo / "qrels.dev.txt")
    searcher = Bm25Searcher(index)
    queries = floor_and_ceiling_queries(topics, qrels, demo / "corpus.jsonl")
    runs = {}
    for name, texts in queries.items():
        runs[name] = searcher.search_all(texts, hits=1000, progress=False)
        path = work / "runs" / f"demo.dev.{name}.trec"
        write_run(runs[name], path, tag=name)
        print(f"wrote {path}")
    scores = evaluate(qrels, runs, ["MAP", "nDCG@10", "R@100", "PRES@100"])
    print(scores.pivot(index="run", columns="measure", values="value").round(4).to_string())
