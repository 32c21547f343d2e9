"""The registry of methods: each one's settings class, declared once, its library function, its searcher and its planner.

:data:`METHODS` maps a method's name to a :class:`Method`: the settings class of an experiment's
``runs:`` entry (typed, with defaults and checks, see :mod:`clirplug.settings`), the library function
that makes its run (a search, a reranking or a fusion: :meth:`Method.function`), the searcher of
:mod:`clirplug.api` that the front ends build (:meth:`Method.searcher_class`; the API's
:func:`clirplug.api.searcher`, the search service and the PyTerrier transformers all build it
from here), what that searcher needs (:data:`NEEDS`), whether it reranks, the experiment's planner of
its ``runs:`` entries (:meth:`Method.planner_function`; the experiment finds a run's planner only here),
and, for methods that train on the tune split, their training step, whose options the entry may also set.
:data:`RUNS` holds the methods an experiment's ``runs:`` may name (all but ``bm25``).
``TRAINING`` maps each step of ``clirplug train`` (and of an experiment's ``models:``) to its
settings class, function and the steps it reads. The command line builds its flags from the same classes
(:func:`clirplug.cli.options.add_settings`; ``tests/unit/test_cli_options.py`` checks the flags it
cannot build); ``tests/unit/test_methods.py`` checks that each library function takes its method's
settings, each searcher what it needs and each planner exists.

Adding a method: its library function, its searcher, one entry here and one planner module of
:mod:`clirplug.experiment.planners` (``docs/architecture.md``); a method registered at run time, with a
planner of its own module, is planned like these.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from clirplug.bm25 import ANSERINI_B, ANSERINI_K1, check_bm25
from clirplug.encoders import DEFAULT_ENCODER, ENCODERS
from clirplug.errors import ClirplugError
from clirplug.fusion.tune import KAPPA_STEP
from clirplug.lucene import hnsw, rm3
from clirplug.mt import KINDS
from clirplug.mt.one_best import QUERIES
from clirplug.rerank.config import DEFAULT_DEPTH
from clirplug.settings import Settings, option
from clirplug.train.align import AlignSettings, train_align
from clirplug.train.boost import BoostSettings, train_boost
from clirplug.train.bowfd import BowfdSettings, train_bowfd
from clirplug.train.grammar import GrammarSettings, train_grammar
from clirplug.train.lm import LmSettings, train_lm
from clirplug.train.mira import MiraSettings, train_mira
from clirplug.train.weights import WeightsSettings, train_weights_on_bitext

GRAMMAR = option("hiero", "grammar of the model", choices=KINDS)


@dataclass(frozen=True)
class Bm25Run(Settings):
    """``bm25``: BM25 of the untranslated query; also the BM25 that dt, dt-mira and psq score with
    (an experiment's ``bm25:`` mapping)."""

    k1: float = option(ANSERINI_K1, "BM25 k1, Anserini's by default")
    b: float = option(ANSERINI_B, "BM25 b, Anserini's by default")

    def validate(self, name_of=str) -> None:
        check_bm25(self.k1, self.b, name_of)


@dataclass(frozen=True)
class DtRun(Settings):
    """``dt``: BM25 of the decoder's 1-best translation; with ``prf: rm3``, expanded by Anserini's RM3."""

    kind: str = GRAMMAR
    weights: str = option("bitext", "decoder weights tuned on the bitext, or on parallel queries of the tune split",
                          choices=("bitext", "queries"))
    prf: str = option("none", "pseudo-relevance feedback on the translated query: none, or rm3 (Anserini's RM3)",
                      choices=rm3.PRFS)
    fb_terms: int = option(rm3.FB_TERMS, "RM3: feedback terms (Anserini's default)", low=1)
    fb_docs: int = option(rm3.FB_DOCS, "RM3: feedback documents (Anserini's default)", low=1)
    original_query_weight: float = option(rm3.ORIGINAL_QUERY_WEIGHT, "RM3: weight of the original query "
                                          "(Anserini's default)", low=0.0, high=1.0)
    grid: object | None = option(None, "RM3's parameters chosen on the tune split: a mapping of fb_terms, fb_docs, "
                                 "original_query_weight -> list of values")

    def validate(self, name_of=str) -> None:
        if self.grid is not None:
            if self.prf != "rm3":
                raise ClirplugError(f"{name_of('grid')}: a grid of RM3's parameters needs prf: rm3")
            rm3.rm3_grid(self.grid, name_of)


@dataclass(frozen=True)
class DtMiraRun(Settings):
    """``dt-mira``: DT whose 1-best is the MIRA-reranked best of the decoder's n-best list (weights from
    ``clirplug train mira``, trained on n-best lists of this grammar; an experiment's entry also takes its training
    options, :class:`MiraSettings`, the C grid among them, but BM25's, which are the experiment's ``bm25:``)."""

    kind: str = GRAMMAR


@dataclass(frozen=True)
class PsqRun(Settings):
    """``psq``: probabilistic structured queries over the model's tables."""

    psq: object | None = option(None, "PSQ settings: a mapping ({lambda: [0, 0, 1], pL: 0.1}) or the --psq string")
    kind: str = GRAMMAR
    grid: object | None = option(None, "settings tuned on the tune split: a mapping of setting -> list of values")


@dataclass(frozen=True)
class BoostRun(Settings):
    """``boost``: bagged RankBoost trained on the tune split (its training options: :class:`BoostSettings`)."""

    candidates: str | None = option(None, "run whose documents are reranked (default: the whole collection)")


@dataclass(frozen=True)
class BowfdRun(Settings):
    """``bowfd``: candidates reranked by forced decoding (its training options: :class:`BowfdSettings`)."""

    candidates: str = option("dt", "run whose documents are reranked")
    kind: str = GRAMMAR
    lm: bool = option(True, "the language model feature (false: the report's ablation)")
    # Not the training's depth (BowfdSettings.depth), which an entry cannot set: the experiment trains with
    # its default whatever the run's depth (the demo reranks 50, trained with 100); passing this one
    # instead would change the demo's weights and runs.
    depth: int = option(DEFAULT_DEPTH, "candidates reranked per topic (the training keeps BowfdSettings.depth's "
                        "default)", low=1)


@dataclass(frozen=True)
class FusionRun(Settings):
    """``fusion``: two runs fused with weights kappa, 1 - kappa tuned on the tune split; with ``fuser: learned``, any
    number of runs (every other run but fusions by default) fused by weights learned on the tune split's runs
    (:mod:`clirplug.fusion.learned`)."""

    runs: tuple[str, ...] | None = option(None, "the two runs fused (learned: the candidate inputs, by default every "
                                          "run but fusions)")
    fuser: object | None = option(None, "fusion method (default: borda), or a list of them chosen with kappa")
    grid_step: float = option(KAPPA_STEP, "step of the kappa grid", above=0.0, high=1.0, metavar="STEP")
    measure: str = option("MAP", "measure maximized by kappa (an ir_measures name)")
    grid: object | None = option(None, "learned: {depth: [...], l2: [...]}, chosen by cross-validation on the tune split")
    pairs: int = option(200, "learned: document pairs sampled per tune-split topic", low=1)
    seed: int = option(0, "learned: seed of the pair sampling")
    folds: int = option(5, "learned: cross-validation folds of the tune split's topics", low=2)
    min_gain: float = option(0.001, "learned: cross-validated MAP a run must add to become an input", low=0.0)


@dataclass(frozen=True)
class DenseRun(Settings):
    """``dense``: multilingual-e5-small (or ``encoder: use-m3``, multilingual USE v3), no translation; with ``query:
    translation``, of DT's 1-best translation."""

    encoder: str = option(DEFAULT_ENCODER, "the dense model: e5 (multilingual-e5-small) or use-m3 (multilingual "
                          "USE v3)", choices=ENCODERS)
    words: int = option(48, "embed a document as its title and this many first words", low=0)
    query: str = option("source", "the query embedded: the source-language topic, or its 1-best translation by the "
                        "model (DT's query)", choices=QUERIES)
    kind: str = GRAMMAR  # query: translation: the grammar of DT's translations
    grid: object | None = option(None, "{words: [...]}: the word count chosen on the tune split")
    search: str = option("exact", "exact: every document's cosine; hnsw: the candidates of a Lucene HNSW index, "
                         "rescored exactly", choices=hnsw.SEARCHES)
    m: int = option(hnsw.M, "HNSW: neighbours per node of the graph (Lucene's M)")
    ef_construction: int = option(hnsw.EF_CONSTRUCTION, "HNSW: beam width building the graph (efConstruction)")
    ef_search: int = option(hnsw.EF_SEARCH, "HNSW: beam width searching it (efSearch; at least the hits asked for)")

    def validate(self, name_of=str) -> None:
        hnsw.check_search(self.search, self.m, self.ef_construction, self.ef_search, name_of)


@dataclass(frozen=True)
class TrainingStep:
    """A step of ``clirplug train``: its settings class, the library function that runs it (files in, model out;
    it may take ``progress=``, and a grammar ``filter=``), the steps whose files of the model folder it reads
    (``needs``), and whether it trains one model per grammar kind (``per_kind``, its ``kind=``)."""

    settings: type[Settings]
    train: Callable
    needs: tuple[str, ...] = ()
    per_kind: bool = False


TRAINING: dict[str, TrainingStep] = {
    "align": TrainingStep(AlignSettings, train_align),
    "grammar": TrainingStep(GrammarSettings, train_grammar, needs=("align",), per_kind=True),
    "lm": TrainingStep(LmSettings, train_lm),
    "weights": TrainingStep(WeightsSettings, train_weights_on_bitext, needs=("align", "grammar", "lm"), per_kind=True),
    "boost": TrainingStep(BoostSettings, train_boost),
    "bowfd": TrainingStep(BowfdSettings, train_bowfd, needs=("align", "grammar", "lm")),
    "mira": TrainingStep(MiraSettings, train_mira, needs=("align", "grammar", "lm")),
}


# What a method's searcher needs to search, each the searcher's parameter of that name: the resources that the
# methods of a system share, and the searchers it is built on. A method's own files (BOW-FD's and MIRA's weights,
# boosting's model) are options of its searcher.
RESOURCES = {
    "index": "a Lucene index built by clirplug index",
    "model": "a translation model folder (docs/models.md)",
    "corpus": "the collection's documents (a JSONL file or folder)",
}
NEEDS = {
    **RESOURCES,
    "first_stage": "the searcher whose candidates it reranks",
    "searchers": "the searchers whose runs it fuses",
}


@dataclass(frozen=True)
class Method:
    """A method: its settings, the library function making its run, the searcher of :mod:`clirplug.api`, what
    that searcher needs (keys of :data:`NEEDS`) to search, and its training step, if any, whose ``fixed``
    settings a ``runs:`` entry cannot set.

    ``library``, ``searcher`` and ``planner`` name a function, a class and the experiment's planner as
    ``"module:name"``, imported on use: the modules of the methods import numpy, which building the command
    line's parser does not. A method that ``reranks`` rescores a first stage's candidates (its searcher is a
    :class:`clirplug.api.Reranker`); ``experiment`` says whether an experiment's ``runs:`` may name it (those
    have a ``planner``).
    ``flags`` maps each searcher keyword argument that the command line sets (``clirplug search``, ``clirplug
    serve``) to the destination of the flag giving it (``{"settings": "psq"}``: ``--psq`` gives PSQ's
    ``settings``; :func:`clirplug.cli.options.searcher_arguments`).
    """

    settings: type[Settings]
    library: str
    searcher: str
    needs: tuple[str, ...]
    help: str
    reranks: bool = False
    experiment: bool = True
    training: TrainingStep | None = None
    fixed: tuple[str, ...] = ()
    planner: str | None = None
    flags: Mapping[str, str] = field(default_factory=dict)

    def function(self) -> Callable:
        """The library function that makes the method's run frame (``qid, docid, rank, score``)."""
        return _imported(self.library)

    def searcher_class(self) -> type:
        """The searcher class of :mod:`clirplug.api` that front ends build for the method."""
        return _imported(self.searcher)

    def planner_function(self) -> Callable:
        """The experiment's planner of the method's ``runs:`` entries: ``planner(plan, spec, splits)`` adds the
        stages of the runs of ``spec`` on ``splits`` (:mod:`clirplug.experiment.planners`)."""
        if self.planner is None:
            raise ClirplugError(f"{self.help}: no experiment planner (not a method of runs:)")
        return _imported(self.planner)

    def read(self, mapping: dict, where: str) -> tuple[Settings, dict, Settings | None]:
        """From a ``runs:`` mapping: the entry's settings, its training options as written (key-sorted, for the
        training stage's settings) and the training step's settings read from them (None without a step)."""
        own = {key: value for key, value in mapping.items() if key in self.settings.names() or self.training is None}
        training = {key: value for key, value in mapping.items() if key not in own}
        for key in training:
            if key in self.fixed:
                raise ClirplugError(f"{where}.{key}: set by the experiment itself, not a setting")
        trained = None if self.training is None else self.training.settings.from_mapping(training, where)
        return self.settings.from_mapping(own, where), dict(sorted(training.items())), trained


def _imported(name: str):
    module, attribute = name.split(":")
    return getattr(importlib.import_module(module), attribute)


BM25_FLAGS = {"k1": "k1", "b": "b"}
DT_FLAGS = {"field": "field", "stopwords": "stopwords", **BM25_FLAGS}

METHODS: dict[str, Method] = {
    "bm25": Method(Bm25Run, "clirplug.lucene.search:bm25_search", "clirplug.api:LuceneSearcher", ("index",),
                   "BM25 of the untranslated query", experiment=False, flags=BM25_FLAGS),
    "dt": Method(DtRun, "clirplug.qt.dt:dt_run", "clirplug.api:DtSearcher", ("index", "model"),
                 "direct translation: BM25 of the model's 1-best",
                 flags={**DT_FLAGS, "prf": "prf", "fb_terms": "fb_terms", "fb_docs": "fb_docs",
                        "original_query_weight": "original_query_weight"},
                 planner="clirplug.experiment.planners.dt:plan_dt"),
    "dt-mira": Method(DtMiraRun, "clirplug.qt.mira:search_run", "clirplug.api:DtMiraSearcher", ("index", "model"),
                      "DT with the 1-best chosen from the n-best list by MIRA weights",
                      flags={"mira": "mira", **DT_FLAGS}, training=TRAINING["mira"], fixed=("k1", "b"),
                      planner="clirplug.experiment.planners.mira:plan_dt_mira"),
    "psq": Method(PsqRun, "clirplug.qt.psq:psq_run", "clirplug.api:PsqSearcher", ("index", "model"),
                  "probabilistic structured queries of the model's tables",
                  flags={"settings": "psq", "table": "table", "field": "field", "src_lang": "src_lang", **BM25_FLAGS},
                  planner="clirplug.experiment.planners.psq:plan_psq"),
    "boost": Method(BoostRun, "clirplug.boost:rerank_run", "clirplug.api:BoostSearcher", ("corpus",),
                    "bagged RankBoost over n-gram pairs, alone or reranking a first stage",
                    reranks=True, training=TRAINING["boost"], fixed=("field", "src_lang"),
                    flags={"model": "model_file", "field": "field", "first_stage": "first_stage", "depth": "depth"},
                    planner="clirplug.experiment.planners.boost:plan_boost"),
    "bowfd": Method(BowfdRun, "clirplug.rerank.bowfd:rerank_run", "clirplug.api:BowfdSearcher",
                    ("index", "model", "first_stage"),
                    "BOW-FD: a first stage's top reranked by bag-of-words forced decoding", reranks=True,
                    training=TRAINING["bowfd"],
                    flags={"first_stage": "first_stage", "depth": "depth", "weights": "weights", "v": "v", "lm": "lm"},
                    planner="clirplug.experiment.planners.bowfd:plan_bowfd"),
    "fusion": Method(FusionRun, "clirplug.fusion:fuse", "clirplug.api:FusionSearcher", ("searchers",),
                     "the rankings of other methods fused (weighted Borda count, RRF, ...)",
                     flags={"searchers": "fuse", "method": "fuser", "kappa": "kappa"},
                     planner="clirplug.experiment.planners.fusion:plan_fusion"),
    "dense": Method(DenseRun, "clirplug.dense:dense_run", "clirplug.api:DenseSearcher", ("index", "corpus"),
                    "multilingual e5 or USE v3 embeddings of the query or its translation",
                    flags={"encoder": "encoder", "words": "words", "threads": "threads", "search": "search", "m": "m",
                           "ef_construction": "ef_construction", "ef_search": "ef_search", "query": "query",
                           "model": "model", "field": "field"},
                    planner="clirplug.experiment.planners.dense:plan_dense"),
}
# The methods of an experiment's ``runs:``: it searches BM25 with its ``bm25:`` settings for every baseline.
RUNS: dict[str, Method] = {name: method for name, method in METHODS.items() if method.experiment}


def get_method(name: str) -> Method:
    """The method registered as ``name``; a :class:`ClirplugError` listing the methods otherwise."""
    if name not in METHODS:
        raise ClirplugError(f"unknown method {name!r}: choose one of {', '.join(METHODS)}")
    return METHODS[name]
