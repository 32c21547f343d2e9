"""Grammar extraction: phrase pairs and Hiero rules of a hand-aligned toy bitext, computed by hand,
and the vectorized extractor against a per-rule Python reference on random alignments."""

import io
import math
import random
import sys

import numpy as np
import pytest

from clirplug.errors import ClirplugError
from clirplug.mt.extract import (
    FIRST_WORD,
    NT1,
    NT2,
    PAD,
    ParallelText,
    _matching_sides,
    extract_flat,
    extract_hiero,
    read_parallel,
)
from clirplug.mt.grammar import filter_for_sentence, format_rule, read_grammar, source_matches, write_grammar

import extract_reference as reference
from extract_reference import hiero_choices, phrase_pairs, tight_phrase_pairs

pytestmark = pytest.mark.cli

# ---------------------------------------------------------------- FIXTURES
#
# sentence 0   das haus            / the house .        0-0 1-1        ("." unaligned)
# sentence 1   er hat ihn gesehen  / he has seen him    0-0 1-1 2-3 3-2 (reordering)
# sentence 2   das haus hier       / the home           0-0 1-1        ("hier" unaligned)

SRC = ["das haus", "er hat ihn gesehen", "das haus hier"]
TGT = ["the house .", "he has seen him", "the home"]
ALIGN = ["0-0 1-1", "0-0 1-1 2-3 3-2", "0-0 1-1"]


@pytest.fixture
def toy(tmp_path) -> ParallelText:
    for name, lines in (("corpus.de", SRC), ("corpus.en", TGT), ("align.de-en", ALIGN)):
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return read_parallel(tmp_path / "corpus.de", tmp_path / "corpus.en", tmp_path / "align.de-en")


def _table(rules):
    """rule -> (count, features); counts recovered from CountEF = log10(1 + c)."""
    return {
        (" ".join(r.src), " ".join(r.tgt), " ".join(f"{i}-{j}" for i, j in r.alignment)): (
            10 ** r.feature_dict()["CountEF"] - 1,
            r.feature_dict(),
        )
        for r in rules
    }


# ---------------------------------------------------------------- TESTS: flat phrases


def test_phrase_pairs_extend_unaligned_boundaries():
    # das haus / the house .: "." extends every pair ending at "house"
    assert sorted(phrase_pairs(2, 3, [(0, 0), (1, 1)])) == [
        (0, 1, 0, 1),
        (0, 2, 0, 2),
        (0, 2, 0, 3),
        (1, 2, 1, 2),
        (1, 2, 1, 3),
    ]
    # an unaligned source word extends source spans; alone it yields nothing
    assert sorted(phrase_pairs(3, 2, [(0, 0), (1, 1)])) == [
        (0, 1, 0, 1),
        (0, 2, 0, 2),
        (0, 3, 0, 2),
        (1, 2, 1, 2),
        (1, 3, 1, 2),
    ]
    # the length limit applies to both sides, extensions included
    assert sorted(phrase_pairs(2, 3, [(0, 0), (1, 1)], max_src=1, max_tgt=1)) == [(0, 1, 0, 1), (1, 2, 1, 2)]


FLAT = {  # (source, target, alignment): count
    ("das", "the", "0-0"): 2,
    ("haus", "house", "0-0"): 1,
    ("haus", "house .", "0-0"): 1,
    ("das haus", "the house", "0-0 1-1"): 1,
    ("das haus", "the house .", "0-0 1-1"): 1,
    ("er", "he", "0-0"): 1,
    ("hat", "has", "0-0"): 1,
    ("ihn", "him", "0-0"): 1,
    ("gesehen", "seen", "0-0"): 1,
    ("er hat", "he has", "0-0 1-1"): 1,
    ("ihn gesehen", "seen him", "0-1 1-0"): 1,
    ("hat ihn gesehen", "has seen him", "0-0 1-2 2-1"): 1,
    ("er hat ihn gesehen", "he has seen him", "0-0 1-1 2-3 3-2"): 1,
    ("haus", "home", "0-0"): 1,
    ("das haus", "the home", "0-0 1-1"): 1,
    ("haus hier", "home", "0-0"): 1,
    ("das haus hier", "the home", "0-0 1-1"): 1,
}


def test_flat_rules_and_counts(toy):
    table = _table(extract_flat(toy))
    assert set(table) == set(FLAT)
    for key, count in FLAT.items():
        assert table[key][0] == pytest.approx(count, rel=1e-5), key


def test_flat_features_by_hand(toy):
    table = _table(extract_flat(toy))
    # word tables: c(haus,house) = c(haus,home) = 1, so w(house|haus) = 1/2 and w(haus|house) = 1;
    # "." is the only word aligned to NULL: w(.|NULL) = 1; "hier" the only source word: w(hier|NULL) = 1
    features = table["haus", "house .", "0-0"][1]
    assert features["EgivenF"] == pytest.approx(-math.log10(1 / 3), abs=1e-6)  # c(haus) = 3 pairs
    assert features["FgivenE"] == pytest.approx(-math.log10(1 / 1), abs=1e-6)
    assert features["LexEgivenF"] == pytest.approx(-math.log10(1 / 2 * 1), abs=1e-6)  # w(house|haus) w(.|NULL)
    assert features["LexFgivenE"] == pytest.approx(-math.log10(1), abs=1e-6)  # w(haus|house)
    assert features["CountF"] == pytest.approx(math.log10(1 + 3), abs=1e-6)
    features = table["das haus", "the home", "0-0 1-1"][1]
    # c(das haus, *) = 3 (the house, the house ., the home); c(*, the home) = 2 (das haus, das haus hier)
    assert features["EgivenF"] == pytest.approx(-math.log10(1 / 3), abs=1e-6)
    assert features["FgivenE"] == pytest.approx(-math.log10(1 / 2), abs=1e-6)
    # w(the|das) = 2/2, w(home|haus) = 1/2;  w(das|the) = 2/2, w(haus|home) = 1/1
    assert features["LexEgivenF"] == pytest.approx(-math.log10(1 * 1 / 2), abs=1e-6)
    assert features["LexFgivenE"] == pytest.approx(-math.log10(1 * 1), abs=1e-6)


def test_flat_alignment_is_the_most_frequent(tmp_path):
    # "a b / x y" aligned crossed twice and straight once: the crossed alignment wins
    for name, lines in (("s", ["a b", "a b", "a b"]), ("t", ["x y", "x y", "x y"]), ("a", ["0-1 1-0", "0-0 1-1", "0-1 1-0"])):
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    rules = extract_flat(read_parallel(tmp_path / "s", tmp_path / "t", tmp_path / "a"))
    (rule,) = [r for r in rules if r.src == ("a", "b")]
    assert rule.alignment == ((0, 1), (1, 0))
    assert rule.feature_dict()["CountEF"] == pytest.approx(math.log10(1 + 3), abs=1e-6)


# ---------------------------------------------------------------- TESTS: Hiero


def test_tight_phrase_pairs():
    # er hat ihn gesehen / he has seen him: "hat ihn" and "er hat ihn" are inconsistent
    assert sorted(tight_phrase_pairs(4, 4, [(0, 0), (1, 1), (2, 3), (3, 2)])) == [
        (0, 1, 0, 1),
        (0, 2, 0, 2),
        (0, 4, 0, 4),
        (1, 2, 1, 2),
        (1, 4, 1, 4),
        (2, 3, 3, 4),
        (2, 4, 2, 4),
        (3, 4, 2, 3),
    ]
    # no unaligned word at a boundary: "." and "hier" are never inside a tight pair's edge
    assert sorted(tight_phrase_pairs(2, 3, [(0, 0), (1, 1)])) == [(0, 1, 0, 1), (0, 2, 0, 2), (1, 2, 1, 2)]


HIERO = {  # (source, target, alignment): fractional count; each initial phrase shares a count of 1
    # sentence 0, initial phrases das/the, haus/house, das haus/the house (3 rules)
    ("das", "the", "0-0"): 1 + 1,
    ("haus", "house", "0-0"): 1,
    ("das haus", "the house", "0-0 1-1"): 1 / 3,
    ("[X,1] haus", "[X,1] house", "1-1"): 1 / 3,
    ("das [X,1]", "the [X,1]", "0-0"): 1 / 3 + 1 / 3,
    # sentence 2: the same with "home"; "hier" is in no tight phrase
    ("haus", "home", "0-0"): 1,
    ("das haus", "the home", "0-0 1-1"): 1 / 3,
    ("[X,1] haus", "[X,1] home", "1-1"): 1 / 3,
    # sentence 1: single words
    ("er", "he", "0-0"): 1,
    ("hat", "has", "0-0"): 1,
    ("ihn", "him", "0-0"): 1,
    ("gesehen", "seen", "0-0"): 1,
    # er hat / he has: 3 rules (the two words as X are adjacent)
    ("er hat", "he has", "0-0 1-1"): 1 / 3,
    ("[X,1] hat", "[X,1] has", "1-1"): 1 / 3,
    ("er [X,1]", "he [X,1]", "0-0"): 1 / 3 + 1 / 13,
    # ihn gesehen / seen him: 3 rules
    ("ihn gesehen", "seen him", "0-1 1-0"): 1 / 3,
    ("[X,1] gesehen", "seen [X,1]", "1-0"): 1 / 3,
    ("ihn [X,1]", "[X,1] him", "0-1"): 1 / 3,
    # hat ihn gesehen / has seen him: itself, 4 one-X rules, 1 two-X rule (hat, gesehen) = 6
    ("hat ihn gesehen", "has seen him", "0-0 1-2 2-1"): 1 / 6,
    ("[X,1] ihn gesehen", "[X,1] seen him", "1-2 2-1"): 1 / 6 + 1 / 13,
    ("hat [X,1] gesehen", "has seen [X,1]", "0-0 2-1"): 1 / 6,
    ("hat ihn [X,1]", "has [X,1] him", "0-0 1-2"): 1 / 6,
    ("hat [X,1]", "has [X,1]", "0-0"): 1 / 6,
    ("[X,1] ihn [X,2]", "[X,1] [X,2] him", "1-2"): 1 / 6 + 1 / 13,
    # er hat ihn gesehen / he has seen him: itself, 7 one-X rules, 5 two-X rules = 13
    ("er hat ihn gesehen", "he has seen him", "0-0 1-1 2-3 3-2"): 1 / 13,
    ("[X,1] hat ihn gesehen", "[X,1] has seen him", "1-1 2-3 3-2"): 1 / 13,
    ("er [X,1] ihn gesehen", "he [X,1] seen him", "0-0 2-3 3-2"): 1 / 13,
    ("er hat [X,1] gesehen", "he has seen [X,1]", "0-0 1-1 3-2"): 1 / 13,
    ("er hat ihn [X,1]", "he has [X,1] him", "0-0 1-1 2-3"): 1 / 13,
    ("er hat [X,1]", "he has [X,1]", "0-0 1-1"): 1 / 13,
    ("[X,1] hat [X,2] gesehen", "[X,1] has seen [X,2]", "1-1 3-2"): 1 / 13,
    ("[X,1] hat [X,2]", "[X,1] has [X,2]", "1-1"): 1 / 13,
    ("[X,1] hat ihn [X,2]", "[X,1] has [X,2] him", "1-1 2-3"): 1 / 13,
    ("er [X,1] ihn [X,2]", "he [X,1] [X,2] him", "0-0 2-3"): 1 / 13,
}


def test_hiero_rules_and_fractional_counts(toy):
    table = _table(extract_hiero(toy))
    assert set(table) == set(HIERO)
    for key, count in HIERO.items():
        assert table[key][0] == pytest.approx(count, rel=1e-5), key
    # p(e|f) with fractional counts: c([X,1] haus, [X,1] house) = c(.., [X,1] home) = 1/3
    assert table["[X,1] haus", "[X,1] house", "1-1"][1]["EgivenF"] == pytest.approx(-math.log10(1 / 2), abs=1e-6)
    # c(e) for "he [X,1]": only from "er [X,1]": p(f|e) = 1
    assert table["er [X,1]", "he [X,1]", "0-0"][1]["FgivenE"] == 0.0


def test_hiero_limits():
    links = [(0, 0), (1, 1), (2, 3), (3, 2)]
    initials = tight_phrase_pairs(4, 4, links)
    prefix = [0, 1, 2, 3, 4]
    whole = (0, 4, 0, 4)
    assert len(hiero_choices(whole, initials, prefix)) == 13
    # at most 2 terminals: the whole phrase and one-X rules with 3 terminals go
    two = hiero_choices(whole, initials, prefix, max_terminals=2)
    assert all(4 - sum(h[1] - h[0] for h in holes) <= 2 for holes in two)
    assert len(two) == 3 + 5  # one-X: er hat, ihn gesehen, hat ihn gesehen; all five two-X rules
    assert len(hiero_choices(whole, initials, prefix, max_nonterminals=1)) == 8
    # a rule needs an aligned terminal: with "hat" unaligned, X(er) hat X(ihn gesehen) is dropped
    assert ((0, 1, 0, 1), (2, 4, 2, 4)) in hiero_choices(whole, initials, prefix)
    assert ((0, 1, 0, 1), (2, 4, 2, 4)) not in hiero_choices(whole, initials, [0, 1, 1, 2, 3])


def test_hiero_limits_in_extraction(toy):
    one = ParallelText(toy.src[1:2], toy.tgt[1:2], toy.links[1:2])
    sentence_1 = {(src, tgt) for src, tgt, _ in HIERO if not {"das", "haus"} & set(src.split())}
    assert {(" ".join(r.src), " ".join(r.tgt)) for r in extract_hiero(one)} == sentence_1

    def terminals(src):
        return sum(1 for word in src.split() if not word.startswith("[X,"))

    # each rule's eligibility depends on its own source side only: the limits filter the rule set
    rules = {(" ".join(r.src), " ".join(r.tgt)) for r in extract_hiero(one, max_terminals=2)}
    assert rules == {(src, tgt) for src, tgt in sentence_1 if terminals(src) <= 2}
    rules = {(" ".join(r.src), " ".join(r.tgt)) for r in extract_hiero(one, max_nonterminals=1)}
    assert rules == {(src, tgt) for src, tgt in sentence_1 if "[X,2]" not in src}
    rules = {(" ".join(r.src), " ".join(r.tgt)) for r in extract_hiero(one, max_symbols=3)}
    assert rules == {(src, tgt) for src, tgt in sentence_1 if len(src.split()) <= 3}


def _random_text(seed, n_sentences=12):
    rng = random.Random(seed)
    text = ParallelText([], [], [])
    for _ in range(n_sentences):
        m, n = rng.randint(1, 9), rng.randint(1, 9)
        links = sorted({(rng.randrange(m), rng.randrange(n)) for _ in range(rng.randint(0, m + 2))})
        text.src.append([rng.choice("abcde") for _ in range(m)])
        text.tgt.append([rng.choice("vwxyz") for _ in range(n)])
        text.links.append(links)
    return text


def _as_table(rules):
    return {(r.lhs, r.src, r.tgt, r.alignment): r.feature_dict() for r in rules}


@pytest.mark.parametrize("seed", range(8))
def test_vectorized_extraction_equals_reference(seed):
    text = _random_text(seed)
    for fast, slow in (
        (extract_flat(text), reference.extract_flat(text)),
        (extract_flat(text, max_phrase=3), reference.extract_flat(text, max_phrase=3)),
        (extract_hiero(text), reference.extract_hiero(text)),
        (extract_hiero(text, max_initial=6, max_terminals=3), reference.extract_hiero(text, max_initial=6, max_terminals=3)),
        (extract_hiero(text, max_symbols=7), reference.extract_hiero(text, max_symbols=7)),  # 5 terminals only
    ):
        fast_table, slow_table = _as_table(fast), _as_table(slow)
        assert fast_table.keys() == slow_table.keys()
        for key, features in slow_table.items():
            assert fast_table[key] == pytest.approx(features, rel=1e-5, abs=1e-5), key


def test_top_n_keeps_the_most_frequent_targets(toy):
    rules = extract_flat(toy).top_n(1)
    by_source = {}
    for rule in rules:
        by_source.setdefault(rule.src, []).append(rule.tgt)
    assert all(len(targets) == 1 for targets in by_source.values())
    assert by_source["das",] == [("the",)]  # c = 2 against none


def test_extracted_grammar_round_trips(toy, tmp_path):
    rules = extract_hiero(toy)
    write_grammar(rules, tmp_path / "g.gz")
    assert read_grammar(tmp_path / "g.gz") == list(rules)
    rules.write(tmp_path / "fast.gz")  # the direct writer gives the same bytes
    assert (tmp_path / "fast.gz").read_bytes() == (tmp_path / "g.gz").read_bytes()
    assert b"".join(rules.text()).decode("utf-8").splitlines() == [format_rule(rule) for rule in rules]


def test_text_writes_tricky_feature_values_as_format_rule(toy):
    """Values are written by ``repr`` once per distinct bit pattern: -0.0 stays apart from 0.0."""
    rules = extract_hiero(toy)
    tricky = [0.0, -0.0, 1e-05, 1e-4, 1e16, 1e15, -2.5, 5e-324, 1.7976931348623157e308, 123456.0, 0.1 + 0.2, 3.0]
    rules.features = np.resize(np.array(tricky), rules.features.shape)
    assert b"".join(rules.text()).decode("utf-8").splitlines() == [format_rule(rule) for rule in rules]
    assert b"".join(rules.text(batch=3)).decode("utf-8") == "".join(format_rule(rule) + "\n" for rule in rules)


class _Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("extract", [extract_flat, extract_hiero])
def test_progress_bars_leave_the_grammar_unchanged(extract, tmp_path, monkeypatch):
    """With bars on (a terminal stderr, scoring in chunks) the written grammar has the same bytes as without."""
    text = _random_text(3, n_sentences=40)
    extract(text).write(tmp_path / "quiet.gz")
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr("clirplug.mt.extract._score.__defaults__", (7, False))  # scored 7 instances a chunk
    extract(text, progress=True).write(tmp_path / "bars.gz", progress=True)
    assert (tmp_path / "bars.gz").read_bytes() == (tmp_path / "quiet.gz").read_bytes()
    shown = terminal.getvalue()
    assert "rule instances: 100%" in shown and "writing rules: 100%" in shown


@pytest.mark.parametrize("seed", range(3))
def test_for_sentences_equals_filter_for_sentence(seed):
    text = _random_text(seed)
    rules = list(extract_hiero(text))
    queries = [list(reversed(text.src[0])), text.src[1][:3] + ["q"], ["q"]]
    expected = {rule for query in queries for rule in filter_for_sentence(rules, query)}
    kept = list(extract_hiero(text).for_sentences(queries))
    assert set(kept) == expected and len(kept) == len(expected)
    assert [rule for rule in rules if rule in expected] == kept  # order kept


@pytest.mark.parametrize("seed", range(4))
def test_matching_sides_equals_source_matches(seed):
    """The vectorized filter against the greedy matcher, on sides with adjacent or only nonterminals and empty sentences."""
    rng = random.Random(seed)
    words, width = ["a", "b", "c", "d"], 7
    vocabulary = ["", "[X,1]", "[X,2]"] + words
    for _ in range(40):
        sentences = [[rng.choice(words + ["q"]) for _ in range(rng.randint(0, 7))] for _ in range(rng.randint(0, 4))]
        sides = []
        for _ in range(60):
            row = [rng.choice([FIRST_WORD + w for w in range(len(words))] + [NT1, NT2]) for _ in range(rng.randint(0, width))]
            sides.append(row + [PAD] * (width - len(row)))
        tokens = np.array([vocabulary.index(t) if t in words else PAD for s in sentences for t in s], dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum([len(s) for s in sentences])]).astype(np.int64)
        expected = [any(source_matches(tuple(vocabulary[w] for w in row if w != PAD), s) for s in sentences) for row in sides]
        assert _matching_sides(np.array(sides, dtype=np.int32), tokens, starts, batch=50).tolist() == expected


# ---------------------------------------------------------------- TESTS: input errors


def test_read_parallel_errors(tmp_path):
    (tmp_path / "s").write_text("a b\nc\n", encoding="utf-8")
    (tmp_path / "t").write_text("x y\nz\n", encoding="utf-8")
    (tmp_path / "a").write_text("0-0\n")
    with pytest.raises(ClirplugError, match="different line counts"):
        read_parallel(tmp_path / "s", tmp_path / "t", tmp_path / "a")
    (tmp_path / "a").write_text("0-0\n0-1\n")
    with pytest.raises(ClirplugError, match=r"a:2: alignment link '0-1' is outside the sentence pair"):
        read_parallel(tmp_path / "s", tmp_path / "t", tmp_path / "a")
    (tmp_path / "a").write_text("0-0\n0_0\n")
    with pytest.raises(ClirplugError, match=r"a:2: bad alignment link"):
        read_parallel(tmp_path / "s", tmp_path / "t", tmp_path / "a")


def test_cli_train_grammar(toy, tmp_path, capsys):
    from clirplug.cli import main

    model = tmp_path  # the toy fixture wrote corpus.de, corpus.en and align.de-en here
    assert main(["train", "grammar", "--kind", "hiero", "--model", str(model), "--top-n", "1"]) == 0
    rules = read_grammar(model / "grammar.hiero.gz")
    assert rules == list(extract_hiero(toy).top_n(1))
    assert (model / "stages" / "grammar-hiero.json").is_file()
    assert main(["train", "grammar", "--kind", "hiero", "--model", str(model), "--top-n", "1"]) == 0
    assert "up to date, skipped" in capsys.readouterr().err  # resumable: nothing changed
    (model / "queries.txt").write_text("Er hat\n", encoding="utf-8")
    assert main(["train", "grammar", "--kind", "flat", "--model", str(model), "--filter", str(model / "queries.txt")]) == 0
    assert {" ".join(r.src) for r in read_grammar(model / "grammar.flat.gz")} == {"er", "hat", "er hat"}
    assert main(["train", "grammar", "--kind", "flat", "--model", str(tmp_path / "nowhere")]) == 2


def test_no_links_no_rules():
    text = ParallelText([["a"], []], [["b"], []], [[], []])
    assert len(extract_flat(text)) == len(extract_hiero(text)) == 0
    assert b"".join(extract_hiero(text).top_n(3).text()) == b""
