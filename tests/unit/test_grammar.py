"""Grammar rules: the Moses/cdec text format, round trips, pruning and per-sentence filtering."""

import gzip
import itertools
import random

import pytest

from clirplug.errors import ClirplugError
from clirplug.mt.grammar import (
    Rule,
    SourcePhrases,
    filter_for_sentence,
    format_rule,
    is_nonterminal,
    nt_index,
    parse_rule,
    prune,
    read_grammar,
    source_matches,
    write_grammar,
)

pytestmark = pytest.mark.unit

# ---------------------------------------------------------------- parsing


def test_nonterminals():
    assert is_nonterminal("[X]") and is_nonterminal("[X,1]") and is_nonterminal("[S,2]")
    assert not is_nonterminal("x") and not is_nonterminal("[") and not is_nonterminal("[X,1")
    assert nt_index("[X,2]") == 2 and nt_index("[NP,10]") == 10
    with pytest.raises(ValueError):
        nt_index("[X]")


def test_parse_cdec_five_fields_named_features():
    rule = parse_rule("[X] ||| der [X,1] ||| the [X,1] ||| EgivenF=0.5 FgivenE=1.25 ||| 0-0 1-1")
    assert rule == Rule("X", ("der", "[X,1]"), ("the", "[X,1]"), (("EgivenF", 0.5), ("FgivenE", 1.25)), ((0, 0), (1, 1)))
    assert rule.arity == 1
    assert rule.feature_dict() == {"EgivenF": 0.5, "FgivenE": 1.25}


def test_parse_cdec_four_fields_positional_features():
    # the form of ../shared/conformance/cdec-clef06-en-fr/grammars: no LHS, unnamed values
    rule = parse_rule("[X,1] nestlé [X,2] ||| [X,2] de [X,1] nestl ||| 1.27 0.0 1.0 ||| 1-3")
    assert rule.lhs == "X" and rule.arity == 2
    assert rule.tgt == ("[X,2]", "de", "[X,1]", "nestl")
    assert rule.features == (("0", 1.27), ("1", 0.0), ("2", 1.0))
    assert rule.alignment == ((1, 3),)


def test_parse_moses_phrase_table():
    rule = parse_rule("das haus ||| the house ||| 0.8 0.5 0.7 0.4 ||| 0-0 1-1 ||| 10 12 8")
    assert rule == Rule("X", ("das", "haus"), ("the", "house"), (("0", 0.8), ("1", 0.5), ("2", 0.7), ("3", 0.4)), ((0, 0), (1, 1)))
    assert parse_rule("haus ||| house ||| 0.5").alignment == ()


@pytest.mark.parametrize(
    "line, message",
    [
        ("[X] ||| a ||| b", "expected"),
        ("[X] ||| a ||| b ||| x=y ||| 0-0", "bad feature value"),
        ("[X] ||| a ||| b ||| 1 ||| 0-1", "outside the rule"),
        ("[X] ||| a ||| b ||| 1 ||| 0:0", "bad alignment link"),
        ("[X] ||| a [X,2] ||| b [X,2] ||| 1", "indexed 1..1"),
        ("[X] ||| a [X,1] ||| b ||| 1", "do not match"),
        ("[X] ||| a [X] ||| b [X] ||| 1", "needs an index"),
        ("[X] |||  ||| b ||| 1", "empty source"),
    ],
)
def test_parse_errors_name_the_place(line, message):
    with pytest.raises(ClirplugError, match=f"g.txt:7: .*{message}"):
        parse_rule(line, "g.txt:7")


def test_read_error_names_file_and_line(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("[X] ||| a ||| b ||| 1 ||| 0-0\n[X] ||| a ||| b ||| oops\n", encoding="utf-8")
    with pytest.raises(ClirplugError, match=r"g.txt:2: bad feature value"):
        read_grammar(path)


# Lines the reader's shortcuts (shared left-hand side, source side, feature names and alignment fields) must
# read as parse_rule does, or hand to it: names changing mid-file, positional values, bracketed terminals,
# labels and indices that differ between the sides, odd spacing, numbers the feature pattern misses.
READER_LINES = [
    "[X] ||| der [X,1] ||| the [X,1] ||| EgivenF=0.5 FgivenE=1.25 ||| 0-0 1-1",
    "[X] ||| der [X,1] ||| [X,1] of the ||| EgivenF=1e-05 FgivenE=-0.0 ||| 0-2",
    "[X] ||| der [X,1] ||| the [ [X,1] ||| EgivenF=.5 FgivenE=+3. ||| 0-0",
    "[X] ||| der [X,1] ||| the [Y,1] ||| EgivenF=0.5 FgivenE=1 ||| 0-0",
    "[X] ||| [X,1] von [X,2] ||| [X,2] of [X,1] ||| EgivenF=0.25 FgivenE=2 Count=3 ||| 1-1",
    "[X] ||| [X,1] von [X,2] ||| [X,1] of [X,2] ||| EgivenF=inf FgivenE=nan Count=3 ||| 1-1",
    "[X] ||| [X,1] von [X,2] ||| [X,1] of [X,2] ||| Count=3 EgivenF=0.25 FgivenE=2 ||| 1-1",
    "[S] |||  haus   ||| house ||| 0.5 1.5 |||  0-0 ",
    "[S] ||| haus ||| house ||| 0.25 1e3 ||| 0-0",
    "[X] ||| [ ||| bracket ||| a=b=1 ||| 0-0",
    "[X] ||| ü ||| ue ||| ||| ",
    "[X,1] nestlé ||| nestl [X,1] ||| 1.27 0.0 ||| 1-0",
    "das haus ||| the house ||| 0.8 0.5 ||| 0-0 1-1 ||| 10 12",
    "[X] ||| a ||| b ||| 1\u00a02 ||| 0-0",
]


@pytest.mark.parametrize("restricted", [False, True])
def test_read_grammar_reads_each_line_as_parse_rule(tmp_path, restricted):
    path = tmp_path / "g.txt"
    path.write_text("\n".join(READER_LINES * 2) + "\n", encoding="utf-8")
    restriction = SourcePhrases([["der", "von", "[", "ü", "a", "nestlé", "das"]]) if restricted else None
    expected = [parse_rule(line) for line in READER_LINES * 2 if not restricted or "haus" not in line]
    assert list(map(repr, read_grammar(path, restriction))) == list(map(repr, expected))  # -0.0, nan as written


@pytest.mark.parametrize("line, message", [
    ("[X] ||| der [X,1] ||| the [X,2] ||| EgivenF=0.5 ||| 0-0", "do not match"),
    ("[X] ||| der [X,1] ||| the [X] ||| EgivenF=0.5 ||| 0-0", "needs an index"),
    ("[X] ||| der [X] ||| the [X] ||| EgivenF=0.5 ||| 0-0", "needs an index"),
    ("[X] ||| der [X,2] ||| the [X,2] ||| EgivenF=0.5 ||| 0-0", "indexed 1..1"),
    ("[X] ||| der [X,1] ||| the [X,1] ||| EgivenF=0.5 ||| 0-2", "outside the rule"),
    ("[X] ||| der [X,1] ||| the [X,1] ||| EgivenF=x ||| 0-0", "bad feature value"),
    ("[X] ||| der [X,1] |||  ||| EgivenF=0.5 ||| 0-0", "empty target"),
])
def test_read_grammar_errors_after_read_lines_name_the_line(tmp_path, line, message):
    path = tmp_path / "g.txt"  # the first two lines set the reader's shortcuts for the third
    path.write_text(f"{READER_LINES[0]}\n{READER_LINES[1]}\n{line}\n", encoding="utf-8")
    with pytest.raises(ClirplugError, match=f"g.txt:3: .*{message}"):
        read_grammar(path)


# ---------------------------------------------------------------- writing and round trips

RULES = [
    Rule("X", ("der", "[X,1]"), ("the", "[X,1]"), (("EgivenF", 0.1), ("Count", 3.0)), ((0, 0), (1, 1))),
    Rule("X", ("[X,1]", "von", "[X,2]"), ("[X,2]", "of", "[X,1]"), (("0", 1 / 3), ("1", -0.0)), ((1, 1),)),
    Rule("S", ("ü",), ("ue",), (), ()),
]


def test_format_rule():
    assert format_rule(RULES[0]) == "[X] ||| der [X,1] ||| the [X,1] ||| EgivenF=0.1 Count=3.0 ||| 0-0 1-1"
    assert format_rule(RULES[1]) == "[X] ||| [X,1] von [X,2] ||| [X,2] of [X,1] ||| 0.3333333333333333 -0.0 ||| 1-1"
    assert [parse_rule(format_rule(rule)) for rule in RULES] == RULES


@pytest.mark.parametrize("name", ["g.txt", "g.gz"])
def test_write_read_write_is_byte_identical(tmp_path, name):
    first, second = tmp_path / "1" / name, tmp_path / "2" / name
    write_grammar(RULES, first)
    assert read_grammar(first) == RULES
    write_grammar(read_grammar(first), second)
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes()[:2] == b"\x1f\x8b" if name.endswith(".gz") else True


def test_cdec_fixture_grammars_round_trip(cdec_clef06, tmp_path):
    paths = sorted((cdec_clef06 / "grammars").glob("grammar.*.gz"))
    assert len(paths) == 50
    total = 0
    for path in paths:
        rules = read_grammar(path)
        original = gzip.open(path, "rt", encoding="utf-8").read().splitlines()
        assert len(rules) == len(original)
        total += len(rules)
        # every line is reproduced exactly, plus cdec's default LHS
        assert [format_rule(rule) for rule in rules] == ["[X] ||| " + line.strip() for line in original]
        first, second = tmp_path / "a.gz", tmp_path / "b.gz"
        write_grammar(rules, first)
        write_grammar(read_grammar(first), second)
        assert first.read_bytes() == second.read_bytes()
    assert total == 31565  # zcat grammar.*.gz | wc -l


# ---------------------------------------------------------------- pruning


def _rule(src, tgt, cost):
    return Rule("X", tuple(src.split()), tuple(tgt.split()), (("Cost", cost), ("Bonus", -cost)))


def test_prune_keeps_top_n_per_source_side_in_input_order():
    rules = [_rule("a", "x", 3.0), _rule("a", "y", 1.0), _rule("b", "x", 5.0), _rule("a", "z", 2.0), _rule("a", "w", 1.0)]
    assert prune(rules, 2, "Cost") == [rules[1], rules[2], rules[4]]  # a: y and w (tie broken by target)
    assert prune(rules, 1, "Bonus", lower_is_better=False) == [rules[2], rules[4]]
    assert prune(rules, 2, {"Cost": -1.0}) == [rules[0], rules[2], rules[3]]  # weighted score: -Cost
    assert prune(rules, 10, "Cost") == rules
    with pytest.raises(ClirplugError):
        prune(rules, 0, "Cost")


# ---------------------------------------------------------------- per-sentence filtering


def _brute_force_matches(src, tokens):
    """Try every span and every split of it among the nonterminals (each covers >= 1 token)."""
    n = len(tokens)
    for i in range(n):
        for j in range(i + 1, n + 1):
            if _match_exactly(src, tokens[i:j]):
                return True
    return False


def _match_exactly(pattern, words):
    if not pattern:
        return not words
    head = pattern[0]
    if is_nonterminal(head):
        return any(_match_exactly(pattern[1:], words[k:]) for k in range(1, len(words) + 1))
    return bool(words) and words[0] == head and _match_exactly(pattern[1:], words[1:])


def test_source_matches_equals_brute_force():
    tokens = "a b a c b a".split()
    alphabet = ["a", "b", "c", "d", "[X,1]", "[X,2]"]
    checked = 0
    for length in range(1, 5):
        for src in itertools.product(alphabet, repeat=length):
            if src.count("[X,1]") > 1 or src.count("[X,2]") > 1:
                continue
            assert source_matches(src, tokens) == _brute_force_matches(src, tokens), src
            checked += 1
    assert checked > 1000


def test_filter_for_sentence():
    rules = [
        Rule("X", ("b", "[X,1]", "a"), ("B", "[X,1]", "A")),  # b [c] a
        Rule("X", ("a", "[X,1]", "b"), ("A", "[X,1]", "B")),  # the only "a ... b" is adjacent: no gap
        Rule("X", ("[X,1]", "a"), ("[X,1]", "A")),
        Rule("X", ("a", "[X,1]"), ("A", "[X,1]")),
        Rule("X", ("c", "a"), ("C", "A")),
        Rule("X", ("a", "c"), ("A", "C")),
        Rule("X", ("z",), ("Z",)),
    ]
    kept = filter_for_sentence(rules, "a b c a".split())
    assert kept == [rules[0], rules[2], rules[3], rules[4]]


def test_read_grammar_restricted_to_sentences_keeps_the_rules_whose_terminal_runs_are_phrases(tmp_path):
    rules = [
        Rule("X", ("a", "[X,1]", "b"), ("A", "[X,1]", "B"), (("EgivenF", 0.5),), ((0, 0), (2, 2))),
        Rule("X", ("[X,1]", "c"), ("[X,1]", "C"), (("EgivenF", 0.1),), ((1, 1),)),
        Rule("X", ("a",), ("A",), (("EgivenF", 0.2),), ((0, 0),)),
        Rule("X", ("z", "a"), ("Z", "A"), (("EgivenF", 0.3),), ((0, 0), (1, 1))),
    ]
    for name in ("grammar.gz", "grammar.txt"):
        write_grammar(rules, tmp_path / name)
        assert read_grammar(tmp_path / name) == rules
        assert read_grammar(tmp_path / name, SourcePhrases([["a", "x", "b"]])) == [rules[0], rules[2]]
        # the words of "z a" occur, but not as a phrase: the rule cannot apply
        assert read_grammar(tmp_path / name, SourcePhrases([["a", "z"], ["c"]])) == [rules[1], rules[2]]
        assert read_grammar(tmp_path / name, SourcePhrases([["c", "z", "a"]])) == rules[1:]
        assert read_grammar(tmp_path / name, SourcePhrases()) == []
    # cdec's 4-field form (no left-hand side) is filtered on its source field too
    (tmp_path / "four.txt").write_text("[X,1] c ||| [X,1] C ||| 0.1\nz a ||| Z A ||| 0.3\n", encoding="utf-8")
    assert [r.src for r in read_grammar(tmp_path / "four.txt", SourcePhrases([["c"]]))] == [("[X,1]", "c")]


def test_source_phrases_admit_a_superset_of_the_rules_usable_on_a_sentence():
    rng = random.Random(5)
    words = ["a", "b", "c"]
    for _ in range(300):
        sentences = [[rng.choice(words) for _ in range(rng.randint(1, 5))] for _ in range(rng.randint(1, 3))]
        restriction = SourcePhrases(sentences)
        src = tuple(rng.choice(words + ["[X,1]"]) for _ in range(rng.randint(1, 4)))
        usable = any(source_matches(src, tokens) for tokens in sentences)
        assert not usable or restriction.admits(" ".join(src))
        # and it is exact for sources without nonterminals
        if "[X,1]" not in src:
            assert restriction.admits(" ".join(src)) == usable


def test_a_restricted_read_checks_the_skipped_lines_once_per_version_of_the_file(tmp_path, monkeypatch):
    from clirplug.mt import grammar

    path = tmp_path / "g.txt"
    path.write_text(f"{READER_LINES[0]}\n[X] ||| haus ||| house ||| EgivenF=0.5 ||| 0-0\n", encoding="utf-8")
    restriction = SourcePhrases([["der"]])
    assert len(read_grammar(path, restriction)) == 1
    assert (tmp_path / "g.txt.checked").is_file()
    monkeypatch.setattr(grammar, "_CHECKED", set())  # a later process: the stamp says the file was checked
    monkeypatch.setattr(grammar, "_check_line", lambda line, where: pytest.fail(f"{where} checked again"))
    assert len(read_grammar(path, restriction)) == 1
    monkeypatch.undo()
    path.write_text(f"{READER_LINES[0]}\n[X] ||| haus ||| house ||| EgivenF=x ||| 0-0\n", encoding="utf-8")
    with pytest.raises(ClirplugError, match="g.txt:2: .*bad feature value"):  # a new version is checked again
        read_grammar(path, restriction)
