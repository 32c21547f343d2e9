"""``clirplug passages`` and the MaxP options of ``clirplug eval`` (Pyserini's ``--max-passage`` names)."""

import json

import pytest

from clirplug.cli import main
from clirplug.corpus import read_corpus

pytestmark = pytest.mark.cli

QRELS = "q1 0 a 1\nq1 0 b 0\nq2 0 c 1\n"
# passages: a's best is 3.0 (rank 2 as a page after b), c's best is 5.0
PASSAGE_RUN = ("q1 Q0 b#0 1 4.0 P\nq1 Q0 a#1 2 3.0 P\nq1 Q0 b#1 3 2.5 P\nq1 Q0 a#0 4 1.0 P\n"
               "q2 Q0 c#2 1 5.0 P\nq2 Q0 d#0 2 4.0 P\n")
PAGE_RUN = "q1 Q0 b 1 4.0 P\nq1 Q0 a 2 3.0 P\nq2 Q0 c 1 5.0 P\nq2 Q0 d 2 4.0 P\n"


def test_passages_writes_the_passage_corpus(tmp_path, capsys):
    corpus = tmp_path / "pages.jsonl"
    corpus.write_text(json.dumps({"id": "a.1", "title": "A", "contents": "w " * 250}) + "\n", encoding="utf-8")
    out = tmp_path / "passages.jsonl"
    assert main(["passages", "--corpus", str(corpus), "--output", str(out), "--quiet"]) == 0
    assert [(p.id, len(p.contents.split())) for p in read_corpus(out)] == [("a.1#0", 100), ("a.1#1", 100), ("a.1#2", 50)]
    assert "3 passages of at most 100 words from 1 pages" in capsys.readouterr().out
    assert main(["passages", "--corpus", str(corpus), "--output", str(out), "--words", "0"]) == 2
    assert "at least 1 word" in capsys.readouterr().err


def test_eval_max_passage_scores_the_pages_by_their_best_passage(tmp_path, capsys):
    for name, text in (("qrels", QRELS), ("passages.trec", PASSAGE_RUN), ("pages.trec", PAGE_RUN)):
        (tmp_path / name).write_text(text)
    assert main(["eval", str(tmp_path / "passages.trec"), "--qrels", str(tmp_path / "qrels"), "--measures", "AP",
                 "--format", "json", "--max-passage"]) == 0
    by_maxp = json.loads(capsys.readouterr().out)
    assert main(["eval", str(tmp_path / "pages.trec"), "--qrels", str(tmp_path / "qrels"), "--measures", "AP",
                 "--format", "json"]) == 0
    by_pages = json.loads(capsys.readouterr().out)
    assert [r["value"] for r in by_maxp] == [r["value"] for r in by_pages] == [pytest.approx((0.5 + 1) / 2)]
    assert main(["eval", str(tmp_path / "passages.trec"), "--qrels", str(tmp_path / "qrels"), "--max-passage-hits", "5"]) == 2
    assert "--max-passage-hits and --max-passage-delimiter need --max-passage" in capsys.readouterr().err
