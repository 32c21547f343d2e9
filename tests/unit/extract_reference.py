"""Reference grammar extraction: a plain per-sentence, per-rule Python implementation.

It mirrors the definitions of ``clirplug.mt.extract`` one sentence and one rule at a time
(dicts of tuples, products of word-table lookups), so the vectorized extractor can be checked
against it on random alignments. Test helper only: too slow for real corpora.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from clirplug.mt.extract import ParallelText
from clirplug.mt.grammar import Rule

Span = tuple[int, int, int, int]  # source [i, k), target [a, b): half-open
Links = Sequence[tuple[int, int]]  # (source position, target position)
NULL = -1  # the empty word of the lexical translation tables


# ---------------------------------------------------------------- phrase pairs of one sentence pair


def _projections(n_src: int, n_tgt: int, links: Links):
    """Per source word the min/max aligned target position, and vice versa (-1 if unaligned)."""
    s_lo, s_hi = [n_tgt] * n_src, [-1] * n_src
    t_lo, t_hi = [n_src] * n_tgt, [-1] * n_tgt
    for f, e in links:
        s_lo[f], s_hi[f] = min(s_lo[f], e), max(s_hi[f], e)
        t_lo[e], t_hi[e] = min(t_lo[e], f), max(t_hi[e], f)
    return s_lo, s_hi, t_lo, t_hi


def _consistent_cores(n_src: int, n_tgt: int, links: Links, max_src: int, max_tgt: int, tight: bool):
    """Yield ``(i, k, tmin, tmax + 1)`` for source spans whose aligned target span is consistent.

    The target span is the tight one (from the first to the last aligned target word); it is
    consistent when no word inside either span is aligned outside the other (Och & Ney 2004).
    With ``tight`` the source span's first and last words must be aligned too.
    """
    s_lo, s_hi, t_lo, t_hi = _projections(n_src, n_tgt, links)
    for i in range(n_src):
        if tight and s_hi[i] < 0:
            continue
        tmin, tmax = n_tgt, -1
        for k in range(i, min(n_src, i + max_src)):
            if s_hi[k] >= 0:
                tmin, tmax = min(tmin, s_lo[k]), max(tmax, s_hi[k])
            elif tight or tmax < 0:
                continue
            if tmax - tmin >= max_tgt:
                break
            inside = [j for j in range(tmin, tmax + 1) if t_hi[j] >= 0]
            if any(t_lo[j] < i for j in inside):
                break  # a target word aligned left of the span: no longer span fixes that
            if all(t_hi[j] <= k for j in inside):
                yield i, k + 1, tmin, tmax + 1


def phrase_pairs(n_src: int, n_tgt: int, links: Links, max_src: int = 5, max_tgt: int = 5) -> list[Span]:
    """All phrase pairs consistent with the alignment (Koehn, Och & Marcu 2003), as in Moses.

    A pair of spans is extracted when it contains at least one alignment link and no link
    connects a word inside one span to a word outside the other; unaligned words at either
    end extend the pair on both sides. Spans are half-open ``(i, k, a, b)``.
    """
    t_aligned = [False] * n_tgt
    for _, e in links:
        t_aligned[e] = True
    pairs = []
    for i, k, a, b in _consistent_cores(n_src, n_tgt, links, max_src, max_tgt, tight=False):
        lowest, highest = a, b
        while lowest > 0 and not t_aligned[lowest - 1] and b - lowest < max_tgt:
            lowest -= 1
        while highest < n_tgt and not t_aligned[highest] and highest - a < max_tgt:
            highest += 1
        for start in range(a, lowest - 1, -1):
            for end in range(b, min(highest, start + max_tgt) + 1):
                pairs.append((i, k, start, end))
    return pairs


def tight_phrase_pairs(n_src: int, n_tgt: int, links: Links, max_src: int = 10, max_tgt: int = 10) -> list[Span]:
    """Consistent phrase pairs whose four boundary words are aligned.

    These are Chiang's (2007, §3.2) initial phrases: of the pairs with the same alignment
    links he keeps only the smallest, i.e. the one without unaligned boundary words.
    """
    return list(_consistent_cores(n_src, n_tgt, links, max_src, max_tgt, tight=True))


def hiero_choices(
    initial: Span, subphrases: Sequence[Span], aligned_prefix: Sequence[int], max_terminals: int = 5, max_nonterminals: int = 2,
    max_symbols: int = 5,
) -> list[tuple[Span, ...]]:
    """The sub-phrase sets that turn ``initial`` into a rule under Chiang's (2007, §3.2) limits.

    Each choice lists 0 to ``max_nonterminals`` sub-phrase pairs of ``initial`` (ordered by
    source position) to replace by nonterminals, such that the rule keeps at most
    ``max_terminals`` source terminals and at least one aligned one, and no two source
    nonterminals are adjacent. ``aligned_prefix[p]`` counts the aligned source words before ``p``.
    """
    i, k = initial[0], initial[1]
    inner = [s for s in subphrases if i <= s[0] and s[1] <= k and (s[0], s[1]) != (i, k)]
    inner.sort()
    aligned = aligned_prefix[k] - aligned_prefix[i]
    choices: list[tuple[Span, ...]] = []
    if k - i <= min(max_terminals, max_symbols):
        choices.append(())
    if max_nonterminals >= 1:
        for s in inner:
            if k - i - (s[1] - s[0]) <= min(max_terminals, max_symbols - 1) and aligned > aligned_prefix[s[1]] - aligned_prefix[s[0]]:
                choices.append((s,))
    if max_nonterminals >= 2:
        for x, s in enumerate(inner):
            covered_s = s[1] - s[0]
            aligned_s = aligned_prefix[s[1]] - aligned_prefix[s[0]]
            for t in inner[x + 1 :]:
                if t[0] <= s[1]:
                    continue  # overlapping or adjacent on the source side
                if k - i - covered_s - (t[1] - t[0]) > min(max_terminals, max_symbols - 2):
                    continue
                if aligned - aligned_s - (aligned_prefix[t[1]] - aligned_prefix[t[0]]) > 0:
                    choices.append((s, t))
    return choices


# ---------------------------------------------------------------- rule instances

# A rule key: (source, target, alignment) with words as vocabulary ids and nonterminal k as -k.
RuleKey = tuple[tuple[int, ...], tuple[int, ...], tuple[tuple[int, int], ...]]


def _rule_key(span: Span, holes: tuple[Span, ...], src: Sequence[int], tgt: Sequence[int], links_by_src) -> RuleKey:
    i, k, a, b = span
    src_side: list[int] = []
    src_at: dict[int, int] = {}
    p = i
    for number, hole in enumerate(holes, 1):
        for q in range(p, hole[0]):
            src_at[q] = len(src_side)
            src_side.append(src[q])
        src_side.append(-number)
        p = hole[1]
    for q in range(p, k):
        src_at[q] = len(src_side)
        src_side.append(src[q])
    tgt_side: list[int] = []
    tgt_at: dict[int, int] = {}
    by_target = sorted((hole[2], hole[3], number) for number, hole in enumerate(holes, 1))
    p = a
    for start, end, number in by_target:
        for q in range(p, start):
            tgt_at[q] = len(tgt_side)
            tgt_side.append(tgt[q])
        tgt_side.append(-number)
        p = end
    for q in range(p, b):
        tgt_at[q] = len(tgt_side)
        tgt_side.append(tgt[q])
    alignment = tuple(sorted((src_at[f], tgt_at[e]) for f in src_at for e in links_by_src[f]))
    return tuple(src_side), tuple(tgt_side), alignment


class _Vocabulary:
    def __init__(self):
        self.ids: dict[str, int] = {}
        self.words: list[str] = []

    def encode(self, tokens: Sequence[str]) -> list[int]:
        ids = self.ids
        out = []
        for token in tokens:
            index = ids.get(token)
            if index is None:
                index = ids[token] = len(self.words)
                self.words.append(token)
            out.append(index)
        return out


class _Extraction:
    """Encoded corpus, per-sentence link lists and the word-level lexical tables."""

    def __init__(self, text: ParallelText):
        self.src_vocab, self.tgt_vocab = _Vocabulary(), _Vocabulary()
        self.src = [self.src_vocab.encode(sentence) for sentence in text.src]
        self.tgt = [self.tgt_vocab.encode(sentence) for sentence in text.tgt]
        self.links = text.links
        self.e_given_f, self.f_given_e = lexical_tables(self.src, self.tgt, self.links)


def lexical_tables(src: Sequence[Sequence[int]], tgt: Sequence[Sequence[int]], links: Sequence[Links]):
    """Word translation tables ``w(e|f)`` and ``w(f|e)`` from aligned word counts (Koehn et al. 2003).

    ``w(e|f) = c(f, e) / Σ_e' c(f, e')``, where an unaligned target word counts as aligned
    to ``NULL`` (and an unaligned source word to a target ``NULL`` for ``w(f|e)``). Returns
    two dicts keyed ``(f, e)`` and ``(e, f)``.
    """
    joint: Counter = Counter()
    for s, t, pairs in zip(src, tgt, links):
        s_aligned, t_aligned = [False] * len(s), [False] * len(t)
        for f, e in pairs:
            joint[s[f], t[e]] += 1
            s_aligned[f] = t_aligned[e] = True
        joint.update((s[f], NULL) for f in range(len(s)) if not s_aligned[f])
        joint.update((NULL, t[e]) for e in range(len(t)) if not t_aligned[e])
    f_total: Counter = Counter()
    e_total: Counter = Counter()
    for (f, e), count in joint.items():
        f_total[f] += count
        e_total[e] += count
    e_given_f = {(f, e): count / f_total[f] for (f, e), count in joint.items()}
    f_given_e = {(e, f): count / e_total[e] for (f, e), count in joint.items()}
    return e_given_f, f_given_e


def lexical_weight(src: Sequence[int], tgt: Sequence[int], alignment: Links, table) -> float:
    """``lex(e|f, a) = Π_i 1/|{j : (j, i) ∈ a}| Σ_{(j, i) ∈ a} w(e_i|f_j)`` (Koehn et al. 2003, eq. 4).

    ``src``/``tgt`` are rule sides with nonterminals as negative ids (skipped), ``alignment``
    holds ``(source, target)`` positions and ``table[(f, e)] = w(e|f)``; an unaligned target
    word ``e`` takes ``w(e|NULL)``. Swap the sides (and the link order) for ``lex(f|e, a)``.
    """
    sources: dict[int, list[int]] = {}
    for f, e in alignment:
        sources.setdefault(e, []).append(f)
    weight = 1.0
    for position, word in enumerate(tgt):
        if word < 0:
            continue
        aligned = sources.get(position)
        if aligned:
            weight *= sum(table[src[f], word] for f in aligned) / len(aligned)
        else:
            weight *= table[NULL, word]
    return weight


def _cost(probability: float) -> float:
    return _rounded(-math.log10(probability))


def _rounded(value: float) -> float:
    return float(f"{value:.6g}") + 0.0  # 6 significant digits; + 0.0 turns -0.0 into 0.0


def _alignment_code(src, tgt, alignment, width):
    """The tie-break of equally frequent alignments: Σ 2^(j·width + t) over links of terminals j, t."""
    src_terminal = {p: n for n, p in enumerate(p for p, w in enumerate(src) if w >= 0)}
    tgt_terminal = {p: n for n, p in enumerate(p for p, w in enumerate(tgt) if w >= 0)}
    return sum(1 << (src_terminal[f] * width + tgt_terminal[e]) for f, e in alignment)


def _score(counts: dict[RuleKey, float], work: _Extraction, width: int) -> list[Rule]:
    """Turn ``(src, tgt, alignment) -> count`` into scored rules, sorted by source then target."""
    pair_count: Counter = Counter()
    best: dict[tuple, tuple[float, tuple]] = {}
    for (src, tgt, alignment), count in counts.items():
        pair = (src, tgt)
        pair_count[pair] += count
        held = best.get(pair)
        code = _alignment_code(src, tgt, alignment, width)
        if held is None or count > held[0] or (count == held[0] and code < held[2]):
            best[pair] = (count, alignment, code)
    src_count: Counter = Counter()
    tgt_count: Counter = Counter()
    for (src, tgt), count in pair_count.items():
        src_count[src] += count
        tgt_count[tgt] += count
    src_words, tgt_words = work.src_vocab.words, work.tgt_vocab.words
    rules = []
    for (src, tgt), count in pair_count.items():
        alignment = best[src, tgt][1]
        inverse = tuple((e, f) for f, e in alignment)
        features = (
            ("EgivenF", _cost(count / src_count[src])),
            ("FgivenE", _cost(count / tgt_count[tgt])),
            ("LexEgivenF", _cost(lexical_weight(src, tgt, alignment, work.e_given_f))),
            ("LexFgivenE", _cost(lexical_weight(tgt, src, inverse, work.f_given_e))),
            ("CountEF", _rounded(math.log10(1 + count))),
            ("CountF", _rounded(math.log10(1 + src_count[src]))),
        )
        rules.append(
            Rule(
                "X",
                tuple(src_words[w] if w >= 0 else f"[X,{-w}]" for w in src),
                tuple(tgt_words[w] if w >= 0 else f"[X,{-w}]" for w in tgt),
                features,
                alignment,
            )
        )
    rules.sort(key=lambda rule: (rule.src, rule.features[0][1], rule.tgt))
    return rules


def _links_by_source(n_src: int, links: Links) -> list[list[int]]:
    by_src: list[list[int]] = [[] for _ in range(n_src)]
    for f, e in links:
        by_src[f].append(e)
    return by_src


def extract_flat(text: ParallelText, max_phrase: int = 5) -> list[Rule]:
    """Score every consistent phrase pair of ``text`` (:func:`phrase_pairs`) as a flat rule.

    Each extracted pair counts 1; a rule's alignment is its most frequent internal alignment
    (ties: the smallest), as in Moses.
    """
    work = _Extraction(text)
    counts: Counter = Counter()
    sentences = zip(work.src, work.tgt, work.links)
    for src, tgt, links in sentences:
        by_src = _links_by_source(len(src), links)
        for span in phrase_pairs(len(src), len(tgt), links, max_phrase, max_phrase):
            counts[_rule_key(span, (), src, tgt, by_src)] += 1
    return _score(counts, work, max_phrase)


def extract_hiero(
    text: ParallelText,
    max_initial: int = 10,
    max_terminals: int = 5,
    max_nonterminals: int = 2,
    max_symbols: int = 5,
) -> list[Rule]:
    """Extract and score hierarchical rules (Chiang 2007, §3.2).

    Initial phrases are the tight phrase pairs (:func:`tight_phrase_pairs`) of at most
    ``max_initial`` words on either side; each yields the rules of :func:`hiero_choices`,
    which share its count of 1 equally.
    """
    work = _Extraction(text)
    counts: dict[RuleKey, float] = {}
    sentences = zip(work.src, work.tgt, work.links)
    for src, tgt, links in sentences:
        initials = tight_phrase_pairs(len(src), len(tgt), links, max_initial, max_initial)
        if not initials:
            continue
        by_src = _links_by_source(len(src), links)
        aligned_prefix = [0]
        for targets in by_src:
            aligned_prefix.append(aligned_prefix[-1] + (1 if targets else 0))
        for initial in initials:
            choices = hiero_choices(initial, initials, aligned_prefix, max_terminals, max_nonterminals, max_symbols)
            share = 1.0 / len(choices) if choices else 0.0
            for holes in choices:
                key = _rule_key(initial, holes, src, tgt, by_src)
                counts[key] = counts.get(key, 0.0) + share
    return _score(counts, work, max_initial)

