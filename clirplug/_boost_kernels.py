"""Compiled (numba) kernels of :mod:`clirplug.boost`: the same arithmetic as its numpy reference code, fused.

Each kernel reproduces its reference bit for bit (tested against it): integer hashing is exact,
and the floating-point sums add the same terms in the same order. Exponentials, logarithms and
the pairwise sums of numpy stay in numpy, whose results may differ from LLVM's in the last bit.
Compiled machine code is cached (:func:`clirplug.compiled.compiled`).
"""

import numba
import numpy as np

from clirplug.compiled import compiled

_M32 = np.uint64(0xFFFFFFFF)
_C1, _C2 = np.uint64(0xCC9E2D51), np.uint64(0x1B873593)


@numba.njit(inline="always")
def _mix(h, k):
    k = (k * _C1) & _M32
    k = ((k << np.uint64(15)) | (k >> np.uint64(17))) & _M32
    k = (k * _C2) & _M32
    h ^= k
    h = ((h << np.uint64(13)) | (h >> np.uint64(19))) & _M32
    return (h * np.uint64(5) + np.uint64(0xE6546B64)) & _M32


@numba.njit(inline="always")
def _finish(state, target, mask):
    """The bucket of a pair from ``state``, the hash state after its source (``_mix(seed, source)``)."""
    h = _mix(state, np.uint64(target))
    h ^= np.uint64(8)
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x85EBCA6B)) & _M32
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(0xC2B2AE35)) & _M32
    h ^= h >> np.uint64(16)
    return np.int64(h & mask)


@numba.njit(inline="always")
def _bucket(source, target, seed, mask):
    """The low bits of MurmurHash3_x86_32 of ``le32(source) + le32(target)`` (``boost.pair_hashes``)."""
    return _finish(_mix(np.uint64(seed), np.uint64(source)), target, mask)


@compiled
def buckets(source, target, seed, mask):
    """``boost.buckets(source[:, None], target[None, :])``: the bucket of each pair, sources x targets."""
    out = np.empty((len(source), len(target)), np.int64)
    for i in range(len(source)):
        for j in range(len(target)):
            out[i, j] = _bucket(source[i], target[j], seed, mask)
    return out


@numba.njit(inline="always")
def _low_bits(features):
    """A bit set over the low bits of ``features`` (at most 1/64 full: small enough for the processor's cache)."""
    low = 10
    while (1 << low) < 64 * len(features) and low < 30:
        low += 1
    low_mask = np.int64((1 << low) - 1)
    words = np.zeros((1 << low) >> 6, np.uint64)
    for f in features:
        bit = f & low_mask
        words[bit >> 6] |= np.uint64(1) << np.uint64(bit & 63)
    return words, low_mask


@numba.njit(inline="always")
def _maybe(words, low_mask, bucket):
    """False when ``bucket`` is surely not one of the features of the bit set ``words`` (``_low_bits``)."""
    bit = bucket & low_mask
    return (words[bit >> 6] & (np.uint64(1) << np.uint64(bit & 63))) != np.uint64(0)


@compiled
def term_sums(source, target, seed, mask, features, weights):
    """Per target hash: the sum over ``source`` of the weight of bucket(s, t) (0 without one), added in source
    order. A bit set over the low bits of ``features`` (``_low_bits``) rules out most pairs before the binary
    search among ``features``."""
    n = len(features)
    words, low_mask = _low_bits(features)
    states = np.empty(len(source), np.uint64)
    for i in range(len(source)):
        states[i] = _mix(np.uint64(seed), np.uint64(source[i]))
    out = np.zeros(len(target))
    ids = np.empty(len(target), np.int64)
    for i in range(len(source)):  # per target, the sum runs over the sources in order
        for j in range(len(target)):
            ids[j] = _finish(states[i], target[j], mask)
        for j in range(len(target)):
            if _maybe(words, low_mask, ids[j]):
                where = np.searchsorted(features, ids[j])
                if where < n and features[where] == ids[j]:
                    out[j] += weights[where]
    return out


@compiled
def triple_keys(q, pos, neg, query_indptr, query_hashes, gram_indptr, grams, target_hashes, seed, mask, row_bits):
    """``bucket << row_bits | triple`` of each pair of ``S(q) x (T(d+) - T(d-))`` (P) and ``S(q) x (T(d-) - T(d+))``
    (M) of each triple, unsorted. Documents' n-gram ids (``grams``, CSR by ``gram_indptr``) are sorted."""
    sizes = np.zeros(2, np.int64)
    for i in range(len(q)):
        n_source = query_indptr[q[i] + 1] - query_indptr[q[i]]
        a0, a1, b0, b1 = gram_indptr[pos[i]], gram_indptr[pos[i] + 1], gram_indptr[neg[i]], gram_indptr[neg[i] + 1]
        common = 0
        x, y = a0, b0
        while x < a1 and y < b1:
            if grams[x] < grams[y]:
                x += 1
            elif grams[x] > grams[y]:
                y += 1
            else:
                common += 1
                x += 1
                y += 1
        sizes[0] += n_source * (a1 - a0 - common)
        sizes[1] += n_source * (b1 - b0 - common)
    plus, minus = np.empty(sizes[0], np.int64), np.empty(sizes[1], np.int64)
    filled = np.zeros(2, np.int64)
    for i in range(len(q)):
        s0, s1 = query_indptr[q[i]], query_indptr[q[i] + 1]
        for side in range(2):
            if side == 0:
                a0, a1, b0, b1 = gram_indptr[pos[i]], gram_indptr[pos[i] + 1], gram_indptr[neg[i]], gram_indptr[neg[i] + 1]
                out = plus
            else:
                a0, a1, b0, b1 = gram_indptr[neg[i]], gram_indptr[neg[i] + 1], gram_indptr[pos[i]], gram_indptr[pos[i] + 1]
                out = minus
            k = filled[side]
            y = b0
            for x in range(a0, a1):
                while y < b1 and grams[y] < grams[x]:
                    y += 1
                if y < b1 and grams[y] == grams[x]:
                    continue
                t = target_hashes[grams[x]]
                for s in range(s0, s1):
                    out[k] = (_bucket(query_hashes[s], t, seed, mask) << row_bits) | i
                    k += 1
            filled[side] = k
    return plus, minus


@compiled
def block_starts(indptr, indices, n_columns, block):
    """Where each row of a CSR matrix (sorted columns) enters each block of ``block`` columns: rows x (blocks + 1)."""
    n_blocks = max((n_columns + block - 1) // block, 1)
    starts = np.empty((len(indptr) - 1, n_blocks + 1), np.int64)
    for row in range(len(indptr) - 1):
        e = indptr[row]
        for b in range(n_blocks):
            while e < indptr[row + 1] and indices[e] < b * block:
                e += 1
            starts[row, b] = e
        starts[row, n_blocks] = indptr[row + 1]
    return starts


@numba.njit(inline="always")
def _add(starts, indices, data, row, b, change, totals, w_plus, w_minus, criterion):
    for e in range(starts[row, b], starts[row, b + 1]):
        column = indices[e]
        totals[column] += np.float64(data[e]) * change
        criterion[column] = abs(np.sqrt(max(w_plus[column], 0.0)) - np.sqrt(max(w_minus[column], 0.0)))


@compiled
def add_rows(plus, minus, rows, delta, w_plus, w_minus, criterion):
    """``W+[column] += P[row, column] * delta[k]`` over the entries of each row ``rows[k]`` of P, in row order, and
    the same for M and ``W-`` (``numpy.add.at`` over the gathered rows), with the criterion
    ``|sqrt(max(W+, 0)) - sqrt(max(W-, 0))|`` of each changed column. ``plus`` and ``minus`` are P's and M's
    ``(block_starts, indices, data)``: the rows are walked one block of columns at a time, so that the
    totals being updated stay in the processor's cache (each column still sees its rows in order)."""
    starts_p, indices_p, data_p = plus
    starts_m, indices_m, data_m = minus
    for b in range(starts_p.shape[1] - 1):
        for k in range(len(rows)):
            _add(starts_p, indices_p, data_p, rows[k], b, delta[k], w_plus, w_plus, w_minus, criterion)
            _add(starts_m, indices_m, data_m, rows[k], b, delta[k], w_minus, w_plus, w_minus, criterion)


@numba.njit(inline="always")
def _bucket_end(keys, start, bucket, row_bits):
    """The end of the run of ``keys`` (sorted) from ``start`` in ``bucket``, and how many distinct keys it holds."""
    end, distinct, last = start, 0, -1
    while end < len(keys) and (keys[end] >> row_bits) == bucket:
        if keys[end] != last:
            distinct += 1
            last = keys[end]
        end += 1
    return end, distinct


@compiled
def kept_buckets(plus, minus, row_bits, min_triples, out):
    """The buckets of the sorted ``bucket << row_bits | row`` keys ``plus`` and ``minus`` found in at least
    ``min_triples`` rows of the two together (a row of each counted separately), ascending: their number,
    and written into ``out`` when it is long enough to hold them."""
    i, j, n = 0, 0, 0
    none = np.int64(1) << np.int64(62)
    while i < len(plus) or j < len(minus):
        bucket = min(plus[i] >> row_bits if i < len(plus) else none, minus[j] >> row_bits if j < len(minus) else none)
        i, rows_plus = _bucket_end(plus, i, bucket, row_bits)
        j, rows_minus = _bucket_end(minus, j, bucket, row_bits)
        if rows_plus + rows_minus >= min_triples:
            if n < len(out):
                out[n] = bucket
            n += 1
    return n


@compiled
def csr_of_keys(keys, features, row_bits, n_rows):
    """CSR arrays (indptr, column indices, counts) of triples x ``features`` from sorted ``bucket << row_bits | row``
    keys: entry (row, column of bucket) counts the key's copies; buckets not in ``features`` are left out."""
    row_mask = (np.int64(1) << row_bits) - 1
    indptr = np.zeros(n_rows + 1, np.int64)
    for step in range(2):
        if step == 1:
            for row in range(n_rows):
                indptr[row + 1] += indptr[row]
            indices = np.empty(indptr[n_rows], np.int32)
            data = np.empty(indptr[n_rows], np.uint16)
            filled = indptr[:-1].copy()
        column, start = 0, 0
        while start < len(keys):
            end = start
            while end < len(keys) and keys[end] == keys[start]:
                end += 1
            bucket, row = keys[start] >> row_bits, keys[start] & row_mask
            while column < len(features) and features[column] < bucket:
                column += 1
            if column < len(features) and features[column] == bucket:
                if step == 0:
                    indptr[row + 1] += 1
                else:
                    indices[filled[row]] = column
                    data[filled[row]] = np.uint16(end - start)
                    filled[row] += 1
            start = end
    return indptr, indices, data


@compiled
def pair_census(source_hashes, source_ptr, source_queries, target_ptr, targets, target_counts, target_hashes,
                seed, bits, model_buckets, n_target):
    """Distinct n-gram pairs of training (query, documents): source s (hash ``source_hashes[s]``) pairs with every
    target of each query holding it (``source_queries``, CSR by ``source_ptr``; a query's targets and how many of
    its documents hold each: ``targets``, ``target_counts``, CSR by ``target_ptr``). Returns the number of distinct
    pairs, of buckets they occupy, of pairs sharing a bucket, and the pairs in ``model_buckets`` (sorted):
    keys ``s * n_target + t``, buckets and summed counts, unsorted."""
    mask = np.int64((1 << bits) - 1)
    words, low_mask = _low_bits(model_buckets)
    once = np.zeros(((1 << bits) + 63) >> 6, np.uint64)
    twice = np.zeros(((1 << bits) + 63) >> 6, np.uint64)
    seen = np.full(n_target, -1, np.int64)
    total = np.zeros(n_target, np.int64)
    hit_targets = np.empty(n_target, np.int64)
    keys, hit_buckets, counts = np.empty(1024, np.int64), np.empty(1024, np.int64), np.empty(1024, np.int64)
    n_pairs, n_hits = 0, 0
    for s in range(len(source_hashes)):
        state = _mix(np.uint64(seed), np.uint64(source_hashes[s]))
        n_hit_targets = 0
        for k in range(source_ptr[s], source_ptr[s + 1]):
            query = source_queries[k]
            for e in range(target_ptr[query], target_ptr[query + 1]):
                t = targets[e]
                if seen[t] != s:
                    seen[t] = s
                    n_pairs += 1
                    bucket = _finish(state, target_hashes[t], mask)
                    word, bit = bucket >> 6, np.uint64(1) << np.uint64(bucket & 63)
                    if once[word] & bit:
                        twice[word] |= bit
                    once[word] |= bit
                    if _maybe(words, low_mask, bucket):
                        where = np.searchsorted(model_buckets, bucket)
                        if where < len(model_buckets) and model_buckets[where] == bucket:
                            total[t] = 0
                            hit_targets[n_hit_targets] = t
                            n_hit_targets += 1
                total[t] += target_counts[e]
        for k in range(n_hit_targets):
            t = hit_targets[k]
            if n_hits == len(keys):
                keys, hit_buckets, counts = _grown(keys), _grown(hit_buckets), _grown(counts)
            keys[n_hits] = s * n_target + t
            hit_buckets[n_hits] = _finish(state, target_hashes[t], mask)
            counts[n_hits] = total[t]
            n_hits += 1
    occupied, single = 0, 0
    for word in range(len(once)):
        occupied += _popcount(once[word])
        single += _popcount(once[word] & ~twice[word])
    return n_pairs, occupied, n_pairs - single, keys[:n_hits], hit_buckets[:n_hits], counts[:n_hits]


@numba.njit(inline="always")
def _grown(array):
    bigger = np.empty(2 * len(array), array.dtype)
    bigger[:len(array)] = array
    return bigger


@numba.njit(inline="always")
def _popcount(x):
    """The number of set bits of a 64-bit word (the SWAR sum of bit counts)."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))
