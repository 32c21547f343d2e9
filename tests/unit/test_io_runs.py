"""TREC run reader/writer and the trec_eval ordering contract."""

import re

import pandas as pd
import pytest

from clirplug.errors import ClirplugError
from clirplug.io.runs import RUN_COLUMNS, read_run, sort_run, write_run

pytestmark = pytest.mark.unit

RUN = """\
q2 Q0 b 1 1.5 tagA
q1 Q0 a 7 0.25 tagA
q1 Q0 c 3 0.5 tagA
q1 Q0 b 9 0.5 tagA
q10 Q0 z 1 -2e-3 tagA
"""


def test_read_run_keeps_file_order_and_tag(tmp_path):
    path = tmp_path / "run"
    path.write_text(RUN)
    run = read_run(path)
    assert list(run.columns) == RUN_COLUMNS + ["tag"]
    assert run.values.tolist()[:2] == [["q2", "b", 1, 1.5, "tagA"], ["q1", "a", 7, 0.25, "tagA"]]
    assert run["score"].tolist()[-1] == -0.002


def test_sort_run_orders_like_trec_eval():
    """Queries in string order, score descending, ties by docid descending (trec_eval)."""
    frame = pd.DataFrame({"qid": ["q2", "q1", "q1", "q1", "q10"], "docid": ["b", "a", "c", "b", "z"],
                          "score": [1.5, 0.25, 0.5, 0.5, -0.002], "rank": [9, 9, 9, 9, 9]})
    ordered = sort_run(frame, ties="trec_eval")
    assert ordered[["qid", "docid", "rank"]].values.tolist() == [
        ["q1", "c", 1], ["q1", "b", 2], ["q1", "a", 3], ["q10", "z", 1], ["q2", "b", 1]]


def test_sort_run_orders_ties_like_anserini_by_default():
    """Ties by docid ascending, as Anserini's TiebreakerReranker and Pyserini's run files."""
    frame = pd.DataFrame({"qid": ["q1", "q1", "q1"], "docid": ["koi8-u.7", "koi8-r.7", "a"], "score": [2.0, 2.0, 1.0]})
    assert sort_run(frame)["docid"].tolist() == ["koi8-r.7", "koi8-u.7", "a"]


def test_write_run_dict_input_depth_and_format(tmp_path):
    path = tmp_path / "out.trec"
    write_run({"q1": {"a": 0.25, "b": 0.5, "c": 0.5}, "q0": {"x": 1}}, path, tag="t", depth=2)
    assert path.read_text() == "q0 Q0 x 1 1.0 t\nq1 Q0 b 1 0.5 t\nq1 Q0 c 2 0.5 t\n"


def test_written_scores_round_trip_exactly_and_bytes_are_reproducible(tmp_path):
    scores = [0.1 + 0.2, 1 / 3, 2.0 ** -40, 123456789.123456789, -0.0, 7.0]
    frame = pd.DataFrame({"qid": "1", "docid": [f"d{i}" for i in range(len(scores))], "score": scores})
    write_run(frame, tmp_path / "a")
    write_run(frame.sample(frac=1, random_state=0), tmp_path / "b")  # row order must not matter
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()
    again = read_run(tmp_path / "a")
    assert sorted(again["score"].tolist()) == sorted(scores)
    assert again["rank"].tolist() == list(range(1, len(scores) + 1))


def test_pyserini_score_format_prints_six_decimals_and_keeps_the_unrounded_order(tmp_path):
    """%.6f as Pyserini's TrecWriter; b and c round to the same score, but b's is higher: b stays above c, while
    the file's scores now tie (trec_eval would read c first, by docid descending: the trade-off of docs/cli.md)."""
    run = {"q1": {"a": 2.0, "c": 0.1234558, "b": 0.1234562, "d": 1 / 3}, "q0": {"x": -0.0, "y": 1e-7}}
    write_run(run, tmp_path / "out.trec", tag="t", score_format="pyserini")
    assert (tmp_path / "out.trec").read_text() == (
        "q0 Q0 y 1 0.000000 t\nq0 Q0 x 2 -0.000000 t\n"
        "q1 Q0 a 1 2.000000 t\nq1 Q0 d 2 0.333333 t\nq1 Q0 b 3 0.123456 t\nq1 Q0 c 4 0.123456 t\n")
    write_run(run, tmp_path / "exact.trec", tag="t")
    assert read_run(tmp_path / "exact.trec")["score"].tolist()[-2:] == [0.1234562, 0.1234558]
    with pytest.raises(ClirplugError, match="score format 'short': choose one of exact, pyserini"):
        write_run(run, tmp_path / "bad.trec", score_format="short")
    assert not (tmp_path / "bad.trec").exists()


def test_write_read_write_is_a_fixed_point(tmp_path, trec_eval_fixtures):
    write_run(read_run(trec_eval_fixtures / "results.test"), tmp_path / "a", tag="STANDARD")
    write_run(read_run(tmp_path / "a"), tmp_path / "b", tag="STANDARD")
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()


@pytest.mark.parametrize("text, message", [
    ("1 Q0 a 1 1.0 t\n1 Q0 b 2 0.5\n", r"run:2: expected 6 fields 'qid Q0 docid rank score tag', got 5"),
    ("1 Q0 a 1 1.0 t\n\n1 Q0 b 2 high t\n", r"run:3: score 'high' is not a number"),
    ("1 Q0 a 1 1.0 t\n1 Q0 b 2 nan t\n", r"run:2: score 'nan' is not a finite number"),
    ("1 Q0 a 1 1.0 t\n1 Q0 b two 0.5 t\n", r"run:2: rank 'two' is not an integer"),
    ("1 Q0 a 1 1.0 t\n2 Q0 a 1 1.0 t\n1 Q0 a 2 0.5 t\n", r"run:3: document 'a' listed twice for query '1' \(first at line 1\)"),
])
def test_malformed_runs_name_file_and_line(tmp_path, text, message):
    path = tmp_path / "run"
    path.write_text(text)
    with pytest.raises(ClirplugError, match=message):
        read_run(path)


def test_bad_frames_and_ids_are_user_errors(tmp_path):
    with pytest.raises(ClirplugError, match="lacks column"):
        write_run(pd.DataFrame({"qid": ["1"], "docid": ["a"]}), tmp_path / "r")
    with pytest.raises(ClirplugError, match="twice"):
        write_run(pd.DataFrame({"qid": ["1", "1"], "docid": ["a", "a"], "score": [1, 2]}), tmp_path / "r")
    with pytest.raises(ClirplugError, match="whitespace"):
        write_run({"1": {"a b": 1.0}}, tmp_path / "r")
    with pytest.raises(ClirplugError, match="query id '' cannot be written"):
        write_run({"2": {"a": 1.0}, "": {"a": 1.0}}, tmp_path / "r")
    with pytest.raises(ClirplugError, match=r"document id 'c\\td' cannot be written"):
        write_run({"1": {"a": 2.0, "b": 1.0}, "2": {"c\td": 1.0}}, tmp_path / "r")
    with pytest.raises(ClirplugError, match="whitespace"):
        write_run({"1": {"a": 1.0}}, tmp_path / "r", tag="my run")
    with pytest.raises(ClirplugError, match="nan is not finite"):
        write_run({"1": {"a": float("nan")}}, tmp_path / "r")
    with pytest.raises(ClirplugError, match="-inf is not finite for query '1', document 'a'"):
        write_run({"1": {"a": float("-inf")}}, tmp_path / "r")
    assert not (tmp_path / "r").exists()


READ_AS_SPLIT = {  # runs read field by field as str.split() splits each line
    "tabs and spaces": "q1\tQ0\td1\t1\t2.0\tt\n  q1  Q0 d2 2 1.0 t  \n\n",
    "windows line ends": "q1 Q0 d1 1 2.0 t\r\nq1 Q0 d2 2 1.0 t\r\n",
    "texts pandas would read as missing, quoted or commented": '001 Q0 nan 1 2.0 NA\n001 Q0 "d 2 1.5 #\n001 Q0 d,3 3 1 N/A\n',
    "a byte-order mark and a non-breaking space": "\ufeffq1 Q0 d1 1 2 t\nq1 Q0 d\u00a02 2 1 t\n",
    "signs, exponents and underscores": "q1 Q0 d1 +1 +2e3 t\nq1 Q0 d2 1_0 -1.5E-3 t\n",
}


@pytest.mark.parametrize("text", READ_AS_SPLIT.values(), ids=READ_AS_SPLIT.keys())
def test_a_run_is_read_as_its_lines_split(tmp_path, text):
    path = tmp_path / "run.trec"
    path.write_text(text, encoding="utf-8")
    lines = [line.split() for line in text.splitlines() if line.split()]
    if any(len(fields) != 6 for fields in lines):
        with pytest.raises(ClirplugError, match=r"run\.trec:\d+: expected 6 fields"):
            read_run(path)
        return
    frame = read_run(path)
    assert frame.to_dict("list") == {"qid": [f[0] for f in lines], "docid": [f[2] for f in lines],
                                     "rank": [int(f[3]) for f in lines], "score": [float(f[4]) for f in lines],
                                     "tag": [f[5] for f in lines]}


@pytest.mark.parametrize("text, message", [
    ("q1 Q0 d1 1 2 t 7\nq2 Q0 d1 1 2 t 7\n", "run.trec:1: expected 6 fields 'qid Q0 docid rank score tag', got 7"),
    ("q1 Q0 d1 1.0 2 t\n", "run.trec:1: rank '1.0' is not an integer"),
    ("q1 Q0 d1 1 2 t\nq1 Q0 d2 99999999999999999999 1 t\n", "run.trec:2: rank 99999999999999999999 is out of range"),
])
def test_every_line_wrong_the_same_way_is_refused(tmp_path, text, message):
    path = tmp_path / "run.trec"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ClirplugError, match=re.escape(message)):
        read_run(path)
