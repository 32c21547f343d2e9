"""Cube pruning of one chart cell over arrays, compiled with numba: the decoder's inner loop.

:meth:`clirplug.mt.decoder.Decoder._cube` is the algorithm (and the test oracle);
:func:`cube` does the same pops, in the same order, with the same float operations in the
same order, over integers: target words are numbered by the decoder's :class:`RuleTable`, LM
states by its :class:`LMMemo`, hypotheses are rows of the sentence's :class:`Chart` arrays, a candidate is a row of the cell's
candidate arrays and the heap holds candidate rows, ordered by ``(priority key, push order)``
as the reference's heap entries are.

kenlm cannot be called from compiled code, so LM scores come from a memo of
``(state, word) -> (log10 p, next state)``; a lookup that misses calls back into Python
(numba's ``objmode``) to score the word with kenlm and number the new state
(:meth:`LMMemo.advance`), then fills the memo.

Only rules with at most 2 nonterminals and LMs of order at most ``WIDTH + 1`` are handled here;
the decoder uses its reference loop otherwise.
"""

from __future__ import annotations

import threading

import numpy as np
from numba import njit, objmode, types
from numba.typed import Dict

WIDTH = 5  # pending words kept per hypothesis: an LM of order at most 6

# st: the chart's counters (of the current cell, and of the sentence's hypotheses and edges)
NCAND, SCORED, HEAP, POPS, NCELL, FIRST, NHYP, NEDGE = range(8)
_ACTIVE = threading.local()  # .memo: the LMMemo of the cell this thread prunes (the kernel's kenlm callbacks)
MEMO_LIMIT = 250_000  # LM states an LMMemo numbers before its decoder starts a new one
# groups (G x 7): the cell's rule groups
G_RSTART, G_RCOUNT, G_ARITY, G_T0, G_T0LEN, G_T1, G_T1LEN = range(7)
# hyp_int (H x HYP_COLUMNS): pending words (-1 padded), then these columns
H_PLEN, H_STATE, H_FULL, H_INDEX = WIDTH, WIDTH + 1, WIDTH + 2, WIDTH + 3
HYP_COLUMNS = WIDTH + 4
# hyp_float (H x 2)
H_SCORE, H_EST = 0, 1
# cand_int (C x CAND_COLUMNS): pending words (-1 padded), then these columns
C_PLEN, C_STATE, C_FULL, C_G, C_R, C_T, C_U, C_RULE = WIDTH, WIDTH + 1, WIDTH + 2, WIDTH + 3, WIDTH + 4, WIDTH + 5, \
    WIDTH + 6, WIDTH + 7
CAND_COLUMNS = WIDTH + 8
# cand_float (C x 4)
C_SCORE, C_INC, C_EST, C_KEY = 0, 1, 2, 3
# edge_int (E x 5): head hypothesis, rule, tail hypotheses (-1: none), group; edge_inc (E): LM increment
E_HYP, E_RULE, E_T0, E_T1, E_GROUP = range(5)


@njit(cache=True, inline="always")
def _before(cand_float, a, b):
    """Candidate ``a`` pops before ``b``: smaller key, then earlier push (as heapq's tuples)."""
    ka, kb = cand_float[a, C_KEY], cand_float[b, C_KEY]
    return ka < kb or (ka == kb and a < b)


@njit(cache=True)
def _heap_push(heap, size, item, cand_float):
    heap[size] = item
    i = size
    while i > 0:
        parent = (i - 1) >> 1
        if _before(cand_float, heap[i], heap[parent]):
            heap[i], heap[parent] = heap[parent], heap[i]
            i = parent
        else:
            break


@njit(cache=True)
def _heap_pop(heap, size, cand_float):
    top = heap[0]
    size -= 1
    heap[0] = heap[size]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        child = left
        if left + 1 < size and _before(cand_float, heap[left + 1], heap[left]):
            child = left + 1
        if _before(cand_float, heap[child], heap[i]):
            heap[i], heap[child] = heap[child], heap[i]
            i = child
        else:
            break
    return top


def _advance(state: int, word: int) -> tuple[float, int]:
    return _ACTIVE.memo.advance(state, word)


@njit(cache=True)
def _lookup(memo, state, word):
    """``(log10 p(word | state), next state)``, from the memo or else from kenlm (memoised)."""
    key = (state << 32) | word
    if key in memo:
        return memo[key]
    with objmode(score="float64", following="int64"):
        score, following = _advance(state, word)
    memo[key] = (score, following)
    return score, following


@njit(cache=True)
def _combine(c, cand_int, cand_float, tails, rid, tok_off, toks, hyp_int, hyp_float, memo, context, null_state,
             has_lm):
    """The LM combination of candidate ``c`` (:meth:`clirplug.mt.decoder._ChartLM.combine`,
    word by word)."""
    for p in range(WIDTH):
        cand_int[c, p] = -1
    if not has_lm:
        cand_int[c, C_PLEN], cand_int[c, C_STATE], cand_int[c, C_FULL] = 0, -1, 1
        cand_float[c, C_INC], cand_float[c, C_EST] = 0.0, 0.0
        return
    i, end = tok_off[rid], tok_off[rid + 1]
    increment, estimate, count, state = 0.0, 0.0, 0, null_state
    if i < end and toks[i] < 0:  # a leading tail: its pending words, estimate and state as they are
        h = tails[-toks[i] - 1]
        count = hyp_int[h, H_PLEN]
        for p in range(count):
            cand_int[c, p] = hyp_int[h, p]
        estimate, state = hyp_float[h, H_EST], hyp_int[h, H_STATE]
        i += 1
    while i < end:
        tok = toks[i]
        i += 1
        h = tails[-tok - 1] if tok < 0 else -1  # a tail's pending words, or one terminal
        for p in range(hyp_int[h, H_PLEN] if h >= 0 else 1):
            word = hyp_int[h, p] if h >= 0 else tok
            score, state = _lookup(memo, state, word)
            if count < context:  # the first words wait for their full context: an estimate
                cand_int[c, count] = word
                estimate += score
            else:
                increment += score
            count += 1
        if h >= 0 and hyp_int[h, H_FULL]:
            state = hyp_int[h, H_STATE]
    cand_int[c, C_PLEN] = min(count, context)
    cand_int[c, C_STATE] = state
    cand_int[c, C_FULL] = count >= context
    cand_float[c, C_INC], cand_float[c, C_EST] = increment, estimate


@njit(cache=True)
def _enqueue(st, cand_int, g, r, t, u):
    c = st[NCAND]
    st[NCAND] = c + 1
    cand_int[c, C_G], cand_int[c, C_R], cand_int[c, C_T], cand_int[c, C_U] = g, r, t, u


@njit(cache=True)
def cube(st, params, groups, rules, rule_static, tok_off, toks, cell_hyps, hyp_int, hyp_float, edge_int, edge_inc,
         memo, cand_int, cand_float, heap, seen, recombined, out):
    """Cube pruning in one cell (see the module docstring): its hypotheses, best first, in
    ``out[:st[NCELL]]``, their edges appended to ``edge_int``/``edge_inc``.

    ``params``: LM weight, pop limit, LM context (order - 1), null state, 1 with an LM, and the
    radices of the ``seen`` keys (rules, first tail, second tail).
    """
    lm_weight = params[0]
    pop_limit, context, null_state, has_lm = int(params[1]), int(params[2]), int(params[3]), params[4] > 0
    radix_r, radix_t, radix_u = int(params[5]), int(params[6]), int(params[7])
    tails = np.empty(2, dtype=np.int64)
    seen.clear()
    recombined.clear()
    st[NCAND] = st[SCORED] = st[HEAP] = st[POPS] = st[NCELL] = 0
    st[FIRST] = st[NHYP]
    for g in range(groups.shape[0]):
        _enqueue(st, cand_int, g, 0, 0, 0)
        if groups[g, G_ARITY] > 0:
            seen[g * radix_r * radix_t * radix_u] = True
    while True:
        while st[SCORED] < st[NCAND]:  # score the pushed candidates, in push order
            c = st[SCORED]
            g, r, t, u = cand_int[c, C_G], cand_int[c, C_R], cand_int[c, C_T], cand_int[c, C_U]
            arity = groups[g, G_ARITY]
            rid = rules[groups[g, G_RSTART] + r]
            cand_int[c, C_RULE] = rid
            if arity >= 1:
                tails[0] = cell_hyps[groups[g, G_T0] + t]
            if arity == 2:
                tails[1] = cell_hyps[groups[g, G_T1] + u]
            _combine(c, cand_int, cand_float, tails, rid, tok_off, toks, hyp_int, hyp_float, memo, context,
                     null_state, has_lm)
            score = rule_static[rid] + lm_weight * cand_float[c, C_INC]
            if arity >= 1:
                score += hyp_float[tails[0], H_SCORE]
            if arity == 2:
                score += hyp_float[tails[1], H_SCORE]
            cand_float[c, C_SCORE] = score
            cand_float[c, C_KEY] = -(score + lm_weight * cand_float[c, C_EST])
            _heap_push(heap, st[HEAP], c, cand_float)
            st[HEAP] += 1
            st[SCORED] = c + 1
        if st[HEAP] == 0 or st[POPS] >= pop_limit:
            break
        c = _heap_pop(heap, st[HEAP], cand_float)
        st[HEAP] -= 1
        st[POPS] += 1
        key = (cand_int[c, 0], cand_int[c, 1], cand_int[c, 2], cand_int[c, 3], cand_int[c, 4], cand_int[c, C_STATE])
        score = cand_float[c, C_SCORE]
        h = recombined[key] if key in recombined else -1
        if h < 0:
            h = st[NHYP]
            st[NHYP] = h + 1
            recombined[key] = h
            for p in range(WIDTH):
                hyp_int[h, p] = cand_int[c, p]
            hyp_int[h, H_PLEN], hyp_int[h, H_STATE] = cand_int[c, C_PLEN], cand_int[c, C_STATE]
            hyp_int[h, H_FULL], hyp_int[h, H_INDEX] = cand_int[c, C_FULL], st[NCELL]
            hyp_float[h, H_SCORE], hyp_float[h, H_EST] = score, cand_float[c, C_EST]
            st[NCELL] += 1
        elif score > hyp_float[h, H_SCORE]:
            hyp_float[h, H_SCORE] = score
        g, r, t, u = cand_int[c, C_G], cand_int[c, C_R], cand_int[c, C_T], cand_int[c, C_U]
        arity = groups[g, G_ARITY]
        e = st[NEDGE]
        st[NEDGE] = e + 1
        edge_int[e, E_HYP], edge_int[e, E_RULE], edge_int[e, E_GROUP] = h, cand_int[c, C_RULE], g
        edge_int[e, E_T0] = cell_hyps[groups[g, G_T0] + t] if arity >= 1 else -1
        edge_int[e, E_T1] = cell_hyps[groups[g, G_T1] + u] if arity == 2 else -1
        edge_inc[e] = cand_float[c, C_INC]
        if st[POPS] == pop_limit:  # the last pop: its successors would never be popped
            break
        following = r + 1 < groups[g, G_RCOUNT]
        base = g * radix_r
        if arity == 0:
            if following:
                _enqueue(st, cand_int, g, r + 1, 0, 0)
            continue
        if following:
            k = ((base + r + 1) * radix_t + t) * radix_u + u
            if k not in seen:
                seen[k] = True
                _enqueue(st, cand_int, g, r + 1, t, u)
        if t + 1 < groups[g, G_T0LEN]:
            k = ((base + r) * radix_t + t + 1) * radix_u + u
            if k not in seen:
                seen[k] = True
                _enqueue(st, cand_int, g, r, t + 1, u)
        if arity == 2 and u + 1 < groups[g, G_T1LEN]:
            k = ((base + r) * radix_t + t) * radix_u + u + 1
            if k not in seen:
                seen[k] = True
                _enqueue(st, cand_int, g, r, t, u + 1)
    first, n = st[FIRST], st[NCELL]
    order = np.argsort(-hyp_float[first:first + n, H_SCORE], kind="mergesort")  # stable: ties keep creation order
    for k in range(n):
        out[k] = first + order[k]


def _grown(array: np.ndarray, rows: int) -> np.ndarray:
    """``array`` with at least ``rows`` rows (doubling), its content kept."""
    if len(array) >= rows:
        return array
    bigger = np.empty((max(rows, 2 * len(array)),) + array.shape[1:], dtype=array.dtype)
    bigger[:len(array)] = array
    return bigger


class RuleTable:
    """Compiled rules as arrays (a decoder's, for one set of weights): rule ``rid``'s static score
    ``static[rid]`` and target template ``tokens[offsets[rid]:offsets[rid + 1]]`` (word numbers,
    tail ``k`` as ``-(k + 1)``); ``names`` are the target words by number. Rules are added to
    lists and moved into the arrays by :meth:`arrays`."""

    def __init__(self):
        self.numbers: dict[str, int] = {}
        self.names: list[str] = []
        self.size = self.stored = 0
        self.static = np.empty(1024)
        self.offsets = np.zeros(1025, dtype=np.int64)
        self.tokens = np.empty(4096, dtype=np.int64)
        self.new_static: list[float] = []
        self.new_ends: list[int] = []
        self.new_tokens: list[int] = []
        self.end = 0

    def word(self, word: str) -> int:
        number = self.numbers.get(word)
        if number is None:
            number = self.numbers[word] = len(self.names)
            self.names.append(word)
        return number

    def add(self, static: float, template) -> int:
        """Add a rule (its static score and template, terminals and 0-based tail indices); its id."""
        word = self.word
        self.new_tokens.extend([word(t) if t.__class__ is str else -t - 1 for t in template])
        self.end += len(template)
        self.new_ends.append(self.end)
        self.new_static.append(static)
        self.size += 1
        return self.size - 1

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(static, offsets, tokens)`` with every rule added so far."""
        if self.stored < self.size:
            start, stop = self.stored, self.size
            self.static = _grown(self.static, stop)
            self.offsets = _grown(self.offsets, stop + 1)
            self.tokens = _grown(self.tokens, self.end)
            self.static[start:stop] = self.new_static
            self.offsets[start + 1:stop + 1] = self.new_ends
            first = int(self.offsets[start])
            self.tokens[first:self.end] = self.new_tokens
            self.new_static.clear()
            self.new_ends.clear()
            self.new_tokens.clear()
            self.stored = stop
        return self.static, self.offsets, self.tokens


class LMMemo:
    """LM states numbered and word scores memoised for the kernel: ``table`` maps
    ``state << 32 | word`` to ``(log10 p(word | state), next state)``, filled by :meth:`advance`
    (kenlm, through ``lm``; ``None``: no LM). A decoder keeps one across sentences (the same
    contexts recur) and starts a new one past :data:`MEMO_LIMIT` entries."""

    def __init__(self, lm, table: RuleTable):
        self.lm, self.words = lm, table.names
        self.context = lm.order - 1 if lm is not None else 0
        self.table = Dict.empty(key_type=types.int64, value_type=types.Tuple((types.float64, types.int64)))
        self.closing: dict[tuple[int, int], tuple[float, int]] = {}  # Python's lookups (goal edges)
        self.interned: dict = {}
        self.states: list = []
        self.null = self._intern(lm.null_state()) if lm is not None else -1
        self.bos = self._intern(lm.begin_state()) if lm is not None else -1

    def full(self) -> bool:
        return len(self.states) > MEMO_LIMIT

    def _intern(self, kenlm_state) -> int:
        number = self.interned.get(kenlm_state)
        if number is None:
            number = self.interned[kenlm_state] = len(self.states)
            self.states.append(kenlm_state)
        return number

    def advance(self, state: int, word: int) -> tuple[float, int]:
        """``(log10 p(word | state), next state)`` from kenlm, the next state numbered."""
        score, following = self.lm.advance(self.states[state], self.words[word])
        return score, self._intern(following)

    def lookup(self, state: int, word: int) -> tuple[float, int]:
        """:meth:`advance`, memoised in Python (the same values as the kernel's lookups)."""
        key = (state, word)
        hit = self.closing.get(key)
        if hit is None:
            hit = self.closing[key] = self.advance(state, word)
        return hit


class Chart:
    """One sentence's chart over arrays: hypotheses, edges, the LM memo and its states.

    :meth:`cube` runs :func:`cube` on a cell, its LM scores memoised in ``memo``. A cell's
    hypotheses are ``cell_hyps[start:start + count]``, best first; hypothesis ``h`` belongs to
    cell ``hyp_cell[h]`` of :attr:`cells` (its label and groups).
    """

    def __init__(self, table: RuleTable, memo: LMMemo, lm_weight: float, pop_limit: int):
        self.table, self.memo, self.lm, self.pop_limit = table, memo, memo.lm, pop_limit
        self.context = memo.context
        self.st = np.zeros(8, dtype=np.int64)
        null, self.bos = memo.null, memo.bos
        self.eos = table.word("</s>")
        self.params = np.array([lm_weight, pop_limit, self.context, null, self.lm is not None, 1, 1, 1], dtype=float)
        self.hyp_int = np.empty((1024, HYP_COLUMNS), dtype=np.int64)
        self.hyp_float = np.empty((1024, 2))
        self.hyp_cell = np.empty(1024, dtype=np.int64)
        self.edge_int = np.empty((1024, 5), dtype=np.int64)
        self.edge_inc = np.empty(1024)
        self.cand_int = np.empty((1024, CAND_COLUMNS), dtype=np.int64)
        self.cand_float = np.empty((1024, 4))
        self.heap = np.empty(1024, dtype=np.int64)
        self.seen = Dict.empty(key_type=types.int64, value_type=types.boolean)
        self.recombined = Dict.empty(key_type=types.UniTuple(types.int64, WIDTH + 1), value_type=types.int64)
        self.out = np.empty(pop_limit, dtype=np.int64)
        self.cell_hyps = np.empty(1024, dtype=np.int64)
        self.filled = 0  # rows of cell_hyps in use
        self.cells: list = []

    def cube(self, label, groups) -> tuple[int, int]:
        """Cube pruning in the cell ``label`` over ``groups`` of ``(rule ids, tail cells as
        (start, count), source elements)``; the cell's ``(start, count)`` in :attr:`cell_hyps`."""
        rows, rules, radices = [], [], [1, 1, 1]
        for rids, tails, _ in groups:
            first = tails[0] if tails else (0, 0)
            second = tails[1] if len(tails) == 2 else (0, 0)
            rows.append((len(rules), len(rids), len(tails), first[0], first[1], second[0], second[1]))
            rules.extend(rids)
            radices = [max(radices[0], len(rids)), max(radices[1], first[1]), max(radices[2], second[1])]
        if len(groups) * radices[0] * radices[1] * radices[2] >= 2**62:
            raise ValueError("too many candidates in a chart cell")
        self.params[5:] = radices
        st, limit = self.st, self.pop_limit
        self.hyp_int = _grown(self.hyp_int, st[NHYP] + limit)
        self.hyp_float = _grown(self.hyp_float, st[NHYP] + limit)
        self.edge_int = _grown(self.edge_int, st[NEDGE] + limit)
        self.edge_inc = _grown(self.edge_inc, st[NEDGE] + limit)
        candidates = len(groups) + 3 * limit
        self.cand_int = _grown(self.cand_int, candidates)
        self.cand_float = _grown(self.cand_float, candidates)
        self.heap = _grown(self.heap, candidates)
        group_array = np.array(rows, dtype=np.int64).reshape(len(rows), 7)
        rule_array = np.array(rules, dtype=np.int64)
        static, offsets, tokens = self.table.arrays()
        outer, _ACTIVE.memo = getattr(_ACTIVE, "memo", None), self.memo
        try:
            cube(st, self.params, group_array, rule_array, static, offsets, tokens, self.cell_hyps,
                 self.hyp_int, self.hyp_float, self.edge_int, self.edge_inc, self.memo.table, self.cand_int,
                 self.cand_float, self.heap, self.seen, self.recombined, self.out)
        finally:
            _ACTIVE.memo = outer
        count, first = int(st[NCELL]), int(st[FIRST])
        start = self.filled
        self.cell_hyps = _grown(self.cell_hyps, start + count)
        self.cell_hyps[start:start + count] = self.out[:count]
        self.filled = start + count
        self.hyp_cell = _grown(self.hyp_cell, first + count)
        self.hyp_cell[first:first + count] = len(self.cells)
        self.cells.append((label, groups))
        return start, count

    def finish(self, h: int) -> float:
        """The LM increment of closing hypothesis ``h`` (``-1``: the empty one) with ``<s>`` and ``</s>``."""
        if self.lm is None:
            return 0.0
        state, total = self.bos, 0.0
        if h >= 0:
            row = self.hyp_int[h]
            for word in row[:row[H_PLEN]].tolist():
                score, state = self.memo.lookup(state, word)
                total += score
            if row[H_FULL]:
                state = int(row[H_STATE])
        return total + self.memo.lookup(state, self.eos)[0]
