"""The stage kinds: the registry of the functions that run stages, what they share, and the generic kinds.

``STAGE_KINDS`` maps a stage kind to its function and code version: a function takes the stage and the run
:class:`Context` and returns a JSON-able dict of metrics kept in the stage record; its version is part of the
stage's cache key (bump it when its output changes). Stage functions are thin: they call the library functions
the command line and :mod:`clirplug.api` call with settings from the config, loaded objects kept in the
:class:`Context`, and write files atomically. This module holds the kinds every experiment has (the index,
training steps, folds, the floor and the ceilings, joined runs, the translation outputs); each method's own kinds
are in its planner's module (:mod:`clirplug.experiment.planners`).
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Callable

from clirplug.errors import ClirplugError
from clirplug.executor import ExecutorSettings, make_executor
from clirplug.experiment.plan import Stage, takes
from clirplug.methods import TRAINING

STAGE_KINDS: dict[str, tuple[Callable, int]] = {}


def stage_kind(name: str, version: int = 1):
    """Register a stage function under ``name``; bump ``version`` when its output changes."""

    def register(function):
        STAGE_KINDS[name] = (function, version)
        return function

    return register


class Context:
    """What stage functions share during one invocation: the config, the executor's settings
    (``--jobs``, ``--executor``), loaded objects."""

    def __init__(self, config, workers: ExecutorSettings = ExecutorSettings(), progress: bool = True,
                 plan_stages: dict | None = None):
        self.config, self.workers, self.progress = config, workers, progress
        self.plan_stages: dict[str, Stage] = plan_stages or {}  # every stage of the plan, by name (the report reads them)
        self._objects: dict = {}

    def get(self, key, make):
        """A loaded object (searcher, model) shared by the stages of this invocation."""
        if key not in self._objects:
            self._objects[key] = make()
        return self._objects[key]

    @property
    def jobs(self) -> int:
        return self.workers.jobs

    def forget(self, prefix: str) -> None:
        """Drop loaded objects whose key starts with ``prefix`` (after their files were rebuilt)."""
        for key in [k for k in self._objects if str(k).startswith(prefix)]:
            closer = getattr(self._objects.pop(key), "close", None)
            if closer is not None:
                closer()


@contextlib.contextmanager
def stdout_to_log():
    """The command modules print their summaries to stdout; in an experiment they go to the log."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


def train_for_run(stage: Stage, ctx: Context, step: str) -> None:
    """A run's training step (:data:`~clirplug.methods.TRAINING`) on the stage's ``arguments``, with the run's
    training ``settings``, its summary in the log; over the experiment's workers where the step takes ``jobs``."""
    s, training = stage.settings, TRAINING[step]
    settings = training.settings.from_mapping(s["settings"], f"runs.{s['run']}")
    workers = {"jobs": ctx.workers} if takes(training.train, "jobs") else {}
    with stdout_to_log():
        training.train(**s["arguments"], settings=settings, progress=False, **workers)


def signature(method: str, settings: dict) -> str:
    """A one-line reproducibility signature: ``method|key:value|...|v:<clirplug version>``."""
    from clirplug import __version__

    def flat(prefix, value):
        if isinstance(value, dict):
            for key in sorted(value):
                yield from flat(f"{prefix}.{key}" if prefix else key, value[key])
        else:
            yield f"{prefix}:{json.dumps(value, sort_keys=True) if isinstance(value, list) else value}"

    return "|".join([method, *flat("", settings), f"v:{__version__}"])


def percentile(values, q: float) -> float | None:
    """The ``q``-th percentile of ``values``, None for none."""
    import numpy as np

    return float(np.percentile(values, q)) if len(values) else None


def write_run_with_sidecar(stage: Stage, frame, latencies: dict[str, float], tuned: dict | None = None) -> dict:
    """Write the stage's run file and its ``.json`` sidecar; return the latency metrics."""
    from clirplug.atomic import atomic_open
    from clirplug.io.runs import write_run

    path = stage.outputs[0]
    run = stage.written_run
    write_run(frame, path, tag=f"{run['name']}.{run['field']}", depth=stage.settings.get("hits"))
    seconds = [latencies[qid] for qid in sorted(latencies)]
    metrics = {"queries": len(seconds), "latency_median": percentile(seconds, 50),
               "latency_p90": percentile(seconds, 90)}
    sidecar = {"run": run, "file": path.name, "signature": signature(run["method"], stage.settings),
               "settings": stage.settings, "tuned": tuned or {}, **metrics,
               "latency_seconds": {qid: round(latencies[qid], 6) for qid in sorted(latencies)}}
    with atomic_open(path.with_suffix(".json")) as handle:
        json.dump(sidecar, handle, indent=1, sort_keys=True)
        handle.write("\n")
    return metrics


def bm25_searcher(ctx: Context, index: str, bm25: dict):
    """The invocation's BM25 searcher of ``index`` with settings ``bm25``."""
    from clirplug.lucene.search import Bm25Searcher

    return ctx.get(f"{index}|bm25|{bm25['k1']}|{bm25['b']}", lambda: Bm25Searcher(index, bm25["k1"], bm25["b"]))


def bm25_stage(ctx: Context, stage: Stage, queries: dict[str, str], latencies: dict[str, float] | None = None,
               rm3=None, tuned: dict | None = None) -> dict:
    """The stage's run: BM25 of ``qid -> text`` (:meth:`~clirplug.lucene.search.Bm25Searcher.search_all`; with
    ``rm3``, a :class:`clirplug.lucene.rm3.Rm3`, expanded by RM3, and the ``tuned`` settings in its sidecar); a
    query's latency is its search seconds plus its entry in ``latencies`` (e.g. translation)."""
    s = stage.settings
    latencies = dict(latencies or {})
    frame = bm25_searcher(ctx, s["index"], s["bm25"]).search_all(queries, s["hits"], ctx.progress, latencies, rm3=rm3)
    return write_run_with_sidecar(stage, frame, latencies, tuned=tuned)


# ----------------------------------------------------------------------------- generic stage kinds

@stage_kind("index")
def index_stage(stage: Stage, ctx: Context) -> dict:
    """Lucene index of the collection (:func:`clirplug.lucene.index.build_index`)."""
    import shutil

    from clirplug.lucene.index import METADATA, build_index, index_metadata

    out = stage.outputs[0]
    ctx.forget(str(out))
    if out.exists():
        if not (out / METADATA).is_file() or "corpus" not in index_metadata(out):  # none, or recorded by --existing
            raise ClirplugError(f"{out}: exists and is not a clirplug index; refusing to replace it "
                                "(move it away, or choose another collection.name or root)")
        shutil.rmtree(out)  # the experiment's own index, from other settings: rebuilt
    corpus = (stage.inputs or stage.inputs_from)[0]  # the collection's pages, or the passages stage's file
    return build_index(corpus, out, language=stage.settings["language"], progress=ctx.progress)


@stage_kind("passages")
def passages_stage(stage: Stage, ctx: Context) -> dict:
    """The collection's pages cut into passages (:func:`clirplug.passages.write_passages`)."""
    from clirplug.passages import write_passages

    return write_passages(stage.inputs[0], stage.outputs[0], stage.settings["words"], progress=ctx.progress)


@stage_kind("maxp")
def maxp_stage(stage: Stage, ctx: Context) -> dict:
    """A passage run's page run, each page scored by its best passage (:func:`clirplug.passages.max_passage`);
    the passage run's latencies and tuned settings are kept."""
    from clirplug.io.runs import read_run
    from clirplug.passages import max_passage

    passages = stage.inputs_from[0]
    sidecar = json.loads(passages.with_suffix(".json").read_text(encoding="utf-8"))
    frame = max_passage(read_run(passages), stage.settings["hits"], stage.settings["delimiter"])
    latencies = {qid: float(seconds) for qid, seconds in sidecar["latency_seconds"].items()}
    return write_run_with_sidecar(stage, frame, latencies, tuned=sidecar.get("tuned"))


@stage_kind("train", version=3)
def train_stage(stage: Stage, ctx: Context) -> dict:
    """A training step (:mod:`clirplug.train`) with the stage's arguments (the step keeps its own records)."""
    s = stage.settings
    step = TRAINING[s["model"]]
    settings = step.settings.from_mapping(s["settings"], f"models.{s['model']}")
    with stdout_to_log():
        step.train(**s["arguments"], settings=settings, **({"progress": ctx.progress} if takes(step.train, "progress") else {}))
    ctx.forget(str(ctx.config.model_dir))
    return {}


@stage_kind("floor")
def floor_stage(stage: Stage, ctx: Context) -> dict:
    """BM25 with the untranslated topic field (the floor)."""
    from clirplug.io.topics import read_topics, topic_field

    return bm25_stage(ctx, stage, {t.id: topic_field(t, stage.written_run["field"]) for t in read_topics(stage.inputs[0])})


@stage_kind("ceiling")
def ceiling_stage(stage: Stage, ctx: Context) -> dict:
    """BM25 with the English mate's title (:func:`clirplug.monolingual.mate_title_queries`)."""
    from clirplug.io.qrels import read_qrels
    from clirplug.monolingual import mate_title_queries

    return bm25_stage(ctx, stage, mate_title_queries(read_qrels(stage.inputs[0]), stage.inputs[1]))


@stage_kind("ceiling-desc")
def ceiling_desc_stage(stage: Stage, ctx: Context) -> dict:
    """BM25 with the English mate's desc opening, or its title where the bitext aligns none
    (:func:`clirplug.mt.queries.mate_desc_queries`)."""
    from clirplug.io.qrels import read_qrels
    from clirplug.io.topics import read_topics
    from clirplug.mt.queries import mate_desc_queries

    qrels, corpus, topics, *bitext = stage.inputs
    queries, openings = mate_desc_queries(read_topics(topics), read_qrels(qrels), corpus, bitext)
    return {**bm25_stage(ctx, stage, queries), "desc_openings": openings, "mate_titles": len(queries) - openings}


@stage_kind("folds")
def folds_stage(stage: Stage, ctx: Context) -> dict:
    """Cross-fitting folds (:mod:`clirplug.crossfit`): each fold's topics, and the bitext without its pages."""
    from clirplug.atomic import atomic_open
    from clirplug.crossfit import fold_of, held_out_lines, page_name, read_ids
    from clirplug.io.topics import read_topics

    folds = stage.settings["folds"]
    topics_path, src_path, tgt_path, ids_path = stage.inputs
    topics = read_topics(topics_path)
    src = src_path.read_text(encoding="utf-8").splitlines()
    tgt = tgt_path.read_text(encoding="utf-8").splitlines()
    if len(src) != len(tgt):
        raise ClirplugError(f"{src_path}: {len(src)} lines, but {tgt_path} has {len(tgt)}")
    ids = read_ids(ids_path, len(src))
    fold = fold_of([t.id for t in topics], folds)
    metrics: dict[str, list[int]] = {"topics": [], "bitext_lines": []}
    for k in range(folds):
        mine = [t for t in topics if fold[t.id] == k]
        kept = [not out for out in held_out_lines(ids, {page_name(t.id) for t in mine})]
        files = iter(stage.outputs[3 * k: 3 * k + 3])
        with atomic_open(next(files)) as out:
            for topic in mine:
                record = {"id": topic.id, "title": topic.title, "desc": topic.desc} | ({"narr": topic.narr} if topic.narr else {})
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
        for path, lines in zip(files, (src, tgt)):
            with atomic_open(path) as out:
                out.writelines(line + "\n" for line, keep in zip(lines, kept) if keep)
        metrics["topics"].append(len(mine))
        metrics["bitext_lines"].append(sum(kept))
    return metrics


@stage_kind("copy")
def copy_stage(stage: Stage, ctx: Context) -> dict:
    """A file copied from another stage's output (a fold model's decoder weights)."""
    from clirplug.atomic import atomic_open

    with atomic_open(stage.outputs[0]) as out:
        out.write(stage.inputs_from[0].read_text(encoding="utf-8"))
    return {}


@stage_kind("join")
def join_stage(stage: Stage, ctx: Context) -> dict:
    """The runs of a split's parts (cross-fitting folds) as one run file, in part order."""
    import pandas as pd

    from clirplug.io.runs import read_run

    frames, latencies, tuned = [], {}, {}
    for path in stage.inputs_from:
        frames.append(read_run(path))
        sidecar = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
        latencies.update(sidecar["latency_seconds"])
        tuned[path.name] = sidecar.get("tuned", {})
    return write_run_with_sidecar(stage, pd.concat(frames, ignore_index=True), latencies, tuned={"parts": tuned})


def _mt_eval_chunk(task):
    """Worker: the 1-best words and the seconds of each of some bitext lines (a line longer than
    MAX_SENTENCE_TOKENS is decoded in chunks, their 1-bests joined), or translated word by word
    (:func:`clirplug.mt.lexicon.word_by_word`)."""
    model, output, lang, lines = task
    if output == "word-by-word":
        from clirplug.mt.lexicon import word_by_word

        translate = word_by_word(model, lang)
    else:
        from clirplug.mt.translator import Translator

        translator = Translator(model, kind=output, src_lang=lang, cache=False)
        translator.restrict([tokens for line in lines for tokens in translator.sentences(line, split=False)])

        def translate(line):
            bests = [translator.translate(tokens, 1) for tokens in translator.sentences(line, split=False)]
            return [word for best in bests if best for word in best[0].words]
    hypotheses, seconds = [], []
    for line in lines:
        start = time.perf_counter()
        hypotheses.append(translate(line))
        seconds.append(time.perf_counter() - start)
    return hypotheses, seconds


@stage_kind("mt-eval")
def mt_eval_stage(stage: Stage, ctx: Context) -> dict:
    """Translate the first lines of a bitext, timed per sentence, the lines dealt round-robin over ``--jobs``
    workers (each loads the model restricted to its lines; the translations do not depend on the number of
    workers); BLEU against its reference side."""
    from clirplug.atomic import atomic_open
    from clirplug.mt.preprocess import preprocess
    from clirplug.mt.tune import corpus_bleu

    s = stage.settings
    source = stage.inputs[0].read_text(encoding="utf-8").splitlines()[: s["lines"]]
    reference = stage.inputs[1].read_text(encoding="utf-8").splitlines()[: s["lines"]]
    chunks = 1 if s["output"] == "word-by-word" else max(1, min(ctx.workers.jobs, len(source)))
    tasks = [(s["model"], s["output"], s["lang"], source[i::chunks]) for i in range(chunks)]
    with make_executor(ctx.workers) as executor:  # a single task runs in this process
        results = executor.map(_mt_eval_chunk, tasks)
    hypotheses: list[list[str]] = [[] for _ in source]
    seconds = [0.0] * len(source)
    for i, (part, part_seconds) in enumerate(results):
        hypotheses[i::chunks], seconds[i::chunks] = part, part_seconds
    with atomic_open(stage.outputs[0]) as out:
        out.writelines(" ".join(words) + "\n" for words in hypotheses)
    references = [preprocess(line, s["doc_lang"]) for line in reference]
    return {"output": s["output"], "file": str(stage.outputs[0]), "sentences": len(source),
            "bleu": corpus_bleu(hypotheses, references),
            "seconds_median": percentile(seconds, 50), "seconds_p90": percentile(seconds, 90)}


@stage_kind("source-text", version=2)
def source_text_stage(stage: Stage, ctx: Context) -> dict:
    """Every topic field of the splits and the bitext lines the experiment decodes, a text a line: the first
    lines of bitexts, and with ``desc_queries`` the source side of the tune split's parallel desc queries
    (:func:`clirplug.mt.queries.parallel_queries`; a bitext line, which may run past its desc)."""
    from clirplug.atomic import atomic_open
    from clirplug.io.topics import read_topics, topic_field
    from clirplug.mt.queries import parallel_queries

    s = stage.settings
    inputs = stage.inputs[: len(stage.inputs) - 4] if s.get("desc_queries") else stage.inputs
    bitexts = inputs[len(inputs) - len(s["lines"]):]
    lines = []
    for path in inputs[: len(inputs) - len(s["lines"])]:
        lines += [topic_field(t, fld) for t in read_topics(path) for fld in s["fields"]]
    for path, count in zip(bitexts, s["lines"]):
        lines += path.read_text(encoding="utf-8").splitlines()[:count]
    if s.get("desc_queries"):
        topics, *bitext = stage.inputs[len(inputs):]
        lines += [f for f, _ in parallel_queries(read_topics(topics), "desc", bitext=bitext).values()]
    with atomic_open(stage.outputs[0]) as out:
        out.writelines(" ".join(line.split()) + "\n" for line in lines if line.strip())
    return {"lines": len(lines)}




@stage_kind("oov")
def oov_stage(stage: Stage, ctx: Context) -> dict:
    """Untranslated query words of one split and field (:func:`clirplug.mt.oov.topics_oov`), each part's topics by
    its own model: a TSV of ``qid, tokens, untranslated words``; the split's share of query tokens as metrics."""
    from clirplug.atomic import atomic_open
    from clirplug.io.topics import read_topics
    from clirplug.mt.oov import oov_share, topics_oov

    s = stage.settings
    topics = [oov for path, model in s["parts"] for oov in topics_oov(read_topics(path), s["field"], model, s["lang"])]
    with atomic_open(stage.outputs[0]) as out:
        out.write("qid\ttokens\tuntranslated\n")
        out.writelines(f"{t.qid}\t{t.tokens}\t{' '.join(t.untranslated)}\n" for t in topics)
    return {"split": s["split"], "field": s["field"], **oov_share(topics)}


@stage_kind("dictionary-segmentation")
def dictionary_segmentation_stage(stage: Stage, ctx: Context) -> dict:
    """How the model's preprocessor (the bitext's and the queries' segmentation) cuts the dictionary's source
    terms (:func:`clirplug.mt.oov.dictionary_segmentation`), as JSON and metrics."""
    from pathlib import Path

    from clirplug.atomic import atomic_open
    from clirplug.mt.lexicon import LexicalTable
    from clirplug.mt.oov import TABLE, dictionary_segmentation
    from clirplug.mt.preprocess import preprocessor

    s = stage.settings
    counts = dictionary_segmentation(stage.inputs[0], s["lang"], preprocessor(s["lang"], s["model"]),
                                     LexicalTable.load(Path(s["model"]) / TABLE))
    with atomic_open(stage.outputs[0]) as out:
        json.dump(counts, out, indent=1, ensure_ascii=False)
        out.write("\n")
    return counts
