"""``clirplug search``: run files equal Anserini's own SimpleSearcher."""

import pytest

from clirplug.cli import main
from clirplug.io.runs import read_run
from clirplug.io.topics import read_topics
from clirplug.lucene._jvm import jclass


def anserini_run(index, queries, hits, k1=0.9, b=0.4):
    searcher = jclass("io.anserini.search.SimpleSearcher")(str(index))
    searcher.set_bm25(k1, b)
    return {qid: [(h.docid, h.score) for h in searcher.search(text, hits)] if text.strip() else []
            for qid, text in queries.items()}


def assert_same_as_anserini(run, expected):
    for qid, hits in expected.items():
        ours = run[run["qid"] == qid].sort_values("rank")
        assert ours["docid"].tolist() == [d for d, _ in hits], qid
        assert ours["rank"].tolist() == list(range(1, len(hits) + 1))
        assert ours["score"].round(4).tolist() == [round(s, 4) for _, s in hits], qid


def test_search_cli_on_tiny_index(tiny_index, tmp_path):
    topics = tmp_path / "topics.tsv"
    topics.write_text("q.1\tcopy files\nq.2\tpatterns in lines\nq.3\tthe\n", encoding="utf-8")
    output = tmp_path / "run.trec"
    assert main(["search", "--index", str(tiny_index), "--topics", str(topics), "--output", str(output),
                 "--hits", "3", "--k1", "1.2", "--b", "0.75", "--quiet"]) == 0
    run = read_run(output)
    assert set(run["tag"]) == {"run"}
    assert run.groupby("qid").size().to_dict() == {"q.1": 3, "q.2": 1}  # "the" is a stopword: no results
    assert_same_as_anserini(run, anserini_run(tiny_index, {"q.1": "copy files", "q.2": "patterns in lines"}, 3, 1.2, 0.75))


def test_search_cli_reports_bad_input(tiny_index, tmp_path, capsys):
    topics = tmp_path / "topics.tsv"
    topics.write_text("q.1\tcopy files\n", encoding="utf-8")
    assert main(["search", "--index", str(tmp_path), "--topics", str(topics), "--output", str(tmp_path / "r")]) == 2
    assert "not a Lucene index" in capsys.readouterr().err
    assert main(["search", "--index", str(tiny_index), "--topics", str(topics), "--output", str(tmp_path / "r"),
                 "--hits", "0"]) == 2
    assert "--hits must be at least 1" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("field", ["title", "desc"])
def test_manclir_dev_run_equals_anserini(manclir_de, manclir_index, tmp_path, field):
    output = tmp_path / f"bm25.{field}.trec"
    assert main(["search", "--index", str(manclir_index), "--topics", str(manclir_de / "topics.dev.jsonl"),
                 "--field", field, "--output", str(output), "--quiet"]) == 0
    topics = read_topics(manclir_de / "topics.dev.jsonl")
    run = read_run(output)
    answered = set(run["qid"])
    # every 5th topic here, to keep the suite short; benchmarks/search_conformance.py checks all of them
    expected = anserini_run(manclir_index, {t.id: getattr(t, field) for t in topics[::5]}, 1000)
    assert {qid for qid, hits in expected.items() if hits} == answered & set(expected)
    assert_same_as_anserini(run, expected)
