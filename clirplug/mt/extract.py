"""Grammar extraction from word-aligned bitext: flat phrase pairs and hierarchical rules.

Flat phrase pairs follow Koehn, Och & Marcu (2003) as implemented in Moses: every pair of
spans consistent with the word alignment, unaligned words at the boundaries extending a
phrase. Hierarchical rules follow Chiang (2007, §3.2): tight initial phrase pairs, from which
sub-phrase pairs are subtracted and replaced by linked nonterminals ``[X,1]``, ``[X,2]``.

Both are scored with the same features, written as named cdec-style costs (see
``docs/models.md``):

========== =====================================================================
EgivenF    ``-log10 p(e|f)``, ``p(e|f) = c(f, e) / c(f)`` (relative frequency)
FgivenE    ``-log10 p(f|e)``, ``p(f|e) = c(f, e) / c(e)``
LexEgivenF ``-log10 lex(e|f, a)``, Koehn et al. (2003) lexical weight, eq. (4)
LexFgivenE ``-log10 lex(f|e, a)``, the same in the other direction
CountEF    ``log10(1 + c(f, e))``
CountF     ``log10(1 + c(f))`` (cdec's ``SampleCountF``)
========== =====================================================================

``c`` counts rule occurrences: 1 per extracted phrase pair for flat grammars; for
hierarchical grammars each initial phrase pair contributes a count of 1 shared equally among
the rules it yields (Chiang 2007, §3.2). A rule's alignment is its most frequent internal
alignment, and its lexical weights are those of that alignment, as in Moses (ties: the
smallest code ``Σ 2^(j·T + t)`` over the links of the j-th source and t-th target terminal,
``T`` the maximal number of target terminals). Nonterminals take no part in the lexical weights.

Everything after reading runs on whole-corpus numpy arrays: phrase spans are found for all
sentences at once, rule sides are encoded as rows of word ids and counted by hashing them
(``pandas.factorize``); filtering for a test set matches all source sides against all its
sentences at once, and the grammar is written from a table of byte pieces.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from clirplug.errors import ClirplugError
from clirplug.mt.grammar import Rule, is_nonterminal
from clirplug.mt.symmetrize import parse_pharaoh

FEATURES = ("EgivenF", "FgivenE", "LexEgivenF", "LexFgivenE", "CountEF", "CountF")
PAD, NT1, NT2 = 0, 1, 2  # symbols of encoded rule sides; word ids start at 3
FIRST_WORD = 3


class ParallelText(NamedTuple):
    """Tokenized sentence pairs with their word alignments (Pharaoh ``i-j``, source-target)."""

    src: list[list[str]]
    tgt: list[list[str]]
    links: list[list[tuple[int, int]]]


# ---------------------------------------------------------------- input


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise ClirplugError(f"{path}: no such file") from None
    except UnicodeDecodeError as error:
        raise ClirplugError(f"{path}: not UTF-8 text ({error})") from None


def read_parallel(src_path, tgt_path, align_path) -> ParallelText:
    """Read tokenized source and target files (one sentence a line) and their alignment file.

    Sentence pairs with a token that would be misread in the grammar format (one that looks
    like a nonterminal ``[X]`` or contains ``|||``) are read as empty pairs, so line numbers
    stay aligned; ``clirplug.mt.preprocess`` never produces such tokens.
    """
    paths = [Path(src_path), Path(tgt_path), Path(align_path)]
    src_lines, tgt_lines, align_lines = (_read_lines(path) for path in paths)
    if not len(src_lines) == len(tgt_lines) == len(align_lines):
        counts = ", ".join(f"{path}: {len(lines)}" for path, lines in zip(paths, (src_lines, tgt_lines, align_lines)))
        raise ClirplugError(f"the parallel files have different line counts ({counts})")
    text = ParallelText([], [], [])
    for lineno, (s, t, a) in enumerate(zip(src_lines, tgt_lines, align_lines), 1):
        src, tgt = s.split(), t.split()
        if any(is_nonterminal(token) or "|||" in token for token in src + tgt):
            src, tgt, a = [], [], ""
        text.src.append(src)
        text.tgt.append(tgt)
        text.links.append(sorted(set(parse_pharaoh(a, f"{paths[2]}:{lineno}", (len(src), len(tgt))))))
    return text


# ---------------------------------------------------------------- the corpus as arrays


def _encode(sentences: list[list[str]]):
    """Word ids (``FIRST_WORD`` + rank in string order), the sorted words, and sentence start offsets."""
    ids: dict[str, int] = {}
    flat = np.array([ids.setdefault(token, len(ids)) for tokens in sentences for token in tokens], dtype=np.int64)
    words = sorted(ids)
    rank = np.empty(len(words), dtype=np.int64)
    rank[[ids[word] for word in words]] = np.arange(len(words))
    starts = np.zeros(len(sentences) + 1, dtype=np.int64)
    np.cumsum([len(tokens) for tokens in sentences], out=starts[1:])
    return rank[flat] + FIRST_WORD if len(flat) else flat, words, starts


@dataclass
class _Corpus:
    """All sentence pairs as global token positions, with the alignment's projections."""

    src: np.ndarray  # word id of each source token
    tgt: np.ndarray
    src_words: list[str]  # id - FIRST_WORD -> word
    tgt_words: list[str]
    src_end: np.ndarray  # end (exclusive) of each source token's sentence
    tgt_start: np.ndarray  # start of each target token's sentence
    tgt_end: np.ndarray
    link_src: np.ndarray  # global positions of every link
    link_tgt: np.ndarray
    s_lo: np.ndarray  # per source token: first/last aligned target position (BIG / -1 if unaligned)
    s_hi: np.ndarray
    t_lo: np.ndarray  # per target token: first/last aligned source position
    t_hi: np.ndarray
    aligned_prefix: np.ndarray  # aligned source tokens before each position
    log_lex_e: np.ndarray  # prefix sums of log10 w(e|f-links) per target token, see _lexical_prefixes
    log_lex_f: np.ndarray

    @classmethod
    def build(cls, text: ParallelText) -> _Corpus:
        src, src_words, src_starts = _encode(text.src)
        tgt, tgt_words, tgt_starts = _encode(text.tgt)
        lengths_src, lengths_tgt = np.diff(src_starts), np.diff(tgt_starts)
        n_links = np.array([len(links) for links in text.links], dtype=np.int64)
        pairs = np.array([link for links in text.links for link in links], dtype=np.int64).reshape(-1, 2)
        link_src = pairs[:, 0] + np.repeat(src_starts[:-1], n_links)
        link_tgt = pairs[:, 1] + np.repeat(tgt_starts[:-1], n_links)
        big = len(src) + len(tgt) + 1
        s_lo, s_hi = np.full(len(src), big), np.full(len(src), -1)
        t_lo, t_hi = np.full(len(tgt), big), np.full(len(tgt), -1)
        np.minimum.at(s_lo, link_src, link_tgt)
        np.maximum.at(s_hi, link_src, link_tgt)
        np.minimum.at(t_lo, link_tgt, link_src)
        np.maximum.at(t_hi, link_tgt, link_src)
        aligned_prefix = np.concatenate([[0], np.cumsum(s_hi >= 0)])
        log_lex_e, log_lex_f = _lexical_prefixes(src, tgt, link_src, link_tgt)
        return cls(
            src, tgt, src_words, tgt_words,
            np.repeat(src_starts[1:], lengths_src),
            np.repeat(tgt_starts[:-1], lengths_tgt), np.repeat(tgt_starts[1:], lengths_tgt),
            link_src, link_tgt, s_lo, s_hi, t_lo, t_hi, aligned_prefix, log_lex_e, log_lex_f,
        )  # fmt: skip


def _lexical_prefixes(src: np.ndarray, tgt: np.ndarray, link_src: np.ndarray, link_tgt: np.ndarray):
    """Prefix sums over token positions of ``log10`` of each token's lexical factor.

    Word tables (Koehn et al. 2003): ``w(e|f) = c(f, e) / Σ_e' c(f, e')`` from the aligned word
    pairs, an unaligned target word counting as aligned to ``NULL`` (and an unaligned source
    word to a target ``NULL`` for ``w(f|e)``). The factor of a target token ``e`` in
    ``lex(e|f, a)`` (eq. 4) is ``1/|a(e)| Σ_{f ∈ a(e)} w(e|f)``, or ``w(e|NULL)`` when
    unaligned. Every link of a rule's terminal lies inside the rule (consistency), so a
    rule's ``log10 lex`` is the sum of its terminals' factors: a difference of prefix sums.
    """
    null_src, null_tgt = 0, 0  # ids 0 and 1 are never words (FIRST_WORD = 3)
    src_unaligned = np.setdiff1d(np.arange(len(src)), link_src)
    tgt_unaligned = np.setdiff1d(np.arange(len(tgt)), link_tgt)
    f = np.concatenate([src[link_src], np.full(len(tgt_unaligned), null_src), src[src_unaligned]])
    e = np.concatenate([tgt[link_tgt], tgt[tgt_unaligned], np.full(len(src_unaligned), null_tgt)])
    width = int(max(tgt.max(initial=0), 0)) + 1
    pairs, inverse, joint = np.unique(f * width + e, return_inverse=True, return_counts=True)
    f_total = np.bincount(pairs // width, weights=joint)
    e_total = np.bincount(pairs % width, weights=joint)
    count = joint[inverse].astype(float)
    e_given_f = count / f_total[f]
    f_given_e = count / e_total[e]
    n_links, n_tu = len(link_src), len(tgt_unaligned)
    factor_e = np.zeros(len(tgt))
    factor_e += np.bincount(link_tgt, weights=e_given_f[:n_links], minlength=len(tgt))
    factor_e /= np.maximum(np.bincount(link_tgt, minlength=len(tgt)), 1)
    factor_e[tgt_unaligned] = e_given_f[n_links : n_links + n_tu]
    factor_f = np.bincount(link_src, weights=f_given_e[:n_links], minlength=len(src)).astype(float)
    factor_f /= np.maximum(np.bincount(link_src, minlength=len(src)), 1)
    factor_f[src_unaligned] = f_given_e[n_links + n_tu :]
    return (np.concatenate([[0.0], np.cumsum(np.log10(factor_e))]), np.concatenate([[0.0], np.cumsum(np.log10(factor_f))]))


# ---------------------------------------------------------------- phrase spans


def _phrase_cores(corpus: _Corpus, max_src: int, max_tgt: int, tight: bool) -> np.ndarray:
    """``(i, k, a, b)`` rows (global, half-open) of source spans with a consistent target span.

    The target span runs from the first to the last target word aligned to the source span;
    it is consistent when no word inside either span is aligned outside the other (Och & Ney
    2004). With ``tight`` both source boundary words must be aligned too. Rows are sorted by
    ``(i, k)``.
    """
    n, n_tgt = len(corpus.src), len(corpus.tgt)
    # range minimum / maximum of t_lo / t_hi over windows [e, e + w) of every width w <= max_tgt
    padded_lo = np.concatenate([corpus.t_lo, np.full(max_tgt, np.iinfo(np.int64).max)])
    padded_hi = np.concatenate([corpus.t_hi, np.full(max_tgt, -1)])
    window_lo, window_hi = [padded_lo[:n_tgt]], [padded_hi[:n_tgt]]
    for w in range(1, max_tgt):
        window_lo.append(np.minimum(window_lo[-1], padded_lo[w : w + n_tgt]))
        window_hi.append(np.maximum(window_hi[-1], padded_hi[w : w + n_tgt]))
    window_lo, window_hi = np.stack(window_lo), np.stack(window_hi)

    start = np.arange(n)
    tmin, tmax = corpus.s_lo.copy(), corpus.s_hi.copy()
    found = []
    for length in range(1, max_src + 1):
        last = np.minimum(start + length - 1, n - 1)
        if length > 1:
            tmin = np.minimum(tmin, corpus.s_lo[last])
            tmax = np.maximum(tmax, corpus.s_hi[last])
        ok = (start + length <= corpus.src_end) & (tmax >= 0) & (tmax - tmin < max_tgt)
        if tight:
            ok &= (corpus.s_hi >= 0) & (corpus.s_hi[last] >= 0)
        i = start[ok]
        a, b = tmin[ok], tmax[ok] + 1
        width = b - a
        consistent = (window_lo[width - 1, a] >= i) & (window_hi[width - 1, a] < i + length)
        found.append(np.stack([i, i + length, a, b], axis=1)[consistent])
    spans = np.concatenate(found) if found else np.zeros((0, 4), dtype=np.int64)
    return spans[np.lexsort((spans[:, 1], spans[:, 0]))]


def _extend_unaligned(corpus: _Corpus, cores: np.ndarray, max_tgt: int) -> np.ndarray:
    """Every extension of the target spans of ``cores`` by unaligned boundary words (Moses)."""
    n_tgt = len(corpus.tgt)
    aligned = corpus.t_hi >= 0
    position = np.arange(n_tgt)
    # last aligned position before each index, first aligned position from each index on
    last_aligned = np.maximum.accumulate(np.where(aligned, position, -1))
    next_aligned = np.minimum.accumulate(np.where(aligned, position, n_tgt)[::-1])[::-1]
    i, k, a, b = cores.T
    previous = np.where(a > 0, last_aligned[np.maximum(a - 1, 0)], -1)
    room_left = a - np.maximum(previous + 1, corpus.tgt_start[a])
    following = next_aligned[np.minimum(b, n_tgt - 1)]
    following = np.where(b < n_tgt, following, n_tgt)
    room_right = np.minimum(following, corpus.tgt_end[a]) - b
    extended = []
    for left in range(max_tgt):
        for right in range(max_tgt - left):
            ok = (left <= room_left) & (right <= room_right) & (b - a + left + right <= max_tgt)
            extended.append(np.stack([i[ok], k[ok], a[ok] - left, b[ok] + right], axis=1))
    spans = np.concatenate(extended)
    return spans[np.lexsort((spans[:, 3], spans[:, 2], spans[:, 1], spans[:, 0]))]


def _expand(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs ``(r, j)`` for every row ``r`` and every ``j`` in ``[lo[r], hi[r])``."""
    counts = np.maximum(hi - lo, 0)
    rows = np.repeat(np.arange(len(lo)), counts)
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    return rows, lo[rows] + offsets


def _hiero_instances(
    corpus: _Corpus, initial: np.ndarray, max_terminals: int, max_nonterminals: int, max_symbols: int
) -> np.ndarray:
    """Rule instances ``(initial phrase, hole 1, hole 2)`` (indices into ``initial``, -1 for none).

    Chiang's (2007, §3.2) limits: holes are sub-phrase pairs of the initial phrase (strictly
    smaller), at most ``max_nonterminals``, not adjacent on the source side; at most
    ``max_terminals`` source terminals and ``max_symbols`` source terminals plus nonterminals
    remain, at least one terminal aligned. ``initial`` must be sorted by ``(i, k)``.
    """
    i, k = initial[:, 0], initial[:, 1]
    prefix = corpus.aligned_prefix
    size = k - i
    aligned = prefix[k] - prefix[i]
    # sub-phrases: phrases starting inside the initial phrase and ending inside it
    outer, inner = _expand(np.searchsorted(i, i, "left"), np.searchsorted(i, k, "left"))
    keep = (k[inner] <= k[outer]) & (inner != outer)
    outer, inner = outer[keep], inner[keep]
    instances = []
    max_terminals = [min(max_terminals, max_symbols - holes) for holes in range(3)]
    zero = np.flatnonzero((size <= max_terminals[0]) & (aligned > 0))
    instances.append(np.stack([zero, np.full(len(zero), -1), np.full(len(zero), -1)], axis=1))
    if max_nonterminals >= 1:
        ok = (size[outer] - size[inner] <= max_terminals[1]) & (aligned[outer] > aligned[inner])
        instances.append(np.stack([outer[ok], inner[ok], np.full(int(ok.sum()), -1)], axis=1))
    if max_nonterminals >= 2:
        # a second hole starts at least one word after the first ends, in the same initial phrase
        stride = len(corpus.src) + 2
        key = outer * stride + i[inner]
        block_end = np.searchsorted(outer, outer, "right")
        first, second = _expand(np.searchsorted(key, outer * stride + k[inner] + 1, "left"), block_end)
        p, h1, h2 = outer[first], inner[first], inner[second]
        ok = (size[p] - size[h1] - size[h2] <= max_terminals[2]) & (aligned[p] > aligned[h1] + aligned[h2])
        instances.append(np.stack([p[ok], h1[ok], h2[ok]], axis=1))
    return np.concatenate(instances)


# ---------------------------------------------------------------- rule instances as rows of symbols


def _links_by_source(corpus: _Corpus) -> np.ndarray:
    """``(n_src, K)`` target positions of each source token's links, padded with -1."""
    order = np.argsort(corpus.link_src, kind="stable")
    f, e = corpus.link_src[order], corpus.link_tgt[order]
    first = np.searchsorted(f, f, "left")
    slot = np.arange(len(f)) - first
    table = np.full((len(corpus.src), int(slot.max(initial=-1)) + 1), -1, dtype=np.int64)
    table[f, slot] = e
    return table


def _side_rows(words, start, end, holes, width):
    """Encode spans ``[start, end)`` with up to two holes ``(x, y, symbol)`` (in span order) as rows.

    Returns the rows (``width`` symbols, words as ``id``, holes as their symbol, padding
    ``PAD``) and, per terminal slot ``j``, the position of the ``j``-th terminal (-1 past the end).
    """
    (x1, y1, s1), (x2, y2, s2) = holes
    has1, has2 = (y1 > x1), (y2 > x2)
    x1, y1 = np.where(has1, x1, end), np.where(has1, y1, end)
    x2, y2 = np.where(has2, x2, end), np.where(has2, y2, end)
    length0, length1, length2 = x1 - start, x2 - y1, end - y2
    hole1_at, hole2_at = length0, length0 + has1 + length1  # slots of the holes (when present)
    n_symbols = hole2_at + has2 + length2
    n = len(words)
    rows = np.zeros((len(start), width), dtype=np.int64)
    for p in range(width):
        # the word in slot p: past a hole, skip the words it covers less the slot it takes
        position = start + p + (p > hole1_at) * (y1 - x1 - has1) + (p > hole2_at) * (y2 - x2 - has2)
        word = np.where(p < n_symbols, words[np.clip(position, 0, n - 1)], PAD)
        rows[:, p] = np.where(has1 & (p == hole1_at), s1, np.where(has2 & (p == hole2_at), s2, word))
    terminals = []
    for j in range(width):
        position = start + j + (j >= length0) * (y1 - x1) + (j >= length0 + length1) * (y2 - x2)
        terminals.append(np.where(j < length0 + length1 + length2, position, -1))
    return rows, terminals


def _sorted_ids(keys: np.ndarray) -> np.ndarray:
    """Each key's rank among the distinct keys (``np.unique``'s inverse), by hashing and sorting only the distinct keys."""
    import pandas

    codes, distinct = pandas.factorize(keys)
    rank = np.empty(len(distinct), dtype=np.int64)
    rank[np.argsort(distinct)] = np.arange(len(distinct))
    return rank[codes]


def _row_ids(rows: np.ndarray, base: int) -> np.ndarray:
    """Dense ids of identical rows in row order (exact): columns packed into int64 keys, ranked once per pack."""
    ids = np.zeros(len(rows), dtype=np.int64)
    bound, column = 1, 0
    while column < rows.shape[1]:
        key = ids * base + rows[:, column]
        bound, column = bound * base, column + 1
        while column < rows.shape[1] and bound * base < 2**62:
            key = key * base + rows[:, column]
            bound, column = bound * base, column + 1
        ids = _sorted_ids(key)
        bound = int(ids.max(initial=0)) + 1
    return ids


def _instance_rows(corpus: _Corpus, links, spans, hole1, hole2, n_src_terms: int, n_tgt_terms: int, n_nt: int):
    """Source and target rows, internal-alignment codes and log10 lexical weights of rule instances."""
    i, k, a, b = spans.T
    src_rows, src_terminals = _side_rows(
        corpus.src, i, k, ((hole1[:, 0], hole1[:, 1], NT1), (hole2[:, 0], hole2[:, 1], NT2)), n_src_terms + n_nt
    )
    swap = (hole2[:, 1] > hole2[:, 0]) & (hole2[:, 2] < hole1[:, 2])
    first = np.where(swap[:, None], hole2, hole1)
    second = np.where(swap[:, None], hole1, hole2)
    tgt_rows, _ = _side_rows(
        corpus.tgt, a, b,
        ((first[:, 2], first[:, 3], np.where(swap, NT2, NT1)), (second[:, 2], second[:, 3], np.where(swap, NT1, NT2))),
        n_tgt_terms + n_nt,
    )  # fmt: skip
    # internal alignment code: bit j * n_tgt_terms + t for a link of source terminal j and target terminal t
    code = np.zeros(len(spans), dtype=np.int64)
    for j, position in enumerate(src_terminals[:n_src_terms]):
        valid = np.flatnonzero(position >= 0)
        for slot in range(links.shape[1]):
            e = links[position[valid], slot]
            rows, e = valid[e >= 0], e[e >= 0]
            # target terminal index: the link's position in the target span less the words of the holes before it
            t = e - a[rows]
            for hole in (first[rows], second[rows]):
                t -= (e >= hole[:, 3]) * (hole[:, 3] - hole[:, 2])
            code[rows] |= np.left_shift(1, j * n_tgt_terms + t)

    def inside(prefix, lo, hi):
        return prefix[hi] - prefix[lo]

    lex_e = inside(corpus.log_lex_e, a, b) - inside(corpus.log_lex_e, hole1[:, 2], hole1[:, 3]) - inside(corpus.log_lex_e, hole2[:, 2], hole2[:, 3])
    lex_f = inside(corpus.log_lex_f, i, k) - inside(corpus.log_lex_f, hole1[:, 0], hole1[:, 1]) - inside(corpus.log_lex_f, hole2[:, 0], hole2[:, 1])
    return src_rows.astype(np.int32), tgt_rows.astype(np.int32), code, lex_e, lex_f


def _significant(values: np.ndarray, digits: int = 6) -> np.ndarray:
    """Round to ``digits`` significant digits, as ``float(f"{v:.6g}")`` does, and turn -0.0 into 0.0.

    ``round(v · 10^k) / 10^k`` with an exact power of ten is the double nearest the decimal,
    so the written values stay short.
    """
    magnitude = np.floor(np.log10(np.abs(np.where(values == 0, 1.0, values))))
    shift = (digits - 1 - magnitude).astype(int)
    up = 10.0 ** np.maximum(shift, 0)
    down = 10.0 ** np.maximum(-shift, 0)
    return np.where(shift >= 0, np.round(values * up) / up, np.round(values / down) * down) + 0.0


# ---------------------------------------------------------------- filtering for a test set


def _ngram_table(tokens: np.ndarray, starts: np.ndarray, max_length: int, base: int):
    """Ids and occurrences of every n-gram (up to ``max_length`` words) of the sentences.

    Returns per length the sorted keys ``id of the prefix * base + last word`` (an n-gram's id is
    its key's index plus the length's offset), the offsets, and the sorted occurrences
    ``id * (len(tokens) + 1) + global position of the first word``.
    """
    n = len(tokens)
    end = np.repeat(starts[1:], np.diff(starts))
    position = np.arange(n)
    prefix, keys_by_length, offsets, occurrences = np.zeros(n, dtype=np.int64), [], [0], []
    for length in range(1, max_length + 1):
        valid = position + length <= end
        keys = prefix * base + tokens[np.minimum(position + length - 1, n - 1)]
        distinct, local = np.unique(keys[valid], return_inverse=True)
        keys_by_length.append(distinct)
        occurrences.append((offsets[-1] + local) * (n + 1) + position[valid])
        offsets.append(offsets[-1] + len(distinct))
        prefix = np.full(n, -1, dtype=np.int64)
        prefix[valid] = local
    return keys_by_length, offsets, np.sort(np.concatenate(occurrences)) if occurrences else np.zeros(0, np.int64)


def _side_chunks(sides: np.ndarray, keys_by_length: list[np.ndarray], offsets: list[int], base: int):
    """The terminal chunks of source sides (rows of symbols) as ``(side, chunk)`` tables.

    Returns each chunk's n-gram id (:func:`_ngram_table`; -1 for no chunk, -2 for an n-gram of
    no sentence), its length and the number of nonterminals between it and the previous chunk,
    and per side the number of nonterminals after its last chunk.
    """
    n_sides, width = sides.shape
    terminal = sides >= FIRST_WORD
    opens, closes = terminal.copy(), terminal.copy()
    opens[:, 1:] &= ~terminal[:, :-1]
    closes[:, :-1] &= ~terminal[:, 1:]
    nonterminals = np.cumsum((sides == NT1) | (sides == NT2), axis=1, dtype=np.int16)
    side, at = np.nonzero(opens)  # chunks in row order
    length = np.nonzero(closes)[1] - at + 1
    n_chunks = np.cumsum(opens, axis=1, dtype=np.int16)
    number = n_chunks[side, at] - 1
    before = nonterminals[side, at].astype(np.int64)
    gap = before - np.where(number > 0, np.concatenate([[0], before[:-1]]), 0)
    last = np.concatenate([number[1:] == 0, [True]])[: len(side)]
    trailing = nonterminals[:, -1].astype(np.int64)
    trailing[side[last]] -= before[last]
    ids = np.zeros(len(side), dtype=np.int64)  # of the prefixes read so far, -2 once absent
    for size, distinct in enumerate(keys_by_length, 1):
        longer = np.flatnonzero((length >= size) & (ids >= 0))
        keys = ids[longer] * base + sides[side[longer], at[longer] + size - 1]
        found = np.minimum(np.searchsorted(distinct, keys), len(distinct) - 1)
        ids[longer] = np.where(distinct[found] == keys, found, -2) if len(distinct) else -2
        ends = longer[(length[longer] == size) & (ids[longer] >= 0)]
        ids[ends] += offsets[size - 1]
    tables = [np.full((n_sides, int(n_chunks[:, -1].max(initial=0))), fill, dtype=np.int64) for fill in (-1, 0, 0)]
    for table, values in zip(tables, (ids, length, gap)):
        table[side, number] = values
    return (*tables, trailing)


def _match_in_sentences(ids, lengths, gaps, trailing, start, end, occurrences, stride) -> np.ndarray:
    """Whether side ``p`` matches a span of the sentence ``[start[p], end[p])``, for each pair ``p``.

    Each chunk is matched at its leftmost occurrence after the previous chunk and the
    nonterminals between them, one token each at least (the greedy of :func:`chunks_match`).
    """
    ok = np.ones(len(start), dtype=bool)
    position = start
    for chunk in range(ids.shape[1]):
        here = ids[:, chunk] >= 0
        floor = ids[:, chunk] * stride + position + gaps[:, chunk]
        found = occurrences[np.minimum(np.searchsorted(occurrences, floor), len(occurrences) - 1)]
        ok &= ~here | ((found >= floor) & (found < ids[:, chunk] * stride + end))
        position = np.where(here, found - ids[:, chunk] * stride + lengths[:, chunk], position)
    return ok & (position + trailing <= end)


def _matching_sides(sides: np.ndarray, tokens: np.ndarray, starts: np.ndarray, batch: int = 4_000_000) -> np.ndarray:
    """Whether each source side (a row of symbols) can match a span of one of the sentences.

    :func:`clirplug.mt.grammar.chunks_match` for many sides and sentences at once. ``tokens`` are
    the sentences' word ids (``PAD`` for words of no side), sentence ``s`` being
    ``tokens[starts[s]:starts[s + 1]]``. A side is tried in the sentences holding its chunk found in
    the fewest sentences: the first one, then the next 4, 16... until it matches (at most ``batch``
    side-sentence pairs at once).
    """
    n_sentences, stride = len(starts) - 1, len(tokens) + 1
    base = max(int(sides.max(initial=0)), int(tokens.max(initial=0))) + 1
    keys_by_length, offsets, occurrences = _ngram_table(tokens, starts, sides.shape[1], base)
    ids, lengths, gaps, trailing = _side_chunks(sides, keys_by_length, offsets, base)
    # the sentences holding each n-gram: sorted (n-gram, sentence) pairs, those of n-gram g from holders[g]
    sentence_of = np.repeat(np.arange(n_sentences), np.diff(starts))
    pairs = np.unique(occurrences // stride * n_sentences + sentence_of[occurrences % stride])
    holders = np.searchsorted(pairs, np.arange(offsets[-1] + 1) * n_sentences)
    no_chunk = ids.shape[1] == 0 or ids[:, 0] == -1
    matches = no_chunk & (trailing <= np.diff(starts).max(initial=-1))  # nonterminals only
    candidates = np.flatnonzero(~no_chunk & ~(ids == -2).any(axis=1))
    counts = np.where(ids[candidates] >= 0, holders[ids[candidates] + 1] - holders[ids[candidates]], n_sentences + 1)
    pivot = ids[candidates, np.argmin(counts, axis=1)]
    first, stop, step = holders[pivot], holders[pivot + 1], 1
    while len(candidates):
        upto = np.minimum(first + step, stop)
        total, done = np.cumsum(upto - first), 0
        while done < len(candidates):
            end = max(int(np.searchsorted(total, (total[done - 1] if done else 0) + batch, "right")), done + 1)
            rows, pair = _expand(first[done:end], upto[done:end])
            side, sentence = candidates[done:end][rows], pairs[pair] % n_sentences
            ok = _match_in_sentences(
                ids[side], lengths[side], gaps[side], trailing[side], starts[sentence], starts[sentence + 1], occurrences, stride
            )
            matches[side[ok]] = True
            done = end
        left = ~matches[candidates] & (upto < stop)
        candidates, first, stop, step = candidates[left], upto[left], stop[left], step * 4
    return matches


@dataclass
class ScoredRules:
    """Extracted, scored rules kept as arrays; iterating yields :class:`Rule` objects.

    Rules are ordered by source side (word by word, words in string order, nonterminals
    first), then by ``EgivenF``. Large grammars are materialized in batches while iterating,
    so ``write_grammar(rules, path)`` streams.
    """

    src_words: list[str]
    tgt_words: list[str]
    src_rows: np.ndarray  # (n, width) symbols: PAD, NT1, NT2 or FIRST_WORD + word index
    tgt_rows: np.ndarray
    codes: np.ndarray  # internal alignment, bit j * n_tgt_terms + t
    features: np.ndarray  # (n, len(FEATURES)), rounded to 6 significant digits
    n_tgt_terms: int

    def __len__(self) -> int:
        return len(self.codes)

    def select(self, keep: np.ndarray) -> ScoredRules:
        """The rules at the (sorted) indices or boolean mask ``keep``."""
        return ScoredRules(
            self.src_words, self.tgt_words, self.src_rows[keep], self.tgt_rows[keep], self.codes[keep],
            self.features[keep], self.n_tgt_terms,
        )  # fmt: skip

    def top_n(self, n: int) -> ScoredRules:
        """Keep the ``n`` targets of highest ``p(e|f)`` per source side (ties: target order)."""
        if n < 1:
            raise ClirplugError(f"top_n must be at least 1, got {n}")
        same = np.concatenate([[False], (self.src_rows[1:] == self.src_rows[:-1]).all(axis=1)])
        group_start = np.maximum.accumulate(np.where(same, 0, np.arange(len(self))))
        return self.select(np.arange(len(self)) - group_start < n)

    def for_sentences(self, sentences: list[list[str]]) -> ScoredRules:
        """Keep the rules whose source side can match a span of one of ``sentences``.

        The per-corpus form of :func:`clirplug.mt.grammar.filter_for_sentence` (Moses'
        filtering of a model for a test set): cdec and Ture & Lin use per-query grammars.
        """
        ids = {word: FIRST_WORD + number for number, word in enumerate(self.src_words)}
        tokens = np.fromiter((ids.get(token, PAD) for tokens in sentences for token in tokens), dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum([len(tokens) for tokens in sentences], dtype=np.int64)])
        rows = self.src_rows
        new_side = np.concatenate([[True], (rows[1:] != rows[:-1]).any(axis=1)]) if len(rows) else np.zeros(0, bool)
        side = np.cumsum(new_side) - 1  # rules come grouped by source side; a repeated group is only matched twice
        return self.select(_matching_sides(rows[new_side], tokens, starts)[side])

    def _decoded(self, start: int, stop: int):
        """``(source tokens, target tokens, alignment, feature values)`` of rules ``start:stop``."""
        src_vocab = ["", "[X,1]", "[X,2]"] + self.src_words
        tgt_vocab = ["", "[X,1]", "[X,2]"] + self.tgt_words
        width = self.n_tgt_terms
        rows = zip(
            self.src_rows[start:stop].tolist(), self.tgt_rows[start:stop].tolist(),
            self.codes[start:stop].tolist(), self.features[start:stop].tolist(),
        )  # fmt: skip
        for src_row, tgt_row, code, values in rows:
            src_at = [p for p, w in enumerate(src_row) if w >= FIRST_WORD]
            tgt_at = [p for p, w in enumerate(tgt_row) if w >= FIRST_WORD]
            alignment = []
            while code:
                bit = (code & -code).bit_length() - 1
                alignment.append((src_at[bit // width], tgt_at[bit % width]))
                code &= code - 1
            alignment.sort()
            yield [src_vocab[w] for w in src_row if w != PAD], [tgt_vocab[w] for w in tgt_row if w != PAD], alignment, values

    def __iter__(self):
        for start in range(0, len(self), 100_000):
            for src, tgt, alignment, values in self._decoded(start, start + 100_000):
                yield Rule("X", tuple(src), tuple(tgt), tuple(zip(FEATURES, values)), tuple(alignment))

    def text(self, batch: int = 50_000):
        """The rules' lines, formatted as by :func:`clirplug.mt.grammar.format_rule` without making Rule objects,
        each ending in a newline, as UTF-8 bytes, ``batch`` rules at a time.

        A line is a row of pieces (words, separators, feature values, links) joined from a table
        of their bytes; feature values are written by ``repr``, once per distinct value.
        """
        pieces = [b""]  # piece 0 is empty: padding, missing links

        def add(texts) -> np.ndarray:
            first = len(pieces)
            pieces.extend(text.encode("utf-8") for text in texts)
            return np.arange(first, len(pieces))

        def side_pieces(words):  # (column > 0, symbol) -> piece: the symbol's text, a space before all but the first
            names = ["[X,1]", "[X,2]"] + words
            table = np.zeros((2, FIRST_WORD + len(words)), dtype=np.int64)
            table[0, NT1:], table[1, NT1:] = add(names), add(" " + name for name in names)
            return table

        src_pieces, tgt_pieces = side_pieces(self.src_words), side_pieces(self.tgt_words)
        src_width, tgt_width = self.src_rows.shape[1], self.tgt_rows.shape[1]
        # (not the first link, source position, target position) -> piece
        link_pieces = np.stack([
            add(f"{i}-{j}" for i in range(src_width) for j in range(tgt_width)),
            add(f" {i}-{j}" for i in range(src_width) for j in range(tgt_width)),
        ]).reshape(2, src_width, tgt_width)  # fmt: skip
        opening, between_sides = add(["[X] ||| ", " ||| "])
        names = add(f"{' ||| ' if number == 0 else ' '}{name}=" for number, name in enumerate(FEATURES))
        before_links, newline = add([" ||| ", "\n"])
        bits, value_of = np.unique(self.features.view(np.int64), return_inverse=True)
        value_pieces = add(map(repr, bits.view(np.float64).tolist()))[value_of.reshape(self.features.shape)]
        pieces = np.array(pieces, dtype=object)
        columns = np.arange(max(src_width, tgt_width)) > 0
        for start in range(0, len(self), batch):
            stop = min(start + batch, len(self))
            src_rows, tgt_rows, codes = self.src_rows[start:stop], self.tgt_rows[start:stop], self.codes[start:stop]
            n = stop - start
            features = np.empty((n, 2 * len(FEATURES)), dtype=np.int64)
            features[:, 0::2], features[:, 1::2] = names, value_pieces[start:stop]
            row = np.concatenate([
                np.full((n, 1), opening), src_pieces[columns[:src_width].astype(int), src_rows],
                np.full((n, 1), between_sides), tgt_pieces[columns[:tgt_width].astype(int), tgt_rows],
                features, np.full((n, 1), before_links), self._link_pieces(src_rows, tgt_rows, codes, link_pieces),
                np.full((n, 1), newline),
            ], axis=1).ravel()  # fmt: skip
            yield b"".join(pieces[row[row > 0]].tolist())

    def _link_pieces(self, src_rows, tgt_rows, codes, link_pieces) -> np.ndarray:
        """Per rule, the pieces of its links ``i-j`` in order (bit ``j * n_tgt_terms + t`` links source terminal
        ``j`` and target terminal ``t``: ascending bits are ascending ``(i, j)``), 0 after the last."""
        n = len(codes)

        def terminal_positions(rows):
            rank = np.cumsum(rows >= FIRST_WORD, axis=1) - 1
            at = np.zeros(rows.shape, dtype=np.int64)
            row, column = np.nonzero(rows >= FIRST_WORD)
            at[row, rank[row, column]] = column
            return at

        src_at, tgt_at = terminal_positions(src_rows), terminal_positions(tgt_rows)
        links = np.zeros((n, int(np.bitwise_count(codes).max(initial=0))), dtype=np.int64)
        count = np.zeros(n, dtype=np.int64)
        for bit in range(int(codes.max(initial=0)).bit_length()):
            rows = np.flatnonzero((codes >> bit) & 1)
            j, t = divmod(bit, self.n_tgt_terms)
            links[rows, count[rows]] = link_pieces[np.minimum(count[rows], 1), src_at[rows, j], tgt_at[rows, t]]
            count[rows] += 1
        return links

    def write(self, path, progress: bool = False) -> None:
        """Write the grammar (cdec format, gzip for ``.gz``), byte-identical to ``write_grammar(self, path)``."""
        from clirplug.mt.grammar import write_grammar_bytes

        with _bar(len(self), "writing rules", " rules", progress) as bar:

            def texts():
                for text in self.text():
                    yield text
                    bar.update(text.count(b"\n"))  # one line a rule

            write_grammar_bytes(texts(), path)


def _bar(total: int, desc: str, unit: str, progress: bool, iterable=None):
    """A progress bar (with an ETA) on stderr, shown on a terminal only and unless ``progress`` is False."""
    from tqdm import tqdm

    return tqdm(iterable, total=total, desc=desc, unit=unit, unit_scale=True, file=sys.stderr,
                disable=None if progress else True)


def _score(corpus: _Corpus, phrases, instances, weight, n_src_terms: int, n_tgt_terms: int, chunk: int = 2_000_000,
           progress: bool = False):
    """Count rule instances into scored rules.

    ``instances`` rows are ``(phrase, hole 1, hole 2)``: indices into the ``(i, k, a, b)``
    rows of ``phrases``, -1 for no hole; ``weight`` is each instance's count.
    """
    n_nt = int((instances[:, 1] >= 0).any()) + int((instances[:, 2] >= 0).any())
    if len(instances) == 0:
        return ScoredRules(
            corpus.src_words, corpus.tgt_words, np.zeros((0, n_src_terms), dtype=np.int32),
            np.zeros((0, n_tgt_terms), dtype=np.int32), np.zeros(0, dtype=np.int64), np.zeros((0, len(FEATURES))), n_tgt_terms,
        )  # fmt: skip
    padded = np.concatenate([phrases, np.zeros((1, 4), dtype=phrases.dtype)])  # row -1: a zero-length hole
    links = _links_by_source(corpus)
    parts = []
    with _bar(len(instances), "rule instances", " instances", progress) as bar:
        for s in range(0, len(instances), chunk):
            rows = instances[s : s + chunk]
            parts.append(
                _instance_rows(corpus, links, padded[rows[:, 0]], padded[rows[:, 1]], padded[rows[:, 2]], n_src_terms, n_tgt_terms, n_nt)
            )
            bar.update(len(rows))
    src_rows, tgt_rows, code, log_lex_e, log_lex_f = (np.concatenate([part[c] for part in parts]) for c in range(5))
    del parts

    base = len(corpus.src_words) + FIRST_WORD
    src_id, tgt_id = _row_ids(src_rows, base), _row_ids(tgt_rows, base)
    pair = _sorted_ids(src_id * (int(tgt_id.max(initial=0)) + 1) + tgt_id)

    # (rule, alignment) groups; the best group of a rule has the largest count, then the smallest code
    order = np.lexsort((code, pair))
    starts = np.concatenate([[0], np.flatnonzero(np.diff(pair[order]) | np.diff(code[order])) + 1])
    group_weight = np.add.reduceat(weight[order], starts)
    group_pair, group_code, group_first = pair[order][starts], code[order][starts], order[starts]
    del order
    best = np.lexsort((group_code, -group_weight, group_pair))
    best = best[np.concatenate([[True], np.diff(group_pair[best]) != 0])]
    count = np.bincount(group_pair, weights=group_weight)
    representative = group_first[best]
    rule_src, rule_tgt = src_id[representative], tgt_id[representative]
    src_count = np.bincount(rule_src, weights=count)[rule_src]
    tgt_count = np.bincount(rule_tgt, weights=count)[rule_tgt]
    features = np.stack(
        [
            -np.log10(count / src_count),
            -np.log10(count / tgt_count),
            -log_lex_e[representative],
            -log_lex_f[representative],
            np.log10(1 + count),
            np.log10(1 + src_count),
        ],
        axis=1,
    )
    features = _significant(features)
    order = np.lexsort((rule_tgt, features[:, 0], rule_src))
    representative = representative[order]
    return ScoredRules(
        corpus.src_words, corpus.tgt_words, src_rows[representative], tgt_rows[representative],
        group_code[best][order], features[order], n_tgt_terms,
    )  # fmt: skip


def extract_flat(text: ParallelText, max_phrase: int = 5, progress: bool = False) -> ScoredRules:
    """Score every consistent phrase pair of ``text`` as a flat rule (Koehn, Och & Marcu 2003).

    A pair of spans of at most ``max_phrase`` words each is extracted when it contains at
    least one alignment link and no link connects a word inside one span to a word outside
    the other; unaligned boundary words extend pairs on both sides, as in Moses. Each
    extracted pair counts 1.
    """
    if max_phrase < 1 or max_phrase * max_phrase > 62:
        raise ClirplugError(f"max_phrase must be between 1 and 7, got {max_phrase}")
    corpus = _Corpus.build(text)
    spans = _extend_unaligned(corpus, _phrase_cores(corpus, max_phrase, max_phrase, tight=False), max_phrase)
    instances = np.stack([np.arange(len(spans)), np.full(len(spans), -1), np.full(len(spans), -1)], axis=1)
    return _score(corpus, spans, instances, np.ones(len(spans)), max_phrase, max_phrase, progress=progress)


def extract_hiero(
    text: ParallelText,
    max_initial: int = 10,
    max_terminals: int = 5,
    max_nonterminals: int = 2,
    max_symbols: int = 5,
    progress: bool = False,
) -> ScoredRules:
    """Extract and score hierarchical rules (Chiang 2007, §3.2).

    Initial phrases are the tight consistent phrase pairs (no unaligned boundary word: of the
    pairs with the same links Chiang keeps the smallest) of at most ``max_initial`` words on
    either side. Each yields itself and the rules made by replacing one or two of its
    sub-phrase pairs by linked nonterminals, under the limits of :func:`_hiero_instances`
    (Chiang's: 5 source symbols, terminals and nonterminals together; ``max_symbols=7``
    leaves only the limit of 5 terminals), and shares a count of 1 equally among them.
    """
    if not 0 <= max_nonterminals <= 2:
        raise ClirplugError(f"max_nonterminals must be 0, 1 or 2, got {max_nonterminals}")
    if max_terminals < 1 or max_terminals * max_initial > 62:
        raise ClirplugError(f"max_terminals x max_initial must be at most 62, got {max_terminals} x {max_initial}")
    corpus = _Corpus.build(text)
    initial = _phrase_cores(corpus, max_initial, max_initial, tight=True)
    instances = _hiero_instances(corpus, initial, max_terminals, max_nonterminals, max_symbols)
    share = 1.0 / np.maximum(np.bincount(instances[:, 0], minlength=len(initial)), 1)
    return _score(corpus, initial, instances, share[instances[:, 0]], max_terminals, max_initial, progress=progress)
