"""The grammar index: a restricted read through ``<grammar>.index`` gives the scan's rules in the scan's order."""

import errno
import os
import random
import shutil
from pathlib import Path

import pytest

from clirplug.errors import ClirplugError
from clirplug.mt import grammar, grammar_index
from clirplug.mt.grammar import SourcePhrases, format_rule, parse_rule, read_grammar, terminal_runs, write_grammar

pytestmark = pytest.mark.unit

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "decoder_golden"


def _restrictions(sentences, rng, count=6):
    """Restrictions of random sentence subsets and of random word sequences (some words from no sentence)."""
    words = sorted({word for tokens in sentences for word in tokens}) + ["zzz-unseen"]
    for _ in range(count):
        chosen = rng.sample(sentences, min(len(sentences), rng.randint(1, 4)))
        yield SourcePhrases(chosen + [[rng.choice(words) for _ in range(rng.randint(1, 6))]])


def _assert_index_reads_as_the_scan(path: Path, sentences, seed: int) -> tuple[int, int]:
    """Compare indexed and scanning reads; the numbers of rules read and gained (so that a test can see some)."""
    rng = random.Random(seed)
    read, gains = 0, 0
    for restriction in _restrictions(sentences, rng):
        scanned = read_grammar(path, restriction, index=False)
        read += len(scanned)
        assert read_grammar(path, restriction, index=True) == scanned
        # the rules a restriction gains are those admitted now and not before, in file order
        before = set(map(format_rule, scanned))
        enlarged = SourcePhrases([list(phrase.split()) for phrase in restriction.phrases])
        added = enlarged.add(rng.sample(sentences, 1) + [[rng.choice(sentences[0])]])
        now = read_grammar(path, enlarged, index=False)
        gained = [rule for rule in now if format_rule(rule) not in before]
        assert read_grammar(path, enlarged, added, index=True) == gained
        assert read_grammar(path, enlarged, added, index=False) == gained
        gains += len(gained)
    assert grammar_index.index_path(path).is_file()
    return read, gains


@pytest.mark.parametrize("kind", ["flat", "hiero"])
@pytest.mark.parametrize("block", [grammar_index.BLOCK, 300])
def test_the_index_reads_the_fixture_grammars_as_the_scan(tmp_path, monkeypatch, kind, block):
    monkeypatch.setattr(grammar_index, "BLOCK", block)  # 300: a few lines a block, most phrases over several
    path = tmp_path / f"grammar.{kind}.gz"
    shutil.copy(GOLDEN / path.name, path)
    sentences = [line.split() for line in (GOLDEN / "sentences.txt").read_text(encoding="utf-8").splitlines()]
    assert all(_assert_index_reads_as_the_scan(path, sentences, seed=len(kind)))


def test_the_index_reads_real_cdec_grammars_as_the_scan(tmp_path, cdec_clef06):
    found = []
    for number in (0, 7, 31, 44):
        path = tmp_path / f"grammar.{number}.gz"
        shutil.copy(cdec_clef06 / "grammars" / path.name, path)
        sources = {parse_rule(line).src for _, line in grammar._numbered_lines(path)}
        sentences = sorted({tuple(run.split()) for src in sources for run in terminal_runs(" ".join(src))})
        sentences = [list(tokens) for tokens in sentences]
        found.append(_assert_index_reads_as_the_scan(path, sentences, seed=number))
    assert all(map(sum, zip(*found)))


def test_terminal_runs():
    assert terminal_runs("[X,1] der  alte [X,2] mann") == ["der alte", "mann"]
    assert terminal_runs("[X,1] [X,2]") == [] and terminal_runs("haus") == ["haus"]


def test_rules_without_terminals_and_shared_runs_are_found(tmp_path):
    rules = [parse_rule(line) for line in (
        "[X] ||| [X,1] [X,2] ||| [X,2] [X,1] ||| a=1 ||| 0-1 1-0",
        "[X] ||| a [X,1] a ||| A [X,1] ||| a=2 ||| 0-0",
        "[X] ||| b [X,1] a ||| B [X,1] ||| a=3 ||| 0-0",
        "[X] ||| a b ||| AB ||| a=4 ||| 0-0",
        "[X] ||| b ||| B ||| a=5 ||| 0-0")]
    path = tmp_path / "g.txt"
    write_grammar(rules, path)
    assert read_grammar(path, SourcePhrases([["b", "a"]]), index=True) == [rules[0], rules[1], rules[2], rules[4]]
    assert read_grammar(path, SourcePhrases([["a"]]), index=True) == [rules[0], rules[1]]
    restriction = SourcePhrases([["a"]])
    added = restriction.add([["b"]])
    assert added == {"b"}
    assert read_grammar(path, restriction, added, index=True) == [rules[2], rules[4]]


def test_a_stale_or_damaged_index_is_rebuilt(tmp_path):
    path = tmp_path / "g.txt"
    write_grammar([parse_rule("[X] ||| haus ||| house ||| a=1 ||| 0-0")], path)
    restriction = SourcePhrases([["haus", "boot"]])
    assert len(read_grammar(path, restriction, index=True)) == 1
    write_grammar([parse_rule("[X] ||| haus ||| home ||| a=2 ||| 0-0"), parse_rule("[X] ||| boot ||| boat ||| a=1 ||| 0-0")],
                  path)
    os.utime(path, ns=(1, 1))  # a new version, whatever the clock's resolution
    assert [r.tgt for r in read_grammar(path, restriction, index=True)] == [("home",), ("boat",)]
    where = grammar_index.index_path(path)
    data = where.read_bytes()
    header = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    # a byte flipped in the first block of lines, in the last array, in the header
    flips = (len(grammar_index.MAGIC) + 3, header - 3, header + 5)
    for damage in (lambda data: data[:-3], lambda data: b"x" + data[1:], lambda data: b"",
                   *(lambda data, at=at: data[:at] + bytes([data[at] ^ 1]) + data[at + 1 :] for at in flips)):
        where.write_bytes(damage(where.read_bytes()))
        grammar_index._OPEN.clear()  # a later process
        assert read_grammar(path, restriction, index=False) == read_grammar(path, restriction, index=True)
        stat = path.stat()
        assert grammar_index.open_index(where, (str(path.resolve()), stat.st_size, stat.st_mtime_ns)) is not None


def test_a_read_only_folder_or_full_disk_is_scanned_and_a_malformed_line_named(tmp_path, monkeypatch):
    path = tmp_path / "g.txt"
    write_grammar([parse_rule("[X] ||| haus ||| house ||| a=1 ||| 0-0")], path)
    monkeypatch.setattr(grammar.os, "access", lambda where, mode: False)  # a folder this user may not write in
    assert len(read_grammar(path, SourcePhrases([["haus"]]), index=True)) == 1
    assert not grammar_index.index_path(path).exists()
    monkeypatch.undo()

    def full_disk(where, version, lines):
        raise ClirplugError(f"no space left writing {where}") from OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(grammar, "write_index", full_disk)
    assert len(read_grammar(path, SourcePhrases([["haus"]]), index=True)) == 1  # scanned
    monkeypatch.undo()
    bad = tmp_path / "bad.txt"
    bad.write_text("[X] ||| haus ||| house ||| a=1 ||| 0-0\n[X] ||| boot ||| boat ||| a=x ||| 0-0\n", encoding="utf-8")
    with pytest.raises(ClirplugError, match="bad.txt:2: .*bad feature value"):
        read_grammar(bad, SourcePhrases([["haus"]]), index=True)
    assert not grammar_index.index_path(bad).exists()


def test_a_key_collision_only_adds_rules_of_no_sentence(tmp_path, monkeypatch):
    # keys by length: every phrase of one length collides, the worst a hash could do
    monkeypatch.setattr(grammar_index, "phrase_key", lambda phrase: len(phrase))
    rules = [parse_rule(line) for line in (
        "[X] ||| a [X,1] ||| A [X,1] ||| a=1 ||| 0-0",
        "[X] ||| b [X,1] c ||| B [X,1] C ||| a=2 ||| 0-0",
        "[X] ||| d e ||| DE ||| a=3 ||| 0-0")]
    path = tmp_path / "g.txt"
    write_grammar(rules, path)
    restriction = SourcePhrases([["a"]])
    scanned = read_grammar(path, restriction, index=False)
    indexed = read_grammar(path, restriction, index=True)
    assert scanned == [rules[0]] and indexed == rules[:2]  # "b" and "c" collide with "a"; "d e" with no phrase
    assert not restriction.admits(" ".join(indexed[1].src))
