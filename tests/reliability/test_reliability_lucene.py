"""The cases that need a real Lucene index (the JVM starts once, in this process)."""

import re
import shutil

import pytest
from conftest import DOCS, check_refused, jsonl, put, run_cli


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
