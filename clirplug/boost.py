"""Bagged RankBoost over hashed bilingual n-gram pairs (Sokolov, Jehl, Hieber & Riezler, EMNLP 2013).

The model scores a (source-language) query ``q`` and a (target-language) document ``d`` by

    f(q, d) = sum over s in S(q), t in T(d) of  w[HASH(s, t)]  +  beta * |S(q) & T(d)|

where ``S(q)`` and ``T(d)`` are the distinct uni- (and bi-)grams of query and document,
``HASH`` maps a pair of n-grams to one of ``2**bits`` buckets with MurmurHash3 (Section 3.3,
"Implementation"; Shi et al. 2009 hash kernels), ``w`` is learned by RankBoost with the
feature selection of Collins & Koo (2005) on triples ``(q, d+, d-)`` and averaged over
``S`` bootstrap samples (Algorithm 1), and the identity features (a source n-gram equal to
a target n-gram: names, commands, numbers) share the fixed weight ``beta`` (Section 3.3).

Hashed features follow the paper's ``W_h' = sum_{h: HASH(h) = h'} W_h``: the value of a
bucket for a (q, d) is the number of distinct n-gram pairs of (q, d) that fall into it
(0 or 1 unless pairs collide), in training and in scoring alike.

Layout: hashing; text to n-grams; the target collection (documents and their n-gram
inverted index); triple sampling; RankBoost; bagged training; the model (save, load,
scoring, readable table).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict

import numpy as np

from clirplug.compiled import kernels
from clirplug.errors import ClirplugError
from clirplug.executor import make_executor
from clirplug.rerank.config import BoostConfig
from clirplug.resources import peak_rss_mb

# ============================================================================ hashing

_C1, _C2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)


def _rotl(x, r):
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def ngram_hashes(ngrams, seed=0):
    """MurmurHash3_x86_32 (``mmh3``) of each n-gram's UTF-8 bytes, as ``uint32``."""
    import mmh3

    return np.fromiter(
        (mmh3.hash(ngram.encode("utf-8"), seed, signed=False) for ngram in ngrams), dtype=np.uint32, count=len(ngrams)
    )


def pair_hashes(source, target, seed=0):
    """MurmurHash3_x86_32 of the 8 bytes ``le32(source) + le32(target)``, vectorized.

    ``source`` and ``target`` are ``uint32`` n-gram hashes (see ``ngram_hashes``), broadcast
    against each other; the result equals ``mmh3.hash(struct.pack("<II", s, t), seed,
    signed=False)`` element-wise (tested), i.e. the pair (s, t) hashed as one feature.
    """
    with np.errstate(over="ignore"):
        h = np.full(np.broadcast_shapes(np.shape(source), np.shape(target)), seed, dtype=np.uint32)
        for block in (np.asarray(source, dtype=np.uint32), np.asarray(target, dtype=np.uint32)):
            k = _rotl(block * _C1, 15) * _C2
            h = _rotl(h ^ k, 13) * np.uint32(5) + np.uint32(0xE6546B64)
        h ^= np.uint32(8)
        h ^= h >> np.uint32(16)
        h *= np.uint32(0x85EBCA6B)
        h ^= h >> np.uint32(13)
        h *= np.uint32(0xC2B2AE35)
        h ^= h >> np.uint32(16)
    return h


def buckets(source, target, bits, seed=0):
    """Feature ids in ``[0, 2**bits)`` of the pairs ``source x target`` (the low ``bits`` of the pair hash)."""
    return (pair_hashes(source, target, seed) & np.uint32((1 << bits) - 1)).astype(np.int64)


def _kernels():
    """The compiled kernels (:mod:`clirplug._boost_kernels`), or None without numba: then the numpy code runs."""
    return kernels("clirplug._boost_kernels")


def cross_buckets(source, target, bits, seed=0):
    """``buckets`` of every pair of the 1-D hash arrays ``source`` x ``target``, as a sources x targets array."""
    kernels = _kernels()
    if kernels is None:
        return buckets(np.asarray(source)[:, None], np.asarray(target)[None, :], bits, seed)
    return kernels.buckets(np.asarray(source, np.uint32), np.asarray(target, np.uint32), seed, (1 << bits) - 1)


# ============================================================================ text to n-grams


def ngrams(tokens, order):
    """Distinct uni- up to ``order``-grams of ``tokens`` (words joined by one space), first-seen order.

    Tokens without a letter or digit (punctuation) are dropped first.
    """
    words = [token for token in tokens if any(char.isalnum() for char in token)]
    grams = {}
    for n in range(1, order + 1):
        for start in range(len(words) - n + 1):
            grams.setdefault(" ".join(words[start:start + n]), None)
    return list(grams)


def query_ngrams(text, order, lang):
    """The source n-grams of a query text in language ``lang``, tokenized by ``clirplug.mt.preprocess``."""
    from clirplug.mt.preprocess import preprocess

    return ngrams(preprocess(text, lang), order)


def document_ngrams(text, order, doc_tokens):
    """The target (English) n-grams of the first ``doc_tokens`` content tokens of a document."""
    from clirplug.mt.preprocess import preprocess

    words = [token for token in preprocess(text, "en") if any(char.isalnum() for char in token)]
    return ngrams(words[:doc_tokens], order)


# ============================================================================ target collection


class Collection:
    """Documents as sets of target n-gram ids, with the n-gram vocabulary and its inverted index.

    Parameters
    ----------
    docids : list of str
    doc_grams : list of list of str
        The distinct target n-grams of each document (``document_ngrams``).
    hash_seed : int
        Seed of the n-gram hash.
    """

    def __init__(self, docids, doc_grams, hash_seed=0):
        import scipy.sparse as sp

        self.docids = list(docids)
        self.row = {docid: row for row, docid in enumerate(self.docids)}
        vocabulary = {}
        columns = [np.array([vocabulary.setdefault(g, len(vocabulary)) for g in grams], dtype=np.int64)
                   for grams in doc_grams]
        self.vocabulary = vocabulary
        self.strings = list(vocabulary)
        self.hashes = ngram_hashes(self.strings, hash_seed)
        self.grams = [np.unique(ids).astype(np.int32) for ids in columns]
        lengths = np.array([len(ids) for ids in self.grams])
        indices = np.concatenate(self.grams) if self.grams else np.zeros(0, np.int32)
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        # documents x n-grams, 0/1: rows for reranking, columns (postings) for search
        self.incidence = sp.csr_matrix((np.ones(len(indices)), indices, indptr),
                                       shape=(len(self.docids), len(self.strings)))
        self.postings = self.incidence.tocsc()

    @classmethod
    def from_corpus(cls, documents, order, doc_tokens, hash_seed=0, progress=False):
        """Read ``documents`` (``clirplug.corpus.Document``) into a collection."""
        from tqdm import tqdm

        docids, grams = [], []
        for document in tqdm(documents, desc="documents", unit="doc", disable=not progress, leave=False):
            docids.append(document.id)
            grams.append(document_ngrams(document.contents, order, doc_tokens))
        if not docids:
            raise ClirplugError("the corpus holds no documents")
        return cls(docids, grams, hash_seed)


# ============================================================================ training triples


def sample_triples(judgements, queries, docids, count, rng):
    """Draw ``count`` training triples (q, d+, d-) as in Sokolov et al. (2013, Section 6.1).

    ``q`` is uniform over ``queries``; ``d+`` uniform over the documents judged relevant
    (relevance > 0) for ``q``; ``d-`` uniform over the whole collection, redrawn while
    ``rel(d-) >= rel(d+)``. The initial importance is ``D0 = rel(d+) - rel(d-)``.

    Parameters
    ----------
    judgements : dict of str to dict of int to int
        ``{qid: {document row: relevance}}``; unjudged documents have relevance 0.
    queries : list of str
        Query ids to draw from; each has a relevant document in the collection.
    docids : sequence
        The collection (only its length is used: documents are rows ``0 .. n-1``).
    count : int
    rng : numpy.random.Generator

    Returns
    -------
    tuple of numpy.ndarray
        Query positions in ``queries``, rows of d+ and d-, and D0 (float64), each ``count`` long.
    """
    n_docs = len(docids)
    positives = [np.array(sorted(row for row, rel in judgements[qid].items() if rel > 0)) for qid in queries]
    q = rng.integers(len(queries), size=count)
    pos, neg, d0 = np.empty(count, np.int64), np.empty(count, np.int64), np.empty(count)
    for i, query in enumerate(q):
        grades = judgements[queries[query]]
        pos[i] = positives[query][rng.integers(len(positives[query]))]
        top = grades[pos[i]]
        for _ in range(10_000):
            neg[i] = rng.integers(n_docs)
            if grades.get(neg[i], 0) < top:
                break
        else:
            raise ClirplugError(f"query {queries[query]!r}: no document ranks below its relevant ones")
        d0[i] = top - grades.get(neg[i], 0)
    return q, pos, neg, d0


def merge_duplicates(q, pos, neg, d0):
    """Merge identical triples of a bootstrap sample into one with the summed importance.

    RankBoost treats k copies of a triple exactly like one copy of k times its ``D``
    (every update is multiplicative per triple), so this only saves memory and time.
    """
    keys = np.stack([q, pos, neg], axis=1)
    unique, inverse = np.unique(keys, axis=0, return_inverse=True)
    return unique[:, 0], unique[:, 1], unique[:, 2], np.bincount(inverse.ravel(), weights=d0, minlength=len(unique))


def distinct(values):
    """Sorted distinct values of an integer array (sort-based: fast on large arrays)."""
    values = np.sort(values)
    return values[np.concatenate([[True], values[1:] != values[:-1]])] if len(values) else values


def _column_runs(keys, row_bits):
    """Split sorted ``bucket << row_bits | row`` keys into (bucket, row, count) runs of equal keys."""
    if not len(keys):
        empty = np.zeros(0, np.int64)
        return empty, empty, empty
    starts = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
    counts = np.diff(np.append(starts, len(keys)))
    unique = keys[starts]
    return unique >> row_bits, unique & ((1 << row_bits) - 1), counts


def _triple_keys(query_hashes, collection, q, pos, neg, bits, hash_seed, row_bits):
    """``{"P": keys, "M": keys}``: ``bucket << row_bits | i`` of each pair of ``S(q) x (T(d+) - T(d-))`` (P) and
    ``S(q) x (T(d-) - T(d+))`` (M) of each triple i, unsorted."""
    kernels = _kernels()
    if kernels is not None:
        lengths = np.array([len(h) for h in query_hashes], dtype=np.int64)
        indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        flat = np.concatenate(query_hashes).astype(np.uint32) if len(query_hashes) else np.zeros(0, np.uint32)
        plus, minus = kernels.triple_keys(
            np.asarray(q, np.int64), np.asarray(pos, np.int64), np.asarray(neg, np.int64), indptr, flat,
            collection.incidence.indptr.astype(np.int64), collection.incidence.indices, collection.hashes,
            hash_seed, (1 << bits) - 1, row_bits)
        return {"P": plus, "M": minus}
    keys = {"P": [], "M": []}
    for i, (query, plus, minus) in enumerate(zip(q, pos, neg)):
        source = query_hashes[query][:, None]
        a, b = collection.grams[plus], collection.grams[minus]
        for name, only in (("P", np.setdiff1d(a, b, assume_unique=True)), ("M", np.setdiff1d(b, a, assume_unique=True))):
            ids = buckets(source, collection.hashes[only][None, :], bits, hash_seed).ravel()
            keys[name].append((ids << row_bits) | i)
    return {name: np.concatenate(parts) if parts else np.zeros(0, np.int64) for name, parts in keys.items()}


def pair_matrices(query_hashes, collection, q, pos, neg, bits, hash_seed=0, min_triples=1):
    """The hashed-feature incidence of triples: which buckets fire for d+ only, and for d- only.

    For triple i, pairs(q, d+) minus pairs(q, d-) is ``S(q) x (T(d+) - T(d-))``; ``P[i, b]``
    counts those of its pairs that hash to bucket ``b``, ``M[i, b]`` the same for
    ``S(q) x (T(d-) - T(d+))``. Columns are the buckets found in at least ``min_triples``
    rows of P and M together (a row of each counted separately), renumbered; with
    ``min_triples=1`` every active bucket is kept.

    Returns
    -------
    P, M : scipy.sparse.csr_matrix (uint16)
        Triples x kept features.
    features : numpy.ndarray of int64
        The bucket of each column, ascending.
    """
    import scipy.sparse as sp

    row_bits = max(int(len(q)).bit_length(), 1)
    keys = _triple_keys(query_hashes, collection, q, pos, neg, bits, hash_seed, row_bits)
    # sorting bucket<<row_bits|row keys yields CSC order directly, duplicates adjacent
    kernels = _kernels()
    if kernels is not None:
        for name in ("P", "M"):
            keys[name].sort()
        features = np.empty(kernels.kept_buckets(keys["P"], keys["M"], row_bits, min_triples, np.empty(0, np.int64)),
                            dtype=np.int64)
        kernels.kept_buckets(keys["P"], keys["M"], row_bits, min_triples, features)
        matrices = []
        for name in ("P", "M"):
            indptr, indices, data = kernels.csr_of_keys(keys.pop(name), features, row_bits, len(q))
            matrices.append(sp.csr_matrix((data, indices, indptr), shape=(len(q), len(features))))
        return matrices[0], matrices[1], features
    runs = {}
    for name in ("P", "M"):
        keys[name].sort()
        runs[name] = _column_runs(keys.pop(name), row_bits)
    del keys
    everything = distinct(np.concatenate([runs["P"][0], runs["M"][0]]))
    triples_per_bucket = np.zeros(len(everything), np.int64)
    for bucket, _, _ in runs.values():
        starts = np.flatnonzero(np.concatenate([[True], bucket[1:] != bucket[:-1]])) if len(bucket) else np.zeros(0, np.int64)
        located = np.searchsorted(everything, bucket[starts])
        triples_per_bucket[located] += np.diff(np.append(starts, len(bucket)))
    features = everything[triples_per_bucket >= min_triples]
    matrices = []
    for name in ("P", "M"):
        bucket, row, count = runs[name]
        column = np.searchsorted(features, bucket)  # sorted queries: cache-friendly
        if len(features):
            keep = (column < len(features)) & (features[np.minimum(column, max(len(features) - 1, 0))] == bucket)
        else:
            keep = np.zeros(len(bucket), bool)
        column, row, count = column[keep], row[keep], count[keep]
        indptr = np.searchsorted(column, np.arange(len(features) + 1))
        by_column = sp.csc_matrix((count.astype(np.uint16), row.astype(np.int32), indptr), shape=(len(q), len(features)))
        matrices.append(by_column.tocsr())
    return matrices[0], matrices[1], features


# ============================================================================ RankBoost


def _gather_rows(matrix, rows):
    """Column indices, values and row lengths of ``rows`` of a CSR ``matrix``, concatenated."""
    starts = matrix.indptr[rows]
    lengths = matrix.indptr[rows + 1] - starts
    offsets = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
    return matrix.indices[offsets], matrix.data[offsets], lengths


def _column_hashes(matrix, salt):
    """A 64-bit hash of each column of a CSC ``matrix`` (its rows and values); wrapping integer arithmetic."""
    mixed = (matrix.indices.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
             + matrix.data.astype(np.uint64) * np.uint64(0xC2B2AE3D27D4EB4F) + np.uint64(salt))
    mixed ^= mixed >> np.uint64(29)
    mixed *= np.uint64(0xBF58476D1CE4E5B9)
    mixed ^= mixed >> np.uint64(32)
    sums = np.concatenate([np.zeros(1, np.uint64), np.cumsum(mixed, dtype=np.uint64)])
    lengths = np.diff(matrix.indptr).astype(np.uint64)
    return sums[matrix.indptr[1:]] - sums[matrix.indptr[:-1]] + lengths * np.uint64(0x94D049BB133111EB)


def _equal_columns(matrix, columns, others):
    """Whether column ``columns[k]`` of a CSC ``matrix`` equals column ``others[k]`` (rows and values), for each k."""
    lengths = np.diff(matrix.indptr)
    same = lengths[columns] == lengths[others]
    rows, values, size = _gather_rows(matrix, columns[same])  # a CSC matrix's "rows" are its columns
    other_rows, other_values, _ = _gather_rows(matrix, others[same])
    differs = (rows != other_rows) | (values != other_values)
    same[np.flatnonzero(same)] = np.bincount(np.repeat(np.arange(len(size)), size), weights=differs,
                                            minlength=len(size)) == 0
    return same


def column_classes(positive, negative):
    """The features whose columns are equal in both ``positive`` and ``negative`` (CSC), as classes: the lowest
    feature of each class, ascending, and the class of each feature. Equal columns get equal ``W+-`` and criterion
    by the same arithmetic, so RankBoost boosts each class once and reports its lowest feature, which is the
    feature ``argmax`` picks among equal ones."""
    hashes = _column_hashes(positive, 1) + _column_hashes(negative, 2) * np.uint64(0xD6E8FEB86659FD93)
    order = np.argsort(hashes, kind="stable")
    starts = np.ones(len(order), bool)
    starts[1:] = hashes[order][1:] != hashes[order][:-1]
    lowest = np.empty(len(hashes), np.int64)
    lowest[order] = order[np.maximum.accumulate(np.where(starts, np.arange(len(order)), 0))]
    joined = np.flatnonzero(lowest != np.arange(len(hashes)))
    confirmed = (_equal_columns(positive, joined, lowest[joined])
                 & _equal_columns(negative, joined, lowest[joined]))
    lowest[joined[~confirmed]] = joined[~confirmed]  # a hash collision: a class of its own
    is_lowest = lowest == np.arange(len(hashes))
    return np.flatnonzero(is_lowest), (np.cumsum(is_lowest) - 1)[lowest]


_BLOCK = 1 << 15  # columns whose W+-, criterion (768 kB) fit a core's cache: the kernels update them a block at a time

# ----------------------------------------------------------------------------- exp and log in basic operations
#
# RankBoost's importances are products of exponentials and its choices compare sums of them, so one different last
# bit of an exp can choose another feature, and every later choice with it (the demo's desc model lost or gained
# 0.04 MAP so). numpy's float64 exp is the C library's on most processors but Intel's SVML on those with AVX-512
# (numpy dispatches by processor); C libraries' exp and log differ too. RankBoost therefore computes both with the
# functions below: IEEE-754 additions, multiplications and divisions only, each exactly rounded, in a fixed order,
# hence the same bits on every machine and with every numpy (within 3 units in the last place of the exact value).

_LN2_HI = 6.93147180369123816490e-01  # ln 2 in 32 significant bits (fdlibm's ln2_hi): k * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10  # ln 2 - _LN2_HI
_INV_LN2 = 1.44269504088896338700e+00
_SQRT_HALF = 0.70710678118654757
_EXP_TERMS = tuple(1.0 / math.factorial(n) for n in range(14))  # exp(r) = sum r^n / n!, |r| <= ln(2) / 2
_LOG_TERMS = tuple(1.0 / (2 * n + 1) for n in range(13))  # atanh(s) / s = sum s^2n / (2n + 1), |s| < 0.172


def portable_exp(x):
    """``e**x`` of each element of ``x`` (float64) in basic operations only: ``x = k ln 2 + r``, a Taylor polynomial
    of ``r`` times ``2**k``. The same bits on every machine, unlike ``numpy.exp``; inf above 709.78, 0 below -745.1."""
    x = np.clip(np.asarray(x, dtype=np.float64), -800.0, 800.0)  # e**800 is inf, e**-800 is 0 in float64
    k = np.rint(x * _INV_LN2)
    r = (x - k * _LN2_HI) - k * _LN2_LO
    p = np.full(r.shape, _EXP_TERMS[-1])
    for term in _EXP_TERMS[-2::-1]:
        p = p * r + term
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        return np.ldexp(p, k.astype(np.int32))


def portable_log(v):
    """``ln v`` of a positive finite float in basic operations only: ``v = m 2**e`` with ``m`` in [1/sqrt 2, sqrt 2),
    ``ln m = 2 atanh((m - 1) / (m + 1))`` by its series. The same bits on every machine, unlike ``math.log``."""
    v = float(v)
    if not 0.0 < v < math.inf:
        return math.log(v)  # 0, inf, nan and negative values: the C library's answer (or error)
    m, e = math.frexp(v)
    if m < _SQRT_HALF:
        m, e = m * 2.0, e - 1
    f = m - 1.0
    s = f / (2.0 + f)
    s2 = s * s
    p = _LOG_TERMS[-1]
    for term in _LOG_TERMS[-2::-1]:
        p = p * s2 + term
    return e * _LN2_HI + (e * _LN2_LO + 2.0 * s * p)


# W+- and Z are updated incrementally; when Z falls below this share of its value at the last fresh sum, they are
# summed afresh from D (RankBoost._refresh).
_REFRESH = 2.0 ** -10


class RankBoost:
    """RankBoost with the Collins & Koo (2005) feature selection (Sokolov et al. 2013, Algorithm 1).

    Parameters
    ----------
    positive, negative : scipy.sparse matrix, triples x features
        ``positive[i, h]``: how often feature ``h`` fires for d+ and not for d- in triple i
        (``negative`` the converse); ``x_ih = positive - negative`` is ``h(q, d+) - h(q, d-)``.
    d0 : array_like
        Initial importance ``D0`` of each triple (non-negative).
    epsilon : float
        Smoothing of the weight (Schapire & Singer 1999), ``~1e-5`` in the paper.

    Attributes
    ----------
    d : numpy.ndarray
        Current importance ``D_t`` of each triple.
    z : float
        ``Z = sum_i D_t(i)``.
    w_plus, w_minus : numpy.ndarray
        ``W+_h = sum_i D_i [x_ih > 0] x_ih`` and ``W-_h = sum_i D_i [x_ih < 0] |x_ih|`` per feature.
    criterion : numpy.ndarray
        ``|sqrt(W+_h) - sqrt(W-_h)|`` per feature.

    Features whose columns are equal in P and M are boosted as one class (:func:`column_classes`): the
    totals are kept per class, and the attributes above give each feature its class's value.

    The arithmetic gives the same bits on every machine: exp and log are :func:`portable_exp` and
    :func:`portable_log`, sums run in a fixed order, and ``W+-`` and ``Z``, updated incrementally, are summed afresh
    from ``D`` whenever ``Z`` has fallen by a factor of ``1/_REFRESH`` (:meth:`_refresh`), so that the rounding
    errors of the updates never outgrow the totals.
    """

    def __init__(self, positive, negative, d0, epsilon=1e-5):
        by_positive, by_negative = positive.tocsc(), negative.tocsc()
        self._features, self._class = column_classes(by_positive, by_negative)
        by_positive, by_negative = by_positive[:, self._features], by_negative[:, self._features]
        self._columns = (by_positive, by_negative)
        self.positive, self.negative = by_positive.tocsr(), by_negative.tocsr()  # triples x classes
        self.d = np.array(d0, dtype=np.float64)
        if self.d.ndim != 1 or len(self.d) != self.positive.shape[0] or (self.d < 0).any():
            raise ClirplugError("D0 must hold one non-negative importance per triple")
        self.epsilon = float(epsilon)
        n_classes = self.positive.shape[1]
        self._plus, self._minus, self._scores = np.zeros(n_classes), np.zeros(n_classes), np.zeros(n_classes)
        self._touched = np.zeros(n_classes, dtype=bool)
        self._blocks = None  # the kernels' view of P and M by blocks of columns
        self._refresh()

    @property
    def w_plus(self) -> np.ndarray:
        return self._plus[self._class]

    @property
    def w_minus(self) -> np.ndarray:
        return self._minus[self._class]

    @property
    def criterion(self) -> np.ndarray:
        return self._scores[self._class]

    def _criterion(self, index):
        plus, minus = np.maximum(self._plus[index], 0.0), np.maximum(self._minus[index], 0.0)
        return np.abs(np.sqrt(plus) - np.sqrt(minus))

    def step(self):
        """One boosting iteration.

        Choose ``h_t = argmax_h |sqrt(W+_h) - sqrt(W-_h)|`` (lowest index on ties), set
        ``w_t = 1/2 ln((W+ + eps Z) / (W- + eps Z))``, update ``D_{t+1} = D_t exp(-w_t x_ih)``
        (equation 5), then ``Z`` and ``W+-`` of the features co-occurring with ``h_t`` in
        the triples whose ``D`` changed.

        Returns
        -------
        (int, float) or None
            The chosen feature and its weight; None when no feature separates any triple
            or the importances ``D`` have all underflowed to 0.
        """
        if self._scores.size == 0:
            return None
        h = int(np.argmax(self._scores))  # a class; its lowest feature is the first feature with this criterion
        if not self._scores[h] > 0:
            return None
        smoothing = self.epsilon * self.z
        # the incremental updates of W+- can leave -1e-17 where the exact sum is 0
        plus, minus = max(self._plus[h], 0.0), max(self._minus[h], 0.0)
        if plus + smoothing <= 0 or minus + smoothing <= 0:
            return None  # every triple's importance has underflowed to 0: nothing left to learn
        w = 0.5 * portable_log((plus + smoothing) / (minus + smoothing))
        by_positive, by_negative = self._columns
        span_p = slice(by_positive.indptr[h], by_positive.indptr[h + 1])
        span_m = slice(by_negative.indptr[h], by_negative.indptr[h + 1])
        rows = np.concatenate([by_positive.indices[span_p], by_negative.indices[span_m]])
        values = np.concatenate([by_positive.data[span_p].astype(np.float64), -by_negative.data[span_m].astype(np.float64)])
        rows, inverse = np.unique(rows, return_inverse=True)
        x = np.bincount(inverse, weights=values, minlength=len(rows))
        rows, x = rows[x != 0], x[x != 0]
        updated = self.d[rows] * portable_exp(-w * x)
        delta = updated - self.d[rows]
        self.d[rows] = updated
        self.z += float(delta.sum())
        self._update(rows, delta)
        if self.z < self._z_summed * _REFRESH:
            self._refresh()
        return int(self._features[h]), w

    def _refresh(self):
        """``W+-`` and ``Z`` summed afresh from ``D``, and every criterion: at the start, and when ``Z`` has fallen
        below ``_REFRESH`` times its value at the last refresh.

        An update subtracts from a total the part its triples lose, so its rounding error is relative to the total
        before: after many updates that shrink ``Z`` by orders of magnitude (the demo's desc bags: 13 in 120
        iterations), the accumulated errors outweigh the totals, and the last bits of the exps decide which feature
        wins. Summed afresh, each ``W`` is a sum of non-negative terms, in the order of P's and M's entries (the
        same order as the incremental updates, by the kernels or numpy), and ``Z`` is exactly rounded (``fsum``).
        """
        self._plus[:] = 0.0
        self._minus[:] = 0.0
        if _kernels() is not None:
            self._update(np.arange(len(self.d)), self.d)
        else:
            for matrix, totals in ((self.positive, self._plus), (self.negative, self._minus)):
                terms = matrix.data * np.repeat(self.d, np.diff(matrix.indptr))
                totals += np.bincount(matrix.indices, weights=terms, minlength=len(totals))
        self._scores[:] = self._criterion(slice(None))
        self.z = self._z_summed = math.fsum(self.d.tolist())

    def _update(self, rows, delta):
        """Add ``delta`` (the change of ``D`` of ``rows``) into ``W+-`` and refresh the criterion where they changed."""
        kernels = _kernels()
        if kernels is not None:
            if self._blocks is None:
                self._blocks = tuple((kernels.block_starts(m.indptr, m.indices, m.shape[1], _BLOCK), m.indices, m.data)
                                     for m in (self.positive, self.negative))
            kernels.add_rows(*self._blocks, rows, delta, self._plus, self._minus, self._scores)
            return
        touched = []
        for matrix, totals in ((self.positive, self._plus), (self.negative, self._minus)):
            columns, counts, lengths = _gather_rows(matrix, rows)
            np.add.at(totals, columns, counts * np.repeat(delta, lengths))
            touched.append(columns)
        for columns in touched:
            self._touched[columns] = True
        touched = np.flatnonzero(self._touched)
        self._touched[touched] = False
        self._scores[touched] = self._criterion(touched)

    def fit(self, iterations):
        """Run up to ``iterations`` steps; return the chosen features and weights (arrays)."""
        chosen, weights = [], []
        for _ in range(iterations):
            result = self.step()
            if result is None:
                break
            chosen.append(result[0])
            weights.append(result[1])
        return np.array(chosen, dtype=np.int64), np.array(weights, dtype=np.float64)


# ============================================================================ bagged training

_WORKER = {}


def _init_worker(query_hashes, collection, config, triples):
    """Executor initializer: what every bag reads (the query hashes, the collection, the sampled triples)."""
    _WORKER.update(query_hashes=query_hashes, collection=collection, config=config, triples=triples)


def _train_bag(bag):
    """Train one bag in a worker: bootstrap sample -> incidence -> RankBoost (Algorithm 1)."""
    q, pos, neg, d0 = _WORKER["triples"]
    config = _WORKER["config"]
    start = time.perf_counter()
    rng = np.random.default_rng([config.seed, 1, bag])
    sample = rng.integers(len(q), size=len(q))
    q, pos, neg, d0 = merge_duplicates(q[sample], pos[sample], neg[sample], d0[sample])
    positive, negative, features = pair_matrices(
        _WORKER["query_hashes"], _WORKER["collection"], q, pos, neg, config.bits, config.hash_seed, config.min_triples)
    booster = RankBoost(positive, negative, d0, config.epsilon)
    chosen, weights = booster.fit(config.iterations)
    stats = {
        "bag": bag, "triples": int(len(q)), "active_features": int(len(features)),
        "nonzeros": int(positive.nnz + negative.nnz), "selected": int(len(chosen)),
        "seconds": round(time.perf_counter() - start, 1), "peak_rss_mb": round(peak_rss_mb(), 1),
    }
    return features[chosen], weights, stats


def average_bags(results, bags):
    """Average bag models: ``f = 1/S sum_s sum_t w_t^s h_t^s`` (Algorithm 1, "Bagging").

    Returns sorted buckets, their averaged weights and the earliest iteration (1-based)
    at which any bag chose each.
    """
    chosen = np.concatenate([features for features, _, _ in results])
    weights = np.concatenate([w for _, w, _ in results])
    steps = np.concatenate([np.arange(1, len(features) + 1) for features, _, _ in results])
    unique, inverse = np.unique(chosen, return_inverse=True)
    averaged = np.bincount(inverse, weights=weights, minlength=len(unique)) / bags
    first = np.full(len(unique), np.iinfo(np.int32).max, dtype=np.int64)
    np.minimum.at(first, inverse, steps)
    return unique, averaged, first.astype(np.int32)


def _pair_census_reference(query_grams, query_hashes, collection, docs_of, source_table, model_buckets, bits,
                           hash_seed):
    """``_pair_census`` in numpy: every (q, d) pair's n-gram pairs hashed, then sorted."""
    n_target = len(collection.strings)
    keys, ids, hits, hit_buckets, hit_counts = [], [], [], [], []
    for query, rows in docs_of.items():
        source = np.array([source_table.setdefault(g, len(source_table)) for g in query_grams[query]], dtype=np.int64)
        target, per_target = np.unique(np.concatenate([collection.grams[row] for row in rows]), return_counts=True)
        bucket = cross_buckets(query_hashes[query], collection.hashes[target], bits, hash_seed)
        key = source[:, None] * n_target + target[None, :].astype(np.int64)
        keys.append(key.ravel())
        ids.append(bucket.ravel())
        s, t = np.nonzero(np.isin(bucket, model_buckets))
        hits.append(key[s, t])
        hit_buckets.append(bucket[s, t])
        hit_counts.append(per_target[t])
    if len(source_table) * n_target < 1 << (63 - bits):  # (key, bucket) packed in one int64: one sort
        packed = distinct((np.concatenate(keys) << bits) | np.concatenate(ids))
        n_pairs, pair_buckets = len(packed), np.sort(packed & ((1 << bits) - 1))
    else:
        unique_keys, first = np.unique(np.concatenate(keys), return_index=True)
        n_pairs, pair_buckets = len(unique_keys), np.sort(np.concatenate(ids)[first])
    del keys, ids
    starts = np.flatnonzero(np.concatenate([[True], pair_buckets[1:] != pair_buckets[:-1]]))
    per_bucket = np.diff(np.append(starts, len(pair_buckets)))
    hit_keys, first, inverse = np.unique(np.concatenate(hits), return_index=True, return_inverse=True)
    counts = np.bincount(inverse.ravel(), weights=np.concatenate(hit_counts), minlength=len(hit_keys))
    hit_buckets = np.concatenate(hit_buckets)[first]
    return (n_pairs, len(per_bucket), per_bucket[per_bucket > 1].sum(), hit_keys, hit_buckets,
            counts.astype(np.int64))


def _pair_census(query_grams, query_hashes, collection, docs_of, source_table, model_buckets, bits, hash_seed):
    """Distinct pairs, occupied buckets, pairs sharing a bucket, and the pairs falling into ``model_buckets``
    (keys ``source * n_target + target`` ascending, their buckets and training (q, d) counts); numbers the
    source n-grams in ``source_table`` (first seen first). The compiled counterpart of ``_pair_census_reference``."""
    sources, targets, target_counts = [], [], []
    for query, rows in docs_of.items():
        sources.append(np.array([source_table.setdefault(g, len(source_table)) for g in query_grams[query]],
                                dtype=np.int64))
        target, per_target = np.unique(np.concatenate([collection.grams[row] for row in rows]), return_counts=True)
        targets.append(target.astype(np.int64))
        target_counts.append(per_target.astype(np.int64))
    source_hashes = np.zeros(len(source_table), np.uint32)
    for query, ids in zip(docs_of, sources):
        source_hashes[ids] = query_hashes[query]
    flat = np.concatenate(sources)
    owners = np.repeat(np.arange(len(sources)), [len(ids) for ids in sources])[np.argsort(flat, kind="stable")]
    source_ptr = np.concatenate([[0], np.cumsum(np.bincount(flat, minlength=len(source_table)))])
    target_ptr = np.concatenate([[0], np.cumsum([len(t) for t in targets])])
    n_pairs, n_buckets, colliding, keys, hit_buckets, counts = _kernels().pair_census(
        source_hashes, source_ptr, owners, target_ptr, np.concatenate(targets), np.concatenate(target_counts),
        collection.hashes, hash_seed, bits, np.unique(np.asarray(model_buckets, dtype=np.int64)),
        n_target=len(collection.strings))
    order = np.argsort(keys)
    return n_pairs, n_buckets, colliding, keys[order], hit_buckets[order], counts[order]


def training_pairs(query_grams, query_hashes, collection, q, docs, model_buckets, bits, hash_seed=0, examples=3):
    """Count hashing collisions and unhash the model's buckets over the training (q, d) pairs.

    Over every distinct n-gram pair (s, t) of the (query, document) pairs of the training
    triples: how many distinct pairs there are, how many buckets they occupy and how many
    pairs share their bucket with another pair; and, for each bucket of ``model_buckets``,
    the pairs seen in it with the number of training (q, d) pairs holding each.

    Returns
    -------
    dict
        ``pairs``, ``buckets``, ``colliding_pairs`` and ``examples``:
        ``{bucket: (n_pairs, [(src, tgt, count), ...])}``, at most ``examples`` pairs a
        bucket, most frequent first.
    """
    docs_of = {}
    for query, doc in zip(q.tolist(), docs.tolist()):
        docs_of.setdefault(query, set()).add(doc)
    n_target = len(collection.strings)
    source_table = {}
    census = _pair_census if _kernels() is not None else _pair_census_reference
    n_pairs, n_buckets, colliding, hit_keys, hit_buckets, counts = census(
        query_grams, query_hashes, collection, docs_of, source_table, model_buckets, bits, hash_seed)
    source_strings = list(source_table)
    found = {}
    for key, bucket, count in zip(hit_keys.tolist(), hit_buckets.tolist(), counts.tolist()):
        s, t = divmod(key, n_target)
        found.setdefault(bucket, []).append((source_strings[s], collection.strings[t], count))
    for bucket, pairs in found.items():
        pairs.sort(key=lambda pair: (-pair[2], pair[0], pair[1]))
        found[bucket] = (len(pairs), pairs[:examples])
    return {"pairs": int(n_pairs), "buckets": int(n_buckets), "colliding_pairs": int(colliding), "examples": found}


def train(topics, qrels, collection, config, jobs=2, progress=False, holdout=()):
    """Train a bagged boosting model (Sokolov et al. 2013, Algorithm 1).

    Parameters
    ----------
    topics : list of clirplug.io.topics.Topic
        Training topics; their ``config.field`` is the query.
    qrels : pandas.DataFrame
        Judgements (``qid``, ``docid``, ``relevance``) of the training topics.
    collection : Collection
        The target documents (built with ``config.order`` and ``config.doc_tokens``).
    config : BoostConfig
    jobs : int or clirplug.executor.ExecutorSettings
        Workers training bags in parallel (an int: local processes); each gets the query hashes
        and the collection once.
    holdout : collection of str
        Query ids left out of the triples (kept for tuning beta).

    Returns
    -------
    BoostModel
        With beta = 0; see ``tune_beta``.
    """
    from tqdm import tqdm

    from clirplug.io.topics import topic_field

    config.check()
    judgements = {}
    for qid, docid, relevance in zip(qrels["qid"], qrels["docid"], qrels["relevance"]):
        if docid in collection.row:
            judgements.setdefault(qid, {})[collection.row[docid]] = int(relevance)
    held = set(holdout)
    queries = [t for t in topics if t.id not in held and any(r > 0 for r in judgements.get(t.id, {}).values())]
    if not queries:
        raise ClirplugError("no training topic has a relevant document in the corpus: check --topics, --qrels and --corpus")
    query_grams = [query_ngrams(topic_field(t, config.field), config.order, config.src_lang) for t in queries]
    query_hashes = [ngram_hashes(grams, config.hash_seed) for grams in query_grams]
    rng = np.random.default_rng([config.seed, 0])
    q, pos, neg, d0 = sample_triples(judgements, [t.id for t in queries], collection.docids,
                                     config.triples_per_query * len(queries), rng)
    # each bag in a fresh worker process: its memory is returned when the bag is done
    with make_executor(jobs, initializer=_init_worker, initargs=(query_hashes, collection, config, (q, pos, neg, d0)),
                       fresh_workers=True) as executor:
        results = list(tqdm(executor.imap(_train_bag, range(config.bags)), total=config.bags, desc="bags", unit="bag",
                            disable=not progress))
    features, weights, first = average_bags(results, config.bags)
    found = training_pairs(query_grams, query_hashes, collection, np.concatenate([q, q]), np.concatenate([pos, neg]),
                           features, config.bits, config.hash_seed)
    stats = {
        "training_queries": len(queries), "triples": int(len(q)), "bags": [r[2] for r in results],
        "distinct_pairs": found["pairs"], "occupied_buckets": found["buckets"],
        "colliding_pairs": found["colliding_pairs"],
    }
    return BoostModel(config, features, weights, first, beta=0.0, examples=found["examples"], stats=stats)


# ============================================================================ model


class BoostModel:
    """A learned table: hashed n-gram pair buckets with their (bag-averaged) weights, plus beta.

    Parameters
    ----------
    config : BoostConfig
    features : numpy.ndarray of int64
        The buckets with a weight, ascending.
    weights : numpy.ndarray of float64
    first : numpy.ndarray of int32
        The earliest boosting iteration that chose each bucket (for the table).
    beta : float
        Weight of every identity feature (source n-gram equal to target n-gram).
    examples : dict
        ``{bucket: (n_pairs, [(src, tgt, count), ...])}``: the training pairs seen in each bucket.
    stats : dict
        Training statistics (triples, collisions, per-bag time and memory).
    """

    def __init__(self, config, features, weights, first, beta=0.0, examples=None, stats=None):
        self.config = config
        self.features = np.asarray(features, dtype=np.int64)
        self.weights = np.asarray(weights, dtype=np.float64)
        self.first = np.asarray(first, dtype=np.int32)
        self.beta = float(beta)
        self.examples = examples or {}
        self.stats = stats or {}
        self._bitmap = None

    # -------------------------------------------------------------- scoring

    def lookup(self, ids):
        """The weight of each bucket id in ``ids`` (0 for buckets without one).

        A bitmap over the low 24 bits of the model's buckets first rules out almost every
        id; only the rest are looked up (binary search) among the model's buckets.
        """
        ids = np.asarray(ids)
        result = np.zeros(ids.shape)
        if not len(self.features):
            return result
        mask = (1 << min(self.config.bits, 24)) - 1
        if self._bitmap is None:
            self._bitmap = np.zeros(mask + 1, dtype=bool)
            self._bitmap[self.features & mask] = True
        maybe = np.flatnonzero(self._bitmap[ids.ravel() & mask])
        candidates = ids.ravel()[maybe]
        where = np.minimum(np.searchsorted(self.features, candidates), len(self.features) - 1)
        result.ravel()[maybe] = np.where(self.features[where] == candidates, self.weights[where], 0.0)
        return result

    def term_weights(self, text, collection):
        """Per target n-gram t of ``collection``: ``v_t = sum_s w[HASH(s, t)]``, and the identity indicator.

        Then ``f(q, d) = sum_{t in T(d)} v_t + beta * sum_{t in T(d)} identity_t``.
        """
        grams = query_ngrams(text, self.config.order, self.config.src_lang)
        learned = np.zeros(len(collection.strings))
        kernels = _kernels()
        if grams and kernels is not None and len(self.features):
            learned = kernels.term_sums(ngram_hashes(grams, self.config.hash_seed), collection.hashes,
                                        self.config.hash_seed, (1 << self.config.bits) - 1, self.features, self.weights)
        elif grams:
            source = ngram_hashes(grams, self.config.hash_seed)[:, None]
            for start in range(0, len(collection.strings), 1 << 18):
                target = collection.hashes[None, start:start + (1 << 18)]
                ids = buckets(source, target, self.config.bits, self.config.hash_seed)
                learned[start:start + target.shape[1]] = self.lookup(ids).sum(axis=0)
        identity = np.zeros(len(collection.strings))
        rows = [collection.vocabulary[g] for g in grams if g in collection.vocabulary]
        identity[rows] = 1.0
        return learned, identity

    def score_parts(self, text, collection, rows=None):
        """``(learned, identity)`` scores of the documents ``rows`` (all when None) for a query text.

        With ``rows`` the document rows' n-grams are read; without, the inverted index
        (postings of the n-grams with a non-zero weight) scores the whole collection.
        """
        learned, identity = self.term_weights(text, collection)
        if rows is not None:
            block = collection.incidence[rows]
            return block @ learned, block @ identity
        used = np.flatnonzero((learned != 0) | (identity != 0))
        postings = collection.postings[:, used]
        return postings @ learned[used], postings @ identity[used]

    def score(self, text, collection, rows=None):
        """``f(q, d)`` (learned pairs plus beta times identities) of documents ``rows`` (all when None)."""
        learned, identity = self.score_parts(text, collection, rows)
        return learned + self.beta * identity

    def search(self, topics, collection, field=None, depth=1000, progress=False, latencies=None):
        """Score the whole collection for each topic; return the top ``depth`` as a run frame.

        With ``latencies`` (a dict), each topic's seconds are added to its entry (0 when absent).
        """
        return self._run(topics, collection, field, depth, progress, None, latencies)

    def rerank(self, topics, collection, candidates, field=None, depth=None, progress=False, latencies=None):
        """Rescore each topic's candidate documents (a run frame); documents not in the collection are dropped."""
        return self._run(topics, collection, field, depth, progress, candidates, latencies)

    def _run(self, topics, collection, field, depth, progress, candidates, latencies):
        import pandas as pd
        from tqdm import tqdm

        from clirplug.io.runs import add_latency, check_shared_topics, sort_run

        field = field or self.config.field
        wanted = None
        if candidates is not None:
            check_shared_topics(candidates, topics)
            wanted = {qid: group["docid"].tolist() for qid, group in candidates.groupby("qid", sort=False)}
        frames = []
        for topic in tqdm(topics, desc="queries", unit="q", disable=not progress, leave=False):
            start = time.perf_counter()
            frame = self._topic_run(topic, collection, field, depth, None if wanted is None else wanted.get(topic.id, []))
            if frame is not None:
                frames.append(frame)
            add_latency(latencies, topic.id, start)
        if not frames:
            return pd.DataFrame({"qid": [], "docid": [], "score": []})
        run = sort_run(pd.concat(frames, ignore_index=True))
        return run if depth is None else run[run["rank"] <= depth].reset_index(drop=True)

    def _topic_run(self, topic, collection, field, depth, candidates):
        """One topic's top ``depth`` (qid, docid, score): of its ``candidates`` (docids) in the collection, or
        of the whole collection when ``None``; ``None`` when no candidate is in the collection."""
        import pandas as pd

        from clirplug.io.topics import topic_field

        if candidates is not None:
            docids = [d for d in candidates if d in collection.row]
            if not docids:
                return None
            rows = np.array([collection.row[d] for d in docids])
            scores = self.score(topic_field(topic, field), collection, rows)
        else:
            docids, scores = collection.docids, self.score(topic_field(topic, field), collection)
        frame = pd.DataFrame({"qid": topic.id, "docid": docids, "score": scores})
        return frame if depth is None else frame.nlargest(depth, "score", keep="all")

    # -------------------------------------------------------------- table

    def table(self, top=20):
        """The ``top`` features in the order boosting first chose them, unhashed (like the paper's Table 4).

        Returns
        -------
        list of str
            Lines ``t  weight  source n-gram - target n-gram`` (bigram words comma-separated);
            a bucket holding several training pairs shows the most frequent ones and ``(+k more)``.
        """
        order = np.lexsort((-np.abs(self.weights), self.first))[:top]
        lines = [f"{'t':>5}  {'w':>7}  source - target (pairs seen in the bucket)"]
        for index in order:
            bucket = int(self.features[index])
            total, pairs = self.examples.get(bucket, (0, []))
            shown = "; ".join(f"{s.replace(' ', ', ')} - {t.replace(' ', ', ')}" for s, t, _ in pairs) or f"bucket {bucket}"
            more = f" (+{total - len(pairs)} more)" if total > len(pairs) else ""
            lines.append(f"{int(self.first[index]):>5}  {self.weights[index]:>7.3f}  {shown}{more}")
        return lines

    # -------------------------------------------------------------- files

    def save(self, path):
        """Write the model to ``path`` (``.npz``) atomically."""
        from clirplug.atomic import atomic_open

        example_rows = [(bucket, total, s, t, count) for bucket, (total, pairs) in self.examples.items()
                        for s, t, count in pairs]
        header = {"format": "clirplug-boost/1", "config": asdict(self.config), "beta": self.beta, "stats": self.stats}
        with atomic_open(path, "wb") as handle:
            np.savez_compressed(
                handle,
                header=np.array(json.dumps(header)),
                features=self.features, weights=self.weights, first=self.first,
                example_bucket=np.array([r[0] for r in example_rows], dtype=np.int64),
                example_total=np.array([r[1] for r in example_rows], dtype=np.int64),
                example_source=np.array([r[2] for r in example_rows], dtype=str),
                example_target=np.array([r[3] for r in example_rows], dtype=str),
                example_count=np.array([r[4] for r in example_rows], dtype=np.int64),
            )

    @classmethod
    def load(cls, path):
        """Read a model written by ``save``.

        Raises
        ------
        ClirplugError
            When ``path`` is not a readable boosting model.
        """
        from clirplug.io.npz import read_arrays

        arrays = read_arrays(path, "boosting model")
        try:
            header = json.loads(str(arrays["header"]))
        except (KeyError, ValueError) as error:
            raise ClirplugError(f"{path}: not a clirplug boosting model ({error})") from error
        if not isinstance(header, dict) or header.get("format") != "clirplug-boost/1":
            raise ClirplugError(f"{path}: not a clirplug boosting model (format "
                                f"{header.get('format') if isinstance(header, dict) else None!r})")
        examples = {}
        for bucket, total, s, t, count in zip(arrays["example_bucket"].tolist(), arrays["example_total"].tolist(),
                                              arrays["example_source"].tolist(), arrays["example_target"].tolist(),
                                              arrays["example_count"].tolist()):
            examples.setdefault(bucket, (total, []))[1].append((s, t, count))
        return cls(BoostConfig(**header["config"]), arrays["features"], arrays["weights"], arrays["first"],
                   beta=header["beta"], examples=examples, stats=header["stats"])


def tune_beta(model, topics, qrels, collection, grid, progress=False):
    """Choose beta on held-out training topics by MAP over the whole collection (Section 6.1).

    The learned and identity parts of ``f`` are computed once per topic; each beta of
    ``grid`` only reweights them. Sets ``model.beta`` to the best value (the smallest on ties).

    Returns
    -------
    list of (float, float)
        ``(beta, MAP)`` for each value of ``grid``.
    """
    import pandas as pd
    from tqdm import tqdm

    from clirplug.eval.measures import evaluate
    from clirplug.io.topics import topic_field

    parts = {}
    for topic in tqdm(topics, desc="tuning beta", unit="q", disable=not progress):
        parts[topic.id] = model.score_parts(topic_field(topic, model.config.field), collection)
    runs = {}
    for beta in grid:
        frames = [pd.DataFrame({"qid": qid, "docid": collection.docids, "score": learned + beta * identity})
                  .nlargest(1000, "score", keep="first") for qid, (learned, identity) in parts.items()]
        runs[repr(float(beta))] = pd.concat(frames, ignore_index=True)
    result = evaluate(qrels[qrels["qid"].isin(parts)], runs, ["MAP"])
    table = [(float(name), float(value)) for name, value in zip(result["run"], result["value"])]
    best = max(table, key=lambda row: (row[1], -row[0]))
    model.beta = best[0]
    return table


# ============================================================================ reranker interface


def load(path):
    """Read a boosting model (see ``clirplug.rerank``)."""
    return BoostModel.load(path)


def read_collection(corpus, model, progress=False):
    """The target collection of ``corpus`` (a JSONL file or folder) as ``model`` reads documents."""
    from clirplug.corpus import read_corpus

    config = model.config
    return Collection.from_corpus(read_corpus(corpus), config.order, config.doc_tokens, config.hash_seed, progress)


def rerank_run(topics, candidates=None, *, model, corpus, field: str | None = None, depth: int = 1000,
               progress: bool = True, latencies: dict[str, float] | None = None):
    """The boosting model file ``model`` over ``corpus`` (a JSONL file or folder): each topic's ``candidates``
    (a run frame) rescored, or without them the whole collection scored; the top ``depth`` as a run frame
    (``field``: default the one the model was trained on). ``model`` may also be a loaded :class:`BoostModel`
    and ``corpus`` its :class:`Collection` (:func:`read_collection`). With ``latencies``, each topic's
    seconds are added to its entry (0 when absent)."""
    boost = model if isinstance(model, BoostModel) else load(model)
    collection = corpus if isinstance(corpus, Collection) else read_collection(corpus, boost, progress=progress)
    if candidates is None:
        return boost.search(topics, collection, field=field, depth=depth, progress=progress, latencies=latencies)
    return boost.rerank(topics, collection, candidates, field=field, depth=depth, progress=progress,
                        latencies=latencies)
