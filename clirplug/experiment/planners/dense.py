"""Dense retrieval in an experiment: the collection embedded per ``words`` value, ``words`` chosen on the tune split, each split searched."""

from __future__ import annotations

import json
import os
import sys

from clirplug.errors import ClirplugError
from clirplug.experiment.kinds import Context, stage_kind, write_run_with_sidecar
from clirplug.experiment.plan import Plan, Stage
from clirplug.experiment.systems import corpus_entry, describes, index_entry


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
    corpus = plan.corpus()  # the vector folders are keyed by the pages' digest (passages: beside the passages' index)
    folders = tuple(cache_folder(c.index_dir, c.collection.corpus, words) for words in grid)
    embeds = tuple(plan.add(Stage(f"dense-embed.w{words}", "dense-embed", {"model": model_id(), "words": words},
                                  inputs=corpus.inputs, deps=corpus.deps, outputs=(folder,),
                                  inputs_from=corpus.inputs_from))
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
                                   "measure": "MAP", **plan.search_hits()},
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


@describes("dense")
def dense_system(stage: Stage, ctx: Context, system: dict, tuned: dict) -> dict:
    """A dense run's system: the index (beside which the vectors are cached), the corpus and the ``words`` used."""
    return {**system, "method": "dense", "index": index_entry(ctx.config), "corpus": corpus_entry(ctx.config),
            "options": {"words": tuned.get("words", stage.settings.get("words"))}}


@stage_kind("dense-embed")
def dense_embed_stage(stage: Stage, ctx: Context) -> dict:
    """The collection's e5 document vectors (:func:`clirplug.dense.embed_corpus`; resumes at the last chunk)."""
    from clirplug.dense import embed_corpus

    corpus = (stage.inputs or stage.inputs_from)[0]  # the collection's pages, or the passages stage's file
    embed_corpus(corpus, stage.outputs[0], stage.settings["words"], _dense_model(ctx), progress=ctx.progress)
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
    """``words`` of a dense run chosen on the tune split (:func:`clirplug.dense.choose_words`): every value's
    measure goes in the first output, the query vectors (with their embedding seconds) in the second, for the
    tune split's run."""
    from clirplug.atomic import atomic_open
    from clirplug.dense import choose_words, embed_timed, save_timed
    from clirplug.io.qrels import read_qrels
    from clirplug.io.topics import read_topics, topic_field

    s = stage.settings
    topics, qrels = stage.inputs
    queries = {t.id: topic_field(t, s["field"]) for t in read_topics(topics)}
    timed = embed_timed(_dense_model(ctx), queries)
    save_timed(stage.outputs[1], timed)

    def log(words, value):
        if ctx.progress:
            print(f"{stage.name}: words={words} {s['measure']} {value:.4f}", file=sys.stderr, flush=True)

    searchers = {words: _dense_searcher(ctx, folder) for words, folder in zip(s["grid"], stage.inputs_from)}
    best, values = choose_words(searchers, queries, read_qrels(qrels), hits=s["hits"], measure=s["measure"],
                                timed=timed, log=log, max_passage_hits=s.get("max_passage_hits"))
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
