"""Synchronous grammar rules in the Moses/cdec text format: reading, writing, pruning, filtering.

One rule a line, fields separated by ``|||``::

    [X] ||| [X,1] nestlé ||| [X,1] nestl ||| EgivenFCoherent=0.23 SampleCountF=1.3 ||| 1-1

The fields are the left-hand side, the source side, the target side, the features and the
word alignment (``i-j`` pairs over all tokens of the source and target sides, nonterminals
included). A flat phrase table is the special case without nonterminals (Ture & Lin), so one
decoder serves flat and hierarchical (Chiang 2007) grammars alike. Also read: cdec's 4-field
form without the left-hand side (``[X,1] nestlé ||| [X,1] nestl ||| 0.23 1.30 ||| 1-1``; the
left-hand side is then ``X``), positional (unnamed) feature values, and Moses phrase tables
(``src ||| tgt ||| scores ||| align ||| counts``; fields after the alignment are ignored).
"""

from __future__ import annotations

import gzip
import heapq
import io
import itertools
import json
import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from clirplug.atomic import atomic_open
from clirplug.errors import ClirplugError
from clirplug.mt.grammar_index import index_path, open_index, write_index
from clirplug.mt.symmetrize import parse_pharaoh

NONTERMINAL = re.compile(r"^\[([^\],]+)(?:,(\d+))?\]$")  # "[X]", "[X,1]", "[S,2]"
# The features and alignment fields of a rule line: NAME=VALUE or VALUE items (the common
# number forms; a field these miss is parsed in full, see :func:`_check_line`), I-J links.
_NUMBER = r"[-+]?+(?:\d++\.?+\d*+|\.\d++)(?:[eE][-+]?+\d++)?+"
_FEATURES = re.compile(rf" *+(?:(?:[^\s=]++=)?+{_NUMBER}(?: ++|$))*+")
_LINKS = re.compile(r" *+(?:\d++-\d++(?: ++|$))*+")
FIELD_SEPARATOR = " ||| "
_GZIP_MAGIC = b"\x1f\x8b"
INDEX_MIN_SIZE = 4 << 20  # a grammar file of this many bytes is indexed on its first restricted read


def is_nonterminal(token: str) -> bool:
    """Whether ``token`` is a nonterminal such as ``[X]`` or ``[X,1]``."""
    return token.startswith("[") and NONTERMINAL.match(token) is not None


def nt_index(token: str) -> int:
    """The link index of a nonterminal: ``"[X,2]" -> 2``.

    A target nonterminal ``[X,k]`` is rewritten by the same subderivation as the source
    nonterminal ``[X,k]``. Raises ``ValueError`` for a terminal or an unindexed ``[X]``.
    """
    match = NONTERMINAL.match(token)
    if match is None or match.group(2) is None:
        raise ValueError(f"not an indexed nonterminal: {token!r}")
    return int(match.group(2))


@dataclass(frozen=True)
class Rule:
    """One synchronous rule ``lhs -> <src, tgt>`` with its features and word alignment.

    Attributes
    ----------
    lhs : str
        Left-hand side without brackets, e.g. ``"X"``.
    src, tgt : tuple of str
        Tokens exactly as in the file; nonterminals are ``[X,k]`` and a target ``[X,k]``
        refers to the source nonterminal with the same index ``k``.
    features : tuple of (str, float)
        ``(name, value)`` pairs in file order; positional values are named ``"0"``, ``"1"``...
    alignment : tuple of (int, int)
        ``(source position, target position)`` pairs over all tokens of ``src`` and ``tgt``.
    """

    lhs: str
    src: tuple[str, ...]
    tgt: tuple[str, ...]
    features: tuple[tuple[str, float], ...] = ()
    alignment: tuple[tuple[int, int], ...] = ()

    def feature_dict(self) -> dict[str, float]:
        """The features as a ``name -> value`` dict."""
        return dict(self.features)

    @property
    def arity(self) -> int:
        """The number of nonterminals (0 for a flat phrase pair)."""
        return sum(1 for token in self.src if is_nonterminal(token))


def _parse_features(field: str, where: str) -> tuple[tuple[str, float], ...]:
    features = []
    positional = 0
    for item in field.split():
        name, equals, value = item.rpartition("=")
        if not equals:
            name = str(positional)
            positional += 1
        elif not name or name.isdigit():
            raise ClirplugError(f"{where}: bad feature {item!r}: expected NAME=VALUE or VALUE")
        try:
            features.append((sys.intern(name), float(value)))
        except ValueError:
            raise ClirplugError(f"{where}: bad feature value {item!r}: expected a number") from None
    return tuple(features)


def _check_nonterminals(src: tuple[str, ...], tgt: tuple[str, ...], where: str) -> None:
    src_links, tgt_links = [], []
    for side, links in ((src, src_links), (tgt, tgt_links)):
        for token in side:
            match = NONTERMINAL.match(token) if token[0] == "[" else None  # is_nonterminal, matched once
            if match is not None:
                if match.group(2) is None:
                    raise ClirplugError(f"{where}: nonterminal {token!r} needs an index, as in [X,1]")
                links.append(int(match.group(2)))
    if sorted(src_links) != list(range(1, len(src_links) + 1)):
        raise ClirplugError(f"{where}: source nonterminals must be indexed 1..{len(src_links)}, got {src_links}")
    if sorted(tgt_links) != sorted(src_links):
        raise ClirplugError(f"{where}: target nonterminals {tgt_links} do not match the source's {src_links}")


def parse_rule(line: str, where: str = "") -> Rule:
    """Parse one grammar line (cdec 5- or 4-field form, or a Moses phrase table line).

    Raises
    ------
    ClirplugError
        Naming ``where`` (e.g. ``"grammar.gz:12"``) when the line is malformed.
    """
    where = where or "rule"
    fields = [field.strip() for field in line.rstrip("\n").split("|||")]
    lhs = "X"
    head = NONTERMINAL.match(fields[0])
    if head is not None and head.group(2) is None:
        lhs = head.group(1)
        fields = fields[1:]
        if len(fields) > 4:
            raise ClirplugError(f"{where}: expected at most 5 '|||'-separated fields, got {len(fields) + 1}")
    if len(fields) < 3:
        raise ClirplugError(f"{where}: expected '[LHS] ||| source ||| target ||| features [||| alignment]'")
    # tokens and feature names are interned: a grammar repeats them in millions of rules
    src, tgt = tuple(map(sys.intern, fields[0].split())), tuple(map(sys.intern, fields[1].split()))
    if not src or not tgt:
        raise ClirplugError(f"{where}: empty {'source' if not src else 'target'} side")
    _check_nonterminals(src, tgt, where)
    features = _parse_features(fields[2], where)
    alignment = tuple(parse_pharaoh(fields[3], where, (len(src), len(tgt)), "rule")) if len(fields) > 3 else ()
    return Rule(lhs, src, tgt, features, alignment)


def _format_value(value: float) -> str:
    return repr(float(value))


def format_rule(rule: Rule) -> str:
    """The rule as one cdec 5-field line (without the newline); inverse of :func:`parse_rule`.

    Positional features (named ``"0"``, ``"1"``...) are written as bare values, the others as
    ``name=value``; values use Python's shortest round-tripping float form.
    """
    features = []
    positional = 0
    for name, value in rule.features:
        if name.isdigit():
            if int(name) != positional:
                raise ValueError(f"positional feature {name!r} out of order in {rule}")
            positional += 1
            features.append(_format_value(value))
        else:
            features.append(f"{name}={_format_value(value)}")
    alignment = " ".join(f"{i}-{j}" for i, j in rule.alignment)
    return FIELD_SEPARATOR.join(
        (f"[{rule.lhs}]", " ".join(rule.src), " ".join(rule.tgt), " ".join(features), alignment)
    )


def _open_text(path: Path):
    with open(path, "rb") as probe:
        compressed = probe.read(2) == _GZIP_MAGIC
    if compressed:
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return open(path, encoding="utf-8")


def _source_field(line: str) -> str:
    """The source side of a raw rule line (after an unindexed ``[LHS]`` field, if any)."""
    fields = line.split("|||", 2)
    head = fields[0].strip()
    if len(fields) > 2 and head.startswith("[") and NONTERMINAL.match(head) and "," not in head:
        return fields[1]
    return fields[0]


class SourcePhrases:
    """The contiguous phrases of some source sentences, to keep only the rules that can apply to them.

    A rule can apply to a sentence only if each run of source terminals between its
    nonterminals is a phrase of that sentence, so a grammar read with :meth:`admits` as filter
    keeps every rule usable on the sentences, and (for a Hiero grammar) well under half of the
    rules whose words merely all occur in them.
    """

    def __init__(self, sentences: Iterable[Sequence[str]] = ()):
        self.phrases: set[str] = set()
        self.add(sentences)

    def add(self, sentences: Iterable[Sequence[str]]) -> set[str]:
        """Add the phrases of ``sentences``; return those that were new (the rules :meth:`admits` now and did
        not before are those with a terminal run among them: :func:`iter_grammar`'s ``new_phrases``)."""
        added = set()
        for tokens in sentences:
            n = len(tokens)
            added.update(" ".join(tokens[i:j]) for i in range(n) for j in range(i + 1, n + 1))
        added -= self.phrases
        self.phrases |= added
        return added

    def admits(self, source: str) -> bool:
        """Whether each terminal run of the source side ``source`` (tokens separated by spaces) is a phrase."""
        run: list[str] = []
        for token in source.split():
            if token[0] == "[" and is_nonterminal(token):
                if run and " ".join(run) not in self.phrases:
                    return False
                run = []
            else:
                run.append(token)
        return not run or " ".join(run) in self.phrases


def terminal_runs(source: str) -> list[str]:
    """The runs of terminals between the nonterminals of the source side ``source`` (tokens separated by
    spaces), each as one phrase (its tokens joined by single spaces)."""
    runs, run = [], []
    for token in source.split():
        if token[0] == "[" and is_nonterminal(token):
            if run:
                runs.append(" ".join(run))
            run = []
        else:
            run.append(token)
    if run:
        runs.append(" ".join(run))
    return runs


# Grammar files (path, size, modification time) read to the end in this process or, by the stamp
# beside them, in an earlier one: a restricted read skips the check of the other lines when it was
# done once (the experiment's workers read one grammar for many stages).
_CHECKED: set[tuple[str, int, int]] = set()


def _stamp(path: Path) -> Path:
    """``<grammar>.checked``: the size and modification time of the grammar's version read to the end."""
    return path.with_name(path.name + ".checked")


def _was_checked(path: Path, version: tuple[str, int, int]) -> bool:
    if version in _CHECKED:
        return True
    try:
        stamped = json.loads(_stamp(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return stamped == {"size": version[1], "mtime_ns": version[2]}


def _mark_checked(path: Path, version: tuple[str, int, int]) -> None:
    _CHECKED.add(version)
    try:
        with atomic_open(_stamp(path)) as out:
            json.dump({"size": version[1], "mtime_ns": version[2]}, out)
    except (OSError, ClirplugError):  # a read-only model folder: checked again by the next process
        pass


def _check_line(line: str, where: str) -> None:
    """Raise the :func:`parse_rule` error of a line whose fields are malformed.

    A fast check of the lines a restriction skips: at least 3 ``|||`` fields (at most 5 with
    a left-hand side), non-empty source and target sides, numbers in the features field and
    ``I-J`` links in the alignment field; only a line failing it is parsed in full.
    """
    fields = line.split("|||")
    head = NONTERMINAL.match(fields[0].strip())
    if head is not None and head.group(2) is None:
        fields = fields[1:]
        if len(fields) > 4:
            parse_rule(line, where)
    if not (len(fields) >= 3 and fields[0].strip() and fields[1].strip() and _FEATURES.fullmatch(fields[2])
            and (len(fields) == 3 or _LINKS.fullmatch(fields[3]))):
        parse_rule(line, where)


class _RuleLines:
    """:func:`parse_rule` over the lines of one file, for each line in the form :func:`format_rule` writes
    with what lines share worked out once: the left-hand side field, the last line's source side and
    its nonterminals, the last line's feature names (the values then read by one regular expression and
    Python's ``float``), each alignment field for its side lengths; other lines go to :func:`parse_rule`."""

    def __init__(self, name: str):
        self.name = name
        self.lhs: dict[str, str | None] = {}  # "[X]" -> "X"; None for a field that is no unindexed nonterminal
        self.links: dict[tuple[str, int, int], tuple[tuple[int, int], ...]] = {}
        self.source_field, self.src, self.marks = None, (), ()  # the last source side, its bracketed tokens
        self.nonterminals: set[tuple[str, ...]] = set()  # bracketed tokens (sorted) of sides that passed the check
        self.names: tuple[str, ...] = ()
        self.values = None  # fullmatch of a features field with self.names, the values as groups

    def fields(self, line: str) -> tuple[list[str] | None, str]:
        """The line's 5 fields when it has the written form (else None), and its source field (:func:`_source_field`)."""
        fields = line.split(FIELD_SEPARATOR)
        if len(fields) == 5 and line.count("|||") == 4 and self._lhs(fields[0]) is not None:
            return fields, fields[1]
        return None, _source_field(line)

    def _lhs(self, field: str) -> str | None:
        lhs = self.lhs.get(field, 0)
        if lhs == 0:
            head = NONTERMINAL.match(field.strip())
            lhs = self.lhs[field] = head.group(1) if head is not None and head.group(2) is None else None
        return lhs

    def rule(self, line: str, fields: list[str] | None, lineno: int) -> Rule:
        """:func:`parse_rule` of line ``lineno`` (``fields``: its :meth:`fields`)."""
        if fields is None:
            return parse_rule(line, f"{self.name}:{lineno}")
        if fields[1] != self.source_field:
            self.source_field, self.src = fields[1], tuple(map(sys.intern, fields[1].split()))
            self.marks = tuple(sorted(token for token in self.src if token[0] == "["))
        src, tgt = self.src, tuple(map(sys.intern, fields[2].split()))
        if not src or not tgt:
            return parse_rule(line, f"{self.name}:{lineno}")
        # the check depends on the bracketed tokens only: sides with the same ones as a checked rule's pass
        marks = tuple(sorted(token for token in tgt if token[0] == "[")) if "[" in fields[2] else ()
        if marks != self.marks or marks not in self.nonterminals:
            _check_nonterminals(src, tgt, f"{self.name}:{lineno}")
            if marks == self.marks:
                self.nonterminals.add(marks)
        match = self.values and self.values(fields[3])
        if match:
            features = tuple(zip(self.names, map(float, match.groups())))
        else:
            features = _parse_features(fields[3], f"{self.name}:{lineno}")
            self._learn(features)
        key = (fields[4], len(src), len(tgt))
        alignment = self.links.get(key)
        if alignment is None:
            alignment = self.links[key] = tuple(parse_pharaoh(fields[4], f"{self.name}:{lineno}", key[1:], "rule"))
        return Rule(self.lhs[fields[0]], src, tgt, features, alignment)

    def _learn(self, features) -> None:
        """Read the next features fields with the names of ``features`` (positional values are named by digits)."""
        self.names = tuple(name for name, _ in features)
        pattern = " ".join(f"({_NUMBER})" if name.isdigit() else f"{re.escape(name)}=({_NUMBER})"
                           for name in self.names)
        self.values = re.compile(pattern).fullmatch


def _numbered_lines(path: Path) -> Iterator[tuple[int, str]]:
    """The non-blank lines of a grammar file without their newlines, with their line numbers."""
    with _open_text(path) as lines:
        try:
            for lineno, line in enumerate(lines, 1):
                if line.strip():
                    yield lineno, line.rstrip("\n")
        except (UnicodeDecodeError, OSError, EOFError) as error:
            raise ClirplugError(f"{path}: cannot read the grammar: {error}") from error


def _indexed_lines(path: Path, version: tuple[str, int, int], phrases: set[str], new_phrases: set[str] | None,
                   build: bool):
    """The lines of the grammar file ``path`` whose rules ``phrases`` admit (with ``new_phrases``: and not the
    phrases before them), by its index (:mod:`clirplug.mt.grammar_index`, built first if ``build`` and missing
    or stale, checking every line), in file order; None without an index."""
    where = index_path(path)
    lines = _listed_lines(open_index(where, version), phrases, new_phrases)
    if lines is None and build and os.access(where.parent, os.W_OK):
        check = not _was_checked(path, version)
        parser = _RuleLines(str(path))

        def listed():
            last = (None, ())  # the last source field and its runs: rules sharing a source side are consecutive
            for lineno, line in _numbered_lines(path):
                if check:
                    _check_line(line, f"{path}:{lineno}")
                source = parser.fields(line)[1]
                if source != last[0]:
                    last = (source, terminal_runs(source) or [""])
                yield lineno, line, last[1]

        try:
            write_index(where, version, listed())
        except ClirplugError as error:
            if not isinstance(error.__cause__, OSError):
                raise  # a malformed line
            return None  # a file that cannot be read or an index that cannot be written (a full disk): a scan says which
        if check:
            _mark_checked(path, version)
        lines = _listed_lines(open_index(where, version), phrases, new_phrases)
    return lines


def _listed_lines(index, phrases: set[str], new_phrases: set[str] | None) -> list[tuple[int, str]] | None:
    """The lines of an open index whose phrases are among ``phrases`` (or that have no terminals) and, with
    ``new_phrases``, one of them among those; None without an index or when it is damaged."""
    try:
        return None if index is None else index.lines(phrases | {""}, new_phrases)
    except ValueError:
        return None


def iter_grammar(path, restriction: SourcePhrases | None = None, new_phrases: set[str] | None = None,
                 index: bool | None = None) -> Iterator[Rule]:
    """Yield the rules of a grammar file (plain or gzip, detected from its content) one by one.

    With a ``restriction``, only the rules it admits are parsed and yielded (a per-input
    grammar, as cdec's per-sentence grammars): the others cannot apply to those sentences,
    but are still checked for their fields and feature values (:func:`_check_line`), so a
    malformed line is an error (naming file and line) wherever it is. The check is done once per
    version of the file: a read to the end records it in ``<grammar>.checked`` for later processes.
    With ``new_phrases`` (phrases the restriction gained, :meth:`SourcePhrases.add`), only the rules it
    admits with a terminal run among them: those it did not admit before.

    A restricted read of a file that has an index (``<grammar>.index``, :mod:`clirplug.mt.grammar_index`)
    reads only the lines of the rules admitted, and yields the same rules in the same order. ``index``: build
    the index first when it is missing or stale (True), never (False), or when the file holds at least
    :data:`INDEX_MIN_SIZE` bytes (None); a file whose folder is read-only is scanned.
    """
    path = Path(path)
    if not path.is_file():
        raise ClirplugError(f"{path}: no such grammar file")
    stat = path.stat()
    version = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    check = not _was_checked(path, version)
    parser = _RuleLines(str(path))
    lines = None
    if restriction is not None and index is not False:
        build = index is True or stat.st_size >= INDEX_MIN_SIZE
        lines = _indexed_lines(path, version, restriction.phrases, new_phrases, build)
        if lines is not None:
            check = False  # the index is made from checked files only
            restriction = None  # and its lines are those admitted
    admitted = (None, True)  # the last source field and its verdict: rules sharing a source side are consecutive
    for lineno, line in _numbered_lines(path) if lines is None else lines:
        fields, source = parser.fields(line)
        if restriction is not None:
            if source != admitted[0]:
                admitted = (source, restriction.admits(source)
                            and (new_phrases is None or not new_phrases.isdisjoint(terminal_runs(source))))
            if not admitted[1]:
                if check:
                    _check_line(line, f"{path}:{lineno}")
                continue
        yield parser.rule(line, fields, lineno)
    if check:
        _mark_checked(path, version)


def grammar_features(path) -> set[str]:
    """The feature names of a grammar file's first rule (every rule of a grammar carries the same)."""
    for rule in iter_grammar(path):
        return {name for name, _ in rule.features}
    return set()


def read_grammar(path, restriction: SourcePhrases | None = None, new_phrases: set[str] | None = None,
                 index: bool | None = None) -> list[Rule]:
    """Read a grammar file (see the module docstring for the accepted forms), only the rules
    ``restriction`` admits if given (see :func:`iter_grammar` for ``new_phrases`` and ``index``), with the
    cyclic garbage collector paused (the rules make no reference cycles; each collection would walk every
    rule read so far)."""
    from clirplug.mt.hypergraph import gc_paused

    with gc_paused():
        return list(iter_grammar(path, restriction, new_phrases, index))


def write_grammar(rules: Iterable[Rule], path) -> None:
    """Write ``rules`` one a line in the cdec 5-field form (:func:`format_rule`), atomically.

    A path ending in ``.gz`` is gzip-compressed with a fixed header (no name, time 0), so
    ``write(read(write(x)))`` gives byte-identical files.
    """
    lines = map(format_rule, rules)  # encoded and written 20,000 lines at a time
    write_grammar_bytes(iter(lambda: "".join(line + "\n" for line in itertools.islice(lines, 20000)).encode("utf-8"), b""),
                        path)


def write_grammar_bytes(texts: Iterable[bytes], path) -> None:
    """Write already formatted and encoded rule lines, each ending in a newline (see :func:`write_grammar`)."""
    path = Path(path)
    with atomic_open(path, "wb") as raw:
        handle = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) if path.suffix == ".gz" else raw
        for text in texts:
            handle.write(text)
        if handle is not raw:
            handle.close()


def rule_score(rule: Rule, feature: str | Mapping[str, float]) -> float:
    """The value of one feature, or the weighted sum ``Σ_k w_k f_k`` for a ``name -> weight`` map.

    Absent features count as 0.
    """
    values = rule.feature_dict()
    if isinstance(feature, str):
        return values.get(feature, 0.0)
    return sum(weight * values.get(name, 0.0) for name, weight in feature.items())


def prune(
    rules: Iterable[Rule], top_n: int, feature: str | Mapping[str, float], lower_is_better: bool = True
) -> list[Rule]:
    """Keep the ``top_n`` best targets for each source side ``(lhs, src)``.

    Rules are ranked by :func:`rule_score`; by default lower is better, as for cdec's
    ``-log10`` probability costs. Ties are broken by the target side, so the result does not
    depend on the input order; the kept rules stay in input order.
    """
    if top_n < 1:
        raise ClirplugError(f"top_n must be at least 1, got {top_n}")
    rules = list(rules)
    sign = 1.0 if lower_is_better else -1.0
    groups: dict[tuple[str, tuple[str, ...]], list[int]] = {}
    for position, rule in enumerate(rules):
        groups.setdefault((rule.lhs, rule.src), []).append(position)
    keep = []
    for members in groups.values():
        if len(members) <= top_n:
            keep.extend(members)
        else:
            keep.extend(
                heapq.nsmallest(top_n, members, key=lambda p: (sign * rule_score(rules[p], feature), rules[p].tgt))
            )
    return [rules[p] for p in sorted(keep)]


def source_matches(src: tuple[str, ...], tokens: list[str] | tuple[str, ...]) -> bool:
    """Whether the source side ``src`` can cover some span of ``tokens``.

    Terminals must match in order, consecutive terminals contiguously, and each nonterminal
    must cover at least one token (Chiang 2007, §3.1). Matching every terminal chunk at its
    leftmost possible position decides this exactly (a greedy choice never blocks a later chunk).
    """
    return chunks_match(source_chunks(src), tokens)


SourceChunks = tuple[tuple[tuple[int, tuple[str, ...]], ...], int]


def source_chunks(src: tuple[str, ...]) -> SourceChunks:
    """A source side as its terminal chunks, each with the nonterminals before it, and the nonterminals after
    the last chunk (what :func:`chunks_match` matches; parse it once to match it against many sentences)."""
    chunks: list[tuple[int, tuple[str, ...]]] = []  # (nonterminals before the chunk, terminals)
    gap, chunk = 0, []
    for token in src:
        if is_nonterminal(token):
            if chunk:
                chunks.append((gap, tuple(chunk)))
                gap, chunk = 0, []
            gap += 1
        else:
            chunk.append(token)
    if chunk:
        chunks.append((gap, tuple(chunk)))
        gap = 0
    return tuple(chunks), gap


def chunks_match(parsed: SourceChunks, tokens: list[str] | tuple[str, ...]) -> bool:
    """:func:`source_matches` of a source side parsed by :func:`source_chunks`."""
    chunks, gap = parsed
    position = 0
    n = len(tokens)
    for before, terminals in chunks:
        start = position + before
        width = len(terminals)
        while start + width <= n and tuple(tokens[start : start + width]) != terminals:
            start += 1
        if start + width > n:
            return False
        position = start + width
    return position + gap <= n


def filter_for_sentence(rules: Iterable[Rule], tokens: list[str]) -> list[Rule]:
    """The rules whose source side can match a span of ``tokens`` (see :func:`source_matches`).

    Source sides are checked once each; a rule with a terminal absent from the sentence is
    dropped without matching.
    """
    vocabulary = set(tokens)
    verdicts: dict[tuple[str, ...], bool] = {}
    kept = []
    for rule in rules:
        verdict = verdicts.get(rule.src)
        if verdict is None:
            verdict = all(is_nonterminal(t) or t in vocabulary for t in rule.src) and source_matches(rule.src, tokens)
            verdicts[rule.src] = verdict
        if verdict:
            kept.append(rule)
    return kept
