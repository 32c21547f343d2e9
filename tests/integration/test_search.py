"""``clirplug search``: run files equal Anserini's own SimpleSearcher."""

import pytest

from clirplug.cli import main
from clirplug.io.runs import read_run
from clirplug.io.topics import read_topics
from clirplug.lucene.anserini import read_tsv_topics, simple_search

pytestmark = pytest.mark.jvm


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
    assert_same_as_anserini(run, simple_search(tiny_index, {"q.1": "copy files", "q.2": "patterns in lines"}, 3, 1.2, 0.75))


def test_search_all_adds_each_querys_seconds_to_latencies(tiny_index):
    from clirplug.lucene.search import Bm25Searcher

    searcher = Bm25Searcher(tiny_index)
    queries = {"q.1": "copy files", "q.2": "patterns in lines", "q.3": "the"}
    latencies = {"q.1": 100.0}
    run = searcher.search_all(queries, 5, progress=False, latencies=latencies)
    assert run.equals(searcher.search_all(queries, 5, progress=False))
    assert sorted(latencies) == sorted(queries) and latencies["q.1"] > 100.0
    assert all(0 < latencies[qid] < 100 for qid in ("q.2", "q.3"))
    searcher.close()


def test_search_cli_writes_pyserini_score_format(tiny_index, tmp_path):
    """--score-format pyserini: byte for byte the file Pyserini's TrecWriter writes for SimpleSearcher's hits
    (pyserini/output_writer.py: f'{topic} Q0 {docid} {rank} {score:.6f} {tag}')."""
    topics = tmp_path / "topics.tsv"
    queries = {"q.1": "copy files", "q.2": "patterns in lines", "q.4": "directory files"}
    topics.write_text("".join(f"{qid}\t{text}\n" for qid, text in queries.items()), encoding="utf-8")
    output = tmp_path / "run.trec"
    assert main(["search", "--index", str(tiny_index), "--topics", str(topics), "--output", str(output),
                 "--hits", "5", "--run-tag", "Anserini", "--score-format", "pyserini", "--quiet"]) == 0
    pyserini = "".join(f"{qid} Q0 {docid} {rank} {score:.6f} Anserini\n"
                       for qid, hits in simple_search(tiny_index, queries, 5).items()
                       for rank, (docid, score) in enumerate(hits, 1))
    assert output.read_text() == pyserini and len(pyserini.splitlines()) > 8


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
    expected = simple_search(manclir_index, {t.id: getattr(t, field) for t in topics[::5]}, 1000)
    assert {qid for qid, hits in expected.items() if hits} == answered & set(expected)
    assert_same_as_anserini(run, expected)


def test_translated_tsv_topics_are_searched_as_dt_searches_them(tiny_index, tmp_path):
    """``translate --format tsv`` then ``search`` (BM25) is DT: the same run; Anserini reads the same topics."""
    from test_bowfd_lucene import GRAMMAR, LM_TEXT

    from clirplug.mt.grammar import parse_rule, write_grammar
    from clirplug.mt.lm import FALLBACK_DISCOUNTS, estimate, write_arpa

    model = tmp_path / "model"
    model.mkdir()
    write_grammar([parse_rule(line) for line in GRAMMAR.splitlines()], model / "grammar.hiero.gz")
    write_arpa(estimate([s.split() for s in LM_TEXT], order=3, discount_fallback=FALLBACK_DISCOUNTS), model / "lm.arpa")
    topics = tmp_path / "topics.jsonl"
    topics.write_text('{"id": "de.1", "title": "dateien kopieren"}\n{"id": "de.2", "title": "verzeichnis verschieben"}\n'
                      '{"id": "de.3", "title": "dateien in verzeichnis verschieben"}\n', encoding="utf-8")
    translated = tmp_path / "topics.en.tsv"
    assert main(["translate", "--model", str(model), "--input", str(topics), "--format", "tsv", "--output",
                 str(translated), "--no-cache", "--quiet"]) == 0
    queries = {topic.id: topic.title for topic in read_topics(translated)}
    assert read_tsv_topics(translated) == queries and len(queries) == 3
    common = ["--index", str(tiny_index), "--hits", "4", "--run-tag", "x", "--quiet"]
    assert main(["search", "--topics", str(translated), "--output", str(tmp_path / "bm25.trec"), *common]) == 0
    assert main(["search", "--method", "dt", "--model", str(model), "--topics", str(topics),
                 "--output", str(tmp_path / "dt.trec"), *common]) == 0
    assert (tmp_path / "bm25.trec").read_bytes() == (tmp_path / "dt.trec").read_bytes()
    assert_same_as_anserini(read_run(tmp_path / "bm25.trec"), simple_search(tiny_index, queries, 4))
