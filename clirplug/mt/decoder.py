"""Hierarchical phrase-based decoding: CKY+ parsing and LM integration by cube pruning.

For a tokenized source sentence the decoder (Chiang 2007)

1. matches every grammar source side against the sentence with a prefix trie of source
   sides (CKY+: terminals match words, each nonterminal covers one or more words of an ``X``
   span; rules with nonterminals span at most ``max_span`` words, cdec's default 10);
2. builds the chart bottom-up by span length: ``X`` cells from the grammar, a pass-through
   rule ``X -> <f, f>`` (feature ``PassThrough``) for every word no one-word rule covers, and
   glue cells ``S(0, j)`` from ``S -> X`` and ``S -> S X`` (feature ``Glue``);
3. integrates the n-gram LM by cube pruning (Chiang 2007, §5.4; Huang & Chiang 2007): in each
   cell the candidates ``(rule, tail hypotheses)`` of every rule group are explored best
   first, up to ``pop_limit`` pops per cell; a popped candidate is scored exactly (its LM
   increment included) and recombined with the cell's hypotheses of equal LM state;
4. returns the +LM forest (:class:`~clirplug.mt.hypergraph.Hypergraph`): one node per
   recombined hypothesis, one edge per popped candidate (of those the goal reaches), and a
   goal edge per ``S(0, n)`` hypothesis that adds ``<s>`` and ``</s>``.

LM state. A hypothesis with yield ``w_1..w_m`` keeps its first ``min(m, n-1)`` words, whose
probabilities need left context not known yet (their null-context score only guides the
search), and kenlm's ``State`` after its last words; every other word is scored exactly
inside the hypothesis. Combining hypotheses rescores the kept words of each tail in their new
context; the goal edge scores what is left after ``<s>``. The LM feature of a derivation is
therefore exactly kenlm's ``score(yield, bos=True, eos=True)`` (log10), and the Viterbi
derivation's forest score equals its score recomputed from scratch.

Cube pruning runs in a compiled kernel (:mod:`clirplug.mt.cube`, numba) over arrays when it
can; the Python loop (:meth:`Decoder._cube` on :class:`_Hypothesis` objects) is the reference
and gives the same forests, bit for bit (``tests/unit/test_decoder_kernel.py``).

Scores are linear ``w·f`` (see :mod:`clirplug.mt.features`). Rules with no source terminal
(unary or pure glue rules of another decoder) are skipped. An empty sentence has one
derivation, the empty translation.
"""

from __future__ import annotations

import heapq
import importlib.util
import itertools
import operator
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from clirplug import interrupts
from clirplug.errors import ClirplugError
from clirplug.mt.features import DEFAULT_WEIGHTS, GLUE, LANGUAGE_MODEL, PASS_THROUGH, WORD_PENALTY
from clirplug.mt.grammar import Rule, is_nonterminal, nt_index
from clirplug.mt.hypergraph import Hypergraph, HypergraphBuilder, gc_paused
from clirplug.mt.kbest import kbest, unique_kbest
from clirplug.mt.lm import LanguageModel

DEFAULT_POP_LIMIT = 200  # cdec's default cube pruning pop limit (-k 200)
DEFAULT_MAX_SPAN = 10  # cdec's default maximum span of a rule with nonterminals
UNIQUE_FACTOR = 20  # a unique n-best list reads at most this many derivations per entry

GLUE_TOP = Rule("S", ("[X,1]",), ("[X,1]",))
GLUE_LEFT = Rule("S", ("[S,1]", "[X,2]"), ("[S,1]", "[X,2]"), ((GLUE, 1.0),))


class Translation(NamedTuple):
    """One translation: target words, model score, features, ``(source, target)`` word links
    and the rules of its derivation in pre-order (glue and pass-through rules included)."""

    words: tuple[str, ...]
    score: float
    features: dict[str, float]
    alignment: tuple[tuple[int, int], ...]
    rules: tuple[Rule, ...]


class _Compiled:
    """A rule prepared for decoding; :meth:`weigh` scores it under the decoder's weights.

    ``segments`` is the target template with consecutive terminals grouped into word tuples
    (tail indices stay ints); ``head`` is the LM combination of a leading word tuple, made on
    first use in a sentence (the whole combination for a rule without nonterminals). All but
    ``static``, ``priority`` and ``rid`` hold for any weights, so tuning (a decoder reweighted
    each iteration) prepares each rule once.
    """

    __slots__ = ("estimate", "features", "head", "links", "priority", "rest", "rid", "rule", "segments", "static",
                 "template")

    def __init__(self, rule: Rule, lm: _ChartLM):
        self.rule = rule
        template: list[str | int] = []
        segments: list = []
        for token in rule.tgt:
            if is_nonterminal(token):
                template.append(nt_index(token) - 1)
                segments.append(template[-1])
            else:
                template.append(token)
                if segments and segments[-1].__class__ is tuple:
                    segments[-1] += (token,)
                else:
                    segments.append((token,))
        self.template, self.segments, self.rest = tuple(template), tuple(segments), tuple(segments[1:])
        words = [t for t in template if isinstance(t, str)]
        features = rule.feature_dict()
        if words:
            features[WORD_PENALTY] = features.get(WORD_PENALTY, 0.0) - len(words)
        self.features = features
        self.estimate = lm.estimate(words)
        src_terminal = [not is_nonterminal(t) for t in rule.src]
        self.links = tuple((s, t) for s, t in rule.alignment if src_terminal[s] and isinstance(template[t], str))
        self.head = None
        self.static = self.priority = 0.0
        self.rid = -1  # its row in the decoder's rule table (clirplug.mt.cube.RuleTable)

    def weigh(self, weights: Mapping[str, float]) -> None:
        """Set ``static`` (the rule's score ``w·f``) and ``priority`` (plus the LM estimate of its words)."""
        self.static = sum(weights.get(name, 0.0) * value for name, value in self.features.items())
        self.priority = self.static + weights.get(LANGUAGE_MODEL, 0.0) * self.estimate


class _Hypothesis:
    """A +LM chart item: its Viterbi inside score and LM state (``estimate`` is the
    null-context score of its ``pending`` words), its cell and rank of creation in it, its
    creation number in the sentence (``number``) and its incoming edges as ``(rule, tail
    hypotheses, LM increment, source elements)`` records; ``node`` is its forest node once
    the goal reaches it."""

    __slots__ = ("cell", "edges", "estimate", "full", "index", "node", "number", "pending", "score", "state")

    def __init__(self, number, score, pending, state, full, estimate, cell, index):
        self.number, self.score, self.pending, self.state, self.full = number, score, pending, state, full
        self.estimate, self.cell, self.index, self.edges, self.node = estimate, cell, index, [], None


class _State(dict):
    """An LM state of the chart, interned: one object per distinct kenlm state (``kenlm``) in a
    sentence, so identity is equality (recombination hashes it as cheaply as an int). As a dict
    it memoises its word scores: ``word -> (log10 p(word | state), next state)``."""

    __slots__ = ("kenlm",)
    __hash__ = object.__hash__
    __eq__ = object.__eq__
    __ne__ = object.__ne__


_NO_LM = (0.0, (), None, True, 0.0)  # combine's values without an LM
_SCORE = operator.attrgetter("score")


class _ChartLM:
    """The LM in the chart: Chiang's (2007, §5.3) split of a yield into pending and scored words.

    Scores come from :class:`~clirplug.mt.lm.LanguageModel` (``lm``; ``None``: no LM). States
    are :class:`_State` objects that memoise their word scores for the current sentence: cube
    pruning rescores the same boundary words in the same contexts many times (about 30 calls per
    distinct pair on manclir-de titles). :meth:`reset` ends a sentence.
    """

    def __init__(self, lm: LanguageModel | None):
        self.lm = lm
        self.context = lm.order - 1 if lm is not None else 0
        self.interned: dict = {}
        self.headed: list[_Compiled] = []  # the rules whose head holds this sentence's states
        self.reset()

    def reset(self) -> None:
        """Forget the memoised scores (and the rule heads holding states): a new sentence."""
        for rule in self.headed:
            rule.head = None
        self.headed.clear()
        for state in self.interned.values():
            state.clear()  # states refer to each other: break the cycles
        self.interned.clear()
        if self.lm is not None:
            self.null, self.bos = self._intern(self.lm.null_state()), self._intern(self.lm.begin_state())

    def _intern(self, kenlm_state) -> _State:
        state = self.interned.get(kenlm_state)  # kenlm states compare by value
        if state is None:
            state = self.interned[kenlm_state] = _State()
            state.kenlm = kenlm_state
        return state

    def _advance(self, state: _State, word: str):
        """``(log10 p(word | state), next state)``, computed and memoised in ``state``."""
        score, following = self.lm.advance(state.kenlm, word)
        hit = state[word] = (score, self._intern(following))
        return hit

    def estimate(self, words: Sequence[str]) -> float:
        """Null-context log10 score of ``words`` (a search heuristic only)."""
        if self.lm is None or not words:
            return 0.0
        return self.lm.score(words, bos=False, eos=False)

    def combine(self, rule: _Compiled, tails):
        """``(increment, pending words, right state, full, estimate)`` of applying ``rule``.

        The template's words are scored left to right from the null context, a tail's pending
        words in their new context and a full tail then restoring its own right state; while
        fewer than ``context`` words precede a word it stays pending (its score goes to the
        estimate), later words go to the increment. A leading tail contributes its pending
        words, estimate and state as they are, and a leading word tuple is scored once per
        rule: the results are equal, float for float, to the plain word by word loop.
        """
        if self.lm is None:
            return _NO_LM
        context = self.context
        first = rule.segments[0]
        if first.__class__ is int:
            tail = tails[first]
            pending, estimate, state = tail.pending, tail.estimate, tail.state
            count, increment = len(pending), 0.0
        else:
            head = rule.head
            if head is None:
                head = rule.head = self._lead(first)
                self.headed.append(rule)
            if not rule.rest:
                return head
            increment, pending, state, _, estimate = head
            count = len(first)
        advance = self._advance
        for segment in rule.rest:
            if segment.__class__ is int:
                tail = tails[segment]
                if count >= context:  # every word is scored in full context
                    for word in tail.pending:
                        score, state = state.get(word) or advance(state, word)
                        increment += score
                    if tail.full:
                        state = tail.state
                    continue
                words = tail.pending
            else:
                tail, words = None, segment
            for word in words:
                score, state = state.get(word) or advance(state, word)
                if count < context:
                    pending += (word,)
                    estimate += score
                else:
                    increment += score
                count += 1
            if tail is not None and tail.full:
                state = tail.state
        return increment, pending, state, count >= context, estimate

    def _lead(self, words):
        """``combine``'s values after ``words`` from the null context."""
        state, increment, estimate = self.null, 0.0, 0.0
        for count, word in enumerate(words):
            score, state = state.get(word) or self._advance(state, word)
            if count < self.context:
                estimate += score
            else:
                increment += score
        return increment, words[: self.context], state, len(words) >= self.context, estimate

    def finish(self, hypothesis: _Hypothesis) -> float:
        """The LM increment of closing ``hypothesis`` with ``<s>`` and ``</s>``."""
        if self.lm is None:
            return 0.0
        state, total = self.bos, 0.0
        for word in hypothesis.pending:
            score, state = state.get(word) or self._advance(state, word)
            total += score
        if hypothesis.full:
            state = hypothesis.state
        return total + (state.get("</s>") or self._advance(state, "</s>"))[0]


def _kernel():
    """The module :mod:`clirplug.mt.cube` (numba is imported on first use only)."""
    from clirplug.mt import cube

    return cube


class _TrieNode:
    __slots__ = ("next", "nt", "src")

    def __init__(self):
        self.next: dict[str, _TrieNode] = {}
        self.nt: _TrieNode | None = None
        self.src: tuple[str, ...] | None = None


class Decoder:
    """A synchronous CFG decoder with cube-pruned LM integration (see the module docstring).

    Parameters
    ----------
    rules : iterable of Rule
        A flat or hierarchical grammar (:mod:`clirplug.mt.grammar`); every rule is an ``X`` rule.
    lm : LanguageModel or path, optional
        The target n-gram LM (:class:`clirplug.mt.lm.LanguageModel`, or the path of an ARPA or
        kenlm binary file); without one the forest has no LM feature and no LM state.
    weights : mapping, optional
        Feature weights; missing ones take :data:`~clirplug.mt.features.DEFAULT_WEIGHTS`.
    pop_limit : int
        Cube pruning pops per chart cell (cdec's ``-k``, default 200).
    max_span : int
        Longest span of a rule with nonterminals (default 10, as cdec).
    kernel : bool
        Cube pruning by the compiled kernel (:mod:`clirplug.mt.cube`, default) where it applies
        (numba installed, the ``fast`` extra; rules with at most 2 nonterminals; an LM of order
        at most 6), else by the Python loop (:meth:`_cube`, the reference: both give the same
        forests, bit for bit). :attr:`kernel` says which one decodes.
    """

    def __init__(self, rules: Iterable[Rule], lm=None, weights: Mapping[str, float] | None = None,
                 pop_limit: int = DEFAULT_POP_LIMIT, max_span: int = DEFAULT_MAX_SPAN, kernel: bool = True):
        if pop_limit < 1:
            raise ClirplugError(f"pop limit must be at least 1, got {pop_limit}")
        if max_span < 1:
            raise ClirplugError(f"max span must be at least 1, got {max_span}")
        self.lm = LanguageModel(lm) if isinstance(lm, (str, Path)) else lm
        self._lm = _ChartLM(self.lm)
        self.pop_limit, self.max_span = pop_limit, max_span
        self.rules_by_src: dict[tuple[str, ...], list[Rule]] = {}
        self._prepared: dict[tuple[str, ...], list[_Compiled]] = {}  # as rules_by_src, for any weights
        self.trie = _TrieNode()
        self._group(rules)
        arity = max((group[0].arity for group in self.rules_by_src.values()), default=0)  # a side's rules share it
        self.kernel = (kernel and arity <= 2 and (self.lm is None or self.lm.order <= 6)
                       and importlib.util.find_spec("numba") is not None)
        self.set_weights(weights or {})

    def _group(self, rules: Iterable[Rule]) -> dict[tuple[str, ...], list[Rule]]:
        """Add ``rules`` to :attr:`rules_by_src` and the trie (rules without terminals are never used);
        return the groups of the source sides that were new."""
        new = {}
        last, unusable = None, False  # the last source side and its verdict: a grammar's rules of one side are consecutive
        for rule in rules:
            if rule.src is not last:
                last, unusable = rule.src, all(is_nonterminal(t) for t in rule.src)
            if unusable:
                continue
            group = self.rules_by_src.get(rule.src)
            if group is None:
                group = self.rules_by_src[rule.src] = new[rule.src] = []
                self._insert(rule.src)
            elif rule.src not in new:
                raise ValueError(f"add_rules: the decoder has rules of source side {' '.join(rule.src)!r} already")
            group.append(rule)
        return new

    def add_rules(self, rules: Iterable[Rule]) -> None:
        """Add the rules of source sides the decoder has none of (a grammar's rules for more sentences):
        the forests are then those of a decoder made with all the rules (a sentence uses the rules of its
        spans only, and a source side's rules keep their order). ``ValueError`` for a known source side."""
        new = self._group(rules)
        if any(group[0].arity > 2 for group in new.values()):
            self.kernel = False  # the Python loop decodes what the kernel cannot, to the same forests

    def __getstate__(self) -> dict:
        """Pickled without the kernel's LM memo (numba dicts do not pickle; it is rebuilt on use)."""
        return {**self.__dict__, "_memo": None}

    def _insert(self, src: tuple[str, ...]) -> None:
        node = self.trie
        for token in src:
            if is_nonterminal(token):
                if node.nt is None:
                    node.nt = _TrieNode()
                node = node.nt
            else:
                node = node.next.setdefault(token, _TrieNode())
        node.src = src

    def set_weights(self, weights: Mapping[str, float]) -> None:
        """Use ``weights`` (over :data:`DEFAULT_WEIGHTS`) from now on."""
        self.weights = {**DEFAULT_WEIGHTS, **weights}
        self._compiled: dict[tuple[str, ...], list[_Compiled]] = {}
        self._tail_order: dict[tuple[str, ...], tuple[int, ...]] = {}
        self._copies: dict[str, _Compiled] = {}
        self._rids: dict[tuple[str, ...], list[int]] = {}  # rule ids of each source side, as _compiled
        self._table = _kernel().RuleTable() if self.kernel else None
        self._memo = None  # the kernel's LM memo (it holds word numbers of _table)
        self._by_rid: list[_Compiled] = []
        self._glue_top = [self._compile(_Compiled(GLUE_TOP, self._lm))]
        self._glue_left = [self._compile(_Compiled(GLUE_LEFT, self._lm))]

    def _compile(self, compiled: _Compiled) -> _Compiled:
        """A prepared rule weighed under the current weights and added to the kernel's rule table."""
        compiled.weigh(self.weights)
        if self._table is not None:
            compiled.rid = self._table.add(compiled.static, compiled.template)
            self._by_rid.append(compiled)
        return compiled

    def _pass_through(self, word: str) -> _Compiled:
        """The compiled rule ``X -> <word, word>`` that copies an unknown word."""
        compiled = self._copies.get(word)
        if compiled is None:
            rule = Rule("X", (word,), (word,), ((PASS_THROUGH, 1.0),), ((0, 0),))
            compiled = self._copies[word] = self._compile(_Compiled(rule, self._lm))
        return compiled

    def _rules_for(self, src):
        """The compiled rules of source side ``src``, best priority first, and the positions in
        ``src`` of its nonterminals ``[X,1]``, ``[X,2]``... (the spans of tails 0, 1...)."""
        compiled = self._compiled.get(src)
        if compiled is None:
            prepared = self._prepared.get(src)
            if prepared is None:
                prepared = self._prepared[src] = [_Compiled(rule, self._lm) for rule in self.rules_by_src[src]]
            compiled = sorted(map(self._compile, prepared), key=lambda c: -c.priority)  # stable: file order on ties
            self._compiled[src] = compiled
            self._rids[src] = [c.rid for c in compiled]
            positions = [p for p, t in enumerate(src) if is_nonterminal(t)]
            nts = [nt_index(src[p]) for p in positions]
            self._tail_order[src] = tuple(positions[nts.index(k)] for k in range(1, len(nts) + 1))
        return compiled, self._tail_order[src]

    # ------------------------------------------------------------------ parsing

    def _applications(self, tokens: Sequence[str]) -> dict[tuple[int, int], list]:
        """Every match of a source side: ``span -> [(src, elements)]``, an element being the
        word position of a terminal or the ``(start, end)`` span of a nonterminal."""
        n, found = len(tokens), {}
        for i in range(n):
            limit = min(n, i + self.max_span)
            stack = [(self.trie, i, (), False)]
            while stack:
                node, p, elements, has_nt = stack.pop()
                if node.src is not None:
                    found.setdefault((i, p), []).append((node.src, elements))
                if p < n and (not has_nt or p < limit):
                    child = node.next.get(tokens[p])
                    if child is not None:
                        stack.append((child, p + 1, elements + (p,), has_nt))
                if node.nt is not None:
                    for q in range(p + 1, limit + 1):
                        stack.append((node.nt, q, elements + ((p, q),), True))
        return found

    def forest(self, tokens: Sequence[str]) -> Hypergraph:
        """The pruned +LM forest of ``tokens`` (see the module docstring)."""
        with gc_paused():
            try:
                return self._forest_arrays(list(tokens)) if self.kernel else self._forest(list(tokens))
            finally:
                self._lm.reset()  # frees the sentence's LM states before the collector runs again

    def _walk(self, tokens: list[str], cube, rules, copy, glue_top, glue_left):
        """The chart both cube prunings fill: each span's X cell from the rules that apply there (an
        unknown word copied), shortest spans first, then the S cells glued from the left. Returns
        the ``S(0, n)`` cell (``None`` when empty).

        ``cube(label, groups)`` fills one cell (``None`` when empty); ``rules(src, compiled)`` gives the
        rules of a source side as ``cube`` takes them, ``copy(word)`` those copying an unknown word,
        ``glue_top`` and ``glue_left`` the glue rules.
        """
        n = len(tokens)
        applications = self._applications(tokens)
        spans: dict[tuple[int, int], object] = {}  # the X cells
        glued: list = [None] * (n + 1)  # glued[j]: the S cell (0, j)
        for length in range(1, n + 1):
            for i in range(n - length + 1):
                j = i + length
                groups = []
                for src, elements in applications.get((i, j), ()):
                    compiled, picks = self._rules_for(src)
                    tails = tuple([spans.get(elements[p]) for p in picks])
                    if None not in tails:
                        groups.append((rules(src, compiled), tails, elements))
                if length == 1 and not groups:  # an unknown word: copy it
                    groups.append((copy(tokens[i]), (), (i,)))
                if groups:
                    spans[(i, j)] = cube(("X", i, j), groups)
            glue = []
            if spans.get((0, length)) is not None:
                glue.append((glue_top, (spans[(0, length)],), ()))
            for k in range(1, length):
                left, right = glued[k], spans.get((k, length))
                if left is not None and right is not None:
                    glue.append((glue_left, (left, right), ()))
            if glue:
                glued[length] = cube(("S", 0, length), glue)
        return glued[n] if n else None

    def _forest(self, tokens: list[str]) -> Hypergraph:
        numbers = itertools.count()  # hypotheses in creation order
        top = self._walk(tokens, lambda cell, groups: self._cube(cell, groups, numbers) or None,
                         lambda src, compiled: compiled, lambda word: [self._pass_through(word)],
                         self._glue_top, self._glue_left)
        return self._build(top or [], len(tokens))

    def _forest_arrays(self, tokens: list[str]) -> Hypergraph:
        """:meth:`_forest` with cube pruning by the compiled kernel, on a :class:`~clirplug.mt.cube.Chart`."""
        if self._memo is None or self._memo.full():
            self._memo = _kernel().LMMemo(self.lm, self._table)
        chart = _kernel().Chart(self._table, self._memo, self.weights.get(LANGUAGE_MODEL, 0.0), self.pop_limit)
        # numba runs Python code while it calls the kernel (its arguments' types, kenlm's callbacks): a Ctrl-C
        # handled there would come out as numba's or kenlm's error, so it takes effect once the chart is filled
        with interrupts.deferred():
            top = self._walk(tokens, chart.cube, lambda src, compiled: self._rids[src],
                             lambda word: [self._pass_through(word).rid], [self._glue_top[0].rid],
                             [self._glue_left[0].rid])
        return self._build_arrays(chart, top, len(tokens))

    def _build_arrays(self, chart, top: tuple[int, int] | None, n: int) -> Hypergraph:
        """:meth:`_build` over a :class:`~clirplug.mt.cube.Chart` (``top``: the ``S(0, n)`` cell)."""
        cube = _kernel()
        edges = chart.edge_int[:chart.st[cube.NEDGE]]
        heads = edges[:, cube.E_HYP]
        order = np.argsort(heads, kind="stable")  # each hypothesis's edges in creation order
        offsets = np.searchsorted(heads[order], np.arange(chart.st[cube.NHYP] + 1)).tolist()
        order = order.tolist()
        firsts, seconds = edges[:, cube.E_T0].tolist(), edges[:, cube.E_T1].tolist()
        tops = chart.cell_hyps[top[0]:top[0] + top[1]].tolist() if top is not None else []
        reached, stack = set(), list(tops)
        while stack:
            h = stack.pop()
            if h not in reached:
                reached.add(h)
                for e in order[offsets[h]:offsets[h + 1]]:
                    if firsts[e] >= 0:
                        stack.append(firsts[e])
                        if seconds[e] >= 0:
                            stack.append(seconds[e])
        ordered = sorted(reached)
        cells = chart.hyp_cell[ordered].tolist()
        indices = chart.hyp_int[ordered, cube.H_INDEX].tolist()
        builder, node = HypergraphBuilder(), {}
        for h, cell, index in zip(ordered, cells, indices):
            node[h] = builder.add_node(chart.cells[cell][0] + (index,))
        rids, groups, increments = edges[:, cube.E_RULE].tolist(), edges[:, cube.E_GROUP].tolist(), chart.edge_inc
        for h, cell in zip(ordered, cells):
            cell_groups = chart.cells[cell][1]
            for e in order[offsets[h]:offsets[h + 1]]:
                rule, elements = self._by_rid[rids[e]], cell_groups[groups[e]][2]
                chosen = () if firsts[e] < 0 else (node[firsts[e]],) if seconds[e] < 0 else \
                    (node[firsts[e]], node[seconds[e]])
                builder.add_edge(node[h], chosen, rule.features, rule.template,
                                 tuple([(elements[s], t) for s, t in rule.links]), rule.rule,
                                 self._lm_extra(float(increments[e])))
        goal = builder.add_node(("GOAL", 0, n))  # created last: the creation order is topological
        if n == 0:
            builder.add_edge(goal, (), {}, extra=self._lm_extra(chart.finish(-1)))
        else:
            for h in tops:
                builder.add_edge(goal, (node[h],), {}, (0,), extra=self._lm_extra(chart.finish(h)))
        return builder.build(goal)

    def _build(self, top: list[_Hypothesis], n: int) -> Hypergraph:
        """The forest of the hypotheses the goal reaches, ``top`` being the ``S(0, n)`` cell.

        Only these go to the builder (a few percent of the chart's hypotheses on manclir-de),
        nodes in creation order and each node's edges in creation order, which is all the
        builder's numbering depends on: the forest is the one of the whole chart, pruned.
        """
        reached, stack = set(), list(top)
        while stack:
            hypothesis = stack.pop()
            if hypothesis not in reached:
                reached.add(hypothesis)
                for record in hypothesis.edges:
                    stack.extend(record[1])
        ordered = sorted(reached, key=lambda h: h.number)
        builder = HypergraphBuilder()
        for hypothesis in ordered:
            hypothesis.node = builder.add_node(hypothesis.cell + (hypothesis.index,))
        for hypothesis in ordered:
            for rule, chosen, increment, elements in hypothesis.edges:
                builder.add_edge(hypothesis.node, tuple([h.node for h in chosen]), rule.features, rule.template,
                                 tuple([(elements[s], t) for s, t in rule.links]), rule.rule, self._lm_extra(increment))
        goal = builder.add_node(("GOAL", 0, n))  # created last: the creation order is topological
        if n == 0:
            empty = _Hypothesis(0, 0.0, (), None, False, 0.0, (), 0)
            builder.add_edge(goal, (), {}, extra=self._lm_extra(self._lm.finish(empty)))
        else:
            for hypothesis in top:
                builder.add_edge(goal, (hypothesis.node,), {}, (0,), extra=self._lm_extra(self._lm.finish(hypothesis)))
        return builder.build(goal)

    def _lm_extra(self, increment: float) -> dict | None:
        return {LANGUAGE_MODEL: increment} if self.lm is not None else None

    def _cube(self, cell, groups, numbers) -> list[_Hypothesis]:
        """Cube pruning in one cell: pop up to ``pop_limit`` candidates, best first.

        A candidate ``(g, r, t_1, ..., t_a)`` is rule ``r`` of group ``g`` with the ``t_k``-th
        hypothesis of its ``k``-th tail cell; it is scored exactly (LM increment included) when
        pushed, and prioritised by that score plus the null-context estimate of its pending words.
        Ties are broken by push order.

        This is the decoder's inner loop, written for speed: the successors of a candidate are
        spelled out for the usual arities (0, 1 and 2 tails), a candidate without tails is
        never pushed twice (so it skips the ``seen`` set), and a popped candidate's edge is
        a light record on its hypothesis (:meth:`_build` makes the edges the goal reaches).
        """
        lm_weight = self.weights.get(LANGUAGE_MODEL, 0.0)
        combine = self._lm.combine
        heap: list = []
        seen: set = set()
        heappush, heappop = heapq.heappush, heapq.heappop
        pushed = 0

        def push(candidate, rule, chosen):
            nonlocal pushed
            pushed += 1
            result = combine(rule, chosen)
            score = rule.static + lm_weight * result[0]
            for h in chosen:
                score += h.score
            heappush(heap, (-(score + lm_weight * result[4]), pushed, candidate, score, result, rule, chosen))

        for g, (compiled, tails, _) in enumerate(groups):
            candidate = (g,) + (0,) * (1 + len(tails))
            if tails:
                seen.add(candidate)
            push(candidate, compiled[0], tuple([tail[0] for tail in tails]))
        hypotheses: dict = {}
        pops, pop_limit = 0, self.pop_limit
        while heap and pops < pop_limit:
            _, _, candidate, score, result, rule, chosen = heappop(heap)
            pops += 1
            increment, pending, state, full, estimate = result
            key = (pending, state)
            hypothesis = hypotheses.get(key)
            if hypothesis is None:
                hypothesis = hypotheses[key] = _Hypothesis(next(numbers), score, pending, state, full, estimate,
                                                           cell, len(hypotheses))
            elif score > hypothesis.score:
                hypothesis.score = score
            g, r = candidate[0], candidate[1]
            compiled, tails, elements = groups[g]
            hypothesis.edges.append((rule, chosen, increment, elements))
            if pops == pop_limit:  # the last pop: its successors would never be popped
                break
            arity = len(chosen)
            # successors, dimension by dimension: the next rule, then the next hypothesis of each tail
            following = r + 1 < len(compiled)
            if arity == 2:
                t, u = candidate[2], candidate[3]
                if following:
                    successor = (g, r + 1, t, u)
                    if successor not in seen:
                        seen.add(successor)
                        push(successor, compiled[r + 1], chosen)
                tail = tails[0]
                if t + 1 < len(tail):
                    successor = (g, r, t + 1, u)
                    if successor not in seen:
                        seen.add(successor)
                        push(successor, rule, (tail[t + 1], chosen[1]))
                tail = tails[1]
                if u + 1 < len(tail):
                    successor = (g, r, t, u + 1)
                    if successor not in seen:
                        seen.add(successor)
                        push(successor, rule, (chosen[0], tail[u + 1]))
            elif arity == 1:
                t = candidate[2]
                if following:
                    successor = (g, r + 1, t)
                    if successor not in seen:
                        seen.add(successor)
                        push(successor, compiled[r + 1], chosen)
                tail = tails[0]
                if t + 1 < len(tail):
                    successor = (g, r, t + 1)
                    if successor not in seen:
                        seen.add(successor)
                        push(successor, rule, (tail[t + 1],))
            elif arity == 0:  # (g, r + 1) has no other predecessor
                if following:
                    push((g, r + 1), compiled[r + 1], chosen)
            else:
                if following:
                    successor = (g, r + 1) + candidate[2:]
                    if successor not in seen:
                        seen.add(successor)
                        push(successor, compiled[r + 1], chosen)
                for d in range(arity):
                    t = candidate[2 + d] + 1
                    if t < len(tails[d]):
                        successor = candidate[:2 + d] + (t,) + candidate[3 + d:]
                        if successor not in seen:
                            seen.add(successor)
                            push(successor, rule, chosen[:d] + (tails[d][t],) + chosen[d + 1:])
        return sorted(hypotheses.values(), key=_SCORE, reverse=True)  # stable: equal scores keep creation order

    # ------------------------------------------------------------------ output

    def translate(self, tokens: Sequence[str], nbest: int = 1, unique: bool = False) -> list[Translation]:
        """The ``nbest`` best translations of ``tokens``: derivations (yields may repeat), or with
        ``unique`` the best derivation of each of the ``nbest`` best distinct yields (reading at
        most ``UNIQUE_FACTOR * nbest`` derivations, as cdec's unique k-best)."""
        forest = self.forest(tokens)
        if nbest == 1:
            return translations(forest, [forest.viterbi(self.weights)])
        if unique:
            return unique_translations(forest, self.weights, nbest)
        return translations(forest, kbest(forest, self.weights, nbest))


def unique_translations(forest: Hypergraph, weights, nbest: int, limit: int | None = None) -> list[Translation]:
    """The best derivation of each of the ``nbest`` best distinct yields of ``forest``, as translations.

    A string can have many derivations (other segmentations, rules or LM states), so the n best
    derivations may hold fewer than n strings: derivations are read in k-best order until ``nbest``
    strings are found, the forest is exhausted, or ``limit`` derivations were read (by default
    ``UNIQUE_FACTOR * nbest``, as cdec's unique k-best: a long sentence has more derivations of one string
    than memory holds).
    """
    return translations(forest, unique_kbest(forest, weights, nbest, UNIQUE_FACTOR * nbest if limit is None else limit))


def translations(forest: Hypergraph, derivations) -> list[Translation]:
    """Read each derivation of ``forest`` out as a :class:`Translation`."""
    out = []
    for derivation in derivations:
        words, links = forest.derivation_yield(derivation)
        rules = tuple(forest.rules[e] for e in forest.derivation_edges(derivation) if forest.rules[e] is not None)
        out.append(Translation(words, derivation.score, forest.derivation_features(derivation), links, rules))
    return out

