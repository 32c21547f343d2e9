"""The Python API: a searcher per method and the translation model as an object.

A searcher is built from its resources (a Lucene index, a model folder, a corpus, a first stage, the
searchers it fuses) and its method's options, keeps them loaded, and answers as Pyserini's ``LuceneSearcher``:

* ``search(q, k=10)``: the ``k`` best :class:`Hit` (``docid``, ``score``, the ``translation`` used, and from
  the index's stored fields ``lucene_docid``, ``raw``, ``contents``);
* ``batch_search(queries, qids, k=10, threads=1)``: ``{qid: [Hit, ...]}``;
* ``doc(docid)``: the stored :class:`Document` (``id()``, ``raw()``, ``contents()``), None if absent;
* ``batch_search_frame(queries, qids, k=10, threads=1)``: the same ranking as a DataFrame ``qid, docid, rank,
  score, translation`` ranked as :func:`clirplug.io.runs.sort_run` ranks, with the exact scores, which
  :func:`clirplug.io.runs.write_run` writes as a TREC run.

Each searcher calls the library functions behind ``clirplug search``, ``rerank`` and ``fuse``
(``docs/cli.md``), so its run file equals theirs and the experiment's byte for byte
(``tests/integration/test_api_demo.py``). A query is one text; ``field`` says how it is read: a
``title`` is translated whole, a ``desc`` (or ``narr``) sentence by sentence.

The translation column holds the target-language query each document was scored with: BM25 the
query itself, DT the 1-best, PSQ the weighted query (``#wsum(0.7 file 0.3 data)`` per source
token, ``#1(...)`` a phrase), BOW-FD the document's winning derivation (sentences joined by
spaces), boosting none (it scores n-gram pairs), dense retrieval the query itself, fusion those of
its inputs joined by `` | ``. ``clirplug.pyterrier.ClirplugTransformer(searcher)`` makes a PyTerrier
transformer of any searcher.

Each method's searcher class is named in the registry (:data:`clirplug.methods.METHODS`):
:func:`searcher` builds one by method name, :func:`compose` a system of them (a reranker and its
first stage, a fusion and its inputs) from names, shared resources and each method's options, as
the search service does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from clirplug.encoders import DEFAULT_ENCODER
from clirplug.errors import ClirplugError
from clirplug.io.runs import RUN_COLUMNS
from clirplug.methods import Bm25Run, DenseRun, DtRun
from clirplug.rerank.config import DEFAULT_DEPTH

COLUMNS = [*RUN_COLUMNS, "translation"]  # a run frame and the translation each hit was scored with


def _shown_score(score: float) -> float:
    """``score`` as a hit shows it: a float32 value (Lucene's BM25, the dense cosines) rounded to float32's
    shortest repr (``6.02``, not ``6.019999980926514``); any other float (fusion's) as it is. Run frames and run
    files keep the exact float64."""
    import numpy as np

    single = np.float32(score)
    return float(str(single)) if np.isfinite(single) and float(single) == score else float(score)


class Hit:
    """One document of a ranking, as Pyserini's ``LuceneSearcher.search`` gives it: ``docid``, ``score`` (a Python
    float; a float32 score rounded to its shortest repr), ``translation`` (the target-language query the document
    was scored with), and, read from the index's stored fields on first use, ``lucene_docid`` (Lucene's internal
    number), ``raw`` (the stored JSON) and ``contents`` (its text: title and contents joined by a newline); those
    are None when the searcher has no Lucene index. Two hits are equal when docid, score and translation are."""

    __slots__ = ("docid", "score", "translation", "_documents", "_read")

    def __init__(self, docid: str, score: float, translation: str | None = None, documents=None):
        self.docid, self.score, self.translation = docid, _shown_score(score), translation
        self._documents, self._read = documents, None

    def _record(self):
        if self._read is None:
            self._read = (None, None, None) if self._documents is None else self._documents.record(self.docid)
        return self._read

    @property
    def lucene_docid(self) -> int | None:
        return self._record()[0]

    @property
    def raw(self) -> str | None:
        return self._record()[1]

    @property
    def contents(self) -> str | None:
        return self._record()[2]

    def _key(self):
        return self.docid, self.score, self.translation

    def __eq__(self, other):
        return self._key() == other._key() if isinstance(other, Hit) else NotImplemented

    def __hash__(self):
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Hit(docid={self.docid!r}, score={self.score!r}, translation={self.translation!r})"

    def __reduce__(self):
        return _stored_hit, (self.docid, self.score, self.translation, self._record())


def _stored_hit(docid, score, translation, record):
    hit = Hit(docid, score, translation)
    hit._read = record
    return hit


class Document:
    """A stored document, as Pyserini's ``LuceneSearcher.doc`` gives it: ``id()``, ``lucene_docid()``, ``raw()``
    (the stored JSON) and ``contents()`` (its text: the corpus' title and contents joined by a newline)."""

    __slots__ = ("_docid", "_lucene_docid", "_raw", "_contents")

    def __init__(self, docid: str, lucene_docid: int, raw: str | None, contents: str | None):
        self._docid, self._lucene_docid, self._raw, self._contents = docid, lucene_docid, raw, contents

    def id(self) -> str:
        return self._docid

    def docid(self) -> str:
        return self._docid

    def lucene_docid(self) -> int:
        return self._lucene_docid

    def raw(self) -> str | None:
        return self._raw

    def contents(self) -> str | None:
        return self._contents

    def __repr__(self) -> str:
        return f"Document(id={self._docid!r})"


class _Documents:
    """The stored documents of a Lucene index, opened on first use."""

    def __init__(self, index):
        self.index, self._reader = index, None

    @property
    def reader(self):
        if self._reader is None:
            from clirplug.lucene.reader import LuceneIndex

            self._reader = LuceneIndex(self.index, progress=False)
        return self._reader

    def record(self, docid: str) -> tuple[int, str | None, str | None]:
        """``(lucene_docid, raw, contents)`` of ``docid`` (an error if the index has no such document)."""
        reader = self.reader
        return reader.doc_index(docid), reader.document_raw(docid), reader.document_text(docid)

    def document(self, docid) -> Document | None:
        reader = self.reader
        if isinstance(docid, int) and not isinstance(docid, bool):
            if not 0 <= docid < len(reader.docids):
                return None
            docid = str(reader.docids[docid])
        if not isinstance(docid, str):
            raise ClirplugError(f"doc: a document id is a string (or Lucene's internal number), got {docid!r}")
        try:
            return Document(docid, *self.record(docid))
        except ClirplugError:
            return None


def _topics(queries: Sequence[str], qids: Sequence[str]):
    """Topics whose three fields hold the query (``field`` then only says how it is split)."""
    from clirplug.io.topics import Topic, check_text

    queries, qids = list(queries), [str(qid) for qid in qids]
    if len(queries) != len(qids):
        raise ClirplugError(f"batch_search: {len(queries)} queries but {len(qids)} qids")
    seen = set()
    for qid, text in zip(qids, queries):
        if qid in seen:
            raise ClirplugError(f"batch_search: qid {qid!r} occurs twice")
        if not isinstance(text, str):
            raise ClirplugError(f"batch_search: the query of {qid!r} is not a string: {text!r}")
        check_text(text, f"batch_search: the query of {qid!r}")
        seen.add(qid)
    return [Topic(qid, text, text, text) for qid, text in zip(qids, queries)]


def _at_least_one(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ClirplugError(f"{name} must be a whole number of at least 1, got {value!r}")
    return value


def _bm25(bm25, k1: float | None, b: float | None):
    """The searcher's BM25 settings: ``bm25`` (a :class:`~clirplug.methods.Bm25Run`, or a mapping of its fields),
    or Pyserini's ``k1=`` and ``b=`` made into one (Anserini's defaults for those not given), checked there."""
    from clirplug.methods import Bm25Run

    if bm25 is None:
        return Bm25Run.from_values({name: value for name, value in (("k1", k1), ("b", b)) if value is not None})
    if isinstance(bm25, Mapping):
        bm25 = Bm25Run.from_values(bm25, lambda key: f"bm25.{key}")
    if not isinstance(bm25, Bm25Run):
        raise ClirplugError(f"bm25 must be a Bm25Run or a mapping of its fields, got {bm25!r}")
    if k1 is not None or b is not None:
        raise ClirplugError("give BM25's parameters as bm25=Bm25Run(...) or as k1= and b=, not both")
    return bm25


def _check_field(field: str) -> str:
    from clirplug.io.topics import FIELDS

    if field not in FIELDS:
        raise ClirplugError(f"unknown field {field!r}: choose one of {', '.join(FIELDS)}")
    return field


def _translated(frame, translations: dict):
    """``frame`` with the ``translation`` of each row's query."""
    return frame.assign(translation=frame["qid"].map(translations).astype(object))


def _ranked(frame, k: int):
    """``frame`` ranked by :func:`clirplug.io.runs.sort_run`, ``k`` per query, in :data:`COLUMNS`; a missing
    translation is None (not pandas' NaN: a fusion's document that only boosting found)."""
    from clirplug.io.runs import sort_run

    frame = sort_run(frame)
    frame = frame[frame["rank"] <= k][COLUMNS].reset_index(drop=True)
    translation = frame["translation"].astype(object)
    return frame.assign(translation=translation.where(translation.notna(), None))


def _model(model) -> TranslationModel:
    return model if isinstance(model, TranslationModel) else TranslationModel(model)


def _rebuild(cls, spec: dict):
    return cls(**spec)


def _run_part(task):
    """Worker of ``batch_search(threads=N)``: one share of the topics."""
    searcher, topics, k = task
    return searcher.run(topics, k)


def searcher(method: str, /, **arguments) -> Searcher:
    """The searcher of ``method`` (a name of :data:`clirplug.methods.METHODS`) built with ``arguments``, the
    keyword arguments of its class: ``searcher("dt", index="indexes/demo", model=model, field="desc")``."""
    import inspect

    from clirplug.methods import get_method

    cls = get_method(method).searcher_class()
    try:
        inspect.signature(cls).bind(**arguments)
    except TypeError as error:
        raise ClirplugError(f"{method}: {error}") from None
    return cls(**arguments)


def system(method: str, options: Mapping[str, Mapping] | None = None, path: tuple[str, ...] = ()) -> list[str]:
    """The methods of :func:`compose`'s system of ``method``: those it is built on (named in ``options``) first,
    each once, ``method`` last."""
    from clirplug.methods import get_method

    get_method(method)
    if method in path:
        raise ClirplugError(f"{method} is built on itself: {' -> '.join((*path, method))}")
    own = (options or {}).get(method, {})
    names = [own["first_stage"]] if isinstance(own.get("first_stage"), str) else []
    names += [name for name in own.get("searchers") or () if isinstance(name, str)]
    order: list[str] = []
    for name in names:
        order += [other for other in system(name, options, (*path, method)) if other not in order]
    return [*order, method]


def needs(method: str, options: Mapping[str, Mapping] | None = None) -> set[str]:
    """What the methods of :func:`compose`'s system of ``method`` need (keys of :data:`clirplug.methods.NEEDS`)."""
    from clirplug.methods import METHODS

    return {need for name in system(method, options) for need in METHODS[name].needs}


def compose(method: str, options: Mapping[str, Mapping] | None = None, name_of: Callable[[str], str] = str,
            **resources) -> Searcher:
    """The searcher of ``method`` and of the searchers it is built on, by name.

    Each method's keyword arguments are ``options[method]``; a first stage or fused searchers given by name
    (``{"bowfd": {"first_stage": "dt"}, "fusion": {"searchers": ["dt", "dense"]}}``) are composed the same
    way, each method once. ``resources`` (``index``, ``model``, ``corpus``: :data:`clirplug.methods.RESOURCES`)
    are shared: each method gets those it needs. A need that neither its options nor the resources meet is an
    error naming it by ``name_of`` (e.g. the service's flags).
    """
    from clirplug.methods import METHODS, NEEDS, RESOURCES

    options = options or {}
    for name in resources:
        if name not in RESOURCES:
            raise ClirplugError(f"unknown resource {name!r}: choose among {', '.join(RESOURCES)}")
    built: dict[str, Searcher] = {}
    for name in system(method, options):
        arguments = {need: resources[need] for need in METHODS[name].needs if resources.get(need) is not None}
        arguments.update(options.get(name, {}))
        for need in METHODS[name].needs:
            if arguments.get(need) is None:
                raise ClirplugError(f"{name} needs {name_of(need)}: {NEEDS[need]}")
        if isinstance(arguments.get("first_stage"), str):
            arguments["first_stage"] = built[arguments["first_stage"]]
        if "searchers" in arguments:
            arguments["searchers"] = [built[s] if isinstance(s, str) else s for s in arguments["searchers"]]
        built[name] = searcher(name, **arguments)
    return built[method]


@dataclass(frozen=True)
class System:
    """What a system file says of its run besides the searcher (:func:`load_system`)."""

    file: Path
    name: str
    method: str
    field: str
    tag: str
    hits: int
    index: str | None  # the system's index, or that of the first system it is built on with one


def load_system(file, loaded: dict | None = None) -> Searcher:
    """The searcher of a system file (:mod:`clirplug.system_file`), built by :func:`searcher` with the searchers of
    the system files it is built on (each file and each translation model loaded once; ``loaded``, a dict kept
    between calls, shares them between calls too); its ``system`` is the file's :class:`System`. Errors name the
    file."""
    return _load_system(Path(file), {} if loaded is None else loaded)


def _load_system(file: Path, loaded: dict) -> Searcher:
    import json

    from clirplug.system_file import read_system

    if file in loaded:
        return loaded[file]
    system = read_system(file)
    arguments = {**system["options"], **system["files"]}
    arguments.update({name: system[name] for name in ("index", "corpus") if system[name] is not None})
    if system["first_stage"] is not None:
        arguments["first_stage"] = _load_system(system["first_stage"], loaded)
    if system["searchers"] is not None:
        arguments["searchers"] = [_load_system(other, loaded) for other in system["searchers"]]
    try:
        if system["model"] is not None:
            key = json.dumps(system["model"], sort_keys=True)
            if key not in loaded:
                loaded[key] = TranslationModel(**system["model"])
            arguments["model"] = loaded[key]
        built = searcher(system["method"], **arguments)
    except ClirplugError as error:
        raise ClirplugError(f"{file}: {error}") from None
    index = system["index"] or next((s.system.index for s in built.inputs() if s.system and s.system.index), None)
    built.system = System(file, system["name"], system["method"], system["field"], system["tag"], system["hits"], index)
    loaded[file] = built
    return built


class Searcher:
    """Base of the searchers: :meth:`search`, :meth:`batch_search`, :meth:`batch_search_frame` and :meth:`doc`
    over the method's :meth:`run` and the stored documents of its index.

    A searcher pickles as the arguments it was built from (``_spec``), so that ``batch_search``
    can rebuild it in worker processes.
    """

    _spec: dict
    model: TranslationModel | None = None  # the translation model of a method that translates the query
    translates_query = False  # whether the translation is the query searched, one per query (DT, DT-MIRA, PSQ)
    system: System | None = None  # the system file it was loaded from (load_system)

    def inputs(self) -> list[Searcher]:
        """The searchers this one is built on (a first stage, the searchers it fuses)."""
        return []

    @property
    def derives(self) -> bool:
        """Whether each document's translation is its own (BOW-FD's winning derivation)."""
        return False

    def query_translation(self, query: str) -> dict:
        """How ``query`` is translated, for display (JSON-ready): ``{"best": the model's 1-best, "untranslated":
        the source words it copies untranslated}``, for PSQ with ``"psq": [{"source", "targets": [{"term", "p"},
        ...], "untranslated"}, ...]`` (:meth:`TranslationModel.psq_table`); those of the searchers it is built on
        too; ``{}`` when no translation is searched."""
        shown: dict = {}
        for searcher in reversed(self.inputs()):
            shown.update(searcher.query_translation(query))
        if self.model is not None:
            best = self.model.translate(query)
            shown["best"] = best[0][0] if best else ""
            shown["untranslated"] = self.model.untranslated(query)
        return shown

    def explanations(self, query: str, docids: Sequence[str]) -> dict[str, dict]:
        """Why each of ``docids`` scored as it did for ``query``, for display (JSON-ready), by docid; those of the
        searchers it is built on; ``{}`` for a method that explains nothing (BOW-FD explains its winning
        derivations: :meth:`BowfdSearcher.explanations`)."""
        shown: dict[str, dict] = {}
        for searcher in reversed(self.inputs()):
            shown.update(searcher.explanations(query, docids))
        return shown

    def settings_in_effect(self) -> dict:
        """What the searcher was built from (JSON-ready): its class, resources and settings, and those of the
        searchers it is built on, recursively; the system file it was loaded from, if any."""
        import dataclasses

        def plain(value):
            if isinstance(value, Searcher):
                return value.settings_in_effect()
            if isinstance(value, TranslationModel):
                return plain(value._spec)
            if dataclasses.is_dataclass(value) and not isinstance(value, type):
                return plain(dataclasses.asdict(value))
            if isinstance(value, Mapping):
                return {str(key): plain(item) for key, item in value.items()}
            if isinstance(value, list | tuple):
                return [plain(item) for item in value]
            if value is None or isinstance(value, bool | int | float | str):
                return value
            return str(value)

        shown = {"searcher": type(self).__name__, **plain(getattr(self, "_spec", {}))}
        if self.system is not None:
            shown["system_file"] = str(self.system.file)
        return shown

    def run(self, topics, k: int = 1000, progress: bool = False):
        """The run frame (``qid, docid, rank, score, translation``) of the topics' queries, ``k`` per query."""
        raise NotImplementedError

    def document_index(self):
        """The Lucene index whose stored documents the hits show: the searcher's own, or that of the first
        searcher it is built on with one (None: boosting alone)."""
        index = getattr(self, "_spec", {}).get("index")
        if index is not None:
            return index
        return next((found for other in self.inputs() if (found := other.document_index()) is not None), None)

    def _stored(self) -> _Documents | None:
        if "_documents" not in self.__dict__:
            index = self.document_index()
            self._documents = None if index is None else _Documents(index)
        return self._documents

    def _hits(self, frame) -> list[Hit]:
        documents = self._stored()
        return [Hit(docid, score, translation, documents)
                for docid, score, translation in zip(frame["docid"], frame["score"].tolist(), frame["translation"])]

    def doc(self, docid) -> Document | None:
        """The stored document ``docid`` (an external id, or Lucene's internal number) as Pyserini's
        ``LuceneSearcher.doc`` gives it, with ``id()``, ``raw()`` and ``contents()``; None if the index has none."""
        documents = self._stored()
        if documents is None:
            raise ClirplugError(f"{type(self).__name__} has no Lucene index to read documents from")
        return documents.document(docid)

    def search(self, q: str, k: int = 10) -> list[Hit]:
        """The ``k`` best documents for the query ``q``, best first (Pyserini's ``LuceneSearcher.search``)."""
        return self._hits(self.batch_search_frame([q], ["q"], k))

    def batch_search(self, queries: Sequence[str], qids: Sequence[str], k: int = 10, threads: int = 1, *,
                     progress: bool = False, executor: str = "local",
                     ray_address: str | None = None) -> dict[str, list[Hit]]:
        """The ``k`` best documents of each query as Pyserini's ``LuceneSearcher.batch_search`` gives them: ``{qid:
        [Hit, ...]}``, best first, in the order of ``qids``. :meth:`batch_search_frame` gives the same as a
        DataFrame (what :func:`clirplug.io.runs.write_run` writes); ``threads`` and the rest are its."""
        frame = self.batch_search_frame(queries, qids, k, threads, progress=progress, executor=executor,
                                        ray_address=ray_address)
        groups = dict(iter(frame.groupby("qid", sort=False)))
        return {str(qid): self._hits(groups[str(qid)]) if str(qid) in groups else [] for qid in qids}

    def batch_search_frame(self, queries: Sequence[str], qids: Sequence[str], k: int = 10, threads: int = 1, *,
                           progress: bool = False, executor: str = "local", ray_address: str | None = None):
        """The ``k`` best documents of each query as a DataFrame ``qid, docid, rank, score, translation``, ranked as
        :func:`clirplug.io.runs.sort_run` ranks (exact float64 scores): what ``write_run`` writes as a TREC run.

        ``threads`` > 1 spreads the queries over that many workers (each loads the searcher
        again, and the JVM): local processes, or Ray tasks with ``executor="ray"`` (on the
        cluster at ``ray_address``; :mod:`clirplug.executor`); the result does not depend on them.
        """
        import pandas as pd

        from clirplug.executor import ExecutorSettings, make_executor

        topics = _topics(queries, qids)
        k, threads = _at_least_one(k, "k"), _at_least_one(threads, "threads")
        workers = ExecutorSettings(executor, threads, ray_address)
        if (threads > 1 or executor == "ray") and len(topics) > 1:
            shares = [(self, topics[i::threads], k) for i in range(min(threads, len(topics)))]
            with make_executor(workers) as pool:
                return _ranked(pd.concat(pool.map(_run_part, shares), ignore_index=True), k)
        return _ranked(self.run(topics, k, progress), k)

    def __reduce__(self):
        return _rebuild, (type(self), self._spec)


def _checked_searcher(value, role: str):
    """``value`` when it is a searcher of this module; an error naming its ``role`` otherwise."""
    if not isinstance(value, Searcher):
        raise ClirplugError(f"{role} must be a searcher of clirplug.api, got {type(value).__module__}."
                            f"{type(value).__qualname__}")
    return value


class _Bm25Index(Searcher):
    """A searcher scoring BM25 over a Lucene index, opened on first search (a bad model or table is reported before
    the index is read, as the commands report it)."""

    bm25: Bm25Run

    @functools.cached_property
    def searcher(self):
        from clirplug.lucene.search import Bm25Searcher

        return Bm25Searcher(self._spec["index"], self.bm25.k1, self.bm25.b)


class LuceneSearcher(_Bm25Index):
    """BM25 of the untranslated query over a Lucene index (``clirplug search --method bm25``), as Pyserini's.

    Parameters
    ----------
    index : path
    k1, b : float, optional
        BM25 parameters, as Pyserini takes them (Anserini's by default).
    bm25 : Bm25Run or mapping, optional
        The same as one settings object (``clirplug.Bm25Run(k1=1.2, b=0.75)``, or ``{"k1": 1.2, "b": 0.75}``),
        instead of ``k1`` and ``b``.
    """

    def __init__(self, index, k1: float | None = None, b: float | None = None, *, bm25=None):
        self.bm25 = _bm25(bm25, k1, b)
        self._spec = {"index": index, "bm25": self.bm25}

    def run(self, topics, k: int = 1000, progress: bool = False):
        queries = {topic.id: topic.title for topic in topics}
        return _translated(self.searcher.search_all(queries, k, progress), queries)


class DtSearcher(_Bm25Index):
    """Direct translation: BM25 of the model's 1-best (``clirplug search --method dt``, :func:`clirplug.qt.dt.dt_run`).

    Parameters
    ----------
    index : path
        Lucene index of the target-language documents.
    model : path or TranslationModel
        Model folder (a path is loaded with the ``hiero`` grammar and German queries).
    field : {"title", "desc", "narr"}
        How a query is read: ``title`` translated whole, otherwise sentence by sentence.
    stopwords : iterable of str
        Target-language words removed from the 1-best.
    k1, b : float, optional
        BM25 parameters (Anserini's by default).
    bm25 : Bm25Run, optional
        The BM25 parameters as one settings object, instead of ``k1`` and ``b``.
    prf : {"none", "rm3"}
        ``rm3``: the 1-best expanded by Anserini's RM3 (``fb_terms``, ``fb_docs``, ``original_query_weight``,
        Anserini's defaults).
    """

    translates_query = True
    model: TranslationModel

    def __init__(self, index, model, *, field: str = "title", stopwords: Iterable[str] = (),
                 k1: float | None = None, b: float | None = None, bm25=None, prf: str = DtRun.prf,
                 fb_terms: int = DtRun.fb_terms, fb_docs: int = DtRun.fb_docs,
                 original_query_weight: float = DtRun.original_query_weight):
        from clirplug.lucene.rm3 import rm3_of

        self.bm25 = _bm25(bm25, k1, b)
        self.model, self.field, self.stopwords = _model(model), _check_field(field), sorted(set(stopwords))
        self.rm3 = rm3_of(prf, fb_terms, fb_docs, original_query_weight)
        self._spec = {"index": index, "model": self.model, "field": field, "stopwords": self.stopwords,
                      "bm25": self.bm25}
        if self.rm3 is not None:
            self._spec.update(prf=prf, fb_terms=fb_terms, fb_docs=fb_docs, original_query_weight=original_query_weight)

    def run(self, topics, k: int = 1000, progress: bool = False):
        from clirplug.mt.one_best import dt_queries

        queries = dt_queries(topics, self.field, self.model.translator, self.stopwords, progress=progress)
        return _translated(self.searcher.search_all(queries, k, progress, rm3=self.rm3), queries)


class DtMiraSearcher(_Bm25Index):
    """DT whose 1-best is chosen from the decoder's n-best list by MIRA weights (``clirplug search --method dt-mira``,
    :func:`clirplug.qt.mira.search_run`).

    Parameters
    ----------
    index : path
    model : path or TranslationModel
        The model folder whose n-best lists the weights were trained on (same grammar).
    mira : path
        Weights from ``clirplug train mira``.
    field, stopwords, k1, b, bm25
        As :class:`DtSearcher`'s (``stopwords``: those the weights were trained with).
    """

    translates_query = True
    model: TranslationModel

    def __init__(self, index, model, mira, *, field: str = "title", stopwords: Iterable[str] = (),
                 k1: float | None = None, b: float | None = None, bm25=None):
        from clirplug.lucene.reader import LuceneIndex
        from clirplug.qt.mira import mira_weights

        self.bm25 = _bm25(bm25, k1, b)
        self.model, self.field, self.stopwords = _model(model), _check_field(field), sorted(set(stopwords))
        self.weights = mira_weights(mira, self.model.kind, self.stopwords)
        self._spec = {"index": index, "model": self.model, "mira": mira, "field": field, "stopwords": self.stopwords,
                      "bm25": self.bm25}
        self.reader = LuceneIndex(index, progress=False) if self.weights.uses_index else None

    def query_translation(self, query: str) -> dict:
        from clirplug.io.topics import Topic
        from clirplug.qt.mira import mira_queries

        queries = mira_queries([Topic("q", query, query, query)], self.field, self.model.translator, self.weights,
                               self.stopwords, self.reader, progress=False)
        return {"best": queries["q"], "untranslated": self.model.untranslated(query)}

    def run(self, topics, k: int = 1000, progress: bool = False):
        from clirplug.qt.mira import mira_queries

        queries = mira_queries(topics, self.field, self.model.translator, self.weights, self.stopwords, self.reader,
                               progress=progress)
        return _translated(self.searcher.search_all(queries, k, progress), queries)


def _psq_text(distributions) -> str:
    """A PSQ query in Indri's notation: ``#wsum(p e ...)`` per source token, ``#1(...)`` a phrase target."""
    def term(target):
        return f"#1({target})" if " " in target else target

    return " ".join("#wsum(" + " ".join(f"{p:.4g} {term(t)}" for t, p in dist.items()) + ")" for dist in distributions)


class PsqSearcher(Searcher):
    """Probabilistic structured queries (``clirplug search --method psq``, :func:`clirplug.qt.psq.psq_run`).

    Parameters
    ----------
    index : path
    model : path or TranslationModel, optional
        Model folder whose tables (and grammar, and decoder) make the queries' distributions.
    settings : PsqSettings or str, optional
        The ``--psq`` options (``PsqSettings.parse("pL=0.01,pC=0.95")``, or that string; ``docs/psq.md``).
    table : path, optional
        A PSQ table file used instead of ``model``.
    field : {"title", "desc", "narr"}
    src_lang : str, optional
        Query language of a ``table`` (default ``de``); a model's is its own.
    k1, b : float, optional
    bm25 : Bm25Run, optional
        As :class:`DtSearcher`'s.
    """

    translates_query = True

    def __init__(self, index, model=None, settings=None, *, table=None, field: str = "title",
                 src_lang: str | None = None, k1: float | None = None, b: float | None = None, bm25=None):
        from clirplug.qt.psq import PsqSource, check_psq_files
        from clirplug.qt.psq_tables import PsqSettings

        if (model is None) == (table is None):
            raise ClirplugError("PsqSearcher needs exactly one of a model and a table")
        self.bm25 = _bm25(bm25, k1, b)
        self.model = None if model is None else _model(model)
        settings = PsqSettings.parse(settings) if isinstance(settings, str) else settings
        self.settings = PsqSettings() if settings is None else settings
        if self.model is not None:
            src_lang = src_lang or self.model.src_lang
            self.source = PsqSource(model=str(self.model.folder), field=_check_field(field), kind=self.model.kind,
                                    src_lang=src_lang)
        else:
            self.source = PsqSource(field=_check_field(field), src_lang=src_lang or "de", table=str(table))
        self._spec = {"index": index, "model": self.model, "settings": self.settings, "table": table, "field": field,
                      "src_lang": src_lang, "bm25": self.bm25}
        check_psq_files(self.source, self.settings)  # a bad file is refused now, not per query

    @functools.cached_property
    def scorer(self):
        """The PSQ scorer of the index, opened on first search (after the tables are read, as the command does)."""
        from clirplug.qt.psq import PsqScorer

        return PsqScorer(self._spec["index"], self.bm25.k1, self.bm25.b, progress=False)

    def query_translation(self, query: str) -> dict:
        if self.model is None:
            return {}
        table = self.model.psq_table(query, self.settings, self.source.field)
        return {**super().query_translation(query), "psq": [
            {"source": source, "targets": [{"term": term, "p": p} for term, p in targets.items()],
             "untranslated": source is not None and targets == {source: 1.0}}  # searched as itself
            for source, targets in table]}

    @functools.cached_property
    def tables(self):
        """The query tables' sources (:class:`~clirplug.qt.psq.PsqQueries`), read on first search and kept: the
        model's translator (DT's, with its translation cache) decodes the n-best lists."""
        from clirplug.qt.psq import PsqQueries

        if self.model is not None and self.model.src_lang == self.source.src_lang:
            return PsqQueries(self.source, self.settings, self.model.translator)
        return PsqQueries(self.source, self.settings)

    def run(self, topics, k: int = 1000, progress: bool = False):
        from clirplug.qt.psq import psq_search

        queries = self.tables.queries(topics)
        frame = psq_search(self.scorer, queries, k, progress=progress)
        return _translated(frame, {qid: _psq_text(dists) for qid, dists in queries.items()})


class DenseSearcher(Searcher):
    """Dense retrieval without translation, multilingual-e5-small or multilingual USE v3 (``clirplug search --method
    dense``, :func:`clirplug.dense.dense_run`): the query embedded whole, documents ranked by cosine.

    The documents (each its title and first ``words`` words) are embedded once, into the cache beside
    the index that the command and the experiment use (:func:`clirplug.dense.cache_folder`); with
    ``search="hnsw"``, a Lucene HNSW index of the vectors is built there once too.

    Parameters
    ----------
    index : path
        The Lucene index beside which the vectors are cached (``<index>.dense/``).
    corpus : path
        The collection's documents (JSONL file or folder), embedded unless cached.
    encoder : {"e5", "use-m3"}
        The dense model: multilingual-e5-small, or multilingual USE v3 (:mod:`clirplug.encoders`).
    words : int
        How many first words of a document are embedded after its title.
    threads : int, optional
        Threads of the embedding model (default: all cores).
    search : str
        ``exact`` (every document's cosine) or ``hnsw`` (the candidates HNSW finds, rescored exactly).
    m, ef_construction, ef_search : int
        HNSW's graph degree, beam width building the graph and beam width searching it.
    query : {"source", "translation"}
        The query embedded: the query itself, or its 1-best translation by ``model`` (as :class:`DtSearcher`
        translates it, read as ``field`` says).
    model : path or TranslationModel, optional
        The translation model of ``query="translation"``.
    field : {"title", "desc", "narr"}
        How a query is translated: ``title`` whole, otherwise sentence by sentence.
    """

    def __init__(self, index, corpus, *, encoder: str = DenseRun.encoder, words: int = DenseRun.words,
                 threads: int | None = None,
                 search: str = DenseRun.search, m: int = DenseRun.m, ef_construction: int = DenseRun.ef_construction,
                 ef_search: int = DenseRun.ef_search, query: str = DenseRun.query, model=None, field: str = "title"):
        from clirplug import dense

        settings = DenseRun.from_values({"encoder": encoder, "words": words, "search": search, "m": m, "query": query,
                                         "ef_construction": ef_construction, "ef_search": ef_search})
        if settings.query == "translation" and model is None:
            raise ClirplugError("dense: query='translation' needs a translation model (model=)")
        self.model = None if settings.query == "source" else _model(model)
        self.field, self.translates_query = _check_field(field), self.model is not None
        if threads is not None:
            _at_least_one(threads, "threads")
        lookup = {"search": settings.search, "m": settings.m, "ef_construction": settings.ef_construction,
                  "ef_search": settings.ef_search}
        self._spec = {"index": index, "corpus": corpus, "words": settings.words, "threads": threads, **lookup}
        if settings.encoder != DEFAULT_ENCODER:
            self._spec.update(encoder=settings.encoder)
        if self.model is not None:
            self._spec.update(query=settings.query, model=self.model, field=self.field)
        embedder = dense.load_model(threads, settings.encoder)
        folder = dense.embed_corpus(corpus, dense.cache_folder(index, corpus, settings.words, settings.encoder),
                                    settings.words, embedder, progress=False, encoder=settings.encoder)
        self.searcher = dense.DenseSearcher(folder, embedder, **lookup)

    def run(self, topics, k: int = 1000, progress: bool = False):
        from clirplug.dense import query_texts

        if self.model is None:
            queries = {topic.id: topic.title for topic in topics}
        else:
            queries = query_texts(topics, self.field, "translation", self.model.translator, progress=progress)
        return _translated(self.searcher.search_all(queries, k, progress), queries)


def _candidates(topics, candidates, depth: int):
    """The top ``depth`` documents of each topic's candidates (a run frame, or PyTerrier's with ``docno``)."""
    from clirplug.io.runs import sort_run

    if "docid" not in candidates.columns and "docno" in candidates.columns:
        candidates = candidates.rename(columns={"docno": "docid"})
    ranked = sort_run(candidates[["qid", "docid", "score"]])
    ids = {topic.id for topic in topics}
    return ranked[(ranked["rank"] <= depth) & ranked["qid"].isin(ids)].reset_index(drop=True)


def _first_stage(searcher):
    return None if searcher is None else _checked_searcher(searcher, "first_stage")


class Reranker(Searcher):
    """A searcher that rescores the top ``depth`` documents of a first stage (or of given candidates)."""

    first_stage: Searcher | None
    depth: int

    def inputs(self) -> list[Searcher]:
        return [] if self.first_stage is None else [self.first_stage]

    def rerank(self, queries: Sequence[str], qids: Sequence[str], candidates, k: int = 1000, progress: bool = False):
        """Rescore the top ``depth`` ``candidates`` (a run frame ``qid, docid, score``) of each query; a DataFrame
        as :meth:`batch_search_frame`'s."""
        topics = _topics(queries, qids)
        k = _at_least_one(k, "k")
        return _ranked(self.rescore(topics, _candidates(topics, candidates, self.depth), k, progress), k)

    def run(self, topics, k: int = 1000, progress: bool = False):
        if self.first_stage is None:
            return self.rescore(topics, None, k, progress)
        return self.rescore(topics, self.first_stage.run(topics, self.depth, progress), k, progress)

    def rescore(self, topics, candidates, k: int, progress: bool):
        """The run frame of the topics' ``candidates`` rescored (``None``: no first stage)."""
        raise NotImplementedError


class BowfdSearcher(Reranker):
    """BOW-FD: a first stage's top ``depth`` reranked by bag-of-words forced decoding (``clirplug rerank
    --method bowfd``, :func:`clirplug.rerank.bowfd.rerank_run`).

    Parameters
    ----------
    index : path
        The Lucene index of the candidates (statistics and analyzer).
    model : path or TranslationModel
    first_stage : Searcher, optional
        Where the candidates come from (without it, only :meth:`rerank` works).
    settings : BowfdConfig or mapping, optional
        BM25 of the IR features, beam, sentence depth and the query ``field`` (defaults: the paper's), or a mapping
        of those.
    weights : path or BowfdWeights, optional
        Weights from ``clirplug train bowfd``, or them loaded (default: the model's decoder weights and ``v``
        on every term).
    v : float, optional
        Overrides the weights' IR default weight.
    lm : bool
        False: the -LM forests (the paper's ablation).
    depth : int
        Candidates reranked per query.
    """

    model: TranslationModel

    @property
    def derives(self) -> bool:
        return True

    def __init__(self, index, model, first_stage: Searcher | None = None, settings=None, *, weights=None,
                 v: float | None = None, lm: bool = True, depth: int = DEFAULT_DEPTH):
        from clirplug.lucene.reader import LuceneIndex
        from clirplug.rerank.bowfd import BowfdWeights
        from clirplug.rerank.config import BowfdConfig

        self.model, self.first_stage = _model(model), _first_stage(first_stage)
        settings = BowfdConfig.from_mapping(settings, "settings") if isinstance(settings, Mapping) else settings
        self.settings = BowfdConfig() if settings is None else settings
        self.v, self.lm, self.depth = v, lm, _at_least_one(depth, "depth")
        self._spec = {"index": index, "model": self.model, "first_stage": first_stage, "settings": self.settings,
                      "weights": weights, "v": v, "lm": lm, "depth": depth}
        if weights is not None and not isinstance(weights, BowfdWeights):  # a bad file is refused now, not per query
            weights = BowfdWeights.load(weights, self.model.translator.feature_names)
        self.weights = weights
        self.index = LuceneIndex(index, progress=False)

    def rescore(self, topics, candidates, k: int, progress: bool):
        from clirplug.io.topics import topic_field
        from clirplug.rerank.bowfd import bowfd_reranker, explanation

        if candidates is None:
            raise ClirplugError("BowfdSearcher needs a first_stage to search; rerank() takes candidates")
        reranker = bowfd_reranker(self.model.translator, self.index, self.settings, self.weights, self.v, self.lm,
                                  topics=topics)
        records: dict[str, list[dict]] = {}  # the winning derivations of the scoring pass itself
        frame = reranker.rerank(topics, candidates, self.depth, progress=progress, records=records)
        frame = frame[frame["rank"] <= k]
        kept = set(zip(frame["qid"], frame["docid"]))
        derivations, self._explained = {}, {}
        for topic in topics:
            text = topic_field(topic, self.settings.field)
            for record in records.get(topic.id, ()):
                if (topic.id, record["docid"]) in kept:
                    derivations[topic.id, record["docid"]] = " ".join(s["yield"] for s in record["sentences"])
                    self._explained[text, record["docid"]] = functools.partial(explanation, record, reranker.weights)
        return frame.assign(translation=[derivations.get(key) for key in zip(frame["qid"], frame["docid"])])

    def explanations(self, query: str, docids: Sequence[str]) -> dict[str, dict]:
        """Each document's winning derivation for ``query`` (read as a ``title``): ``{docid: {"derivation", "score",
        "sentences": [{"yield", "score", "terms": [{"term", "bm25", "weight", "contribution"}, ...]}, ...]}}``, where
        ``bm25`` is the term's BM25 in the document times the times the derivation fires it, ``weight`` its
        weight ``w_t``, and ``contribution`` their product, its share of the score; the terms by falling
        contribution. The documents the last search ranked are explained from its own scoring pass."""
        shown = super().explanations(query, docids)
        known = getattr(self, "_explained", {})
        missing = [docid for docid in docids if (query, docid) not in known]
        if missing:
            from clirplug.io.topics import Topic
            from clirplug.rerank.bowfd import bowfd_reranker, explanation

            reranker = bowfd_reranker(self.model.translator, self.index, self.settings, self.weights, self.v, self.lm,
                                      topics=[Topic("q", query, query, query)])
            known = {**known, **{(query, record["docid"]): functools.partial(explanation, record, reranker.weights)
                                 for record in reranker.derivations(query, missing)}}
        shown.update({docid: known[query, docid]() for docid in docids if (query, docid) in known})
        return shown


class BoostSearcher(Reranker):
    """Bagged RankBoost over n-gram pairs (``clirplug search|rerank --method boost``,
    :func:`clirplug.boost.rerank_run`): the whole collection scored, or a first stage's top ``depth``.

    Parameters
    ----------
    model : path
        A model from ``clirplug train boost``.
    corpus : path
        The target-language collection (JSONL file or folder).
    first_stage : Searcher, optional
    field : {"title", "desc", "narr"}, optional
        How a query is read (default: the field the model was trained on).
    depth : int
        Candidates reranked per query (with a first stage).
    """

    def __init__(self, model, corpus, first_stage: Searcher | None = None, *, field: str | None = None,
                 depth: int = 1000):
        from clirplug import boost

        self.first_stage, self.field = _first_stage(first_stage), field and _check_field(field)
        self.depth = _at_least_one(depth, "depth")
        self._spec = {"model": model, "corpus": corpus, "first_stage": first_stage, "field": field, "depth": depth}
        self.boost = boost.load(model)
        self.collection = boost.read_collection(corpus, self.boost)

    def rescore(self, topics, candidates, k: int, progress: bool):
        from clirplug.boost import rerank_run

        frame = rerank_run(topics, candidates, model=self.boost, corpus=self.collection, field=self.field, depth=k,
                           progress=progress)
        return frame.assign(translation=None)


class FusionSearcher(Searcher):
    """The runs of several searchers fused (``clirplug fuse``, :func:`clirplug.fusion.fuse`).

    Parameters
    ----------
    searchers : sequence of Searcher
        Any searchers of this module, dense retrieval and other fusions included.
    method : str
        A fusion method of :data:`clirplug.fusion.FUSERS` (``borda``, ``rrf``, ``combsum``, ``combmnz``, ``learned``).
    weights : sequence of float, optional
        One per searcher; the method's default without. ``learned``: four per searcher, required
        (:func:`clirplug.fusion.learned.fuse`).
    kappa : float, optional
        Two searchers: the weights ``(kappa, 1 - kappa)`` (``clirplug fuse --kappa``), instead of ``weights``.
    depth : int
        K: documents taken from each searcher and kept.
    """

    def __init__(self, searchers: Sequence[Searcher], *, method: str = "borda", weights=None,
                 kappa: float | None = None, depth: int = 1000):
        from clirplug.fusion import check_fusion_weights, get_fuser
        from clirplug.fusion._common import check_depth, kappa_weights

        get_fuser(method)
        self.searchers = [_checked_searcher(searcher, "each searcher fused") for searcher in searchers]
        self.method = method
        if kappa is not None:
            if weights is not None:
                raise ClirplugError("give FusionSearcher weights= or kappa=, not both")
            if len(self.searchers) != 2:
                raise ClirplugError(f"kappa weighs two searchers, got {len(self.searchers)}: use weights=")
            weights = kappa_weights(kappa)
        self.weights = check_fusion_weights(method, weights, len(self.searchers))
        self.depth = check_depth(depth)
        self._spec = {"searchers": self.searchers, "method": method, "weights": self.weights, "depth": depth}

    @property
    def derives(self) -> bool:
        return any(searcher.derives for searcher in self.searchers)

    def inputs(self) -> list[Searcher]:
        return list(self.searchers)

    def run(self, topics, k: int = 1000, progress: bool = False):
        import pandas as pd

        from clirplug.fusion import fuse

        runs = [searcher.run(topics, self.depth, progress) for searcher in self.searchers]
        fused = fuse(self.method, runs, weights=self.weights, depth=self.depth)
        labels = (pd.concat([run[["qid", "docid", "translation"]] for run in runs], ignore_index=True)
                  .dropna().groupby(["qid", "docid"], sort=False)["translation"]
                  .agg(lambda texts: " | ".join(dict.fromkeys(texts))))
        translations = [labels.get(key) for key in zip(fused["qid"], fused["docid"])]
        return fused.assign(translation=translations)


class TranslationModel:
    """A model folder (``docs/models.md``) loaded for translation, PSQ tables and BOW-FD derivations.

    Parameters
    ----------
    folder : path
    kind : {"hiero", "flat"}
        The grammar decoded with.
    src_lang : str
        The language of the queries (tokenization, sentence splitting).
    cache : bool
        Read and write the folder's translation cache (``folder/cache/``).
    weights : path, optional
        Decoder weights replacing the folder's ``weights.<kind>`` (e.g. tuned on queries: ``clirplug train weights
        --queries``).
    """

    def __init__(self, folder, kind: str = "hiero", src_lang: str = "de", cache: bool = True, weights=None):
        from clirplug.mt.translator import Translator

        self.folder = Path(folder)
        self.translator = Translator(folder, kind=kind, src_lang=src_lang, cache=cache, weights=weights)
        self._spec = {"folder": folder, "kind": kind, "src_lang": src_lang, "cache": cache, "weights": weights}
        self._indexes: dict = {}
        self._psq: dict = {}  # (settings, field) -> PsqQueries of psq_table

    @property
    def kind(self) -> str:
        return self.translator.kind

    @property
    def src_lang(self) -> str:
        return self.translator.src_lang

    def __reduce__(self):
        return _rebuild, (type(self), self._spec)

    def translate(self, text: str, nbest: int = 1, unique: bool = True) -> list[tuple[str, float]]:
        """The ``nbest`` best translations of ``text`` (one segment) with their model scores (log10), best first:
        distinct strings, the best derivation of each (``unique=False``: the best derivations, whose strings may
        repeat), as ``clirplug translate`` (``--derivations``).

        A text longer than :data:`~clirplug.mt.preprocess.MAX_SENTENCE_TOKENS` tokens is decoded in
        chunks, whose 1-bests are joined (``nbest`` must then be 1); the tokens of a query beyond
        :data:`~clirplug.mt.preprocess.MAX_QUERY_TOKENS` are dropped with a warning.
        """
        nbest = _at_least_one(nbest, "nbest")
        pieces = self.translator.sentences(text, split=False, query=True)
        if len(pieces) > 1 and nbest > 1:
            raise ClirplugError(f"translate: a text of {sum(map(len, pieces))} tokens is decoded in {len(pieces)} "
                                "chunks, whose n-best lists do not combine: use nbest=1")
        self.translator.restrict(pieces)
        lists = [self.translator.translate(tokens, nbest, unique=unique) for tokens in pieces]
        if len(lists) == 1:
            return [(" ".join(t.words), t.score) for t in lists[0]]
        bests = [best[0] for best in lists if best]
        return [(" ".join(w for t in bests for w in t.words), sum(t.score for t in bests))] if bests else []

    def untranslated(self, text: str) -> list[str]:
        """The source words the 1-best translation of ``text`` copies untranslated (no rule of the grammar
        translates them: the decoder's pass-through rule), in their order."""
        from clirplug.mt.features import PASS_THROUGH

        pieces = self.translator.sentences(text, split=False)
        self.translator.restrict(pieces)
        return [rule.src[0] for tokens in pieces for best in self.translator.translate(tokens, 1)[:1]
                for rule in best.rules if PASS_THROUGH in rule.feature_dict()]

    def psq_table(self, query: str, settings=None, field: str = "title") -> list[tuple[str | None, dict[str, float]]]:
        """The PSQ distributions of ``query``: ``(source token, {target: p})`` per kept token of each sentence,
        as :class:`PsqSearcher` searches them (``(None, {word: 1})`` for an n-best orphan word)."""
        from clirplug.io.topics import Topic
        from clirplug.qt.psq import PsqQueries, PsqSource
        from clirplug.qt.psq_tables import PsqSettings

        settings = PsqSettings() if settings is None else settings
        tables = self._psq.get((settings, field))
        if tables is None:
            source = PsqSource(model=str(self.folder), field=_check_field(field), kind=self.kind,
                               src_lang=self.src_lang)
            tables = self._psq[settings, field] = PsqQueries(source, settings, self.translator)
        topic = Topic("q", query, query, query)
        builder = tables.builder([topic])
        return [term for tokens in tables.sentences([topic]) for term in builder.terms(tokens)]

    def derivation(self, query: str, docid: str, index, settings=None, *, weights=None, v: float | None = None,
                   lm: bool = True) -> dict:
        """BOW-FD's winning derivation of ``query`` for document ``docid`` of ``index`` (options as
        :class:`BowfdSearcher`'s): ``{"docid", "score", "sentences": [{"yield", "score", "prefiltered",
        "bm25"}, ...]}``, a record of ``clirplug rerank --explain``."""
        from clirplug.io.topics import Topic
        from clirplug.lucene.reader import LuceneIndex
        from clirplug.rerank.bowfd import bowfd_reranker
        from clirplug.rerank.config import BowfdConfig

        settings = BowfdConfig() if settings is None else settings
        if str(index) not in self._indexes:
            self._indexes[str(index)] = LuceneIndex(index, progress=False)
        reranker = bowfd_reranker(self.translator, self._indexes[str(index)], settings, weights, v, lm,
                                  topics=[Topic("q", query, query, query)])
        records = reranker.derivations(query, [docid])
        if not records:
            raise ClirplugError(f"document {docid!r} is not in the index {index}")
        return records[0]
