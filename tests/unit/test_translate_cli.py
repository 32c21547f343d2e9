"""``clirplug translate``: TSV topics other tools read, and n-best lists of distinct strings."""

import json
import re
import sys

import pytest

from clirplug.cli import main
from clirplug.io.topics import read_topics
from clirplug.mt.decoder import unique_translations
from clirplug.mt.grammar import parse_rule, write_grammar
from clirplug.mt.kbest import kbest
from clirplug.mt.translator import Translator

from test_decoder import ARPA, GRAMMAR

pytestmark = pytest.mark.cli

# ----------------------------------------------------------------------------- FIXTURES

# A grammar with spurious ambiguity: a run of x's is segmented in many ways (x, x x, x x x, glued)
# that all yield a's, and the one alternative, x -> b, is far worse. The n best derivations of
# a long run are all "a a ... a"; its second distinct string comes after dozens of derivations.
SPURIOUS = """\
[X] ||| x ||| a ||| EgivenF=0.1 FgivenE=0.1 ||| 0-0
[X] ||| x x ||| a a ||| EgivenF=0.1 FgivenE=0.1 ||| 0-0 1-1
[X] ||| x x x ||| a a a ||| EgivenF=0.1 FgivenE=0.1 ||| 0-0 1-1 2-2
[X] ||| x ||| b ||| EgivenF=9 FgivenE=9 ||| 0-0
"""

TOPICS = [{"id": "t.1", "title": "x y", "desc": "x w y. x y"}, {"id": "t.2", "title": "x w y q", "desc": "z"},
          {"id": "t.3", "title": "", "desc": "x"}]


def _model(folder, grammar):
    folder.mkdir()
    write_grammar([parse_rule(line) for line in grammar.splitlines()], folder / "grammar.hiero.gz")
    (folder / "lm.arpa").write_text(ARPA)
    return folder


@pytest.fixture()
def model(tmp_path):
    return _model(tmp_path / "model", GRAMMAR)


@pytest.fixture()
def spurious(tmp_path):
    return _model(tmp_path / "spurious", SPURIOUS)


@pytest.fixture()
def topics(tmp_path):
    path = tmp_path / "topics.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in TOPICS))
    return path


def translate(*argv):
    return main(["translate", "--no-cache", "--quiet", *map(str, argv)])


# ----------------------------------------------------------------------------- --format tsv


def anserini_tsv_topics(path):
    """Anserini's ``TsvStringTopicReader`` (Pyserini's ``--topics FILE.tsv``), line by line: trim the
    line, split it at tabs, title = second field (a line without one is an ArrayIndexOutOfBounds)."""
    topics = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        fields = line.strip().split("\t")
        topics[fields[0]] = fields[1].strip()
    return topics


def pyterrier_singleline_topics(path):
    """PyTerrier's ``pt.io.read_topics(path, format="singleline")`` (``_read_topics_singleline``): skip
    blank and ``#`` lines, ``qid`` and ``query`` from the regex ``^([^:\\s]+)[\\s:]+(.*)$``."""
    rows = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            match = re.match(r"^([^:\s]+)[\s:]+(.*)$", line)
            assert match, f"PyTerrier cannot read {line!r}"
            rows[match.group(1)] = match.group(2)
    return rows


@pytest.mark.parametrize("field", ["title", "desc"])
def test_tsv_topics_are_the_1best_and_read_by_clirplug_anserini_and_pyterrier(model, topics, tmp_path, field, capsys):
    out = tmp_path / "translated.tsv"
    assert translate("--model", model, "--input", topics, "--field", field, "--format", "tsv", "--output", out) == 0
    assert translate("--model", model, "--input", topics, "--field", field, "--format", "text",
                     "--output", tmp_path / "1best.txt") == 0
    best = dict(zip([t["id"] for t in TOPICS], (tmp_path / "1best.txt").read_text().splitlines()))
    expected = {qid: text for qid, text in best.items() if text}  # an empty translation is left out
    ours = {topic.id: topic.title for topic in read_topics(out)}
    assert ours == {topic.id: topic.desc for topic in read_topics(out)} == expected
    assert anserini_tsv_topics(out) == expected == pyterrier_singleline_topics(out)
    translator = Translator(model, cache=False)
    topic = read_topics(topics)[0]
    assert ours["t.1"] == " ".join(w for tokens in translator.topic_sentences(topic, field)
                                   for w in translator.translate(tokens, 1)[0].words)
    if field == "title":
        assert "t.3" not in ours and "1 of 3 translations are empty" in capsys.readouterr().err


def test_tsv_of_plain_text_numbers_the_lines(model, tmp_path, capsys):
    source = tmp_path / "source.txt"
    source.write_text("x y\nx w y q\n")
    assert translate("--model", model, "--input", source, "--format", "tsv") == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[0] for line in lines] == ["1", "2"] and all(line.count("\t") == 1 for line in lines)


def test_text_refuses_nbest_lists(model, topics, capsys):
    assert translate("--model", model, "--input", topics, "--format", "text", "--nbest", "3") == 2
    assert "--format text writes the 1-best only" in capsys.readouterr().err


def test_nbest_tsv_is_the_default_for_topics_and_matches_the_jsonl(model, topics, tmp_path, capsys):
    assert translate("--model", model, "--input", topics, "--field", "desc", "--nbest", "3") == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert translate("--model", model, "--input", topics, "--field", "desc", "--nbest", "3", "--format", "jsonl",
                     "--output", tmp_path / "nbest.jsonl") == 0
    expected = [[record["id"], str(k), str(rank), f"{entry['score']:.4f}", " ".join(entry["words"])]
                for record in map(json.loads, (tmp_path / "nbest.jsonl").read_text().splitlines())
                for k, sentence in enumerate(record["sentences"], 1) for rank, entry in enumerate(sentence["nbest"], 1)]
    assert rows == expected and len({row[0] for row in rows}) == len(TOPICS)
    for qid in {row[0] for row in rows}:  # distinct strings in each sentence's list
        for k in {row[1] for row in rows if row[0] == qid}:
            texts = [row[4] for row in rows if row[:2] == [qid, k]]
            assert len(set(texts)) == len(texts)


# ----------------------------------------------------------------------------- distinct n-best strings


def _exhaustive_unique(translator, tokens):
    """Every distinct string of the forest with its best derivation's score, best first (k-best order)."""
    forest = translator.forest(tokens)
    best = {}
    for derivation in kbest(forest, translator.weights, 10**6):
        words = forest.derivation_yield(derivation)[0]
        best[words] = max(best.get(words, float("-inf")), derivation.score)
    return sorted(best.items(), key=lambda item: -item[1])


def test_unique_nbest_reads_past_the_spurious_derivations(spurious):
    translator = Translator(spurious, cache=False)
    tokens = ["x"] * 8
    plain = translator.translate(tokens, 3)
    assert {t.words for t in plain} == {("a",) * 8}  # the 3 best derivations: one string
    capped = translator.decoder.translate(tokens, 3, unique=True)  # cdec's cap: 20 n derivations read
    assert len(capped) < 3
    found = unique_translations(translator.forest(tokens), translator.weights, 3, sys.maxsize)  # no limit
    exhaustive = _exhaustive_unique(translator, tokens)
    assert [(t.words, t.score) for t in found] == [(w, pytest.approx(s)) for w, s in exhaustive[:3]]


@pytest.mark.parametrize("tokens", [["x", "w", "y"], ["x", "x", "y"], ["x", "y", "x", "y"]])
def test_unique_nbest_is_the_best_derivation_of_each_distinct_string(model, tokens):
    translator = Translator(model, cache=False)
    exhaustive = _exhaustive_unique(translator, tokens)
    for n in (1, 5, len(exhaustive), len(exhaustive) + 3):  # more than the forest has: all of them
        found = unique_translations(translator.forest(tokens), translator.weights, n, sys.maxsize)
        assert len({t.words for t in found}) == len(found) == min(n, len(exhaustive))
        assert [(t.words, t.score) for t in found] == [(w, pytest.approx(s)) for w, s in exhaustive[:n]]


def test_cli_nbest_is_distinct_strings_unless_derivations_are_asked(spurious, tmp_path):
    source = tmp_path / "source.txt"
    source.write_text("x x x x x x x x\n")
    capped = [(t.words, t.score) for t in Translator(spurious, cache=False).decoder.translate(["x"] * 8, 4, unique=True)]
    for option, expected in (([], capped), (["--derivations"], None)):
        out = tmp_path / f"nbest{len(option)}.jsonl"
        assert translate("--model", spurious, "--input", source, "--nbest", "4", *option, "--format", "jsonl",
                         "--output", out) == 0
        nbest = [(tuple(t["words"]), t["score"]) for t in json.loads(out.read_text())["sentences"][0]["nbest"]]
        if expected is None:  # the 4 best derivations: one string
            assert len(nbest) == 4 and len({words for words, _ in nbest}) == 1
        else:  # cdec's cap (20 n derivations read) leaves fewer strings than asked on this forest
            assert nbest == [(w, pytest.approx(score)) for w, score in expected]
            assert len({words for words, _ in nbest}) == len(nbest)


# ----------------------------------------------------------------------------- old names


def test_old_option_names_still_work(model, topics, tmp_path):
    assert translate("--model", model, "--input", topics, "--lang", "de", "--format", "tsv", "--out",
                     tmp_path / "old.tsv") == 0
    assert translate("--model", model, "--input", topics, "--src-lang", "de", "--format", "tsv", "--output",
                     tmp_path / "new.tsv") == 0
    assert (tmp_path / "old.tsv").read_bytes() == (tmp_path / "new.tsv").read_bytes()
