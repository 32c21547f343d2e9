"""Experiment configuration: a YAML file, ``--set a.b=c`` overrides, validation naming the key.

A config names the collection (a folder in the manclir-de layout: ``corpus.jsonl``,
``topics.<split>.jsonl``, ``qrels.<split>.txt``, ``bitext.<split>.{src,tgt}``,
``dictionary.tsv``; or an ir_datasets id, ``collection: {irds: hc4/fa}``, whose documents,
topics (``<id>/<split>``) and qrels are written into such a folder, ``ROOT/collections/<name>``,
by :func:`prepare_collection`), the splits that are run, the split parameters are tuned on, the
query fields, the measures, and one entry per run under ``runs:`` (its method and
settings). ``docs/experiments.md`` describes every key.

A relative ``collection.path`` in the file is read relative to the file's folder (a symbolic
link's target's: ``configs/demo.yaml`` links to the packaged demo config), one given
with ``--set`` relative to the current directory; ``root`` (where ``runs/``, ``indexes/``
and ``models/`` go) is relative to the current directory.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clirplug.corpus import followed_link
from clirplug.errors import ClirplugError
from clirplug.executor import EXECUTORS
from clirplug.lucene.languages import LANGUAGES
from clirplug.settings import Settings

FIELDS = ("title", "desc")
PATH_KEYS = (("collection", "path"), ("collection", "corpus"))  # keys holding input paths, resolved as the docstring says

# top-level key -> default; ``collection`` and ``runs`` are checked on their own.
DEFAULTS: dict[str, Any] = {
    "name": None,
    "root": ".",
    "collection": None,
    "splits": ["dev"],
    "tune_split": "train",
    "folds": 3,
    "fields": ["title", "desc"],
    "measures": ["MAP", "nDCG", "PRES@1000"],
    "hits": 1000,
    "bm25": None,  # Bm25Run's defaults (Anserini's)
    "baseline": "dt",
    "jobs": 1,
    "executor": "local",
    "ray_address": None,
    "models": {},
    "translations": {},
    "runs": {},
}
TRANSLATION_DEFAULTS: dict[str, Any] = {"split": "dev", "lines": 300, "outputs": ["word-by-word"]}
TRANSLATION_OUTPUTS = ("word-by-word", "hiero", "flat")
COLLECTION_DEFAULTS: dict[str, Any] = {"path": None, "corpus": None, "irds": None, "name": None, "lang": "de",
                                        "doc_lang": "en", "passages": None, "passage_hits": None}


@dataclass(frozen=True)
class Collection:
    """A collection folder in the manclir-de layout and its language pair (and the ir_datasets id it is written from)."""

    path: Path
    name: str
    lang: str  # the query (source) language
    doc_lang: str = "en"
    irds: str | None = None
    documents: Path | None = None  # the documents, when not the folder's corpus.jsonl (collection.corpus)
    passages: int | None = None  # searched as passages of at most this many words, pages scored by MaxP
    passage_hits: int | None = None  # passages searched per query on a passage collection

    @property
    def searched_name(self) -> str:
        """The name of what is searched, in index folder names: the collection's, ``.passages-<words>`` for passages."""
        return self.name if self.passages is None else f"{self.name}.passages-{self.passages}"

    def topics(self, split: str) -> Path:
        return self.path / f"topics.{split}.jsonl"

    def qrels(self, split: str) -> Path:
        return self.path / f"qrels.{split}.txt"

    def bitext(self, split: str, lang: str) -> Path:
        return self.path / f"bitext.{split}.{lang}"

    @property
    def corpus(self) -> Path:
        return self.documents or self.path / "corpus.jsonl"

    @property
    def dictionary(self) -> Path:
        return self.path / "dictionary.tsv"


@dataclass(frozen=True)
class RunSpec:
    """One entry of ``runs:``: a run name, its method (a key of :data:`clirplug.methods.METHODS` whose entry an
    experiment may name), its settings, and the options of the method's training step as written and as its
    settings."""

    name: str
    method: str
    settings: Settings
    options: dict = field(default_factory=dict)
    training: Settings | None = None


@dataclass(frozen=True)
class ExperimentConfig:
    """A validated experiment configuration (see the module docstring)."""

    name: str
    root: Path
    collection: Collection
    splits: tuple[str, ...]
    tune_split: str
    fields: tuple[str, ...]
    measures: tuple[str, ...]
    hits: int
    bm25: dict
    baseline: str
    jobs: int
    models: dict
    translations: dict
    runs: tuple[RunSpec, ...]
    source: str = "config"
    folds: int = 0  # cross-fitting folds of the tune split (0: tune on the final model's translations)
    executor: str = "local"  # where parallel work runs (clirplug.executor): local processes or ray
    ray_address: str | None = None  # the Ray cluster of executor: ray (none: Ray started on this machine)

    @property
    def run_dir(self) -> Path:
        return self.root / "runs" / self.name

    @property
    def index_dir(self) -> Path:
        return self.root / "indexes" / self.collection.searched_name

    @property
    def passage_file(self) -> Path:
        """The passages of a passage collection (``collection.passages``), cut by the experiment beside its index."""
        return self.root / "indexes" / f"{self.collection.searched_name}.jsonl"

    @property
    def model_dir(self) -> Path:
        return self.root / "models" / self.collection.name

    def run(self, name: str) -> RunSpec:
        return next(spec for spec in self.runs if spec.name == name)


def prepare_collection(config: ExperimentConfig, progress: bool = True) -> None:
    """Write the collection folder of an ``irds:`` collection (its corpus and the topics and qrels of
    the splits the config runs and tunes on) unless written before; a collection folder is left as is."""
    from clirplug.io.collection import write_collection

    c = config.collection
    if c.irds is not None:
        write_collection(c.irds, c.path, (*config.splits, config.tune_split), c.lang, progress)


def _error(source, key, message) -> ClirplugError:
    return ClirplugError(f"{source}: {key}: {message}")


def set_override(raw: dict, assignment: str, source: str = "--set") -> None:
    """Apply one ``a.b.c=value`` to the nested dict ``raw`` (``value`` read as YAML: numbers, lists...)."""
    import yaml

    key, sep, text = assignment.partition("=")
    if not sep or not key.strip():
        raise ClirplugError(f"{source} {assignment!r}: expected KEY=VALUE, e.g. collection.lang=fr")
    try:
        value = yaml.safe_load(text) if text.strip() else ""
    except yaml.YAMLError as error:
        raise ClirplugError(f"{source} {assignment!r}: cannot read the value as YAML ({error})") from None
    parts = key.strip().split(".")
    node = raw
    for depth, part in enumerate(parts[:-1]):
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise ClirplugError(f"{source} {assignment!r}: {'.'.join(parts[:depth + 1])} is not a mapping")
        node = child
    node[parts[-1]] = value


def load_config(path, overrides=(), cwd=None) -> ExperimentConfig:
    """Read the YAML file ``path``, apply ``overrides`` (``a.b=c`` strings), validate.

    Raises
    ------
    ClirplugError
        Naming the file and the key of the first problem found.
    """
    import yaml

    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ClirplugError(f"{path}: cannot read the config ({error.strerror})") from None
    except yaml.YAMLError as error:
        raise ClirplugError(f"{path}: not valid YAML ({error})") from None
    if not isinstance(raw, dict):
        raise ClirplugError(f"{path}: expected a mapping of keys (name, collection, runs, ...)")
    raw = copy.deepcopy(raw)
    _resolve_paths(raw, path.resolve().parent)
    cwd = Path(cwd) if cwd is not None else Path.cwd()
    for assignment in overrides:
        before = {keys: _get(raw, keys) for keys in PATH_KEYS}
        set_override(raw, assignment)
        for keys in PATH_KEYS:
            value = _get(raw, keys)
            if value != before[keys] and isinstance(value, str):
                _put(raw, keys, str(cwd / value))
    return validate(raw, str(path))


def _get(raw, keys):
    node = raw
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _put(raw, keys, value):
    node = raw
    for key in keys[:-1]:
        node = node[key]
    node[keys[-1]] = value


def _resolve_paths(raw, base: Path):
    for keys in PATH_KEYS:
        value = _get(raw, keys)
        if isinstance(value, str):
            _put(raw, keys, str(base / value))


def _check_name(source, key, value) -> str:
    """A name that becomes a folder under ``root``: one path part, no ``..``."""
    from clirplug.atomic import is_path_part

    value = _check_type(source, key, value, str)
    if not is_path_part(value):
        raise _error(source, key, f"{value!r} becomes a folder name under root: use one plain name, without / or ..")
    return value


def _with_passages(source, collection: Collection, coll: dict, hits: int) -> Collection:
    """``collection`` with its ``passages`` and ``passage_hits`` keys checked (``passage_hits``: 10 times ``hits``
    by default, as Pyserini searches 10,000 passages for 1,000 MaxP documents)."""
    from dataclasses import replace

    if coll["passages"] is None:
        if coll["passage_hits"] is not None:
            raise _error(source, "collection.passage_hits", "needs collection.passages (the words of a passage)")
        return collection
    words = _check_type(source, "collection.passages", coll["passages"], int)
    passage_hits = 10 * hits if coll["passage_hits"] is None else \
        _check_type(source, "collection.passage_hits", coll["passage_hits"], int)
    for key, value in (("passages", words), ("passage_hits", passage_hits)):
        if value < 1:
            raise _error(source, f"collection.{key}", f"must be at least 1, got {value}")
    return replace(collection, passages=words, passage_hits=passage_hits)


def _references(spec: RunSpec) -> list[str]:
    """The runs an entry reads: a fusion's ``runs``, a reranker's ``candidates``."""
    return [*(getattr(spec.settings, "runs", None) or ()), *filter(None, [getattr(spec.settings, "candidates", None)])]


def _reference_cycle(runs) -> list[str] | None:
    """A cycle of runs referring to each other (fusion ``runs``, ``candidates``), or None."""
    refers = {spec.name: _references(spec) for spec in runs}
    state: dict[str, int] = {}

    def visit(name, path):
        if state.get(name) == 1:
            return path[path.index(name):] + [name]
        if state.get(name) == 2 or name not in refers:
            return None
        state[name] = 1
        for other in refers[name]:
            cycle = visit(other, path + [name])
            if cycle:
                return cycle
        state[name] = 2
        return None

    for name in refers:
        cycle = visit(name, [])
        if cycle:
            return cycle
    return None


def _check_type(source, key, value, expected):
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        raise _error(source, key, f"expected {expected.__name__}, got {value!r}")
    return value


def _string_list(source, key, value, allowed=None) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(item, str) and item for item in value):
        raise _error(source, key, f"expected a non-empty list of names, got {value!r}")
    for item in value:
        if allowed is not None and item not in allowed:
            raise _error(source, key, f"unknown value {item!r} (choose from {', '.join(allowed)})")
    return tuple(dict.fromkeys(value))


def validate(raw: dict, source: str = "config") -> ExperimentConfig:
    """Check the nested dict of a config and build an :class:`ExperimentConfig`."""
    from clirplug.eval.measures import parse_measures
    from clirplug.experiment.plan import check_models
    from clirplug.methods import METHODS, Bm25Run

    unknown = sorted(set(raw) - set(DEFAULTS))
    if unknown:
        raise _error(source, unknown[0], f"unknown key (known: {', '.join(DEFAULTS)})")
    values = {key: raw.get(key, default) for key, default in DEFAULTS.items()}

    coll = values["collection"]
    if not isinstance(coll, dict):
        raise _error(source, "collection", "expected a mapping with path, lang (and name, doc_lang)")
    unknown = sorted(set(coll) - set(COLLECTION_DEFAULTS))
    if unknown:
        raise _error(source, f"collection.{unknown[0]}", f"unknown key (known: {', '.join(COLLECTION_DEFAULTS)})")
    coll = {**COLLECTION_DEFAULTS, **coll}
    for key in ("lang", "doc_lang"):
        coll[key] = _check_type(source, f"collection.{key}", coll[key], str)
        if coll[key] not in LANGUAGES:
            raise _error(source, f"collection.{key}", f"unknown language {coll[key]!r} (choose one of {', '.join(sorted(LANGUAGES))})")
    root = Path(_check_type(source, "root", values["root"], str))
    root = (root if root.is_absolute() else Path.cwd() / root).resolve()
    if coll["irds"] is not None:
        if coll["path"] is not None or coll["corpus"] is not None:
            raise _error(source, "collection", "give either path (a collection folder) or irds (an ir_datasets id)")
        dataset_id = _check_type(source, "collection.irds", coll["irds"], str)
        name = _check_name(source, "collection.name", coll["name"] if coll["name"] is not None else dataset_id.replace("/", "-"))
        collection = Collection(root / "collections" / name, name, coll["lang"], coll["doc_lang"], dataset_id)
    else:
        if not isinstance(coll["path"], str):
            raise _error(source, "collection.path", "missing: the folder of the collection (or irds: an ir_datasets id)")
        coll_path = Path(coll["path"]).resolve()
        documents = None
        if coll["corpus"] is not None:
            documents = Path(_check_type(source, "collection.corpus", coll["corpus"], str)).resolve()
            if not documents.exists():
                raise _error(source, "collection.corpus", f"{documents}: no such file or folder")
        elif not (coll_path / "corpus.jsonl").is_file():
            raise _error(source, "collection.path", f"{coll_path}/corpus.jsonl: no such file")
        else:
            linked = followed_link(coll_path / "corpus.jsonl")  # a link file: the documents are the file it names
            documents = linked if linked != coll_path / "corpus.jsonl" else None
        name = coll["name"] if coll["name"] is not None else coll_path.resolve().name
        collection = Collection(coll_path, _check_name(source, "collection.name", name), coll["lang"], coll["doc_lang"],
                                documents=documents)

    exp_name = values["name"] if values["name"] is not None else Path(source).stem
    exp_name = _check_name(source, "name", exp_name)
    splits = _string_list(source, "splits", values["splits"])
    tune_split = _check_type(source, "tune_split", values["tune_split"], str)
    for split in (*splits, tune_split):
        key = "splits" if split in splits else "tune_split"
        if collection.irds is not None:
            from clirplug.irds import load_dataset

            try:
                load_dataset(f"{collection.irds}/{split}", "queries")
            except ClirplugError as error:
                raise _error(source, key, str(error)) from None
        elif not collection.topics(split).is_file():
            raise _error(source, key, f"{collection.topics(split)}: no such file")
    folds = _check_type(source, "folds", values["folds"], int)
    if folds < 0 or folds == 1:
        raise _error(source, "folds", f"expected 0 (no cross-fitting) or at least 2, got {folds}")
    fields = _string_list(source, "fields", values["fields"], FIELDS)
    measures = _string_list(source, "measures", values["measures"])
    try:
        parse_measures(list(measures))
    except ClirplugError as error:
        raise _error(source, "measures", str(error)) from None
    hits = _check_type(source, "hits", values["hits"], int)
    jobs = _check_type(source, "jobs", values["jobs"], int)
    if hits < 1 or jobs < 1:
        raise _error(source, "hits" if hits < 1 else "jobs", "must be at least 1")
    collection = _with_passages(source, collection, coll, hits)
    executor = _check_type(source, "executor", values["executor"], str)
    if executor not in EXECUTORS:
        raise _error(source, "executor", f"expected one of {', '.join(EXECUTORS)}, got {executor!r}")
    ray_address = values["ray_address"]
    if ray_address is not None:
        ray_address = _check_type(source, "ray_address", ray_address, str)
        if executor != "ray":
            raise _error(source, "ray_address", "needs executor: ray")
    bm25 = Bm25Run.from_mapping(values["bm25"], f"{source}: bm25")
    bm25 = {"k1": bm25.k1, "b": bm25.b}

    models = check_models(values["models"], f"{source}: models")
    trans = values["translations"] or {}
    if not isinstance(trans, dict) or set(trans) - set(TRANSLATION_DEFAULTS):
        raise _error(source, "translations", f"expected a mapping with keys {', '.join(TRANSLATION_DEFAULTS)}")
    trans = {**TRANSLATION_DEFAULTS, **trans}
    trans["split"] = _check_type(source, "translations.split", trans["split"], str)
    trans["lines"] = _check_type(source, "translations.lines", trans["lines"], int)
    trans["outputs"] = list(_string_list(source, "translations.outputs", trans["outputs"], TRANSLATION_OUTPUTS)
                            if trans["outputs"] else ())

    runs_raw = values["runs"]
    if not isinstance(runs_raw, dict):
        raise _error(source, "runs", "expected a mapping of run name -> settings")
    runs = []
    for run_name, settings in runs_raw.items():
        key = f"runs.{run_name}"
        if not isinstance(run_name, str) or not run_name or any(c in run_name for c in " ./\t"):
            raise _error(source, key, "a run name must be a non-empty word without spaces, dots or slashes")
        if run_name in ("floor", "ceiling"):
            raise _error(source, key, "floor and ceiling are always run; choose another name")
        settings = dict(settings or {})
        method = settings.pop("method", run_name)
        planned = [name for name, entry in METHODS.items() if entry.experiment]  # also those registered at run time
        if method not in planned:
            raise _error(source, f"{key}.method", f"unknown method {method!r} (known: {', '.join(planned)})")
        runs.append(RunSpec(run_name, method, *METHODS[method].read(settings, f"{source}: {key}")))
    names = {spec.name for spec in runs}
    for spec in runs:
        for other in _references(spec):
            if other not in names | {"floor"} or other == spec.name:
                raise _error(source, f"runs.{spec.name}", f"refers to {other!r}, which is neither floor nor "
                                                          "another run of runs:")
    cycle = _reference_cycle(runs)
    if cycle:
        raise _error(source, f"runs.{cycle[0]}", f"the runs refer to each other in a cycle: {' -> '.join(cycle)}")
    baseline = _check_type(source, "baseline", values["baseline"], str)
    if runs and baseline not in names | {"floor"}:
        raise _error(source, "baseline", f"{baseline!r} is not a run of runs: (nor floor)")
    return ExperimentConfig(exp_name, root, collection, splits, tune_split, fields, measures, hits, bm25,
                            baseline, jobs, models, trans, tuple(runs), source, folds, executor, ray_address)
