"""Queries of any size and inputs that used to give a silently wrong result (docs/reliability.md, "Queries and
silent wrongs"): the text steps of the query path are linear, a 1 MB query is answered in bounded time, and each
former silent wrong is refused with one line or named in a warning."""

import re
import time

import pytest
from conftest import TOPICS, check_refused, jsonl, put, run_cli

pytestmark = pytest.mark.cli

MEGABYTE = 1_000_000
BOUND = 10.0  # seconds: generous (the query path takes about one on an idle machine), and far below the minutes of before


def test_compound_splitting_is_bounded_on_a_long_word():
    """A 1 MB word made of known parts (quadratic before: a 300 KB word took 40 s) is left whole at once; a
    compound of known parts is split as before."""
    from clirplug.mt.compound import CompoundSplitter

    splitter = CompoundSplitter({"datei": 30, "namen": 20, "haus": 50, "tür": 9}, min_length=4)
    assert splitter.split("dateinamen") == ["datei", "namen"]
    for word in ("dateinamen" * (MEGABYTE // 10), "haus" * (MEGABYTE // 4), "x" * MEGABYTE):
        start = time.perf_counter()
        assert splitter.split(word) == [word]
        assert time.perf_counter() - start < 1.0


def test_sentence_splitting_is_linear():
    """Many boundaries skipped after abbreviations (each re-read the text before them, quadratic before)."""
    from clirplug.mt.preprocess import split_sentences

    text = "Siehe z.B. A " * (MEGABYTE // 13)
    start = time.perf_counter()
    assert len(split_sentences(text, "de")) == 1
    assert time.perf_counter() - start < BOUND


@pytest.mark.parametrize("shape", ["one word", "German text"])
def test_a_one_megabyte_query_is_answered_in_bounded_time(workspace, capsys, shape):
    """Preprocessing, the 1-best and the PSQ table of a 1 MB query: the first MAX_QUERY_TOKENS tokens are translated,
    with a warning saying so."""
    from clirplug.api import TranslationModel
    from clirplug.mt.compound import CompoundSplitter
    from clirplug.mt.preprocess import COMPOUND_FILE, MAX_QUERY_TOKENS

    CompoundSplitter({"dateien": 5, "kopieren": 5, "verzeichnis": 3}).save(workspace / "model" / COMPOUND_FILE.format(lang="de"))
    query = ("dateienkopieren" * (MEGABYTE // 15) if shape == "one word"
             else "Dateien kopieren in Verzeichnis verschieben. " * (MEGABYTE // 45))
    model = TranslationModel(workspace / "model", cache=False)
    start = time.perf_counter()
    best = model.translate(query)
    table = model.psq_table(query)
    seconds = time.perf_counter() - start
    assert seconds < BOUND, f"{seconds:.1f} s"
    err = capsys.readouterr().err
    if shape == "German text":
        assert len(best[0][0].split()) >= MAX_QUERY_TOKENS // 2 and len(table) <= MAX_QUERY_TOKENS
        assert re.search(rf"has [\d,]+ MT tokens; only the first {MAX_QUERY_TOKENS:,} are translated", err), err
    else:
        assert best and len(table) == 1


def test_query_limit_keeps_the_first_tokens(capsys):
    from clirplug.mt.preprocess import query_limit

    sentences = [["a"] * 100] * 15
    kept = query_limit(sentences, "topic 'q1': its desc", limit=1_000)
    assert sum(map(len, kept)) == 1_000 and len(kept) == 10
    assert "topic 'q1': its desc has 1,500 MT tokens; only the first 1,000 are translated" in capsys.readouterr().err
    assert query_limit(sentences[:3], "x", limit=1_000) == sentences[:3]


REFUSED = [
    ("--psq with a key given twice",
     ["search", "--method", "psq", "--index", "{w}/index", "--topics", "{w}/topics.jsonl", "--output", "{w}/old.trec",
      "--model", "{w}/model", "--psq", "pL=0.1,pL=0.2", "--quiet"], {}, r"--psq: option 'pL' given twice"),
    ("fuse with an empty run", ["fuse", "--runs", "{w}/a.trec", "{w}/empty.trec", "--output", "{w}/old.trec"],
     {"empty.trec": ""}, r"{w}/empty\.trec: an empty run \(no result line\)"),
    ("a source language the model was not trained on",
     ["translate", "--model", "{w}/model", "--input", "{w}/topics.jsonl", "--output", "{w}/old.txt", "--no-cache",
      "--src-lang", "zh"], {"model/align.de-en": "0-0\n"},
     r"{w}/model: a model trained on de text \(align\.de-\*\), not on zh: the source language \(zh\) does not match"),
    ("a lone surrogate in a title",
     ["translate", "--model", "{w}/model", "--input", "{w}/s.jsonl", "--output", "{w}/old.txt", "--no-cache"],
     {"s.jsonl": '{"id": "q1", "title": "dateien \\ud800 kopieren"}\n'},
     r"s\.jsonl:1: field 'title': '\\ud800' is a lone surrogate, not a character"),
    ("titles of zero-width characters only",
     ["translate", "--model", "{w}/model", "--input", "{w}/blank.jsonl", "--output", "{w}/old.txt", "--no-cache"],
     {"blank.jsonl": jsonl([{"id": "q1", "title": "\u200b\u200d"}, {"id": "q2", "title": " \ufeff "}])},
     r"blank\.jsonl: no topic has a 'title' field"),
]


@pytest.mark.parametrize("argv, files, message", [pytest.param(*row[1:], id=row[0]) for row in REFUSED])
def test_refused(workspace, capsys, argv, files, message):
    put(workspace, files)
    check_refused(argv, workspace, capsys, message)


def test_a_blank_title_is_named(workspace, capsys):
    put(workspace, {"some.jsonl": jsonl([TOPICS[0], {"id": "q9", "title": "\u200b"}])})
    code, _, err = run_cli(["translate", "--model", "{w}/model", "--input", "{w}/some.jsonl", "--output",
                            "{w}/new.txt", "--no-cache"], workspace, capsys)
    assert code == 0, err
    assert "1 of 2 topics have an empty 'title' field and get no results (q9)" in err


def test_negative_probabilities_are_refused(workspace):
    """A lexical table with probabilities outside [0, 1] (MAP 0.4957 -> 0.0329 when used) names the entry."""
    from clirplug.errors import ClirplugError
    from clirplug.mt.lexicon import LexicalTable

    LexicalTable.from_entries([("dateien", "files", 0.7), ("dateien", "data", -0.3)]).save(workspace / "neg.npz")
    with pytest.raises(ClirplugError, match=r"neg\.npz: p\('data' \| 'dateien'\) = -0\.3 is outside \[0, 1\]"):
        LexicalTable.load(workspace / "neg.npz")


def test_candidates_of_other_topics_are_refused(workspace):
    from clirplug.errors import ClirplugError
    from clirplug.io.runs import check_shared_topics, read_run
    from clirplug.io.topics import read_topics

    put(workspace, {"other.trec": "q7 Q0 cp.1 1 2.0 x\n"})
    topics = read_topics(workspace / "topics.jsonl")
    with pytest.raises(ClirplugError, match=r"other\.trec: the candidates share no topic with the topics"):
        check_shared_topics(read_run(workspace / "other.trec"), topics)
    check_shared_topics(read_run(workspace / "a.trec"), topics)
