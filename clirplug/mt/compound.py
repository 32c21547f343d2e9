"""Corpus-driven compound splitting (Koehn & Knight 2003, "Empirical methods for compound splitting").

A word is split into known words ("parts"), optionally joined by filler letters (``s``,
``es``: *Arbeit-s-speicher*), and the split ``S`` with the highest geometric mean of part
frequencies, ``(prod_{p in S} count(p))^(1/|S|)``, wins (their §3, eq. 1). The unsplit word
competes with its own frequency, so a word is split only when the best split's geometric mean
is strictly greater than the whole word's frequency. Parts must be at least ``min_length``
letters and must not be function words (``excluded``); this stands in for Koehn & Knight's
restriction of parts by part of speech (their §4), which keeps e.g. *beispiel* from becoming
*bei + spiel*.

A split has at most :data:`MAX_PARTS` parts, each a known word, so a word longer than
``MAX_PARTS`` times the longest known word (and the fillers between) is left whole at once, and the
work on any word is bounded: splitting is linear in the length of the text.

The splitter is saved as a small TSV file: a header line with the settings, then
``word<TAB>count`` lines.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

from clirplug.atomic import atomic_open
from clirplug.errors import ClirplugError

HEADER = "#clirplug-compound-splitter"
# The most parts a split has (the words of the manclir-de bitext, topics and dictionary have at most 6).
# With parts no longer than the longest known word, it bounds the work on a word, however long.
MAX_PARTS = 10
CACHE_SIZE = 1_000_000  # the most splits remembered


class CompoundSplitter:
    """Koehn & Knight (2003) frequency-based compound splitter.

    Parameters
    ----------
    counts
        Word frequencies (lowercased words), e.g. from the German side of the bitext.
    min_length
        Minimum length of a part, in characters.
    fillers
        Letters allowed between two parts (dropped from the output), K&K §3: ``s`` and ``es``.
    excluded
        Words never used as parts (function words).
    """

    def __init__(self, counts, min_length: int = 4, fillers=("s", "es"), excluded=frozenset()):
        if min_length < 1:
            raise ClirplugError(f"min_length: expected a positive integer, got {min_length}")
        self.counts = {word: int(count) for word, count in counts.items() if count > 0}
        self.min_length = min_length
        self.fillers = tuple(fillers)
        self.excluded = frozenset(excluded)
        self._cache: dict[str, list[str]] = {}
        # the log count of each word that may be a part
        self._part_log_counts = {word: math.log(count) for word, count in self.counts.items() if word not in self.excluded}
        self._longest_part = max(map(len, self._part_log_counts), default=0)
        # the longest word that MAX_PARTS parts and the fillers between them can make
        self._longest_split = MAX_PARTS * self._longest_part + (MAX_PARTS - 1) * max(map(len, self.fillers), default=0)

    @classmethod
    def train(cls, sentences: Iterable[list[str]], min_length: int = 4, fillers=("s", "es"),
              excluded=frozenset()) -> CompoundSplitter:
        """Count the alphabetic tokens of ``sentences`` (lists of lowercased tokens)."""
        counts = Counter(token for tokens in sentences for token in tokens if token.isalpha())
        counts = {word: count for word, count in counts.items() if len(word) >= min_length}
        return cls(counts, min_length, fillers, excluded)

    def split(self, word: str) -> list[str]:
        """Split ``word`` into its parts (``[word]`` when it is best left whole)."""
        cached = self._cache.get(word)
        if cached is None:
            if len(self._cache) >= CACHE_SIZE:
                self._cache.clear()  # a long-running service meets unboundedly many words
            cached = self._cache[word] = self._split(word)
        return cached

    def _split(self, word: str) -> list[str]:
        size, shortest = len(word), self.min_length
        if size < 2 * shortest or size > self._longest_split or not word.isalpha():
            return [word]
        # best[k][p]: (sum of log counts, parts) of the best way to cover word[:p] with k parts,
        # p being where the next part starts (after any filler). A part is a known word, so no
        # longer than the longest (longest_part), and a split has at most MAX_PARTS parts:
        # the work is bounded by MAX_PARTS * size * longest_part.
        best: list[dict[int, tuple[float, list[str]]]] = [{0: (0.0, [])}]
        part_log_counts, longest_part = self._part_log_counts, self._longest_part
        whole = self.counts.get(word, 0)
        winner, winner_score = [word], math.log(whole) if whole else -math.inf
        while best[-1] and len(best) <= MAX_PARTS:
            layer: dict[int, tuple[float, list[str]]] = {}
            parts_so_far = len(best)
            for start, (score, parts) in sorted(best[-1].items()):
                for end in range(start + shortest, min(size, start + longest_part) + 1):
                    if end == size and start == 0:
                        continue  # the whole word is not a part of itself
                    log_count = part_log_counts.get(word[start:end])
                    if log_count is None:
                        continue
                    total, new_parts = score + log_count, [*parts, word[start:end]]
                    if end == size:
                        mean = total / parts_so_far
                        if mean > winner_score:
                            winner, winner_score = new_parts, mean
                        continue
                    for filler in ("", *self.fillers):
                        nxt = end + len(filler)
                        if word.startswith(filler, end) and size - nxt >= shortest:
                            if nxt not in layer or total > layer[nxt][0]:
                                layer[nxt] = (total, new_parts)
            best.append(layer)
        return winner

    def save(self, path) -> None:
        """Write the settings and the frequency table as TSV (atomically)."""
        with atomic_open(path) as out:
            out.write(f"{HEADER}\tmin_length={self.min_length}\tfillers={','.join(self.fillers)}\t"
                      f"excluded={','.join(sorted(self.excluded))}\n")
            for word, count in sorted(self.counts.items()):
                out.write(f"{word}\t{count}\n")

    @classmethod
    def load(cls, path) -> CompoundSplitter:
        """Read a file written by :meth:`save`."""
        with open(path, encoding="utf-8") as lines:
            header = lines.readline().rstrip("\n").split("\t")
            if header[0] != HEADER:
                raise ClirplugError(f"{path}:1: expected a '{HEADER}' header line")
            settings = dict(field.split("=", 1) for field in header[1:])
            counts = {}
            for lineno, line in enumerate(lines, start=2):
                fields = line.rstrip("\n").split("\t")
                if len(fields) != 2 or not fields[1].isdigit():
                    raise ClirplugError(f"{path}:{lineno}: expected 'word<TAB>count'")
                counts[fields[0]] = int(fields[1])
        fillers = tuple(f for f in settings.get("fillers", "").split(",") if f)
        excluded = frozenset(w for w in settings.get("excluded", "").split(",") if w)
        return cls(counts, int(settings["min_length"]), fillers, excluded)
