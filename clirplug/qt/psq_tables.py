"""PSQ translation tables: a distribution ``p(e|f)`` over target expressions per source token.

The three distributions of Ture & Lin (paper 004) and their combination:

* ``Pr_token``: the lexical table ``p(e|f)`` of word alignment
  (:class:`clirplug.mt.lexicon.LexicalTable`, or any :class:`PsqTable`);
* ``Pr_grammar`` (:func:`grammar_table`): every grammar rule applicable to the query adds
  its likelihood to each (source token, target) pair its alignment links, then each source
  token's masses are normalized;
* ``Pr_nbest`` (:func:`nbest_table`): every derivation of the decoder's n-best list adds its
  normalized probability to each pair its word alignment links;
* :class:`PsqBuilder`: their linear interpolation with weights λ (Ture & Lin; paper 001,
  eq. 4), source and target stopword filtering, the lower threshold ``p_L`` and the
  cumulative threshold ``p_C`` (paper 001, §3.2), self-translation of tokens no
  component knows, and optionally the n-best's orphan target words as terms of their own
  (:func:`orphan_targets`).

A source token aligned to several target tokens is handled by one of the heuristics of
Ture & Lin (:data:`HEURISTICS`): ``one-to-one`` (each target gets the full mass),
``one-to-none`` (the links are ignored) or ``one-to-many`` (the target span from the first
to the last aligned target, if only stopwords lie in between, is one multi-token expression,
written space-separated and matched as a phrase; see :func:`aligned_targets`).

Files (:meth:`PsqTable.save`, :meth:`PsqTable.load`, see ``docs/psq.md``): JSON
``{"src": {"tgt": p, ...}, ...}`` (Patapsco's interchange format) or TSV lines
``src<TAB>tgt<TAB>p``; the suffix ``.json`` selects JSON, anything else TSV.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Protocol

from clirplug.atomic import atomic_open
from clirplug.errors import ClirplugError, where
from clirplug.settings import Settings, field_type, option
from clirplug.stopwords import load_stopwords, source_stopwords

HEURISTICS = ("one-to-one", "one-to-none", "one-to-many")
COMPONENTS = ("token", "grammar", "nbest")
STOPWORDS = ("none", "small", "large")
# stop setting -> target list under clirplug/data/stopwords/ (the source side drops its language's list)
STOPWORD_FILES = {"none": None, "small": "en-small", "large": "en-large"}
GAP_WORDS = "en-small"  # Lucene's English stopwords: the index analyzer drops them, so phrases skip them
GRAMMAR_FEATURE = "EgivenF"  # the rule likelihood of Pr_grammar: 10 ** -EgivenF = p(e|f)

Distribution = dict[str, float]


class TranslationSource(Protocol):
    """Anything with ``translations(src) -> {tgt: p}`` (``PsqTable``, ``LexicalTable``)."""

    def translations(self, src: str) -> Mapping[str, float]: ...


class PsqTable:
    """A table ``{src: {tgt: p(tgt|src)}}``; a target may be a space-separated multi-token expression."""

    def __init__(self, table: Mapping[str, Mapping[str, float]] | None = None):
        self.table: dict[str, Distribution] = {src: dict(dist) for src, dist in (table or {}).items() if dist}

    def translations(self, src: str) -> Distribution:
        """``{tgt: p}`` of ``src`` by falling probability; empty when ``src`` is unknown."""
        return dict(sorted(self.table.get(src, {}).items(), key=lambda item: (-item[1], item[0])))

    def __contains__(self, src: str) -> bool:
        return src in self.table

    def __len__(self) -> int:
        return len(self.table)

    def __eq__(self, other) -> bool:
        return isinstance(other, PsqTable) and self.table == other.table

    def save(self, path) -> None:
        """Write JSON (suffix ``.json``) or TSV (any other suffix), sources sorted, atomically."""
        sources = sorted(self.table)
        with atomic_open(path) as out:
            if Path(path).suffix == ".json":
                json.dump({src: self.translations(src) for src in sources}, out, ensure_ascii=False, indent=1)
                out.write("\n")
            else:
                for src in sources:
                    out.writelines(f"{src}\t{tgt}\t{p:.8g}\n" for tgt, p in self.translations(src).items())

    @classmethod
    def load(cls, path) -> PsqTable:
        """Read a file written by :meth:`save`, or Patapsco's ``{"src": {"tgt": p}}`` JSON."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise ClirplugError(f"{path}: cannot read the PSQ table ({error})") from error
        if Path(path).suffix == ".json":
            return cls(_parse_json(text, path))
        return cls(_parse_tsv(text, path))


def _check_prob(value, at: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ClirplugError(f"{at}: expected a probability in [0, 1], got {value!r}")
    return float(value)


def _parse_json(text: str, path) -> dict[str, Distribution]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ClirplugError(f"{where(path, error.lineno)}: invalid JSON ({error.msg})") from None
    if not isinstance(data, dict):
        raise ClirplugError(f"{path}: expected a JSON object {{\"src\": {{\"tgt\": p}}}}")
    table = {}
    for src, dist in data.items():
        if not isinstance(dist, dict):
            raise ClirplugError(f"{path}: field {src!r}: expected an object {{\"tgt\": p}}")
        table[src] = {tgt: _check_prob(p, f"{path}: field {src!r} -> {tgt!r}") for tgt, p in dist.items()}
    return table


def _parse_tsv(text: str, path) -> dict[str, Distribution]:
    table: dict[str, Distribution] = {}
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 3 or not fields[0] or not fields[1]:
            raise ClirplugError(f"{where(path, lineno)}: expected 'source<TAB>target<TAB>probability'")
        try:
            prob = float(fields[2])
        except ValueError:
            raise ClirplugError(f"{where(path, lineno)}: probability {fields[2]!r} is not a number") from None
        prob = _check_prob(prob, where(path, lineno))
        dist = table.setdefault(fields[0], {})
        if fields[1] in dist:
            raise ClirplugError(f"{where(path, lineno)}: pair {fields[0]!r} -> {fields[1]!r} occurs twice")
        dist[fields[1]] = prob
    return table


# -- distributions from rules and derivations (Ture & Lin) -----------------------------------------
def aligned_targets(tgt: Sequence[str], positions: Sequence[int], heuristic: str,
                    gap_words: frozenset[str] = frozenset()) -> list[str]:
    """The target expressions one source token contributes, given its aligned ``positions`` in ``tgt``.

    ``one-to-many`` makes one expression of the target span from the first to the last
    aligned position when every other word inside is a ``gap_words`` word or punctuation
    (``marque de fabrique``; the gap words then leave position gaps in the phrase query), and
    none otherwise, as Ivory's ``isConsecutiveWithStopwords`` (a source word aligned to
    ``round ... nearest`` across content words is no phrase of the documents).
    """
    if len(positions) == 1:
        return [tgt[positions[0]]]
    positions = sorted(set(positions))
    if len(positions) <= 1 or heuristic == "one-to-one":
        return [tgt[j] for j in positions]
    if heuristic == "one-to-none":
        return []
    if heuristic == "one-to-many":
        span = range(positions[0], positions[-1] + 1)
        inside = set(positions)
        if all(j in inside or tgt[j] in gap_words or not any(c.isalnum() for c in tgt[j]) for j in span):
            return [" ".join(tgt[j] for j in span)]
        return []
    raise ClirplugError(f"unknown alignment heuristic {heuristic!r}: choose one of {', '.join(HEURISTICS)}")


@cache
def _gap_words() -> frozenset[str]:
    return load_stopwords(GAP_WORDS)


def _linked(src: Sequence[str], tgt: Sequence[str], links: Iterable[tuple[int, int]], heuristic: str,
            skip) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``(source token, target expressions)`` of each linked source position, in link order (``skip``: tokens
    to ignore on both sides); tuples, which the garbage collector stops tracking (a tuning grid keeps millions)."""
    by_source: dict[int, list[int]] = {}
    for i, j in links:
        if not skip(tgt[j]):
            by_source.setdefault(i, []).append(j)
    gap_words = _gap_words()
    return tuple((src[i], tuple(aligned_targets(tgt, js, heuristic, gap_words)))
                 for i, js in by_source.items() if not skip(src[i]))


def _add_pairs(masses: dict[str, Distribution], linked: Iterable[tuple[str, Sequence[str]]], weight: float) -> None:
    for word, expressions in linked:
        dist = masses.setdefault(word, {})
        for expression in expressions:
            dist[expression] = dist.get(expression, 0.0) + weight


def _add_links(masses: dict[str, Distribution], src: Sequence[str], tgt: Sequence[str],
               links: Iterable[tuple[int, int]], weight: float, heuristic: str, skip) -> None:
    _add_pairs(masses, _linked(src, tgt, links, heuristic, skip), weight)


def _normalized(masses: Mapping[str, Distribution]) -> PsqTable:
    table = {}
    for src, dist in masses.items():
        total = sum(dist.values())
        if total > 0:
            table[src] = {tgt: mass / total for tgt, mass in dist.items() if mass > 0}
    return PsqTable(table)


def rule_likelihood(rule, feature: str = GRAMMAR_FEATURE) -> float:
    """A rule's likelihood for Pr_grammar: ``10 ** -cost`` of its ``feature`` (``-log10 p(e|f)``).

    Grammars with positional (cdec) features use the first one, ``"0"``, which is cdec's
    ``EgivenF`` too.
    """
    values = rule.feature_dict()
    cost = values.get(feature, values.get("0"))
    if cost is None:
        raise ClirplugError(f"grammar rule {' '.join(rule.src)} ||| {' '.join(rule.tgt)} has no {feature} feature")
    return 10.0 ** -cost


def grammar_table(rules, tokens: Sequence[str], heuristic: str = "one-to-many",
                  feature: str = GRAMMAR_FEATURE) -> PsqTable:
    """Pr_grammar (Ture & Lin's Pr_SCFG/Pr_PBMT) for one query sentence ``tokens``.

    Each rule whose source side matches a span of ``tokens``
    (:func:`clirplug.mt.grammar.filter_for_sentence`) adds :func:`rule_likelihood` to every
    (source terminal, target terminal) pair its alignment links, after ``heuristic``
    for a source terminal linked to several targets; each source token's masses are then
    normalized to sum to 1.
    """
    from clirplug.mt.grammar import filter_for_sentence, is_nonterminal

    masses: dict[str, Distribution] = {}
    for rule in filter_for_sentence(rules, list(tokens)):
        _add_links(masses, rule.src, rule.tgt, rule.alignment, rule_likelihood(rule, feature), heuristic,
                   is_nonterminal)
    return _normalized(masses)


def derivation_weights(scores: Sequence[float], scale: float = 1.0) -> list[float]:
    """Normalized derivation probabilities ``10**(a s_k) / Σ_j 10**(a s_j)`` of model scores in log10 units.

    ``a`` (``scale``) sharpens (> 1) or flattens (< 1) the distribution, as Ivory's ``alpha``
    for Ture & Lin's Pr_nbest: tuned weights fix the scores only up to a factor.
    """
    if not scores:
        return []
    top = max(scores)
    weights = [10.0 ** (scale * (s - top)) for s in scores]
    total = sum(weights)
    return [w / total for w in weights]


def nbest_table(tokens: Sequence[str], translations, heuristic: str = "one-to-many", scale: float = 1.0) -> PsqTable:
    """Pr_nbest for one query sentence: each derivation's normalized probability is added to the
    (source token, target word) pairs its word alignment links, then normalized per source token.

    ``translations`` are :class:`clirplug.mt.decoder.Translation` (or anything with ``words``,
    ``score`` and ``alignment`` as ``(source position, target position)`` links into ``tokens``);
    ``scale`` is that of :func:`derivation_weights`.
    """
    translations = list(translations)
    masses: dict[str, Distribution] = {}
    for translation, weight in zip(translations, derivation_weights([t.score for t in translations], scale)):
        _add_links(masses, tokens, translation.words, translation.alignment, weight, heuristic, lambda _: False)
    return _normalized(masses)


# -- interpolation, filtering, thresholds ------------------------------------------------------------
def orphan_targets(tokens: Sequence[str], translations, kept, scale: float = 1.0) -> dict[str, float]:
    """The n-best's target words that no alignment link ties to a kept source token, with their mass.

    Ture & Lin's projection represents a target word only through the source tokens it is
    aligned to, so a word a derivation produces with no link to a kept source token (an
    unaligned word of a phrase pair, or one aligned only to a source stopword or punctuation) is
    lost, where DT searches it. A word's mass is the summed normalized probability
    (:func:`derivation_weights` with ``scale``) of the derivations holding it as such an orphan;
    ``kept(token)`` tells whether a source token has a distribution of its own.
    """
    translations = list(translations)
    mass: dict[str, float] = {}
    for translation, weight in zip(translations, derivation_weights([t.score for t in translations], scale)):
        tied = {j for i, j in translation.alignment if kept(tokens[i])}
        for word in dict.fromkeys(w for j, w in enumerate(translation.words) if j not in tied):
            mass[word] = mass.get(word, 0.0) + weight
    return mass


def interpolate(distributions: Sequence[Mapping[str, float]], weights: Sequence[float]) -> Distribution:
    """``Σ_i λ_i Pr_i(·|f)`` (Ture & Lin; paper 001 eq. 4); a missing component contributes 0."""
    result: Distribution = {}
    for dist, weight in zip(distributions, weights):
        if weight:
            for tgt, p in dist.items():
                result[tgt] = result.get(tgt, 0.0) + weight * p
    return result


def prune(dist: Mapping[str, float], p_lower: float = 0.0, p_cumulative: float = 1.0) -> Distribution:
    """Keep translations with ``p > p_L`` in falling order until their sum reaches ``p_C``, renormalized.

    Paper 001 §3.2: ``E_f = {e : p(e|f) > p_L}``, options added by falling probability
    (ties by target) until the cumulative probability reaches ``p_C``; the option that
    reaches it is kept. The kept probabilities are renormalized to sum to 1 (as Ivory does).
    """
    kept: Distribution = {}
    total = 0.0
    for tgt, p in sorted(dist.items(), key=lambda item: (-item[1], item[0])):
        if p <= p_lower or total >= p_cumulative - 1e-12:
            break
        kept[tgt] = p
        total += p
    return {tgt: p / total for tgt, p in kept.items()} if total > 0 else {}


def drop_target_stopwords(dist: Mapping[str, float], stopwords: frozenset[str]) -> Distribution:
    """Remove targets made of stopwords only (an expression keeps its inner stopwords)."""
    return {tgt: p for tgt, p in dist.items() if not all(word in stopwords for word in tgt.split())}


PSQ_KEYS = {"lambda": "lambdas", "pL": "p_lower", "pC": "p_cumulative", "heuristic": "heuristic",
            "stop": "stopwords", "nbest": "nbest", "scale": "scale", "orphans": "orphans"}  # --psq key -> field
PSQ_EXAMPLE = "e.g. lambda=0.4:0.3:0.3,pL=0.01,pC=0.95"


@dataclass(frozen=True)
class PsqSettings(Settings):
    """The PSQ options, written on the command line and in experiments as the ``--psq`` shorthand
    ``"lambda=T:G:N,pL=...,pC=...,heuristic=...,stop=...,nbest=...,scale=...,orphans=..."`` (:meth:`parse`)
    or a mapping with the same keys (:meth:`read`); :data:`PSQ_KEYS` maps each key to its field.

    ``p_lower`` and ``p_cumulative`` are ``p_L`` and ``p_C`` of paper 001 §3.2. ``stopwords``
    ``small`` (Lucene's 33 English words) and ``large`` (SMART, 570 words) also drop the query
    language's stopwords on the source side (:func:`clirplug.stopwords.source_stopwords`).
    ``orphans`` is 0 (Ture & Lin) or a mass ``m`` in (0, 1]: each target word of the n-best that no
    link ties to a kept source token (:func:`orphan_targets`) and that carries at least ``m`` of
    the n-best's mass is a query term of its own (``{word: 1}``), as DT would search it.
    """

    lambdas: tuple[float, ...] = option((1.0, 0.0, 0.0), "λ of Pr_token, Pr_grammar, Pr_nbest (normalized to sum 1)",
                                        low=0.0)
    p_lower: float = option(0.0, "p_L: translations of probability at most this are dropped", low=0.0, below=1.0)
    p_cumulative: float = option(1.0, "p_C: a distribution is cut once its kept mass reaches this", above=0.0,
                                 high=1.0)
    heuristic: str = option("one-to-many", "how a source token aligned to several targets is read",
                            choices=HEURISTICS)
    stopwords: str = option("none", "stopword lists removed (none, small: Lucene's 33, large: SMART's 570)",
                            choices=STOPWORDS)
    nbest: int = option(10, "derivations read for Pr_nbest", low=1)
    scale: float = option(1.0, "scale of the derivation scores in Pr_nbest (derivation_weights)", above=0.0)
    orphans: float = option(0.0, "n-best target words tied to no source token, of at least this mass, "
                                 "searched on their own (0: off)", low=0.0, high=1.0)

    def validate(self, name_of=str) -> None:
        if len(self.lambdas) != len(COMPONENTS):
            raise ClirplugError(f"{name_of('lambdas')}: expected {len(COMPONENTS)} non-negative weights for "
                                f"{':'.join(COMPONENTS)}, got {len(self.lambdas)}")
        total = sum(self.lambdas)
        if total <= 0:
            raise ClirplugError(f"{name_of('lambdas')}: the weights sum to 0")
        object.__setattr__(self, "lambdas", tuple(w / total for w in self.lambdas))

    @cached_property
    def weights(self) -> dict[str, float]:
        """λ of each component of :data:`COMPONENTS` (token, grammar, nbest), summing to 1 (built once; read it,
        never change it)."""
        return dict(zip(COMPONENTS, self.lambdas))

    @classmethod
    def parse(cls, spec: str | None, where: str = "--psq") -> PsqSettings:
        """Parse the ``--psq`` shorthand: ``key=value`` pairs separated by commas; unknown keys are errors."""
        items = []
        for item in filter(None, (part.strip() for part in (spec or "").split(","))):
            key, sep, value = item.partition("=")
            if not sep:
                raise ClirplugError(f"{where}: cannot read {item!r} ({PSQ_EXAMPLE})")
            items.append((key.strip(), value.strip()))
        return cls.from_items(items, where)

    @classmethod
    def read(cls, value, where: str) -> PsqSettings:
        """Settings from a config value: a mapping (``{lambda: [0, 0, 1], pL: 0.1, stop: large}``) or
        the ``--psq`` string; errors name ``where``."""
        if isinstance(value, str) or value is None:
            return cls.parse(value, where)
        if not isinstance(value, Mapping):
            raise ClirplugError(f"{where}: expected a mapping of PSQ options ({', '.join(PSQ_KEYS)}), got {value!r}")
        return cls.from_items(value.items(), where)

    @classmethod
    def from_items(cls, items, where: str) -> PsqSettings:
        """Settings from ``(key, value)`` pairs (keys of :data:`PSQ_KEYS`; values typed or as text)."""
        values: dict = {}
        for key, value in items:
            if key not in PSQ_KEYS:
                raise ClirplugError(f"{where}: unknown option {key!r} (known: {', '.join(PSQ_KEYS)})")
            name = PSQ_KEYS[key]
            if name in values:
                raise ClirplugError(f"{where}: option {key!r} given twice")
            if isinstance(value, str):
                base = field_type(cls, name)[0]
                try:
                    value = tuple(map(base, value.split(":"))) if name == "lambdas" else base(value)
                except ValueError:
                    raise ClirplugError(f"{where}: cannot read '{key}={value}' ({PSQ_EXAMPLE})") from None
            values[name] = value
        key_of = {name: key for key, name in PSQ_KEYS.items()}
        joint = " " if where.startswith("--") else "."  # --psq pL, runs.psq.psq.pL
        return cls.from_values(values, lambda name: f"{where}{joint}{key_of[name]}")

    def spec(self) -> str:
        """The ``--psq`` string of these settings (``orphans`` only when on)."""
        lam = ":".join(f"{w:g}" for w in self.lambdas)
        spec = (f"lambda={lam},pL={self.p_lower:g},pC={self.p_cumulative:g},heuristic={self.heuristic},"
                f"stop={self.stopwords},nbest={self.nbest},scale={self.scale:g}")
        return f"{spec},orphans={self.orphans:g}" if self.orphans > 0 else spec


class GrammarIndex:
    """The rules of a grammar by their rarest terminal chunk, prepared once for the Pr_grammar of many sentences.

    :meth:`table` equals :func:`grammar_table` of the rules filed under the sentence's distinct
    words by first source terminal (in sentence order), number for number, but looks up only the
    source sides whose rarest chunk of consecutive terminals is a phrase of the sentence, checks
    each run of consecutive rules sharing a source side once and derives each rule's links and
    likelihood once per heuristic, whatever the number of sentences and settings (a tuning grid).
    """

    def __init__(self, rules, feature: str = GRAMMAR_FEATURE):
        self.feature = feature
        self._rules = rules  # indexed on the first table

    @cached_property
    def _runs(self) -> dict[tuple[str, ...], list[list]]:
        """Rarest terminal chunk -> runs of consecutive rules sharing a source side, each
        ``[its first terminal, its file order, its terminals, its chunks, rules, {heuristic: prepared rules} or None]``.

        A run matching a sentence has each chunk as a phrase of it, so it is found under the phrase
        its rarest chunk (the one the fewest runs hold) is.
        """
        from clirplug.mt.grammar import is_nonterminal, source_chunks

        runs: list[list] = []
        shared: dict[frozenset, frozenset] = {}  # one object per set of terminals
        src = run = None
        for rule in self._rules:
            if run is not None and rule.src == src:
                run[4].append(rule)
                continue
            src = rule.src
            terminals = [t for t in src if not is_nonterminal(t)]
            if not terminals:
                run = None
                continue
            words = frozenset(terminals)
            run = [terminals[0], len(runs), shared.setdefault(words, words), source_chunks(src), [rule], None]
            runs.append(run)
        self._rules = None
        holders = Counter(chunk for run in runs for chunk in {terminals for _, terminals in run[3][0]})
        by_chunk: dict[tuple[str, ...], list[list]] = {}
        for run in runs:
            rarest = min((terminals for _, terminals in run[3][0]), key=holders.__getitem__)
            by_chunk.setdefault(rarest, []).append(run)
        return by_chunk

    @cached_property
    def _longest(self) -> int:
        """The most terminals of a chunk under which runs are filed."""
        return max(map(len, self._runs), default=0)

    def table(self, tokens: Sequence[str], heuristic: str = "one-to-many") -> PsqTable:
        """Pr_grammar of one sentence: :func:`grammar_table` of the rules whose first source terminal is a
        word of ``tokens``, taken word by word in sentence order (each word's in file order)."""
        from clirplug.mt.grammar import chunks_match, is_nonterminal

        tokens = list(tokens)
        by_chunk = self._runs
        vocabulary = set(tokens)
        phrases = {tuple(tokens[i:j]) for i in range(len(tokens))
                   for j in range(i + 1, min(len(tokens), i + self._longest) + 1)}
        matched = [run for phrase in phrases for run in by_chunk.get(phrase, ())
                   if run[2] <= vocabulary and chunks_match(run[3], tokens)]
        word_order = {word: i for i, word in enumerate(dict.fromkeys(tokens))}
        matched.sort(key=lambda run: (word_order[run[0]], run[1]))  # grammar_table's order: sums bit for bit
        masses: dict[str, Distribution] = {}
        for run in matched:
            prepared = run[5]
            if prepared is None:
                prepared = run[5] = {}
            pairs = prepared.get(heuristic)
            if pairs is None:
                pairs = prepared[heuristic] = tuple(  # tuples of strings and floats: untracked by the collector
                    (rule_likelihood(rule, self.feature),
                     _linked(rule.src, rule.tgt, rule.alignment, heuristic, is_nonterminal)) for rule in run[4])
            for weight, linked in pairs:
                _add_pairs(masses, linked, weight)
        return _normalized(masses)


class PsqBuilder:
    """Per-token PSQ distributions of a query from the components and :class:`PsqSettings`.

    Parameters
    ----------
    settings : PsqSettings
    token : TranslationSource, optional
        Pr_token (a lexical table or a :class:`PsqTable` read from a file).
    grammar : list of Rule or GrammarIndex, optional
        The rules Pr_grammar is built from, per sentence.
    translate : callable, optional
        ``tokens, n -> n-best Translations`` for Pr_nbest.
    memo : dict, optional
        Shared store of the per-sentence n-best lists and Pr_grammar and Pr_nbest tables, so
        builders that differ only in λ, thresholds or stopwords (a tuning grid) compute each once.
    src_lang : str
        The query language, whose stopwords ``stop=small|large`` drops (default ``de``).
    """

    def __init__(self, settings: PsqSettings, token: TranslationSource | None = None, grammar=None,
                 translate=None, memo: dict | None = None, src_lang: str = "de"):
        available = {"token": token is not None, "grammar": grammar is not None, "nbest": translate is not None}
        missing = [c for c in COMPONENTS if settings.weights[c] > 0 and not available[c]]
        if missing:
            raise ClirplugError(f"--psq lambda gives weight to {', '.join(missing)}, which the model does not have")
        if settings.orphans > 0 and translate is None:
            raise ClirplugError("--psq orphans needs the decoder's n-best: a --model with a grammar and an LM")
        self.settings, self.token, self.grammar, self.translate = settings, token, grammar, translate
        tgt_list = STOPWORD_FILES[settings.stopwords]
        self.src_lang = src_lang
        self.src_stopwords = source_stopwords(src_lang) if tgt_list else frozenset()
        self.tgt_stopwords = load_stopwords(tgt_list) if tgt_list else frozenset()
        self.memo = {} if memo is None else memo

    def sentence(self, tokens: Sequence[str]) -> list[Distribution]:
        """One pruned distribution per source token of one sentence (:meth:`terms` without the tokens)."""
        return [dist for _, dist in self.terms(tokens)]

    def terms(self, tokens: Sequence[str]) -> list[tuple[str | None, Distribution]]:
        """``(source token, pruned distribution)`` of each source token of one sentence.

        Repeated tokens keep one distribution each; source stopwords and tokens without a
        letter or digit are dropped; a token no component knows, or with no translation left
        after the stopwords and thresholds, translates as itself. With ``orphans``, the
        n-best's orphan target words of enough mass follow, one ``(None, {word: 1})`` each.
        """
        s = self.settings
        tables = []
        if s.weights["grammar"] > 0:
            tables.append(("grammar", self._table(("grammar", s.heuristic, tuple(tokens)),
                                                  lambda: self._grammar_index.table(tokens, s.heuristic))))
        if s.weights["nbest"] > 0:
            tables.append(("nbest", self._table(("nbest", s.heuristic, s.nbest, s.scale, tuple(tokens)),
                                                lambda: nbest_table(tokens, self._nbest(tokens), s.heuristic, s.scale))))
        if s.weights["token"] > 0:
            tables.append(("token", self.token))
        result = []
        for src in tokens:
            if not self._kept(src):
                continue  # a stopword, or punctuation, which no analyzer indexes
            parts = [table.translations(src) for _, table in tables]
            if not any(parts):
                dist = {src: 1.0}  # self-translation of an unknown token
            else:
                dist = interpolate(parts, [s.weights[name] for name, _ in tables])
            dist = prune(drop_target_stopwords(dist, self.tgt_stopwords), s.p_lower, s.p_cumulative)
            # no translation left (all below p_L or stopwords, e.g. a rare identifier whose
            # alignment probabilities are spread over its whole sentence): itself, as if unknown
            result.append((src, dist or {src: 1.0}))
        if s.orphans > 0:
            masses = self._table(("orphans", s.nbest, s.scale, s.stopwords, tuple(tokens)), lambda: orphan_targets(
                tokens, self._nbest(tokens), self._kept, s.scale))
            result.extend((None, {word: 1.0}) for word, mass in masses.items()
                          if mass >= s.orphans and word not in self.tgt_stopwords and any(c.isalnum() for c in word))
        return result

    def _kept(self, src: str) -> bool:
        """Whether a source token gets a distribution (not a stopword, not punctuation)."""
        return src not in self.src_stopwords and any(char.isalnum() for char in src)

    @cached_property
    def _grammar_index(self) -> GrammarIndex:
        return self.grammar if isinstance(self.grammar, GrammarIndex) else GrammarIndex(self.grammar)

    def _nbest(self, tokens: Sequence[str]) -> list:
        """The n-best list of one sentence, decoded (or read from the translator's cache) once per memo."""
        return self._table(("translations", self.settings.nbest, tuple(tokens)),
                           lambda: self.translate(tokens, self.settings.nbest))

    def _table(self, key: tuple, build):
        table = self.memo.get(key)
        if table is None:
            table = self.memo[key] = build()
        return table

    def query(self, sentences: Sequence[Sequence[str]]) -> list[Distribution]:
        """All sentences' distributions: sentence-wise PSQ sums over sentences (paper 001 §3.2)."""
        return [dist for tokens in sentences for dist in self.sentence(tokens)]

