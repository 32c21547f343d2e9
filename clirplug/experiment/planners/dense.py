"""Dense retrieval in an experiment: the collection embedded per dense model and ``words`` value, ``words`` chosen on
the tune split, each split searched."""

from __future__ import annotations

import json
import os
import sys

from clirplug.encoders import DEFAULT_ENCODER
from clirplug.errors import ClirplugError
from clirplug.experiment.kinds import Context, stage_kind, write_run_with_sidecar
from clirplug.experiment.plan import Plan, Stage
from clirplug.experiment.planners.dt import plan_translation, read_translations
from clirplug.experiment.systems import corpus_entry, describes, index_entry, model_entry

SEARCH_KEYS = ("search", "m", "ef_construction", "ef_search")  # a dense run's settings of how it searches


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


def _encoder_of(settings) -> dict:
    """The dense model of a dense run as stage settings: none for e5 (its stages' settings, so their cache keys and
    names, are those of before a second model), ``encoder`` for another."""
    return {} if settings.encoder == DEFAULT_ENCODER else {"encoder": settings.encoder}


def _named(encoder: dict) -> str:
    """The dense model's part of the names of the stages that embed and index its vectors (none for e5)."""
    return "".join(f".{value}" for value in encoder.values())


def plan_dense(plan: Plan, spec, splits) -> None:
    """Dense retrieval: the collection embedded once per dense model (``encoder``) and ``words`` value (cached
    beside the index), with ``search: hnsw`` the vectors indexed in Lucene HNSW; with a ``grid``, ``words`` chosen
    per field on the tune split; then every split and field searched."""
    from clirplug.dense import cache_folder, model_id

    c, s = plan.config, spec.settings
    grid = _dense_grid(str(c.source), spec.name, s)
    encoder = _encoder_of(s)
    corpus = plan.corpus()  # the vector folders are keyed by the pages' digest (passages: beside the passages' index)
    folders = tuple(cache_folder(c.index_dir, c.collection.corpus, words, s.encoder) for words in grid)
    embeds = tuple(plan.add(Stage(f"dense-embed{_named(encoder)}.w{words}", "dense-embed",
                                  {"model": model_id(s.encoder), "words": words, **encoder},
                                  inputs=corpus.inputs, deps=corpus.deps, outputs=(folder,),
                                  inputs_from=corpus.inputs_from))
                   for words, folder in zip(grid, folders))
    search = _search_settings(s)
    if search:  # the vectors of each ``words`` value indexed once in Lucene HNSW, beside them: searches depend on both
        from clirplug.lucene.vectors import hnsw_index_name

        graph = {"m": s.m, "ef_construction": s.ef_construction}
        name = hnsw_index_name(s.m, s.ef_construction)
        embeds += tuple(plan.add(Stage(f"dense-hnsw{_named(encoder)}.w{words}.m{s.m}.efc{s.ef_construction}",
                                       "dense-hnsw", {"model": model_id(s.encoder), "words": words, **graph},
                                       deps=(embed,), outputs=(folder / name,), inputs_from=(folder,)))
                        for words, folder, embed in zip(grid, folders, embeds))
    if s.query == "translation":
        _plan_translated(plan, spec, splits, grid, embeds, folders, {**search, **encoder})
        return
    for fld in c.fields:
        settings = {"model": model_id(s.encoder), "words": grid[0], "tuned": False, **search, **encoder}
        deps, inputs_from = embeds, folders
        if s.grid is not None:
            qrels = c.collection.qrels(c.tune_split)
            if not qrels.is_file():
                raise ClirplugError(f"{c.source}: runs.{spec.name}.grid: {qrels}: no such file (words is tuned on it)")
            tune = plan.add(Stage(f"tune.{spec.name}.{fld}", "dense-tune",
                                  {"model": model_id(s.encoder), "grid": grid, "field": fld, "split": c.tune_split,
                                   "measure": "MAP", **plan.search_hits(), **search, **encoder},
                                  inputs=(c.collection.topics(c.tune_split), qrels), deps=embeds,
                                  outputs=(c.run_dir / f"{c.tune_split}.{fld}.{spec.name}.words.json",
                                           c.run_dir / f"{c.tune_split}.{fld}.{spec.name}.queries.npz"),
                                  inputs_from=folders))
            settings = {"model": model_id(s.encoder), "grid": grid, "tuned": True, **search, **encoder}
            deps, inputs_from = (*embeds, tune), (plan.stages[tune].outputs[0], *folders)
        for split in splits:
            split_settings, split_inputs = settings, inputs_from
            if s.grid is not None and split == c.tune_split:  # the tuning embedded these queries already
                split_settings = {**settings, "reuse": True}
                split_inputs = (*inputs_from, plan.stages[tune].outputs[1])
            plan.run_stage({"name": spec.name, "method": "dense", "split": split, "field": fld}, "dense",
                           split_settings, inputs=(c.collection.topics(split),), deps=deps, inputs_from=split_inputs)


def _plan_translated(plan: Plan, spec, splits, grid: list[int], embeds: tuple, folders: tuple, search: dict) -> None:
    """Dense retrieval of DT's 1-best translations (``query: translation``): the ``translate`` stages of a DT run
    of the same grammar (:func:`clirplug.experiment.planners.dt.plan_translation`; on the tune split the folds'
    cross-fitted ones) embedded as queries against the collection vectors of the source-query runs (the same
    ``dense-embed`` stages); with a ``grid``, ``words`` chosen per field on the tune split's translations.
    ``search`` holds the stages' settings of how they search and of the dense model."""
    from clirplug.dense import model_id

    c, s = plan.config, spec.settings
    for fld in c.fields:
        settings = {"model": model_id(s.encoder), "words": grid[0], "tuned": False, "query": "translation", **search}
        deps, inputs_from = embeds, folders
        if s.grid is not None:
            qrels = c.collection.qrels(c.tune_split)
            if not qrels.is_file():
                raise ClirplugError(f"{c.source}: runs.{spec.name}.grid: {qrels}: no such file (words is tuned on it)")
            translations = [plan.stages[plan_translation(plan, s.kind, "bitext", part, fld)]
                            for part in plan.parts(c.tune_split)]
            tune = plan.add(Stage(f"tune.{spec.name}.{fld}", "dense-tune",
                                  {"model": model_id(s.encoder), "grid": grid, "field": fld, "split": c.tune_split,
                                   "measure": "MAP", "query": "translation", **plan.search_hits(), **search},
                                  inputs=(qrels,), deps=(*embeds, *(t.name for t in translations)),
                                  outputs=(c.run_dir / f"{c.tune_split}.{fld}.{spec.name}.words.json",
                                           c.run_dir / f"{c.tune_split}.{fld}.{spec.name}.queries.npz"),
                                  inputs_from=(*folders, *(t.outputs[0] for t in translations))))
            settings = {"model": model_id(s.encoder), "grid": grid, "tuned": True, "query": "translation", **search}
            deps, inputs_from = (*embeds, tune), (plan.stages[tune].outputs[0], *folders)

        def plan_part(part, fld=fld, settings=settings, deps=deps, inputs_from=inputs_from):
            translate = plan.stages[plan_translation(plan, s.kind, "bitext", part, fld)]
            return plan.run_stage({"name": spec.name, "method": "dense", "split": part.name, "field": fld}, "dense",
                                  settings, deps=(*deps, translate.name), inputs_from=(*inputs_from, translate.outputs[0]))

        for split in splits:
            plan.split_run({"name": spec.name, "method": "dense", "split": split, "field": fld}, plan_part)


def _search_settings(settings) -> dict:
    """How a dense run searches, as stage settings: none for exact search (the stages' settings, so their cache
    keys, are those of before HNSW), ``search``, ``m``, ``ef_construction`` and ``ef_search`` for HNSW."""
    return {} if settings.search == "exact" else {key: getattr(settings, key) for key in SEARCH_KEYS}


def _search_of(settings: dict) -> dict:
    """The :data:`SEARCH_KEYS` among a dense stage's settings (none: exact search)."""
    return {key: settings[key] for key in SEARCH_KEYS if key in settings}


def _encoder_in(settings: dict) -> str:
    """The dense model of a dense stage's settings (e5 without ``encoder``)."""
    return settings.get("encoder", DEFAULT_ENCODER)


@describes("dense")
def dense_system(stage: Stage, ctx: Context, system: dict, tuned: dict) -> dict:
    """A dense run's system: the index (beside which the vectors are cached), the corpus, the dense model unless
    e5, the ``words`` used, through HNSW how it searches, and with ``query: translation`` the translating model and
    the field."""
    options = {"words": tuned.get("words", stage.settings.get("words")), **_search_of(stage.settings)}
    if "encoder" in stage.settings:
        options["encoder"] = stage.settings["encoder"]
    model = None
    if stage.settings.get("query") == "translation":  # the model and weights of its translate stage
        translate = next(ctx.plan_stages[dep] for dep in stage.deps if ctx.plan_stages[dep].kind == "translate")
        model = model_entry(ctx.config, translate.settings, translate.settings["weights"])
        options.update(query="translation", field=stage.written_run["field"])
    return {**system, "method": "dense", "index": index_entry(ctx.config), "corpus": corpus_entry(ctx.config),
            "model": model, "options": options}


@stage_kind("dense-embed")
def dense_embed_stage(stage: Stage, ctx: Context) -> dict:
    """The collection's document vectors (:func:`clirplug.dense.embed_corpus`; resumes at the missing chunks), the
    chunks embedded over the experiment's workers (``--threads``, ``--executor``), each loading the model once; with
    one worker, here by the process's model. A passage collection's folder is keyed by its pages (the passages file
    does not exist when the plan is made) and linked under the passages file's key, where ``clirplug search --method
    dense`` on that file looks."""
    from clirplug.dense import embed_corpus, link_cache

    corpus = (stage.inputs or stage.inputs_from)[0]  # the collection's pages, or the passages stage's file
    encoder, words = _encoder_in(stage.settings), stage.settings["words"]
    model = _dense_model(ctx, encoder) if ctx.jobs == 1 else None  # a single chunk left: loaded on _threads(ctx)
    embed_corpus(corpus, stage.outputs[0], words, model, progress=ctx.progress, encoder=encoder,
                 workers=ctx.workers, threads=_threads(ctx))
    link_cache(stage.outputs[0], corpus, words, encoder)
    return {}


@stage_kind("dense-hnsw")
def dense_hnsw_stage(stage: Stage, ctx: Context) -> dict:
    """A Lucene HNSW index of the collection's vectors (:func:`clirplug.lucene.vectors.build_hnsw_index`), in
    their folder; one left there before (by ``clirplug search``, or of vectors since recomputed) is rebuilt."""
    import shutil

    from clirplug.dense import load_embeddings
    from clirplug.lucene.vectors import build_hnsw_index

    s, index = stage.settings, stage.outputs[0]
    ctx.forget(f"{stage.inputs_from[0]}|dense|{index.name}|")
    if index.is_dir():
        shutil.rmtree(index)
    embeddings, docids = load_embeddings(stage.inputs_from[0])
    build_hnsw_index(embeddings, docids, index, s["m"], s["ef_construction"], progress=ctx.progress)
    return {"documents": len(docids)}


def _dense_model(ctx: Context, encoder: str):
    """The process's model of ``encoder``; e5 on its share of the cores: ``jobs`` stages run at once, and OpenMP
    threads beyond the free cores wait on each other (single queries beside another stage took 2 to 3 times longer).
    The vectors do not depend on the number of threads."""
    from clirplug.dense import load_model

    key = "dense-model" if encoder == DEFAULT_ENCODER else f"dense-model.{encoder}"
    return ctx.get(key, lambda: load_model(_threads(ctx), encoder))


def _threads(ctx: Context) -> int:
    """A process's share of the cores when ``jobs`` stages run at once."""
    return max(1, (os.cpu_count() or 1) // ctx.jobs)


def _dense_searcher(ctx: Context, folder, settings: dict):
    """One DenseSearcher per vector folder and way of searching (a stage's ``search``, ``m``, ``ef_construction``
    and ``ef_search`` settings; exact without them), all sharing one model of each dense model per process (the
    folder is the model's)."""
    from clirplug.dense import DenseSearcher
    from clirplug.lucene.vectors import hnsw_index_name

    search = _search_of(settings)
    key = f"{folder}|dense|" + (f"{hnsw_index_name(search['m'], search['ef_construction'])}|ef{search['ef_search']}"
                                if search else "exact")
    return ctx.get(key, lambda: DenseSearcher(folder, _dense_model(ctx, _encoder_in(settings)), **search))


@stage_kind("dense-tune", version=3)
def dense_tune_stage(stage: Stage, ctx: Context) -> dict:
    """``words`` of a dense run chosen on the tune split (:func:`clirplug.dense.choose_words`): every value's
    measure goes in the first output, the query vectors (with their embedding seconds) in the second, for the
    tune split's run. With ``query: translation``, the queries are the tune split's cross-fitted translations."""
    from clirplug.atomic import atomic_open
    from clirplug.dense import choose_words, embed_timed, save_timed
    from clirplug.io.qrels import read_qrels
    from clirplug.io.topics import read_topics, topic_field

    s = stage.settings
    folders = stage.inputs_from[:len(s["grid"])]
    if s.get("query") == "translation":  # the folds' 1-best translations of the tune split
        qrels = stage.inputs[0]
        queries = read_translations(*stage.inputs_from[len(s["grid"]):])[0]
    else:
        topics, qrels = stage.inputs
        queries = {t.id: topic_field(t, s["field"]) for t in read_topics(topics)}
    timed = embed_timed(_dense_model(ctx, _encoder_in(s)), queries)
    save_timed(stage.outputs[1], timed)

    def log(words, value):
        if ctx.progress:
            print(f"{stage.name}: words={words} {s['measure']} {value:.4f}", file=sys.stderr, flush=True)

    searchers = {words: _dense_searcher(ctx, folder, s) for words, folder in zip(s["grid"], folders)}
    best, values = choose_words(searchers, queries, read_qrels(qrels), hits=s["hits"], measure=s["measure"],
                                timed=timed, log=log, max_passage_hits=s.get("max_passage_hits"))
    with atomic_open(stage.outputs[0]) as handle:
        json.dump({"words": best, "folder": str(folders[s["grid"].index(best)]), "measure": s["measure"],
                   "value": values[best], "split": s["split"],
                   "evaluated": [{"words": words, s["measure"]: values[words]} for words in s["grid"]]}, handle, indent=1)
        handle.write("\n")
    return {"words": best, s["measure"]: values[best]}


@stage_kind("dense", version=3)
def dense_stage(stage: Stage, ctx: Context) -> dict:
    """Dense retrieval (:class:`clirplug.dense.DenseSearcher`): the topic field as a query, by cosine (with
    ``query: translation``, its 1-best translation from a ``translate`` stage); with ``tuned``, in the vectors of
    the ``words`` chosen on the tune split (whose queries' vectors, with ``reuse``, come from the tuning)."""
    from clirplug.dense import load_timed
    from clirplug.io.topics import read_topics, topic_field

    tuned = json.loads(stage.inputs_from[0].read_text(encoding="utf-8")) if stage.settings["tuned"] else None
    folder = tuned["folder"] if tuned else stage.inputs_from[0]
    searcher = _dense_searcher(ctx, folder, stage.settings)
    latencies: dict[str, float] = {}
    if stage.settings.get("query") == "translation":  # latency: translation seconds, then embedding and search
        queries, latencies = read_translations(stage.inputs_from[-1])
    else:
        queries = {t.id: topic_field(t, stage.written_run["field"]) for t in read_topics(stage.inputs[0])}
    timed = load_timed(stage.inputs_from[-1]) if stage.settings.get("reuse") else None
    frame = searcher.search_all(queries, stage.settings["hits"], progress=ctx.progress, latencies=latencies,
                                timed=timed)
    return write_run_with_sidecar(stage, frame, latencies, tuned={"words": tuned["words"]} if tuned else None)
