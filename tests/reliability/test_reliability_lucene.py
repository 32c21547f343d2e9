"""The cases that need a real Lucene index (the JVM starts once, in this process)."""

import re
import shutil

import pytest
from conftest import DOCS, check_refused, jsonl, put, run_cli

pytestmark = pytest.mark.jvm


@pytest.fixture(scope="module")
def lucene_index(tmp_path_factory):
    from clirplug.lucene.index import build_index

    folder = tmp_path_factory.mktemp("lucene")
    (folder / "corpus.jsonl").write_text(jsonl(DOCS), encoding="utf-8")
    build_index(folder / "corpus.jsonl", folder / "index", language="en", progress=False)
    from clirplug.lucene.reader import LuceneIndex

    index = LuceneIndex(folder / "index", progress=False)  # its caches now, so that a case adds no file
    index.doc_lengths, index.terms
    index.close()
    return folder / "index"


@pytest.fixture
def indexed(workspace, lucene_index):
    shutil.rmtree(workspace / "index")
    shutil.copytree(lucene_index, workspace / "index")
    return workspace


BOWFD = ["rerank", "--method", "bowfd", "--model", "{w}/model", "--index", "{w}/index", "--topics", "{w}/topics.jsonl",
         "--candidates", "{w}/cand.trec", "--output", "{w}/old.trec", "--quiet"]
WARNED = [
    ("bowfd: candidates missing from the index", BOWFD,
     {"cand.trec": "q1 Q0 cp.1 1 3.0 c\nq1 Q0 gone.1 2 2.0 c\nq2 Q0 mv.1 1 3.0 c\nq2 Q0 gone.2 2 1.0 c\n"},
     r"BOW-FD: 2 of 4 candidate documents are not in the index \(first: 'gone\.1' of topic 'q1'\); they are dropped",
     {"q1": ["cp.1"], "q2": ["mv.1"]}),
    ("search: a topic without the field", ["search", "--index", "{w}/index", "--topics", "{w}/t.jsonl", "--field", "desc",
                                           "--output", "{w}/old.trec", "--quiet"],
     {"t.jsonl": jsonl([{"id": "q1", "title": "x", "desc": "copy files"}, {"id": "q2", "title": "move"}])},
     r"t\.jsonl: 1 of 2 topics have an empty 'desc' field and get no results \(q2\)",
     {"q1": ["cp.1", "mv.1", "ls.1"]}),
]


@pytest.mark.parametrize("argv, files, warning, ranked", [pytest.param(*row[1:], id=row[0]) for row in WARNED])
def test_written_with_a_warning(indexed, capsys, argv, files, warning, ranked):
    put(indexed, files)
    code, _, err = run_cli(argv, indexed, capsys)
    assert code == 0 and "Traceback" not in err, err
    assert [line for line in err.splitlines() if re.search(warning, line)], err
    run = {}
    for line in (indexed / "old.trec").read_text().splitlines():
        qid, _, docid, *_ = line.split()
        run.setdefault(qid, []).append(docid)
    assert {qid: sorted(docids) for qid, docids in run.items()} == {qid: sorted(d) for qid, d in ranked.items()}


def test_candidates_of_another_collection_are_refused(indexed, capsys):
    put(indexed, {"cand.trec": "q1 Q0 other.1 1 3.0 c\nq2 Q0 other.2 1 3.0 c\n"})
    check_refused(BOWFD, indexed, capsys, r"BOW-FD: 2 of 2 candidate documents are not in the index \(first: "
                                          r"'other\.1' of topic 'q1'\): are the candidates from another collection\?")


@pytest.mark.parametrize("big, warning", [
    ({"id": "huge", "contents": "x" * 20_000_001},
     r"document 'huge' has 20,000,001 characters, more than Lucene's indexer reads \(20,000,000\); it is not indexed"),
    ({"id": "x" * 40_000, "contents": "a document with a long id"},
     r"document 'x{40}\.\.\.' has an id of more than 32,766 bytes, Lucene's longest term; it is not indexed"),
    ({"id": "blank", "title": " ", "contents": "\t\n"}, r"document 'blank' has no text; it is not indexed"),
], ids=["a 20 MB document", "a 40,000-byte id", "an empty document"])
def test_a_document_lucene_cannot_index_is_named_and_the_others_indexed(workspace, capsys, big, warning):
    """The first two made Anserini drop every document of their batch (and print a Java stack trace);
    the third failed the whole build at its end with no word on which document."""
    from clirplug.lucene.reader import LuceneIndex

    put(workspace, {"docs.jsonl": jsonl([DOCS[0], big, *DOCS[1:]])})
    code, _, err = run_cli(["index", "--corpus", "{w}/docs.jsonl", "--index", "{w}/new", "--quiet"], workspace, capsys)
    assert code == 0 and "Traceback" not in err, err
    (line,) = [line for line in err.splitlines() if line.startswith("clirplug:")]
    assert re.fullmatch(rf"clirplug: warning: {re.escape(str(workspace))}/docs\.jsonl: {warning}", line), line
    index = LuceneIndex(workspace / "new", progress=False)
    assert sorted(index.docids.tolist()) == sorted(doc["id"] for doc in DOCS)
    index.close()
    assert not list(workspace.glob(".new*"))


@pytest.mark.parametrize("segment_file, named", [("_0.fdt", r"{w}/index/_0\.fdt"), ("_0.si", r"{w}/index/segments_1")])
def test_a_missing_segment_file_is_one_line(indexed, capsys, segment_file, named):
    (indexed / "index" / segment_file).unlink()
    check_refused(["search", "--index", "{w}/index", "--topics", "{w}/topics.jsonl", "--output", "{w}/old.trec",
                   "--quiet"], indexed, capsys,
                  r"{w}/index: cannot open the Lucene index \(CorruptIndexException: .*" + named + r".*\); "
                  r"rebuild it with `clirplug index`")


def test_a_run_to_standard_output_holds_the_run_only(indexed, capfd):
    """``search --output -``: stdout (Java's included) is the run file's lines, and what was written is said on stderr."""
    from clirplug.cli import main

    put(indexed, {"en.jsonl": jsonl([{"id": "q1", "title": "copy files"}, {"id": "q2", "title": "list directory"}])})
    search = ["search", "--index", f"{indexed}/index", "--topics", f"{indexed}/en.jsonl", "--quiet"]
    assert main([*search, "--output", f"{indexed}/run.trec", "--run-tag", "clirplug"]) == 0
    capfd.readouterr()
    assert main([*search, "--output", "-"]) == 0
    out, err = capfd.readouterr()
    assert out == (indexed / "run.trec").read_text() and len(out.splitlines()) == 6
    assert err == "wrote -: 2 of 2 topics with results, 6 lines\n"


def test_a_query_of_more_than_1024_distinct_terms_is_searched(lucene_index):
    """Lucene's limit of 1,024 clauses is raised (TooManyClauses and a stack trace before)."""
    from clirplug.api import LuceneSearcher

    query = "copy " + " ".join(f"word{k}" for k in range(3000))
    hits = LuceneSearcher(lucene_index).search(query)
    assert [hit.docid for hit in hits] == ["cp.1"]


def test_bad_bowfd_weights_are_refused_when_the_searcher_is_built(workspace, lucene_index):
    """A searcher kept loaded (the service) refuses a bad weights file at once, as clirplug rerank does."""
    from clirplug.api import BowfdSearcher
    from clirplug.errors import ClirplugError

    put(workspace, {"bad.weights": "SMT:NoSuchFeature 1.0\n"})
    with pytest.raises(ClirplugError, match=r"bad\.weights"):
        BowfdSearcher(lucene_index, workspace / "model", weights=workspace / "bad.weights")


def test_ctrl_c_twice_stops_the_service_without_a_traceback(lucene_index):
    """``clirplug serve`` stops on Ctrl-C once its requests are answered; a second Ctrl-C is ignored, as by every
    command (uvicorn's forced exit cancelled the shutdown and logged a ``CancelledError`` traceback)."""
    import json
    import select
    import signal
    import subprocess
    import sys
    import time
    import urllib.request

    proc = subprocess.Popen([sys.executable, "-m", "clirplug", "serve", "--index", str(lucene_index), "--method", "bm25",
                             "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 120)
        assert ready, "the service did not start within 120 s"
        line = proc.stdout.readline()
        url = re.search(r"on (http://\S+/) \(Ctrl-C stops\)", line).group(1)
        with urllib.request.urlopen(url + "search?q=files&k=2", timeout=30) as response:
            assert response.status == 200 and json.load(response)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.001)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert out == "clirplug serve: stopped\n"
