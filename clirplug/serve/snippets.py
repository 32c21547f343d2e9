"""Query-biased snippets: the window of a document's words that best matches the terms it was scored with.

A hit's terms are read from the target-language query it was scored with (the ``translation`` of a
run frame, :mod:`clirplug.api`): the words of a 1-best or of a winning derivation, PSQ's weighted
alternatives (``#wsum(0.7 file 0.3 data)``, a phrase ``#1(...)`` for its words), the query itself
for BM25 and dense retrieval, the parts of a fusion's ``a | b``. A document word matches a term when
the index's analyzer makes the same index term of both (``analyze``), so ``files`` matches ``file``.
The snippet is the window of :data:`SNIPPET_WORDS` consecutive words whose distinct matched terms
weigh most (a term's weight: its PSQ probability, else 1), the earliest of equal ones, moved to have
its matched words in the middle; with no match, the first words. Matched words are given as character spans of the text shown.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

SNIPPET_WORDS = 30
_WORD = re.compile(r"\S+")
_OPERATOR = re.compile(r"#\w+\(|\)|\|")
_LEADING = re.compile(r"^\W+")


def query_terms(translation: str | None) -> dict[str, float]:
    """The words of a scored-with query and their weights (``#wsum`` probabilities, else 1; the largest kept)."""
    weights: dict[str, float] = {}
    if not translation:
        return weights

    def add(word: str, weight: float) -> None:
        weights[word] = max(weight, weights.get(word, 0.0))

    for part in re.split(r"(#wsum\([^()]*(?:#1\([^()]*\)[^()]*)*\))", translation):
        if part.startswith("#wsum("):
            items = re.findall(r"#1\(([^()]*)\)|(\S+)", part[len("#wsum("):-1])
            tokens = [phrase or token for phrase, token in items]
            for weight, target in zip(tokens[::2], tokens[1::2]):
                for word in target.split():
                    add(word, _number(weight))
        else:
            for word in _OPERATOR.sub(" ", part).split():
                add(word, 1.0)
    return weights


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 1.0


class Matcher:
    """The index terms of words (``analyze(word) -> terms``), cached, and which of them a query's terms match."""

    def __init__(self, analyze: Callable[[str], Sequence[str]], cache_size: int = 200_000):
        self._analyze, self._cache_size = analyze, cache_size
        self._cache: dict[str, tuple[str, ...]] = {}

    def terms(self, word: str) -> tuple[str, ...]:
        key = word.lower()
        found = self._cache.get(key)
        if found is None:
            if len(self._cache) >= self._cache_size:
                self._cache.clear()
            found = self._cache[key] = tuple(self._analyze(key))
        return found

    def weights(self, words: dict[str, float]) -> dict[str, float]:
        """``{index term: weight}`` of a query's words."""
        weights: dict[str, float] = {}
        for word, weight in words.items():
            for term in self.terms(word):
                weights[term] = max(weight, weights.get(term, 0.0))
        return weights

    def match(self, word: str, weights: dict[str, float], prefixes: set[str]) -> str | None:
        """The query term ``word`` matches, if any (words sharing no 3-letter prefix with a query term or word are
        not analyzed: a stem keeps its word's first letters)."""
        key = _LEADING.sub("", word.lower())
        if key[:3] not in prefixes and not any(key.startswith(p) for p in prefixes if len(p) < 3):
            return None
        return next((term for term in self.terms(word) if term in weights), None)


def prefixes(words: dict[str, float], weights: dict[str, float]) -> set[str]:
    """The first three letters of each query word and index term (what :meth:`Matcher.match` pre-filters on)."""
    return {first for text in (*words, *weights) if (first := _LEADING.sub("", text.lower())[:3])}


def best_window(matched: Sequence[str | None], weights: dict[str, float], size: int = SNIPPET_WORDS) -> int:
    """The start of the ``size`` consecutive positions whose distinct matched terms weigh most (the earliest of
    equal ones; 0 without a match), in one pass."""
    counts: dict[str, int] = {}
    total, best, best_start = 0.0, 0.0, 0
    for end, term in enumerate(matched):
        if term is not None:
            counts[term] = counts.get(term, 0) + 1
            if counts[term] == 1:
                total += weights[term]
        start = end - size + 1
        if start > 0:
            left = matched[start - 1]
            if left is not None:
                counts[left] -= 1
                if counts[left] == 0:
                    total -= weights[left]
        if total > best + 1e-12:
            best, best_start = total, max(start, 0)
    return best_start


def centred(matched: Sequence[str | None], start: int, size: int) -> int:
    """The start of the window of ``size`` that has the matched words of the window at ``start`` in its middle (it
    holds them all, so its weight is the same)."""
    inside = [i for i in range(start, min(start + size, len(matched))) if matched[i] is not None]
    if not inside:
        return start
    slack = size - (inside[-1] - inside[0] + 1)
    return max(0, min(inside[0] - slack // 2, len(matched) - size))


def snippet(text: str, matcher: Matcher, words: dict[str, float], size: int = SNIPPET_WORDS
            ) -> tuple[str, list[list[int]]]:
    """The best window of ``text`` for the query ``words`` (``...`` marking text left out on either side) and the
    ``[start, end)`` character spans of its matched words."""
    weights = matcher.weights(words)
    firsts = prefixes(words, weights)
    tokens = _WORD.findall(text)
    matched = [matcher.match(token, weights, firsts) for token in tokens] if weights else [None] * len(tokens)
    start = centred(matched, best_window(matched, weights, size), size)
    shown = tokens[start:start + size]
    pieces, spans, at = [], [], 0
    if start > 0:
        pieces.append("...")
        at = 4
    for token, term in zip(shown, matched[start:start + size]):
        if term is not None:
            spans.append([at, at + len(token)])
        pieces.append(token)
        at += len(token) + 1
    if start + size < len(tokens):
        pieces.append("...")
    return " ".join(pieces), spans


def highlights(text: str, matcher: Matcher, words: dict[str, float]) -> list[list[int]]:
    """The ``[start, end)`` character spans of the words of ``text`` (a title) that match the query ``words``."""
    weights = matcher.weights(words)
    if not weights:
        return []
    firsts = prefixes(words, weights)
    return [[found.start(), found.end()] for found in _WORD.finditer(text)
            if matcher.match(found.group(), weights, firsts) is not None]
