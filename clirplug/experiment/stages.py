"""Experiment stages: the registry of stage kinds, the methods a config can name, the plan.

A :class:`Stage` declares everything its outputs depend on: external input files (hashed
by content), the stages it reads from (``deps``, by their cache keys) and its settings.
Its cache key is the SHA-256 of those plus the stage kind's code version
(:func:`clirplug.experiment.records.stage_key`). Stage functions are thin: they call the
library functions the command line and :mod:`clirplug.api` call (indexing, BM25, DT, PSQ,
boosting, BOW-FD, fusion, the ``clirplug train`` steps) with settings from the config, loaded
objects kept in the :class:`Context`, and write files atomically.

Two registries make the plug-in points:

* ``STAGE_KINDS``: stage kind -> (function, code version); a function takes the stage and
  the run context and returns a JSON-able dict of metrics kept in the stage record.
* ``PLANNERS``: method name of a ``runs:`` entry -> the planner that adds its stages (the
  entry's settings class: :data:`clirplug.methods.RUNS`). ``MODELS``: the ``models:`` entries
  (trained with ``clirplug train <what>``).

Run files are ``runs/<experiment>/<split>.<field>.<run>.trec`` with a ``.json`` sidecar
(settings signature, tuned parameters, per-query latencies).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from clirplug import plots
from clirplug.errors import ClirplugError
from clirplug.executor import ExecutorSettings, make_executor
from clirplug.io.runs import run_frame
from clirplug.resources import peak_rss_mb


@dataclass
class Stage:
    """One unit of work with declared inputs, settings and outputs.

    ``run`` is set for stages that write a run file: ``{"name", "method", "split", "field"}``.
    """

    name: str
    kind: str
    settings: dict
    inputs: tuple = ()
    deps: tuple = ()
    outputs: tuple = ()
    run: dict | None = None
    inputs_from: tuple = ()  # files written by ``deps`` that the stage reads (covered by their keys)


# ----------------------------------------------------------------------------- registries

STAGE_KINDS: dict[str, tuple[Callable, int]] = {}


def stage_kind(name: str, version: int = 1):
    """Register a stage function under ``name``; bump ``version`` when its output changes."""

    def register(function):
        STAGE_KINDS[name] = (function, version)
        return function

    return register


@dataclass(frozen=True)
class Model:
    """An entry of ``models:``: a training step, how the experiment calls it, what it writes.

    ``arguments(config, src, tgt, kind, out)`` returns the step's keyword arguments (JSON values)
    for the model folder ``out``, its input files and its output files; ``needs`` names the models
    trained before it.
    """

    settings: type
    train: Callable  # the training step, called with the arguments and ``settings=``
    arguments: Callable
    needs: tuple = ()
    per_kind: bool = False  # one model per grammar kind (hiero, flat)
    filtered: bool = False  # gets ``filter=``: the source text the experiment translates
    progress: bool = False  # gets ``progress=``: the experiment's (not part of the stage's key)


def _align_arguments(config, src, tgt, kind, out):
    coll = config.collection
    arguments = {"src": str(src), "tgt": str(tgt), "out": str(out), "src_lang": coll.lang, "tgt_lang": coll.doc_lang}
    inputs = (src, tgt)
    if coll.dictionary.is_file():
        arguments["dictionary"] = str(coll.dictionary)
        inputs += (coll.dictionary,)
    return arguments, inputs, (out / "lex.e_given_f.npz", out / "lex.f_given_e.npz", out / f"align.{coll.lang}-{coll.doc_lang}")


def _grammar_arguments(config, src, tgt, kind, out):
    coll = config.collection
    return {"model": str(out), "kind": kind, "src_lang": coll.lang, "tgt_lang": coll.doc_lang}, (), (out / f"grammar.{kind}.gz",)


def _lm_arguments(config, src, tgt, kind, out):
    return {"output": str(out / "lm.arpa"), "texts": [str(tgt)], "lang": config.collection.doc_lang}, (tgt,), (out / "lm.arpa",)


def _weights_arguments(config, src, tgt, kind, out):
    coll = config.collection
    arguments = {"model": str(out), "kind": kind, "src": str(src), "tgt": str(tgt),
                 "src_lang": coll.lang, "tgt_lang": coll.doc_lang}
    return arguments, (src, tgt), (out / f"weights.{kind}",)


def _models() -> dict:
    from clirplug.train.align import AlignSettings, train_align
    from clirplug.train.grammar import GrammarSettings, train_grammar
    from clirplug.train.lm import LmSettings, train_lm
    from clirplug.train.weights import WeightsSettings, train_weights_on_bitext

    return {
        "align": Model(AlignSettings, train_align, _align_arguments, progress=True),
        "grammar": Model(GrammarSettings, train_grammar, _grammar_arguments,
                         needs=("align",), per_kind=True, filtered=True, progress=True),
        "lm": Model(LmSettings, train_lm, _lm_arguments),
        "weights": Model(WeightsSettings, train_weights_on_bitext, _weights_arguments,
                         needs=("align", "grammar", "lm"), per_kind=True),
    }


MODELS: dict[str, Model] = _models()


# ----------------------------------------------------------------------------- settings

def check_models(raw, where: str) -> dict:
    """The ``models:`` mapping: ``name -> settings`` of its training step, checked."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ClirplugError(f"{where}: expected a mapping of model -> settings")
    result = {}
    for name, options in raw.items():
        if name not in MODELS:
            raise ClirplugError(f"{where}.{name}: unknown model (known: {', '.join(MODELS)})")
        options = dict(options or {})
        MODELS[name].settings.from_mapping(options, f"{where}.{name}")
        result[name] = dict(sorted(options.items()))
    return result


# ----------------------------------------------------------------------------- context

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
def _stdout_to_stderr():
    """The command modules print their summaries to stdout; in an experiment they go to the log."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


def run_file(config, split: str, fld: str, name: str) -> Path:
    return config.run_dir / f"{split}.{fld}.{name}.trec"


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
    import numpy as np

    return float(np.percentile(values, q)) if len(values) else None


def write_run_with_sidecar(stage: Stage, frame, latencies: dict[str, float], tuned: dict | None = None) -> dict:
    """Write the stage's run file and its ``.json`` sidecar; return the latency metrics."""
    from clirplug.atomic import atomic_open
    from clirplug.io.runs import write_run

    path = stage.outputs[0]
    run = stage.run
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


def _bm25_searcher(ctx: Context, index: str, bm25: dict):
    from clirplug.lucene.search import Bm25Searcher

    return ctx.get(f"{index}|bm25|{bm25['k1']}|{bm25['b']}", lambda: Bm25Searcher(index, bm25["k1"], bm25["b"]))


def _bm25_stage(ctx: Context, stage: Stage, queries: dict[str, str], latencies: dict[str, float] | None = None) -> dict:
    """The stage's run: BM25 of ``qid -> text`` (:meth:`~clirplug.lucene.search.Bm25Searcher.search_all`);
    a query's latency is its search seconds plus its entry in ``latencies`` (e.g. translation)."""
    s = stage.settings
    latencies = dict(latencies or {})
    frame = _bm25_searcher(ctx, s["index"], s["bm25"]).search_all(queries, s["hits"], ctx.progress, latencies)
    return write_run_with_sidecar(stage, frame, latencies)


# ----------------------------------------------------------------------------- stage kinds

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
    return build_index(stage.inputs[0], out, language=stage.settings["language"], progress=ctx.progress)


@stage_kind("train", version=3)
def train_stage(stage: Stage, ctx: Context) -> dict:
    """A training step (:mod:`clirplug.train`) with the stage's arguments (the step keeps its own records)."""
    s = stage.settings
    model = MODELS[s["model"]]
    settings = model.settings.from_mapping(s["settings"], f"models.{s['model']}")
    with _stdout_to_stderr():
        model.train(**s["arguments"], settings=settings, **({"progress": ctx.progress} if model.progress else {}))
    ctx.forget(str(ctx.config.model_dir))
    return {}


@stage_kind("query-weights", version=3)
def query_weights_stage(stage: Stage, ctx: Context) -> dict:
    """Decoder weights tuned on parallel queries (:func:`clirplug.train.weights.query_pairs`).

    When the tune split yields no parallel query of the field (a collection whose bitext names no
    page), the model's own weights are written instead, and the log and the stage record say so.
    """
    from clirplug.mt.features import DEFAULT_WEIGHTS, read_weights, write_weights
    from clirplug.train.weights import WeightsSettings, query_pairs, train_weights

    s = stage.settings
    a = s["arguments"]
    settings = WeightsSettings.from_mapping(s["settings"], "models.weights")
    with _stdout_to_stderr():
        pairs, origin = query_pairs(a["queries"], a["field"], corpus=a.get("corpus"), bitext=a.get("bitext"))
        if pairs:
            train_weights(a["model"], a["kind"], pairs, origin, settings, src_lang=a["src_lang"],
                          tgt_lang=a["tgt_lang"], output=a["output"])
            return {"queries": len(pairs)}
    base = Path(a["model"]) / f"weights.{a['kind']}"
    weights = {**DEFAULT_WEIGHTS, **(read_weights(base) if base.is_file() else {})}
    write_weights(weights, a["output"], comment=f"no parallel queries in {origin}: the weights of {a['model']}")
    print(f"clirplug: warning: no parallel queries in {origin}; {a['output']} keeps the model's weights", file=sys.stderr)
    return {"queries": 0, "fallback": "the model's weights"}


@stage_kind("floor")
def floor_stage(stage: Stage, ctx: Context) -> dict:
    """BM25 with the untranslated topic field (the floor)."""
    from clirplug.io.topics import read_topics, topic_field

    return _bm25_stage(ctx, stage, {t.id: topic_field(t, stage.run["field"]) for t in read_topics(stage.inputs[0])})


@stage_kind("ceiling")
def ceiling_stage(stage: Stage, ctx: Context) -> dict:
    """BM25 with the English mate's title (:func:`clirplug.monolingual.mate_title_queries`)."""
    from clirplug.io.qrels import read_qrels
    from clirplug.monolingual import mate_title_queries

    return _bm25_stage(ctx, stage, mate_title_queries(read_qrels(stage.inputs[0]), stage.inputs[1]))


def _translate_chunk(task):
    """Worker: the 1-best translation and the seconds of each of some topics (:func:`clirplug.qt.dt.dt_queries`),
    and the worker's peak memory."""
    model_dir, kind, lang, field_name, topics, weights = task
    from clirplug.mt.features import read_weights
    from clirplug.mt.translator import Translator
    from clirplug.qt.dt import dt_queries

    translator = Translator(model_dir, kind=kind, src_lang=lang, weights=read_weights(weights) if weights else None)
    seconds: dict[str, float] = {}
    queries = dt_queries(topics, field_name, translator, progress=False, latencies=seconds)
    return queries, seconds, peak_rss_mb()


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
    metrics = {"topics": [], "bitext_lines": []}
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


@stage_kind("translate")
def translate_stage(stage: Stage, ctx: Context) -> dict:
    """1-best query translations of one split and field, topics spread over ``--jobs`` workers."""
    from clirplug.atomic import atomic_open
    from clirplug.io.topics import read_topics

    s = stage.settings
    topics = read_topics(s["topics"])
    queries, seconds, peak = translate_topics(topics, s["model"], s["kind"], s["lang"], s["field"], s["weights"],
                                              ctx.workers)
    with atomic_open(stage.outputs[0]) as out:
        for topic in topics:
            record = {"id": topic.id, "query": queries[topic.id], "seconds": round(seconds[topic.id], 6)}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return {"topics": len(topics), "worker_peak_rss_mb": peak}


def translate_topics(topics, model, kind: str, lang: str, field_name: str, weights, workers: ExecutorSettings):
    """``(qid -> 1-best, qid -> seconds, the workers' peak memory in MB)``: the topics dealt round-robin into
    ``workers.jobs`` chunks, one chunk a task (each loads the model restricted to its topics' words); the
    translations do not depend on the executor nor on the number of chunks."""
    chunks = max(1, min(workers.jobs, len(topics)))
    tasks = [(model, kind, lang, field_name, topics[i::chunks], weights) for i in range(chunks)]
    with make_executor(workers) as executor:
        results = executor.map(_translate_chunk, tasks)
    queries, seconds = {}, {}
    for part_queries, part_seconds, _ in results:
        queries.update(part_queries)
        seconds.update(part_seconds)
    return queries, seconds, max(peak for _, _, peak in results)


@stage_kind("dt")
def dt_stage(stage: Stage, ctx: Context) -> dict:
    """DT: BM25 with the 1-best translations; latency = translation + search seconds."""
    records = [json.loads(line) for line in stage.inputs_from[0].read_text(encoding="utf-8").splitlines()]
    return _bm25_stage(ctx, stage, {r["id"]: r["query"] for r in records}, {r["id"]: r["seconds"] for r in records})


def _psq_scorer(ctx: Context, s: dict):
    from clirplug.qt.psq import PsqScorer

    return ctx.get(f"{s['index']}|psq|{s['bm25']['k1']}|{s['bm25']['b']}",
                   lambda: PsqScorer(s["index"], s["bm25"]["k1"], s["bm25"]["b"]))


def _psq_builders(ctx: Context, model: str, kind: str, topics_path: str, lang: str):
    """The PSQ builders of a model for the topics of one file, shared by the tuning and the run stages
    (grammar and decoder restricted to those topics' words, per-sentence tables kept)."""
    from clirplug.io.topics import read_topics
    from clirplug.qt.psq_tune import Builders

    return ctx.get(f"{model}|psq|{kind}|{topics_path}", lambda: Builders(model, kind, read_topics(topics_path), lang))


@stage_kind("psq-tune", version=1)
def psq_tune_stage(stage: Stage, ctx: Context) -> dict:
    """PSQ settings by a coordinate search over the grid on the tune split (:mod:`clirplug.qt.psq_tune`)."""
    import pandas as pd

    from clirplug.atomic import atomic_open
    from clirplug.eval.measures import evaluate
    from clirplug.io.qrels import read_qrels
    from clirplug.qt.psq_tables import PsqSettings
    from clirplug.qt.psq_tune import coordinate_search, run_settings

    s = stage.settings
    qrels = read_qrels(stage.inputs[0])
    scorer = _psq_scorer(ctx, s)
    builders = [_psq_builders(ctx, p["model"], s["kind"], p["topics"], s["lang"]) for p in s["parts"]]
    started = time.perf_counter()

    def measure(settings):
        run = pd.concat([run_settings(scorer, b, s["field"], settings, hits=s["hits"]) for b in builders],
                        ignore_index=True)
        value = float(evaluate(qrels, {"run": run}, [s["measure"]])["value"].iloc[0])
        if ctx.progress:
            print(f"{stage.name}: {s['measure']} {value:.4f} {settings.spec()}", file=sys.stderr, flush=True)
        return value

    best, results = coordinate_search(measure, PsqSettings.parse(s["psq"]), s["grid"])
    record = {"psq": best.spec(), "measure": s["measure"], "value": results[best.spec()], "split": s["split"],
              "parts": [p["split"] for p in s["parts"]], "grid": {key: values for key, values in s["grid"]},
              "evaluated": [{"psq": spec, s["measure"]: value} for spec, value in results.items()]}
    with atomic_open(stage.outputs[0]) as handle:
        json.dump(record, handle, indent=1)
        handle.write("\n")
    return {"psq": best.spec(), s["measure"]: results[best.spec()], "evaluated": len(results),
            "seconds": round(time.perf_counter() - started, 1)}


@stage_kind("psq", version=2)
def psq_stage(stage: Stage, ctx: Context) -> dict:
    """PSQ (:func:`clirplug.qt.psq_tune.run_settings`) with the model folder's tables and the run's (or the
    tuned) ``--psq`` settings; a query's latency is its distributions built, then searched."""
    from clirplug.qt.psq_tables import PsqSettings
    from clirplug.qt.psq_tune import run_settings

    s = stage.settings
    spec = json.loads(stage.inputs_from[-1].read_text(encoding="utf-8"))["psq"] if s["tuned"] else s["psq"]
    builders = _psq_builders(ctx, s["model"], s["kind"], s["topics"], s["lang"])
    latencies: dict[str, float] = {}
    frame = run_settings(_psq_scorer(ctx, s), builders, stage.run["field"], PsqSettings.parse(spec), hits=s["hits"],
                         progress=ctx.progress, latencies=latencies)
    return write_run_with_sidecar(stage, frame, latencies, tuned={"psq": spec} if s["tuned"] else None)


@stage_kind("boost-train", version=3)
def boost_train_stage(stage: Stage, ctx: Context) -> dict:
    """Bagged RankBoost on the tune split (:func:`clirplug.train.boost.train_boost`; beta tuned on held-out topics)."""
    from clirplug.train.boost import BoostSettings, train_boost

    s = stage.settings
    settings = BoostSettings.from_mapping(s["settings"], f"runs.{s['run']}")
    with _stdout_to_stderr():
        train_boost(**s["arguments"], settings=settings, jobs=ctx.workers, progress=False)
    ctx.forget(str(stage.outputs[0]))
    return {}


@stage_kind("boost")
def boost_stage(stage: Stage, ctx: Context) -> dict:
    """Boosting run (:func:`clirplug.boost.rerank_run`): the whole collection scored, or the candidates of
    another run reranked."""
    from clirplug import boost
    from clirplug.io.runs import read_run
    from clirplug.io.topics import read_topics

    s = stage.settings
    model_path = stage.inputs_from[0]
    model = ctx.get(str(model_path), lambda: boost.load(model_path))
    collection = ctx.get(f"{s['corpus']}|boost|{model.config.order}|{model.config.doc_tokens}|{model.config.hash_seed}",
                         lambda: boost.read_collection(s["corpus"], model))
    candidates = read_run(stage.inputs_from[1]) if len(stage.inputs_from) > 1 else None
    latencies: dict[str, float] = {}
    frame = boost.rerank_run(read_topics(stage.inputs[0]), candidates, model=model, corpus=collection,
                             field=stage.run["field"], depth=s["hits"], progress=ctx.progress, latencies=latencies)
    return write_run_with_sidecar(stage, frame, latencies, tuned={"beta": float(model.beta)})


@stage_kind("fusion-tune", version=2)
def fusion_tune_stage(stage: Stage, ctx: Context) -> dict:
    """Kappa of a two-run fusion by a grid on the tune split (:func:`clirplug.fusion.tune.kappa_curve`),
    for each fusion method of the run; the best (method, kappa) is kept, the first on ties."""
    import pandas as pd

    from clirplug.atomic import atomic_open
    from clirplug.fusion.tune import best_kappa, kappa_curve, kappa_grid, plot_curve, write_curve
    from clirplug.io.qrels import read_qrels
    from clirplug.io.runs import read_run

    s = stage.settings
    runs = [read_run(path) for path in stage.inputs_from]
    qrels = read_qrels(stage.inputs[0])
    curves = [kappa_curve(runs, qrels, fuser, kappa_grid(s["grid_step"]), s["hits"], s["measure"],
                          names=tuple(map(str, stage.inputs_from))).assign(method=fuser)
              for fuser in s["methods"]]
    best = max(range(len(curves)), key=lambda i: (curves[i][s["measure"]].max(), -i))
    fuser, kappa = s["methods"][best], best_kappa(curves[best])
    curve = pd.concat(curves, ignore_index=True)
    tsv, *png, result = stage.outputs  # no PNG without matplotlib (plan_fusion)
    write_curve(curve, tsv)
    if png:
        plot_curve(curves[best], png[0], labels=tuple(s["runs"]),
                   title=f"{s['run']} ({s['field']}): {s['measure']} on {s['split']}, {fuser}, best kappa = {kappa:g}")
    with atomic_open(result) as handle:
        json.dump({"kappa": kappa, "method": fuser, "measure": s["measure"], "split": s["split"], "runs": s["runs"],
                   "best": float(curves[best][s["measure"]].max()),
                   "methods": {m: float(c[s["measure"]].max()) for m, c in zip(s["methods"], curves)}},
                  handle, indent=1, sort_keys=True)
    return {"kappa": kappa, "method": fuser}


@stage_kind("fusion")
def fusion_stage(stage: Stage, ctx: Context) -> dict:
    """Weighted fusion (:func:`clirplug.fusion.fuse`) with the tuned kappa, timed per query."""
    import pandas as pd

    from clirplug.fusion import fuse
    from clirplug.fusion._common import kappa_weights
    from clirplug.io.runs import read_run

    tuned = json.loads(stage.inputs_from[0].read_text(encoding="utf-8"))
    kappa, method = tuned["kappa"], tuned["method"]
    weights = kappa_weights(kappa, f"{stage.inputs_from[0]}: kappa")
    runs = [read_run(path) for path in stage.inputs_from[1:]]
    groups = [dict(tuple(run.groupby("qid", sort=False))) for run in runs]
    qids = sorted(set().union(*groups))
    parts, latencies = [], {}
    empty = runs[0].iloc[0:0]
    for qid in qids:
        start = time.perf_counter()
        parts.append(fuse(method, [g.get(qid, empty) for g in groups], weights=weights, depth=stage.settings["hits"]))
        latencies[qid] = time.perf_counter() - start
    frame = pd.concat(parts, ignore_index=True) if parts else run_frame([])
    return write_run_with_sidecar(stage, frame, latencies, tuned={"kappa": kappa, "method": method,
                                                                  "tuned_on": tuned["split"]})


def _mt_eval_chunk(task):
    """Worker: the 1-best words and the seconds of each of some bitext lines (a line longer than
    MAX_SENTENCE_TOKENS is decoded in chunks, their 1-bests joined); word-by-word: each token by its most
    probable translation p(e|f), unknown tokens copied."""
    model, output, lang, lines = task
    if output == "word-by-word":
        from clirplug.mt.lexicon import LexicalTable
        from clirplug.mt.preprocess import preprocessor

        table = LexicalTable.load(Path(model) / "lex.e_given_f.npz")
        tokenize = preprocessor(lang, model)

        def translate(line):
            return [next(iter(table.translations(token)), token) for token in tokenize(line)]
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
    hypotheses, seconds = [None] * len(source), [0.0] * len(source)
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


@stage_kind("bowfd-train", version=4)
def bowfd_train_stage(stage: Stage, ctx: Context) -> dict:
    """BOW-FD weights on the tune split (:func:`clirplug.train.bowfd.train_bowfd`: v by grid, then LTR unless disabled)."""
    from clirplug.train.bowfd import BowfdSettings, train_bowfd

    s = stage.settings
    settings = BowfdSettings.from_mapping(s["settings"], f"runs.{s['run']}")
    with _stdout_to_stderr():
        train_bowfd(**s["arguments"], settings=settings, jobs=ctx.workers, progress=False)
    return {}


@stage_kind("bowfd")
def bowfd_stage(stage: Stage, ctx: Context) -> dict:
    """BOW-FD reranking of the candidate run (:func:`clirplug.rerank.bowfd.rerank_run`, as ``clirplug rerank
    --method bowfd``), timed per query (forests, Viterbi per document batch)."""
    from clirplug.io.runs import read_run
    from clirplug.io.topics import read_topics
    from clirplug.lucene.reader import LuceneIndex
    from clirplug.mt.translator import Translator
    from clirplug.rerank.bowfd import BowfdWeights, rerank_run
    from clirplug.train.bowfd import BowfdSettings

    s = stage.settings
    weights_path, candidates_path = stage.inputs_from[:2]  # then, for a fold, its topics
    translator = ctx.get(f"{s['model']}|translator|{s['kind']}|{s['lang']}",
                         lambda: Translator(s["model"], kind=s["kind"], src_lang=s["lang"]))
    index = ctx.get(f"{s['index']}|reader", lambda: LuceneIndex(s["index"], progress=False))
    config = BowfdSettings.from_mapping(s["options"], f"runs.{stage.run['name']}").scoring(stage.run["field"])
    weights = BowfdWeights.load(weights_path, translator.feature_names)
    latencies: dict[str, float] = {}
    frame = rerank_run(read_topics(s["topics"]), read_run(candidates_path), model=translator, index=index,
                       config=config, weights=weights, lm=s["lm"], depth=s["depth"], progress=ctx.progress,
                       latencies=latencies)
    return write_run_with_sidecar(stage, frame, latencies,
                                  tuned={"v": weights.v, "ir_weights": len(weights.ir), "lex_weights": len(weights.lex),
                                         "weights_file": str(weights_path)})


# ----------------------------------------------------------------------------- planning

@dataclass(frozen=True)
class Part:
    """Topics and the model folder that translates them: a whole split, or one fold of the tune split."""

    split: str
    topics: Path
    model_dir: Path
    fold: int | None = None
    deps: tuple = ()  # the stage writing ``topics`` (folds); none for a collection file

    @property
    def name(self) -> str:
        """The part in file and stage names: ``dev``, ``train``, ``train.f0``."""
        return self.split if self.fold is None else f"{self.split}.f{self.fold}"

    @property
    def inputs(self) -> tuple:
        return () if self.deps else (self.topics,)

    @property
    def inputs_from(self) -> tuple:
        return (self.topics,) if self.deps else ()


class Plan:
    """The stages of one config, in an order where every stage follows its dependencies."""

    def __init__(self, config):
        self.config = config
        self.stages: dict[str, Stage] = {}
        self.run_stages: dict[tuple[str, str, str], str] = {}  # (run, split, field) -> stage name

    def add(self, stage: Stage) -> str:
        if stage.name not in self.stages:
            for dep in stage.deps:
                if dep not in self.stages:
                    raise AssertionError(f"stage {stage.name} depends on {dep}, which is not planned before it")
            self.stages[stage.name] = stage
        return stage.name

    # shared stages ------------------------------------------------------------
    def index(self) -> str:
        c = self.config
        return self.add(Stage("index", "index", {"language": c.collection.doc_lang}, inputs=(c.collection.corpus,),
                              outputs=(c.index_dir,)))

    def model(self, name: str, kind: str | None = None, fold: int | None = None) -> str:
        """The stage training model ``name`` with its ``models:`` options (and the stages it needs).

        With ``fold``, the model of that cross-fitting fold (:meth:`folds`): trained in
        ``models/<collection>/fold-<k>/`` on the tune bitext without the fold's pages; its decoder
        weights are the final model's (tuned on bitext lines, not on topics).
        """
        c = self.config
        model = MODELS[name]
        src, tgt = c.collection.bitext(c.tune_split, c.collection.lang), c.collection.bitext(c.tune_split, c.collection.doc_lang)
        for path in (src, tgt):
            if not path.is_file():
                raise ClirplugError(f"{c.source}: models.{name}: {path}: no such file (the tune split's bitext)")
        suffix = (f".{kind}" if model.per_kind else "") + ("" if fold is None else f".f{fold}")
        if fold is not None and name == "weights":
            final = self.stages[self.model("weights", kind)]
            out = self.fold_model_dir(fold) / final.outputs[0].name
            return self.add(Stage(f"model.weights{suffix}", "copy", {}, deps=(final.name,), outputs=(out,),
                                  inputs_from=final.outputs))
        deps = tuple(self.model(other, kind, fold) for other in model.needs)
        inputs_from = ()
        if fold is None:
            arguments, inputs, outputs = model.arguments(c, src, tgt, kind, c.model_dir)
        else:
            deps += (self.folds(),)
            fold_src, fold_tgt = (self.fold_file(fold, f"bitext.{lang}") for lang in (c.collection.lang, c.collection.doc_lang))
            arguments, inputs, outputs = model.arguments(c, fold_src, fold_tgt, kind, self.fold_model_dir(fold))
            inputs_from = tuple(path for path in inputs if path in (fold_src, fold_tgt))
            inputs = tuple(path for path in inputs if path not in (fold_src, fold_tgt))
        if model.filtered:
            deps += (self.source_text(),)
            arguments = {**arguments, "filter": str(self.stages[self.source_text()].outputs[0])}
        return self.add(Stage(f"model.{name}{suffix}", "train", {"model": name, "arguments": arguments,
                                                                 "settings": c.models.get(name, {})},
                              inputs=inputs, deps=deps, outputs=outputs, inputs_from=inputs_from))

    # cross-fitting ---------------------------------------------------------------
    def fold_model_dir(self, fold: int) -> Path:
        return self.config.model_dir / f"fold-{fold}"

    def fold_file(self, fold: int, what: str) -> Path:
        """A file of fold ``fold`` written by the ``folds`` stage (``topics.jsonl``, ``bitext.<lang>``)."""
        return self.config.run_dir / "folds" / f"f{fold}.{what}"

    def folds(self) -> str:
        """The cross-fitting folds of the tune split: each fold's topics, and the tune bitext without its pages."""
        c = self.config
        coll = c.collection
        ids = coll.bitext(c.tune_split, "ids")
        if not ids.is_file():
            raise ClirplugError(f"{c.source}: folds: {ids}: no such file (the page of every bitext line, needed to keep "
                                "a fold's pages out of its model); add it, or set folds: 0 to tune on the final model")
        outputs = tuple(self.fold_file(k, what) for k in range(c.folds)
                        for what in ("topics.jsonl", f"bitext.{coll.lang}", f"bitext.{coll.doc_lang}"))
        return self.add(Stage("folds", "folds", {"folds": c.folds, "langs": [coll.lang, coll.doc_lang]},
                              inputs=(coll.topics(c.tune_split), coll.bitext(c.tune_split, coll.lang),
                                      coll.bitext(c.tune_split, coll.doc_lang), ids),
                              outputs=outputs))

    def parts(self, split: str) -> list[Part]:
        """The topics of ``split`` with the model that translates them: one part, or a part per fold (tune split)."""
        c = self.config
        if split != c.tune_split or not c.folds:
            return [Part(split, c.collection.topics(split), c.model_dir)]
        folds = self.folds()
        return [Part(split, self.fold_file(k, "topics.jsonl"), self.fold_model_dir(k), k, (folds,))
                for k in range(c.folds)]

    def split_run(self, run: dict, plan_part) -> None:
        """Plan ``run`` (name, method, split, field) by ``plan_part(part) -> stage name`` for each part of its
        split; the runs of several parts are joined into the split's run file."""
        parts = self.parts(run["split"])
        if len(parts) == 1:
            plan_part(parts[0])
            return
        names = tuple(plan_part(part) for part in parts)
        self.run_stage(run, "join", {"parts": [part.name for part in parts]}, deps=names,
                       inputs_from=tuple(run_file(self.config, part.name, run["field"], run["name"]) for part in parts))

    def source_text(self) -> str:
        """The source-language text the experiment translates (grammars are filtered to it)."""
        c = self.config
        splits = tuple(dict.fromkeys((*c.splits, c.tune_split)))
        topics = tuple(c.collection.topics(split) for split in splits)
        tune_lines = c.models.get("weights", {}).get("lines", MODELS["weights"].settings().lines)
        bitexts = [(c.collection.bitext(c.tune_split, c.collection.lang), tune_lines)]
        if c.translations["outputs"]:
            bitexts.append((c.collection.bitext(c.translations["split"], c.collection.lang), c.translations["lines"]))
        settings = {"fields": list(c.fields), "lang": c.collection.lang, "lines": [n for _, n in bitexts]}
        inputs = topics + tuple(path for path, _ in bitexts)
        coll = c.collection
        if "desc" in c.fields and coll.bitext(c.tune_split, "ids").is_file() \
                and any(spec.method == "dt" and spec.settings.weights == "queries" for spec in c.runs):
            settings["desc_queries"] = True  # query-genre weights are tuned on these desc queries' bitext lines
            inputs += (coll.topics(c.tune_split),) + tuple(coll.bitext(c.tune_split, what)
                                                           for what in (coll.lang, coll.doc_lang, "ids"))
        return self.add(Stage("source-text", "source-text", settings, inputs=inputs,
                              outputs=(c.run_dir / "translations" / f"source.{c.collection.lang}",)))

    def run_stage(self, run: dict, kind: str, settings: dict, inputs=(), deps=(), inputs_from=()) -> str:
        """A stage writing the run file of ``run`` (``name``, ``method``, ``split``, ``field``)."""
        c = self.config
        name = f"run.{run['name']}.{run['split']}.{run['field']}"
        settings = {"hits": c.hits, **settings}
        stage = Stage(name, kind, settings, tuple(inputs), tuple(deps),
                      (run_file(c, run["split"], run["field"], run["name"]),), run, tuple(inputs_from))
        self.run_stages[(run["name"], run["split"], run["field"])] = name
        return self.add(stage)

    def runs_of(self, name: str, splits) -> None:
        """Plan the runs of ``name`` (``floor`` or a ``runs:`` entry) for ``splits`` and every field, once.

        Runs on the tune split are planned only when another run trains or tunes on them.
        """
        missing = [split for split in splits if (name, split, self.config.fields[0]) not in self.run_stages]
        if not missing:
            return
        if name == "floor":
            plan_floor(self, missing)
        else:
            spec = self.config.run(name)
            PLANNERS[spec.method](self, spec, missing)


def _bm25_settings(config) -> dict:
    return {"index": str(config.index_dir), "bm25": dict(config.bm25)}


def plan_floor(plan: Plan, splits) -> None:
    """The floor: BM25 with the untranslated queries."""
    c = plan.config
    index = plan.index()
    for split in splits:
        for fld in c.fields:
            plan.run_stage({"name": "floor", "method": "floor", "split": split, "field": fld}, "floor",
                           _bm25_settings(c), inputs=(c.collection.topics(split),), deps=(index,))


def plan_ceiling(plan: Plan, splits) -> None:
    """The monolingual ceiling: BM25 with the English mate's title (splits with qrels)."""
    c = plan.config
    index = plan.index()
    for split in splits:
        if c.collection.qrels(split).is_file():
            plan.run_stage({"name": "ceiling", "method": "ceiling", "split": split, "field": "title"}, "ceiling",
                           _bm25_settings(c), inputs=(c.collection.qrels(split), c.collection.corpus), deps=(index,))


def _translation_deps(plan: Plan, kind: str, fold: int | None = None) -> tuple:
    """The model stages a decoder of grammar ``kind`` needs (alignment, grammar, LM, tuned weights)."""
    deps = [plan.model("align", fold=fold), plan.model("grammar", kind, fold), plan.model("lm", fold=fold)]
    if plan.config.models.get("weights") is not None:
        deps.append(plan.model("weights", kind, fold))
    return tuple(deps)


def plan_query_weights(plan: Plan, kind: str, fld: str) -> str:
    """Decoder weights tuned for BLEU on parallel queries of field ``fld`` (query-genre adaptation,
    Nikoulina et al. 2012): the tune split's topics paired with their English mates.

    With cross-fitting, the queries are those of fold 0, decoded by fold 0's model (which never saw
    their pages); the weights then serve every model of the experiment.
    """
    c = plan.config
    coll = c.collection
    part = plan.parts(c.tune_split)[0]
    out = c.model_dir / f"weights.{kind}.queries-{fld}"
    arguments = {"model": str(part.model_dir), "kind": kind, "queries": str(part.topics), "field": fld,
                 "src_lang": coll.lang, "tgt_lang": coll.doc_lang, "output": str(out)}
    inputs = part.inputs
    if fld == "title":
        arguments["corpus"] = str(coll.corpus)
        inputs += (coll.corpus,)
    else:
        ids = coll.bitext(c.tune_split, "ids")
        if not ids.is_file():
            raise ClirplugError(f"{c.source}: runs: weights: queries: {ids}: no such file (desc queries are paired with "
                                "the bitext lines of their page)")
        paths = (coll.bitext(c.tune_split, coll.lang), coll.bitext(c.tune_split, coll.doc_lang), ids)
        arguments["bitext"] = [str(path) for path in paths]
        inputs += paths
    options = c.models.get("weights", {})
    return plan.add(Stage(f"model.weights.{kind}.queries.{fld}", "query-weights",
                          {"arguments": arguments, "settings": options},
                          inputs=inputs, deps=_translation_deps(plan, kind, part.fold) + part.deps, outputs=(out,),
                          inputs_from=part.inputs_from))


def plan_dt(plan: Plan, spec, splits) -> None:
    """DT: translate each topic field (``translate`` stage, ``--jobs`` processes), then BM25.

    ``weights: queries`` decodes with weights tuned on parallel queries (:func:`plan_query_weights`).
    """
    c, s = plan.config, spec.settings
    if s.weights not in ("bitext", "queries"):
        raise ClirplugError(f"{c.source}: runs.{spec.name}.weights: expected bitext or queries, got {s['weights']!r}")
    index = plan.index()
    variant = s.kind + ("" if s.weights == "bitext" else ".queries")

    def plan_part(part, fld):
        out = c.run_dir / "translations" / f"{part.name}.{fld}.{variant}.jsonl"
        deps, inputs_from, weights = _translation_deps(plan, s.kind, part.fold) + part.deps, part.inputs_from, None
        if s.weights == "queries":
            tuned = plan.stages[plan_query_weights(plan, s.kind, fld)]
            deps, inputs_from, weights = deps + (tuned.name,), inputs_from + tuned.outputs, str(tuned.outputs[0])
        translate = Stage(f"translate.{variant}.{part.name}.{fld}", "translate",
                          {"model": str(part.model_dir), "kind": s.kind, "lang": c.collection.lang, "field": fld,
                           "topics": str(part.topics), "weights": weights},
                          inputs=part.inputs, deps=deps, outputs=(out,), inputs_from=inputs_from)
        plan.add(translate)
        return plan.run_stage({"name": spec.name, "method": "dt", "split": part.name, "field": fld}, "dt",
                              {**_bm25_settings(c), "kind": s.kind, "weights": s.weights},
                              deps=(index, translate.name), inputs_from=(out,))

    for split in splits:
        for fld in c.fields:
            plan.split_run({"name": spec.name, "method": "dt", "split": split, "field": fld},
                           lambda part, fld=fld: plan_part(part, fld))


def plan_psq(plan: Plan, spec, splits) -> None:
    """PSQ over the index with the model folder's tables; with a ``grid``, settings tuned per field on the tune split."""
    from clirplug.qt.psq_tables import PsqSettings
    from clirplug.qt.psq_tune import grid_axes, may_decode

    c, s = plan.config, spec.settings
    start = PsqSettings.read(s.psq, f"{c.source}: runs.{spec.name}.psq")
    axes = grid_axes(s.grid, f"{c.source}: runs.{spec.name}.grid") if s.grid else []
    decodes = may_decode(start, axes)
    index = plan.index()

    def model_deps(part):
        return (_translation_deps(plan, s.kind, part.fold) if decodes else (plan.model("align", fold=part.fold),)) \
            + part.deps + (index,)

    tuned = {}
    if axes:
        qrels = c.collection.qrels(c.tune_split)
        if not qrels.is_file():
            raise ClirplugError(f"{c.source}: runs.{spec.name}.grid: {qrels}: no such file (PSQ settings are tuned on it)")
        parts = plan.parts(c.tune_split)
        for fld in c.fields:
            tune = Stage(f"tune.{spec.name}.{fld}", "psq-tune",
                         {**_bm25_settings(c), "run": spec.name, "field": fld, "split": c.tune_split,
                          "psq": start.spec(), "grid": axes,
                          "kind": s.kind, "lang": c.collection.lang, "measure": "MAP", "hits": c.hits,
                          "parts": [{"split": p.name, "topics": str(p.topics), "model": str(p.model_dir)} for p in parts]},
                         inputs=(qrels, *(i for p in parts for i in p.inputs)),
                         deps=tuple(dict.fromkeys(d for p in parts for d in model_deps(p))),
                         outputs=(c.run_dir / f"{c.tune_split}.{fld}.{spec.name}.psq.json",),
                         inputs_from=tuple(i for p in parts for i in p.inputs_from))
            tuned[fld] = plan.add(tune)

    def plan_part(part, fld):
        deps, inputs_from = model_deps(part), part.inputs_from
        if fld in tuned:
            deps, inputs_from = deps + (tuned[fld],), inputs_from + plan.stages[tuned[fld]].outputs
        return plan.run_stage({"name": spec.name, "method": "psq", "split": part.name, "field": fld}, "psq",
                              {**_bm25_settings(c), "psq": start.spec(), "kind": s.kind, "model": str(part.model_dir),
                               "lang": c.collection.lang, "topics": str(part.topics), "tuned": fld in tuned},
                              inputs=part.inputs, deps=deps, inputs_from=inputs_from)

    for split in splits:
        for fld in c.fields:
            plan.split_run({"name": spec.name, "method": "psq", "split": split, "field": fld},
                           lambda part, fld=fld: plan_part(part, fld))


def plan_boost(plan: Plan, spec, splits) -> None:
    """Boosting: train on the tune split per field, then score (or rerank ``candidates``) each split."""
    c, s = plan.config, spec.settings
    tune_qrels = c.collection.qrels(c.tune_split)
    if not tune_qrels.is_file():
        raise ClirplugError(f"{c.source}: runs.{spec.name}: {tune_qrels}: no such file (boosting trains on it)")
    for fld in c.fields:
        model = c.model_dir / f"boost.{spec.name}.{fld}.npz"
        arguments = {"topics": str(c.collection.topics(c.tune_split)), "qrels": str(tune_qrels),
                     "corpus": str(c.collection.corpus), "output": str(model)}
        train = plan.add(Stage(f"train.{spec.name}.{fld}", "boost-train",
                               {"run": spec.name, "arguments": arguments,
                                "settings": {**spec.options, "field": fld, "src_lang": c.collection.lang}},
                               inputs=(c.collection.topics(c.tune_split), tune_qrels, c.collection.corpus),
                               outputs=(model,)))
        for split in splits:
            deps, inputs_from = [train], [model]
            if s.candidates:
                plan.runs_of(s.candidates, [split])
                deps.append(plan.run_stages[(s.candidates, split, fld)])
                inputs_from.append(run_file(c, split, fld, s.candidates))
            plan.run_stage({"name": spec.name, "method": "boost", "split": split, "field": fld}, "boost",
                           {"corpus": str(c.collection.corpus), "candidates": s.candidates},
                           inputs=(c.collection.topics(split),), deps=tuple(deps), inputs_from=tuple(inputs_from))


def plan_fusion(plan: Plan, spec, splits) -> None:
    """Two runs fused with weights (kappa, 1 - kappa), kappa tuned on the tune split (paper 001, Fig. 1-3);
    a list of fusion methods (``fuser: [borda, rrf]``) is a grid, the method chosen with kappa."""
    from clirplug.fusion import FUSERS

    c, s = plan.config, spec.settings
    if len(s.runs or ()) != 2:
        raise ClirplugError(f"{c.source}: runs.{spec.name}.runs: a tuned fusion takes exactly two runs")
    tune_qrels = c.collection.qrels(c.tune_split)
    if not tune_qrels.is_file():
        raise ClirplugError(f"{c.source}: runs.{spec.name}: {tune_qrels}: no such file (kappa is tuned on it)")
    fusers = [s.fuser or "borda"] if not isinstance(s.fuser, list) else s.fuser
    if not fusers or any(f not in FUSERS for f in fusers):
        raise ClirplugError(f"{c.source}: runs.{spec.name}.fuser: expected one of {', '.join(FUSERS)} or a list of them "
                            f"(a grid), got {s.fuser!r}")
    for other in s.runs:
        plan.runs_of(other, [c.tune_split, *splits])
    drawn = plots.available()  # the kappa curve's PNG needs matplotlib (the plots extra)
    for fld in c.fields:
        prefix = f"{c.tune_split}.{fld}.{spec.name}.kappa"
        deps = tuple(plan.run_stages[(other, c.tune_split, fld)] for other in s.runs)
        tune = Stage(f"tune.{spec.name}.{fld}", "fusion-tune",
                     {"run": spec.name, "field": fld, "split": c.tune_split, "runs": list(s.runs),
                      "methods": fusers, "grid_step": s.grid_step, "measure": s.measure, "hits": c.hits},
                     inputs=(tune_qrels,), deps=deps,
                     outputs=tuple(c.run_dir / f"{prefix}.{ext}" for ext in ("tsv", "png", "json") if ext != "png" or drawn),
                     inputs_from=tuple(run_file(c, c.tune_split, fld, other) for other in s.runs))
        plan.add(tune)
        for split in splits:
            deps = (tune.name, *(plan.run_stages[(other, split, fld)] for other in s.runs))
            plan.run_stage({"name": spec.name, "method": "fusion", "split": split, "field": fld}, "fusion",
                           {"runs": list(s.runs)}, deps=deps,
                           inputs_from=(tune.outputs[-1], *(run_file(c, split, fld, other) for other in s.runs)))


def plan_translations(plan: Plan) -> None:
    """The translated dev bitext of each ``translations.outputs`` entry, with BLEU and timings."""
    c = plan.config
    t = c.translations
    if not t["outputs"]:
        return
    split = t["split"]
    src, ref = c.collection.bitext(split, c.collection.lang), c.collection.bitext(split, c.collection.doc_lang)
    if not (src.is_file() and ref.is_file()):
        raise ClirplugError(f"{c.source}: translations.split: {src} or {ref}: no such file")
    for output in t["outputs"]:
        deps = (plan.model("align"),) if output == "word-by-word" else _translation_deps(plan, output)
        plan.add(Stage(f"mt-eval.{output}.{split}", "mt-eval",
                       {"output": output, "lines": t["lines"], "model": str(c.model_dir), "lang": c.collection.lang,
                        "doc_lang": c.collection.doc_lang},
                       inputs=(src, ref), deps=deps,
                       outputs=(c.run_dir / "translations" / f"bitext.{split}.{output}.{c.collection.doc_lang}",)))


def plan_bowfd(plan: Plan, spec, splits) -> None:
    """BOW-FD: weights trained per field on the tune split's candidates, then each split's candidates reranked.

    With cross-fitting, the training forests of each fold's topics come from that fold's model.
    """
    c, s, training = plan.config, spec.settings, spec.training
    options = {key: value for key, value in spec.options.items() if key not in ("ltr", "lex")}  # the reranker's
    tune_qrels = c.collection.qrels(c.tune_split)
    if not tune_qrels.is_file():
        raise ClirplugError(f"{c.source}: runs.{spec.name}: {tune_qrels}: no such file (BOW-FD trains on it)")
    plan.runs_of(s.candidates, [c.tune_split, *splits])
    index = plan.index()
    parts = plan.parts(c.tune_split)
    deps = tuple(dict.fromkeys(d for p in parts for d in _translation_deps(plan, s.kind, p.fold) + p.deps)) + (index,)
    for fld in c.fields:
        weights = c.model_dir / f"bowfd.{spec.name}.{fld}.weights"
        arguments = {"model_dirs": [str(p.model_dir) for p in parts], "kind": s.kind, "index": str(c.index_dir),
                     "topic_files": [str(p.topics) for p in parts], "qrels": str(tune_qrels),
                     "candidates": str(run_file(c, c.tune_split, fld, s.candidates)), "field": fld,
                     "output": str(weights)}
        train = plan.add(Stage(f"train.{spec.name}.{fld}", "bowfd-train",
                               {"run": spec.name, "arguments": arguments,
                                "settings": {**options, "ltr": training.ltr, "lex": training.lex}},
                               inputs=(tune_qrels, *(i for p in parts for i in p.inputs)),
                               deps=deps + (plan.run_stages[(s.candidates, c.tune_split, fld)],), outputs=(weights,),
                               inputs_from=tuple(i for p in parts for i in p.inputs_from)))
        method = "bowfd" if s.lm else "bowfd-nolm"  # the report's Table 2 ablation

        def plan_part(part, fld=fld, train=train, weights=weights):
            return plan.run_stage({"name": spec.name, "method": method, "split": part.name, "field": fld}, "bowfd",
                                  {"model": str(part.model_dir), "kind": s.kind, "lang": c.collection.lang,
                                   "lm": s.lm, "index": str(c.index_dir), "depth": s.depth, "options": options,
                                   "topics": str(part.topics)},
                                  inputs=part.inputs,
                                  deps=(train, plan.run_stages[(s.candidates, part.split, fld)],
                                        *_translation_deps(plan, s.kind, part.fold), *part.deps),
                                  inputs_from=(weights, run_file(c, part.split, fld, s.candidates),
                                               *part.inputs_from))

        for split in splits:
            plan.split_run({"name": spec.name, "method": method, "split": split, "field": fld}, plan_part)


@stage_kind("dense-embed")
def dense_embed_stage(stage: Stage, ctx: Context) -> dict:
    """The collection's e5 document vectors (:func:`clirplug.dense.embed_corpus`; resumes at the last chunk)."""
    from clirplug.dense import embed_corpus

    embed_corpus(stage.inputs[0], stage.outputs[0], stage.settings["words"], _dense_model(ctx), progress=ctx.progress)
    return {}


def _dense_model(ctx: Context):
    """The process's e5 model, on its share of the cores: ``jobs`` stages run at once, and OpenMP threads
    beyond the free cores wait on each other (single queries beside another stage took 2 to 3 times longer).
    The vectors do not depend on the number of threads."""
    from clirplug.dense import load_model

    return ctx.get("dense-model", lambda: load_model(max(1, (os.cpu_count() or 1) // ctx.jobs)))


def _dense_searcher(ctx: Context, folder):
    """One DenseSearcher per vector folder, all sharing one e5 model per process."""
    from clirplug.dense import DenseSearcher

    return ctx.get(f"{folder}|dense", lambda: DenseSearcher(folder, _dense_model(ctx)))


@stage_kind("dense-tune", version=3)
def dense_tune_stage(stage: Stage, ctx: Context) -> dict:
    """``words`` of a dense run: the tune split's queries searched in each grid value's vectors, the best kept
    (the first on ties); every value's measure goes in the first output, the query vectors (with their
    embedding seconds) in the second, for the tune split's run."""
    from clirplug.atomic import atomic_open
    from clirplug.dense import embed_timed, save_timed
    from clirplug.eval.measures import evaluate
    from clirplug.io.qrels import read_qrels
    from clirplug.io.topics import read_topics, topic_field

    s = stage.settings
    topics, qrels = stage.inputs
    queries = {t.id: topic_field(t, s["field"]) for t in read_topics(topics)}
    judged = read_qrels(qrels)
    timed = embed_timed(_dense_model(ctx), queries)
    save_timed(stage.outputs[1], timed)
    values = {}
    for words, folder in zip(s["grid"], stage.inputs_from):
        searcher = _dense_searcher(ctx, folder)
        run = searcher.search_all(queries, s["hits"], progress=False, timed=timed)
        values[words] = float(evaluate(judged, {"run": run}, [s["measure"]])["value"].iloc[0])
        if ctx.progress:
            print(f"{stage.name}: words={words} {s['measure']} {values[words]:.4f}", file=sys.stderr, flush=True)
    best = max(s["grid"], key=lambda words: (values[words], -s["grid"].index(words)))
    with atomic_open(stage.outputs[0]) as handle:
        json.dump({"words": best, "folder": str(stage.inputs_from[s["grid"].index(best)]), "measure": s["measure"],
                   "value": values[best], "split": s["split"],
                   "evaluated": [{"words": words, s["measure"]: values[words]} for words in s["grid"]]}, handle, indent=1)
        handle.write("\n")
    return {"words": best, s["measure"]: values[best]}


@stage_kind("dense", version=3)
def dense_stage(stage: Stage, ctx: Context) -> dict:
    """Dense retrieval (:class:`clirplug.dense.DenseSearcher`): the topic field as an e5 query, by cosine;
    with ``tuned``, in the vectors of the ``words`` chosen on the tune split (whose queries' vectors, with
    ``reuse``, come from the tuning)."""
    from clirplug.dense import load_timed
    from clirplug.io.topics import read_topics, topic_field

    tuned = json.loads(stage.inputs_from[0].read_text(encoding="utf-8")) if stage.settings["tuned"] else None
    folder = tuned["folder"] if tuned else stage.inputs_from[0]
    searcher = _dense_searcher(ctx, folder)
    queries = {t.id: topic_field(t, stage.run["field"]) for t in read_topics(stage.inputs[0])}
    timed = load_timed(stage.inputs_from[-1]) if stage.settings.get("reuse") else None
    latencies = {}
    frame = searcher.search_all(queries, stage.settings["hits"], progress=ctx.progress, latencies=latencies,
                                timed=timed)
    return write_run_with_sidecar(stage, frame, latencies, tuned={"words": tuned["words"]} if tuned else None)


def _dense_grid(source: str, name: str, settings) -> list[int]:
    """The ``words`` values of a dense run (:class:`clirplug.methods.DenseRun`, which checks ``words``):
    its ``grid.words`` list, or its one ``words``."""
    grid = settings.grid
    if grid is None:
        return [settings.words]
    if not isinstance(grid, dict) or set(grid) != {"words"} or not isinstance(grid["words"], list) or not grid["words"]:
        raise ClirplugError(f"{source}: runs.{name}.grid: expected {{words: [a list of word counts]}}")
    for value in grid["words"]:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ClirplugError(f"{source}: runs.{name}.grid.words: must be a whole number of at least 0, got {value!r}")
    return list(dict.fromkeys(grid["words"]))


def plan_dense(plan: Plan, spec, splits) -> None:
    """Dense retrieval: the collection embedded once per ``words`` value (cached beside the index); with a
    ``grid``, ``words`` chosen per field on the tune split; then every split and field searched."""
    from clirplug.dense import cache_folder, model_id

    c, s = plan.config, spec.settings
    grid = _dense_grid(str(c.source), spec.name, s)
    folders = tuple(cache_folder(c.index_dir, c.collection.corpus, words) for words in grid)
    embeds = tuple(plan.add(Stage(f"dense-embed.w{words}", "dense-embed", {"model": model_id(), "words": words},
                                  inputs=(c.collection.corpus,), outputs=(folder,)))
                   for words, folder in zip(grid, folders))
    for fld in c.fields:
        settings = {"model": model_id(), "words": grid[0], "tuned": False}
        deps, inputs_from = embeds, folders
        if s.grid is not None:
            qrels = c.collection.qrels(c.tune_split)
            if not qrels.is_file():
                raise ClirplugError(f"{c.source}: runs.{spec.name}.grid: {qrels}: no such file (words is tuned on it)")
            tune = plan.add(Stage(f"tune.{spec.name}.{fld}", "dense-tune",
                                  {"model": model_id(), "grid": grid, "field": fld, "split": c.tune_split,
                                   "measure": "MAP", "hits": c.hits},
                                  inputs=(c.collection.topics(c.tune_split), qrels), deps=embeds,
                                  outputs=(c.run_dir / f"{c.tune_split}.{fld}.{spec.name}.words.json",
                                           c.run_dir / f"{c.tune_split}.{fld}.{spec.name}.queries.npz"),
                                  inputs_from=folders))
            settings = {"model": model_id(), "grid": grid, "tuned": True}
            deps, inputs_from = (*embeds, tune), (plan.stages[tune].outputs[0], *folders)
        for split in splits:
            split_settings, split_inputs = settings, inputs_from
            if s.grid is not None and split == c.tune_split:  # the tuning embedded these queries already
                split_settings = {**settings, "reuse": True}
                split_inputs = (*inputs_from, plan.stages[tune].outputs[1])
            plan.run_stage({"name": spec.name, "method": "dense", "split": split, "field": fld}, "dense",
                           split_settings, inputs=(c.collection.topics(split),), deps=deps, inputs_from=split_inputs)


# the planner of each method of ``runs:`` (its settings: :data:`clirplug.methods.RUNS`)
PLANNERS: dict[str, Callable] = {"dt": plan_dt, "psq": plan_psq, "boost": plan_boost, "bowfd": plan_bowfd,
                                 "fusion": plan_fusion, "dense": plan_dense}


def build_plan(config) -> Plan:
    """Every stage of ``config``: index, models, baselines, each run, translation outputs."""
    plan = Plan(config)
    plan.runs_of("floor", config.splits)
    plan_ceiling(plan, config.splits)
    for spec in config.runs:
        plan.runs_of(spec.name, config.splits)
    plan_translations(plan)
    return plan
