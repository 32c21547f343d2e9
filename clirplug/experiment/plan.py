"""The experiment's plan: its stages, each with declared inputs, settings and outputs, in dependency order.

A :class:`Stage` declares everything its outputs depend on: external input files (hashed by content), the
stages it reads from (``deps``, by their cache keys) and its settings; its kind names the function that runs
it (:mod:`clirplug.experiment.kinds`). :func:`build_plan` plans the stages every experiment shares (the index,
the models of ``models:``, the floor and the ceilings, the translation outputs) and, for each entry of
``runs:``, calls its method's planner (:meth:`clirplug.methods.Method.planner_function`, a module of
:mod:`clirplug.experiment.planners`), which adds the method's stages with the :class:`Plan`'s helpers.

Run files are ``runs/<experiment>/<split>.<field>.<run>.trec`` with a ``.json`` sidecar (settings signature,
tuned parameters, per-query latencies). On a passage collection (``collection.passages``), the stages search the
passages cut by the ``passages`` stage (:mod:`clirplug.passages`): a stage ranking the collection writes a passage
run, ``runs/<experiment>/passages/<split>.<field>.<run>.trec``, and a ``maxp`` stage its page run by the best
passage of each page (:meth:`Plan.run_stage`); fusions fuse page runs.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from clirplug.errors import ClirplugError
from clirplug.methods import METHODS, TRAINING
from clirplug.passages import DELIMITER
from clirplug.train.weights import WeightsSettings


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

    @property
    def written_run(self) -> dict:
        """``run`` of a stage that writes a run file; an error on any other stage."""
        if self.run is None:
            raise ClirplugError(f"stage {self.name}: writes no run file")
        return self.run


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


def run_file(config, split: str, fld: str, name: str) -> Path:
    return config.run_dir / f"{split}.{fld}.{name}.trec"


def passage_run_file(config, split: str, fld: str, name: str) -> Path:
    return config.run_dir / "passages" / f"{split}.{fld}.{name}.trec"


def ranks_pages(stage: Stage) -> bool:
    """Whether ``stage`` writes a run over the collection's pages (the runs reported), not over its passages."""
    return stage.run is not None and not stage.run.get("passages")


@dataclass(frozen=True)
class Corpus:
    """The documents an experiment searches, as a stage reading them declares them: the collection's pages (an
    input file), or its passages (written by the ``passages`` stage)."""

    path: Path
    inputs: tuple = ()
    deps: tuple = ()
    inputs_from: tuple = ()


# ----------------------------------------------------------------------------- models:

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


# The training steps (:data:`clirplug.methods.TRAINING`) an experiment's ``models:`` may set, trained on the tune
# split's bitext into the model folder: ``arguments(config, src, tgt, kind, out)`` returns the step's keyword
# arguments (JSON values) for the folder ``out``, its input files and its output files.
MODEL_ARGUMENTS: dict[str, Callable] = {"align": _align_arguments, "grammar": _grammar_arguments,
                                        "lm": _lm_arguments, "weights": _weights_arguments}


def takes(function: Callable, parameter: str) -> bool:
    """Whether a training step's function has the keyword ``parameter`` (``progress``, ``filter``)."""
    return parameter in inspect.signature(function).parameters


def check_models(raw, where: str) -> dict:
    """The ``models:`` mapping: ``name -> settings`` of its training step, checked."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ClirplugError(f"{where}: expected a mapping of model -> settings")
    result = {}
    for name, options in raw.items():
        if name not in MODEL_ARGUMENTS:
            raise ClirplugError(f"{where}.{name}: unknown model (known: {', '.join(MODEL_ARGUMENTS)})")
        options = dict(options or {})
        TRAINING[name].settings.from_mapping(options, f"{where}.{name}")
        result[name] = dict(sorted(options.items()))
    return result


# ----------------------------------------------------------------------------- the plan

class Plan:
    """The stages of one config, in an order where every stage follows its dependencies."""

    def __init__(self, config):
        self.config = config
        self.stages: dict[str, Stage] = {}
        self.run_stages: dict[tuple[str, str, str], str] = {}  # (run, split, field) -> stage name
        self.passage_stages: dict[tuple[str, str, str], str] = {}  # the same -> its passage run's (passage collections)

    def add(self, stage: Stage) -> str:
        if stage.name not in self.stages:
            for dep in stage.deps:
                if dep not in self.stages:
                    raise AssertionError(f"stage {stage.name} depends on {dep}, which is not planned before it")
            self.stages[stage.name] = stage
        return stage.name

    # shared stages ------------------------------------------------------------
    def corpus(self) -> Corpus:
        """The searched documents: the collection's pages, or with ``collection.passages`` its passages (the
        ``passages`` stage cuts them, :func:`clirplug.passages.write_passages`)."""
        c = self.config
        coll = c.collection
        if coll.passages is None:
            return Corpus(coll.corpus, inputs=(coll.corpus,))
        name = self.add(Stage("passages", "passages", {"words": coll.passages}, inputs=(coll.corpus,),
                              outputs=(c.passage_file,)))
        return Corpus(c.passage_file, deps=(name,), inputs_from=(c.passage_file,))

    def index(self) -> str:
        c = self.config
        corpus = self.corpus()
        return self.add(Stage("index", "index", {"language": c.collection.doc_lang}, inputs=corpus.inputs,
                              deps=corpus.deps, outputs=(c.index_dir,), inputs_from=corpus.inputs_from))

    def search_hits(self) -> dict:
        """The depth settings of a stage that searches and scores its runs itself (a tuning): ``hits``, or on a
        passage collection ``hits`` passages (``collection.passage_hits``) scored as ``max_passage_hits`` pages."""
        c = self.config
        if c.collection.passages is None:
            return {"hits": c.hits}
        return {"hits": c.collection.passage_hits, "max_passage_hits": c.hits}

    def model(self, name: str, kind: str | None = None, fold: int | None = None) -> str:
        """The stage training model ``name`` with its ``models:`` options (and the stages it needs).

        With ``fold``, the model of that cross-fitting fold (:meth:`folds`): trained in
        ``models/<collection>/fold-<k>/`` on the tune bitext without the fold's pages; its decoder
        weights are the final model's (tuned on bitext lines, not on topics).
        """
        c = self.config
        step = TRAINING[name]
        src, tgt = c.collection.bitext(c.tune_split, c.collection.lang), c.collection.bitext(c.tune_split, c.collection.doc_lang)
        for path in (src, tgt):
            if not path.is_file():
                raise ClirplugError(f"{c.source}: models.{name}: {path}: no such file (the tune split's bitext)")
        suffix = (f".{kind}" if step.per_kind else "") + ("" if fold is None else f".f{fold}")
        if fold is not None and name == "weights":
            final = self.stages[self.model("weights", kind)]
            out = self.fold_model_dir(fold) / final.outputs[0].name
            return self.add(Stage(f"model.weights{suffix}", "copy", {}, deps=(final.name,), outputs=(out,),
                                  inputs_from=final.outputs))
        deps = tuple(self.model(other, kind, fold) for other in step.needs)
        inputs_from = ()
        if fold is None:
            arguments, inputs, outputs = MODEL_ARGUMENTS[name](c, src, tgt, kind, c.model_dir)
        else:
            deps += (self.folds(),)
            fold_src, fold_tgt = (self.fold_file(fold, f"bitext.{lang}") for lang in (c.collection.lang, c.collection.doc_lang))
            arguments, inputs, outputs = MODEL_ARGUMENTS[name](c, fold_src, fold_tgt, kind, self.fold_model_dir(fold))
            inputs_from = tuple(path for path in inputs if path in (fold_src, fold_tgt))
            inputs = tuple(path for path in inputs if path not in (fold_src, fold_tgt))
        if takes(step.train, "filter"):  # a grammar: filtered to the text the experiment translates
            deps += (self.source_text(),)
            arguments = {**arguments, "filter": str(self.stages[self.source_text()].outputs[0])}
        return self.add(Stage(f"model.{name}{suffix}", "train", {"model": name, "arguments": arguments,
                                                                 "settings": c.models.get(name, {})},
                              inputs=inputs, deps=deps, outputs=outputs, inputs_from=inputs_from))

    def translation_deps(self, kind: str, fold: int | None = None) -> tuple:
        """The model stages a decoder of grammar ``kind`` needs (alignment, grammar, LM, tuned weights)."""
        deps = [self.model("align", fold=fold), self.model("grammar", kind, fold), self.model("lm", fold=fold)]
        if self.config.models.get("weights") is not None:
            deps.append(self.model("weights", kind, fold))
        return tuple(deps)

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
        for part in parts:
            plan_part(part)
        rankings = [self.ranking(run["name"], part.name, run["field"]) for part in parts]
        self.run_stage(run, "join", {"parts": [part.name for part in parts]}, deps=tuple(s for s, _ in rankings),
                       inputs_from=tuple(path for _, path in rankings))

    def source_text(self, desc_queries: bool = False) -> str:
        """The source-language text the experiment translates (grammars are filtered to it).

        ``desc_queries``: with the bitext lines of the tune split's parallel desc queries, on which query-genre
        weights are tuned (when the config has desc queries and the tune bitext's page ids): a planner asks for
        them after planning its grammar, and the stage keeps its place in the plan.
        """
        c = self.config
        coll = c.collection
        name = "source-text"
        if name in self.stages and (not desc_queries or self.stages[name].settings.get("desc_queries")):
            return name
        splits = tuple(dict.fromkeys((*c.splits, c.tune_split)))
        topics = tuple(coll.topics(split) for split in splits)
        tune_lines = c.models.get("weights", {}).get("lines", WeightsSettings().lines)
        bitexts = [(coll.bitext(c.tune_split, coll.lang), tune_lines)]
        if c.translations["outputs"]:
            bitexts.append((coll.bitext(c.translations["split"], coll.lang), c.translations["lines"]))
        settings = {"fields": list(c.fields), "lang": coll.lang, "lines": [n for _, n in bitexts]}
        inputs = topics + tuple(path for path, _ in bitexts)
        if desc_queries and "desc" in c.fields and coll.bitext(c.tune_split, "ids").is_file():
            settings["desc_queries"] = True
            inputs += (coll.topics(c.tune_split),) + tuple(coll.bitext(c.tune_split, what)
                                                           for what in (coll.lang, coll.doc_lang, "ids"))
        self.stages[name] = Stage(name, "source-text", settings, inputs=inputs,
                                  outputs=(c.run_dir / "translations" / f"source.{coll.lang}",))
        return name

    def run_stage(self, run: dict, kind: str, settings: dict, inputs=(), deps=(), inputs_from=(),
                  fuses_pages: bool = False) -> str:
        """A stage writing the run file of ``run`` (``name``, ``method``, ``split``, ``field``).

        On a passage collection, unless the stage ``fuses_pages`` (reads page runs), the stage writes a run of
        ``collection.passage_hits`` passages (:func:`passage_run_file`), and a ``maxp`` stage the run file from it
        (:func:`clirplug.passages.max_passage`); the name returned is the latter's.
        """
        c = self.config
        name = f"run.{run['name']}.{run['split']}.{run['field']}"
        key = (run["name"], run["split"], run["field"])
        page_file = run_file(c, run["split"], run["field"], run["name"])
        if c.collection.passages is not None and not fuses_pages:
            passage_file = passage_run_file(c, run["split"], run["field"], run["name"])
            passages = self.add(Stage(f"passages.{name}", kind, {"hits": c.collection.passage_hits, **settings},
                                      tuple(inputs), tuple(deps), (passage_file,), {**run, "passages": True},
                                      tuple(inputs_from)))
            self.passage_stages[key] = passages
            kind, settings = "maxp", {"delimiter": DELIMITER}
            inputs, deps, inputs_from = (), (passages,), (passage_file,)
        stage = Stage(name, kind, {"hits": c.hits, **settings}, tuple(inputs), tuple(deps), (page_file,), run,
                      tuple(inputs_from))
        self.run_stages[key] = name
        return self.add(stage)

    def ranking(self, name: str, split: str, fld: str) -> tuple[str, Path]:
        """The stage and the file of run ``name``'s ranking of the searched documents (what a reranker reranks):
        its passage run on a passage collection, else its run."""
        key = (name, split, fld)
        if key in self.passage_stages:
            return self.passage_stages[key], passage_run_file(self.config, split, fld, name)
        return self.run_stages[key], run_file(self.config, split, fld, name)

    def runs_of(self, name: str, splits) -> None:
        """Plan the runs of ``name`` (``floor`` or a ``runs:`` entry, by its method's planner) for ``splits``
        and every field, once.

        Runs on the tune split are planned only when another run trains or tunes on them.
        """
        missing = [split for split in splits if (name, split, self.config.fields[0]) not in self.run_stages]
        if not missing:
            return
        if name == "floor":
            plan_floor(self, missing)
        else:
            spec = self.config.run(name)
            METHODS[spec.method].planner_function()(self, spec, missing)


def bm25_settings(config) -> dict:
    """The settings of a stage searching the index with the config's BM25."""
    return {"index": str(config.index_dir), "bm25": dict(config.bm25)}


def plan_floor(plan: Plan, splits) -> None:
    """The floor: BM25 with the untranslated queries."""
    c = plan.config
    index = plan.index()
    for split in splits:
        for fld in c.fields:
            plan.run_stage({"name": "floor", "method": "floor", "split": split, "field": fld}, "floor",
                           bm25_settings(c), inputs=(c.collection.topics(split),), deps=(index,))


def plan_ceiling(plan: Plan, splits) -> None:
    """The monolingual ceiling: BM25 with the English mate's title (splits with qrels); for desc queries, where
    the split's bitext names the pages of its lines, with the mate's desc opening (a like-for-like query)."""
    c = plan.config
    coll = c.collection
    index = plan.index()
    for split in splits:
        if coll.qrels(split).is_file():
            plan.run_stage({"name": "ceiling", "method": "ceiling", "split": split, "field": "title"}, "ceiling",
                           bm25_settings(c), inputs=(coll.qrels(split), coll.corpus), deps=(index,))
            bitext = tuple(coll.bitext(split, what) for what in (coll.lang, coll.doc_lang, "ids"))
            if "desc" in c.fields and all(path.is_file() for path in bitext):
                plan.run_stage({"name": "ceiling", "method": "ceiling", "split": split, "field": "desc"},
                               "ceiling-desc", bm25_settings(c),
                               inputs=(coll.qrels(split), coll.corpus, coll.topics(split), *bitext), deps=(index,))


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
        deps = (plan.model("align"),) if output == "word-by-word" else plan.translation_deps(output)
        plan.add(Stage(f"mt-eval.{output}.{split}", "mt-eval",
                       {"output": output, "lines": t["lines"], "model": str(c.model_dir), "lang": c.collection.lang,
                        "doc_lang": c.collection.doc_lang},
                       inputs=(src, ref), deps=deps,
                       outputs=(c.run_dir / "translations" / f"bitext.{split}.{output}.{c.collection.doc_lang}",)))


def plan_oov(plan: Plan) -> None:
    """Untranslated query words (:mod:`clirplug.mt.oov`) of each split's topics (the tune split's too) and field,
    by the model that translates them (on a cross-fitted tune split, each fold's); and how the segmenter cuts the
    dictionary's source terms. Planned for the splits whose models a run trains anyway."""
    c = plan.config
    if "model.align" not in plan.stages:
        return
    coll = c.collection
    for split in dict.fromkeys((c.tune_split, *c.splits)):
        parts = plan.parts(split)
        if any("model.align" + ("" if part.fold is None else f".f{part.fold}") not in plan.stages for part in parts):
            continue  # no run translates the split's topics (a tune split's folds): no model of its own to train
        deps = tuple(dict.fromkeys(dep for part in parts for dep in (plan.model("align", fold=part.fold), *part.deps)))
        for fld in c.fields:
            plan.add(Stage(f"oov.{split}.{fld}", "oov",
                           {"lang": coll.lang, "field": fld, "split": split,
                            "parts": [[str(part.topics), str(part.model_dir)] for part in parts]},
                           inputs=tuple(part.topics for part in parts if not part.deps), deps=deps,
                           outputs=(c.run_dir / "oov" / f"{split}.{fld}.tsv",),
                           inputs_from=tuple(part.topics for part in parts if part.deps)))
    if coll.dictionary.is_file():
        plan.add(Stage("dictionary-segmentation", "dictionary-segmentation",
                       {"lang": coll.lang, "model": str(c.model_dir)}, inputs=(coll.dictionary,),
                       deps=(plan.model("align"),), outputs=(c.run_dir / "oov" / "dictionary.json",)))


def build_plan(config) -> Plan:
    """Every stage of ``config``: index, models, baselines, each run, translation outputs, untranslated words."""
    plan = Plan(config)
    plan.runs_of("floor", config.splits)
    plan_ceiling(plan, config.splits)
    for spec in config.runs:
        plan.runs_of(spec.name, config.splits)
    plan_translations(plan)
    plan_oov(plan)
    return plan
