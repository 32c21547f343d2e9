"""TREC qrels reader."""

import pytest

from clirplug.errors import ClirplugError
from clirplug.io.qrels import read_qrels

pytestmark = pytest.mark.unit


def test_reads_graded_qrels_with_string_ids(tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text("ls.1 0 ls.1 2\nls.1 0 dir.1 1\n\n301\t0\tFT-1\t0\n002 Q0 d -1\n")
    qrels = read_qrels(path)
    assert list(qrels.columns) == ["qid", "docid", "relevance"]
    assert qrels.values.tolist() == [["ls.1", "ls.1", 2], ["ls.1", "dir.1", 1], ["301", "FT-1", 0], ["002", "d", -1]]
    assert str(qrels["relevance"].dtype) == "int64"


def test_manclir_dev_qrels(manclir_de):
    qrels = read_qrels(manclir_de / "qrels.dev.txt")
    assert len(qrels) == 1259 and qrels["qid"].nunique() == 249
    assert set(qrels["relevance"]) == {1, 2}


@pytest.mark.parametrize("text, message", [
    ("1 0 a 1\n1 0 b\n", r"qrels:2: expected 4 fields 'qid iter docid relevance', got 3"),
    ("1 0 a 1\n\n1 0 b 1 x\n", r"qrels:3: expected 4 fields"),
    ("1 0 a 1\n1 0 b high\n", r"qrels:2: relevance 'high' is not an integer"),
    ("1 0 a 1\n1 0 b 0.5\n", r"qrels:2: relevance '0.5' is not an integer"),
    ("1 0 a 1\n2 0 a 1\n1 0 a 0\n", r"qrels:3: duplicate judgement for query '1', document 'a' \(first at line 1\)"),
])
def test_malformed_qrels_name_file_and_line(tmp_path, text, message):
    path = tmp_path / "qrels"
    path.write_text(text)
    with pytest.raises(ClirplugError, match=message):
        read_qrels(path)


def test_missing_file(tmp_path):
    with pytest.raises(ClirplugError, match="cannot read qrels"):
        read_qrels(tmp_path / "absent")
