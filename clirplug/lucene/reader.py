"""Index statistics for the methods: N, average length, df, Lucene's length norms, postings, analysis.

The first use of an index reads every document vector from Lucene once and caches
them as a sparse document × term matrix beside the index (``<index>/clirplug/``), in
document order and in term order (postings), so df, tf and postings of any number of
terms are numpy look-ups afterwards instead of one JVM round trip per term. Both are
memory-mapped: a query reads the pages of its own terms or candidates, and memory
does not grow with the collection.
"""

import functools
import json
import sys

import numpy as np
import scipy.sparse as sp

from clirplug import bm25
from clirplug.errors import ClirplugError
from clirplug.lucene._cache import (
    CACHE_FOLDER,
    CACHE_VERSION,
    cache_file,
    load_cached,
    load_docids,
    load_mapped,
    save_cached,
    save_mapped,
)
from clirplug.lucene._jvm import jcast, jclass, to_python_list
from clirplug.lucene.index import FIELD, analyzer_for, check_index, index_metadata, open_reader

# Lucene's SmallFloat.intToByte4/byte4ToInt, with which BM25Similarity stores document lengths.
_MAX_INT4 = 231  # SmallFloat.longToInt4(Integer.MAX_VALUE)
_NUM_FREE_VALUES = 255 - _MAX_INT4


def _int4_to_long(i: int) -> int:
    bits = i & 0x07
    shift = (i >> 3) - 1
    return bits if shift < 0 else (bits | 0x08) << shift


def byte4_to_int(norm_byte: int) -> int:
    """Decode a Lucene length norm byte (``SmallFloat.byte4ToInt``)."""
    value = norm_byte & 0xFF
    return value if value < _NUM_FREE_VALUES else _NUM_FREE_VALUES + _int4_to_long(value - _NUM_FREE_VALUES)


LENGTH_TABLE = np.array([byte4_to_int(b) for b in range(256)], dtype=np.float64)


def _parse_vector(text: str) -> dict[str, int]:
    """Parse ``Map.toString()`` of a document vector: ``{term=3, other=1}``."""
    inner = text[1:-1]
    if not inner:
        return {}
    vector = {}
    for item in inner.split(", "):
        term, _, count = item.rpartition("=")
        vector[term] = int(count)
    return vector


def _mapped_matrix(kind, data: dict):
    """A scipy.sparse matrix of ``kind`` over memory-mapped arrays (nothing is copied or scanned)."""
    return kind((data["data"], data["indices"], data["indptr"]), shape=tuple(int(n) for n in data["shape"]), copy=False)


class LuceneIndex:
    """Read-only statistics of a Lucene index built by ``clirplug index`` (or Anserini).

    Attributes
    ----------
    num_docs : int
        N, the number of documents with the ``contents`` field (Lucene's ``docCount``).
    avg_doc_length : float
        Lucene's average field length, ``sumTotalTermFreq / docCount``.
    docids : numpy.ndarray
        External document ids in Lucene's internal order.
    doc_lengths : numpy.ndarray
        Document lengths as Lucene's BM25 sees them: the decoded (lossy) length norms.
    """

    def __init__(self, path, progress: bool = True):
        self.path = check_index(path)
        self.language = index_metadata(self.path)["language"]
        self._utils = jclass("io.anserini.index.IndexReaderUtils")
        self._reader = open_reader(self.path)
        searcher = jclass("org.apache.lucene.search.IndexSearcher")(self._reader)
        stats = searcher.collectionStatistics(FIELD)
        if stats is None:
            raise ClirplugError(f"{self.path}: the index has no {FIELD!r} field")
        self.num_docs = int(stats.docCount())
        self.avg_doc_length = stats.sumTotalTermFreq() / stats.docCount()
        self._progress = progress
        self.docids = load_docids(self.path, self._reader)
        self._doc_index = {docid: i for i, docid in enumerate(self.docids.tolist())}

    @functools.cached_property
    def doc_lengths(self) -> np.ndarray:
        """Document lengths as Lucene's BM25 sees them: the decoded length norms (cached)."""
        path = cache_file(self.path, "lengths")
        cached = load_cached(path)
        if cached is not None:
            return cached
        lengths = np.zeros(self._reader.maxDoc())
        for leaf in to_python_list(self._reader.leaves()):
            leaf_reader, base = leaf.reader(), leaf.docBase
            norms = leaf_reader.getNormValues(FIELD)
            for local in range(leaf_reader.maxDoc()):
                lengths[base + local] = LENGTH_TABLE[norms.longValue() & 0xFF] if norms.advanceExact(local) else 0.0
        save_cached(path, lengths)
        return lengths

    # -- the cached document x term matrix --------------------------------------------------
    @functools.cached_property
    def _vectors(self) -> tuple[np.ndarray, sp.csr_matrix]:
        path = self.path / CACHE_FOLDER / f"vectors-v{CACHE_VERSION}"
        data = load_mapped(path, ("term_bytes", "term_ends", "data", "indices", "indptr", "shape"))
        if data is None:
            terms, matrix = self._read_vectors()
            encoded = [term.encode("utf-8") for term in terms.tolist()]
            save_mapped(path, {"term_bytes": np.frombuffer(b"".join(encoded), dtype=np.uint8),
                               "term_ends": np.cumsum([len(b) for b in encoded], dtype=np.int64),
                               "data": matrix.data, "indices": matrix.indices, "indptr": matrix.indptr,
                               "shape": np.array(matrix.shape)})
            return terms, matrix
        blob, ends = bytes(data["term_bytes"]), data["term_ends"].tolist()
        terms = np.array([blob[start:end].decode("utf-8") for start, end in zip([0] + ends[:-1], ends)], dtype=object)
        return terms, _mapped_matrix(sp.csr_matrix, data)

    @property
    def terms(self) -> np.ndarray:
        """The index terms (``str`` objects), one per column of :attr:`matrix`."""
        return self._vectors[0]

    @property
    def matrix(self) -> sp.csr_matrix:
        """Document × term frequency matrix (rows: Lucene's document order, columns: :attr:`terms`)."""
        return self._vectors[1]

    def _read_vectors(self) -> tuple[np.ndarray, sp.csr_matrix]:
        from tqdm import tqdm

        vocabulary: dict[str, int] = {}
        rows, cols, vals = [], [], []
        for lucene_docid, docid in enumerate(tqdm(self.docids.tolist(), desc="reading document vectors", unit=" docs",
                                                  disable=not self._progress, file=sys.stderr)):
            vector = _parse_vector(self._utils.getDocumentVector(self._reader, docid).toString())
            rows.append(np.full(len(vector), lucene_docid, dtype=np.int32))
            cols.append(np.fromiter((vocabulary.setdefault(t, len(vocabulary)) for t in vector), np.int32, len(vector)))
            vals.append(np.fromiter(vector.values(), np.float32, len(vector)))
        matrix = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                               shape=(len(self.docids), len(vocabulary)), dtype=np.float32)
        return np.array(list(vocabulary), dtype=object), matrix

    @functools.cached_property
    def matrix_csc(self) -> sp.csc_matrix:
        """:attr:`matrix` in column order, for postings (cached beside the index on first use)."""
        path = self.path / CACHE_FOLDER / f"postings-v{CACHE_VERSION}"
        data = load_mapped(path, ("data", "indices", "indptr", "shape"))
        if data is None:
            matrix = self.matrix.tocsc()
            save_mapped(path, {"data": matrix.data, "indices": matrix.indices, "indptr": matrix.indptr,
                               "shape": np.array(matrix.shape)})
            return matrix
        return _mapped_matrix(sp.csc_matrix, data)

    @functools.cached_property
    def term_ids(self) -> dict[str, int]:
        """Column of each index term in :attr:`matrix`."""
        return {term: i for i, term in enumerate(self.terms.tolist())}

    @functools.cached_property
    def doc_freqs(self) -> np.ndarray:
        """Document frequency of each column of :attr:`matrix`."""
        return np.diff(self.matrix_csc.indptr)

    # -- look-ups -------------------------------------------------------------------------------
    def doc_index(self, docid: str) -> int:
        """Lucene's internal number of the document ``docid``."""
        try:
            return self._doc_index[docid]
        except KeyError:
            raise ClirplugError(f"{self.path}: no document with id {docid!r}") from None

    def term_columns(self, terms) -> np.ndarray:
        """Column of each analyzed term in :attr:`matrix` (-1 for terms absent from the index)."""
        return np.array([self.term_ids.get(t, -1) for t in terms], dtype=np.int64)

    def df(self, terms) -> np.ndarray:
        """Document frequencies of analyzed ``terms`` (0 for unknown terms)."""
        cols = self.term_columns(terms)
        return np.where(cols >= 0, self.doc_freqs[np.maximum(cols, 0)], 0)

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """Internal document numbers and term frequencies of one analyzed ``term``."""
        col = self.term_ids.get(term)
        if col is None:
            return np.zeros(0, np.int32), np.zeros(0, np.float32)
        start, end = self.matrix_csc.indptr[col], self.matrix_csc.indptr[col + 1]
        return self.matrix_csc.indices[start:end], self.matrix_csc.data[start:end]

    def tf_matrix(self, terms, docs) -> sp.csr_matrix:
        """Term frequencies of ``terms`` (columns; all zero for unknown terms) in the documents ``docs``
        (rows; internal numbers), read from those documents' rows only."""
        cols = self.term_columns(terms)
        rows = self.matrix[np.asarray(docs, dtype=np.int64)][:, np.maximum(cols, 0)]
        return (rows @ sp.diags((cols >= 0).astype(np.float32))).tocsr()

    def document_raw(self, docid: str) -> str | None:
        """The raw record the index stores for ``docid`` (Anserini's ``raw`` field: the JSON line ``clirplug
        index`` indexed); None if the index stores no raw text."""
        self.doc_index(docid)  # an unknown id is an error
        raw = self._utils.documentRaw(self._reader, docid)
        return None if raw is None else str(raw)

    def document_text(self, docid: str) -> str | None:
        """The stored text of the document ``docid``: what ``clirplug index`` indexed, the corpus' title and
        contents joined by a newline (:attr:`clirplug.corpus.Document.text`); None if the index stores no raw text."""
        raw = self.document_raw(docid)
        if raw is None:
            return None
        try:
            record = json.loads(raw)
        except json.JSONDecodeError:  # a raw document of another Anserini collection type
            return raw
        return record.get(FIELD, raw) if isinstance(record, dict) else raw

    def idf(self, df) -> np.ndarray:
        """Lucene's BM25 idf of document frequencies ``df`` in this index (:func:`clirplug.bm25.idf`)."""
        return bm25.idf(df, self.num_docs)

    def length_norms(self, k1: float, b: float, docs=None) -> np.ndarray:
        """BM25's ``k1 (1 - b + b dl / avgdl)`` of the documents ``docs`` (internal numbers; all when omitted)."""
        return bm25.length_norms(self.doc_lengths if docs is None else self.doc_lengths[docs], self.avg_doc_length,
                                 k1, b)

    def bm25_tf(self, tf, k1: float, b: float, docs=None):
        """BM25's saturated tf ``tf / (tf + k1 (1 - b + b dl / avgdl))`` (:func:`clirplug.bm25.score`) of a
        docs × terms tf array.

        ``tf`` is dense or scipy.sparse with one row per document of ``docs``
        (internal numbers; all documents when omitted).
        """
        norms = self.length_norms(k1, b, docs)
        if sp.issparse(tf):
            tf = tf.tocoo()
            return sp.csr_matrix((bm25.score(tf.data, norms[tf.row]), (tf.row, tf.col)), shape=tf.shape)
        return bm25.score(np.asarray(tf, dtype=np.float64), norms[:, None])

    @functools.lru_cache(maxsize=10_000)
    def phrase_postings(self, phrase: tuple[tuple[str, int], ...]) -> tuple[np.ndarray, np.ndarray]:
        """Internal document numbers and frequencies of an exact phrase (cached).

        ``phrase`` is ``((term, position), ...)`` as :meth:`analyze_phrase` returns it: a
        document matches at ``p`` when each term occurs at ``p + position``, as Lucene's
        ``PhraseQuery`` (slop 0) matches. Candidates are the documents holding every term (from
        :attr:`matrix`); only their positions are read from Lucene's postings.
        """
        docs = None
        for term, _ in phrase:
            term_docs, _ = self.postings(term)
            docs = term_docs if docs is None else np.intersect1d(docs, term_docs, assume_unique=True)
        if docs is None or len(docs) == 0:
            return np.zeros(0, np.int32), np.zeros(0, np.float32)
        keys = None
        for term, offset in phrase:
            term_keys = self._position_keys(term, docs) - offset
            keys = term_keys if keys is None else np.intersect1d(keys, term_keys, assume_unique=True)
        matched, freqs = np.unique(keys >> 32, return_counts=True)
        return matched.astype(np.int32), freqs.astype(np.float32)

    def _position_keys(self, term: str, docs: np.ndarray) -> np.ndarray:
        """``doc << 32 | position`` of every occurrence of ``term`` in the sorted internal ``docs``."""
        postings_enum = jclass("org.apache.lucene.index.PostingsEnum")
        lucene_term = jclass("org.apache.lucene.index.Term")(FIELD, term)
        keys = []
        for leaf in to_python_list(self._reader.leaves()):
            base, size = leaf.docBase, leaf.reader().maxDoc()
            local = docs[(docs >= base) & (docs < base + size)] - base
            if len(local) == 0:
                continue
            postings = leaf.reader().postings(lucene_term, postings_enum.POSITIONS)
            for doc in local.tolist():
                if postings.advance(doc) != doc:
                    continue
                keys.extend(((base + doc) << 32) | postings.nextPosition() for _ in range(postings.freq()))
        return np.unique(np.array(keys, dtype=np.int64))

    # -- analysis -------------------------------------------------------------------------------
    @functools.cached_property
    def _analyzer(self):
        return analyzer_for(self.language)

    @functools.lru_cache(maxsize=100_000)
    def analyze(self, text: str) -> tuple[str, ...]:
        """The index terms of ``text``, analyzed by Lucene exactly as the index was."""
        return tuple(to_python_list(jclass("io.anserini.analysis.AnalyzerUtils").analyze(self._analyzer, text)))

    @functools.lru_cache(maxsize=100_000)
    def analyze_phrase(self, text: str) -> tuple[tuple[str, int], ...]:
        """The index terms of ``text`` with their relative positions, as Lucene's ``QueryBuilder`` makes
        a phrase query of it: ``((term, position), ...)``; stopwords leave position gaps."""
        query = jclass("org.apache.lucene.util.QueryBuilder")(self._analyzer).createPhraseQuery(FIELD, text)
        if query is None:
            return ()
        kind = query.getClass().getName().rpartition(".")[2]
        if kind == "TermQuery":
            return ((jcast("org.apache.lucene.search.TermQuery", query).getTerm().text(), 0),)
        if kind != "PhraseQuery":  # not made by the analyzers clirplug indexes with: no position data
            return tuple((term, i) for i, term in enumerate(self.analyze(text)))
        query = jcast("org.apache.lucene.search.PhraseQuery", query)
        terms, positions = query.getTerms(), query.getPositions()
        return tuple((terms[i].text(), int(positions[i]) - int(positions[0])) for i in range(len(terms)))

    def close(self):
        self._reader.close()
