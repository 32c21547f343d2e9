"""``clirplug eval``: output formats, significance, errors, agreement with ir_measures."""

import argparse
import json
import subprocess
import sys

import ir_measures
import pytest

import clirplug.eval
from clirplug.cli import add_commands
from clirplug.cli import eval as eval_cli
from clirplug.errors import ClirplugError
from clirplug.eval.significance import CORRECTIONS, holm

pytestmark = pytest.mark.cli

QRELS = "q1 0 a 2\nq1 0 b 1\nq1 0 c 0\nq2 0 a 1\nq2 0 e 2\nq3 0 x 1\n"
RUN_A = "q1 Q0 b 1 4.0 A\nq1 Q0 z 2 3.0 A\nq1 Q0 a 3 2.0 A\nq2 Q0 d 1 0.9 A\nq2 Q0 a 2 0.7 A\nq3 Q0 x 1 1 A\n"
RUN_B = "q1 Q0 a 1 4.0 B\nq1 Q0 b 2 3.0 B\nq2 Q0 e 1 0.9 B\nq2 Q0 a 2 0.7 B\nq3 Q0 y 1 1 B\n"


def clirplug_eval(*argv):
    """Run ``clirplug eval ARGV`` through the real argument parser of the command."""
    parser = argparse.ArgumentParser(prog="clirplug")
    add_commands(parser.add_subparsers(required=True), {"eval": "clirplug.cli.eval"})
    args = parser.parse_args(["eval", *map(str, argv)])
    return args.run(args)


@pytest.fixture
def files(tmp_path):
    paths = {}
    for name, text in (("qrels", QRELS), ("a.trec", RUN_A), ("b.trec", RUN_B)):
        paths[name] = tmp_path / name
        paths[name].write_text(text)
    return paths


def test_json_agrees_with_ir_measures_called_directly(files, capsys):
    names = ["AP", "nDCG", "nDCG@10", "P@10", "R@1000", "RR"]
    clirplug_eval("--qrels", files["qrels"], files["a.trec"], "--measures", " ".join(names), "--format", "json")
    records = json.loads(capsys.readouterr().out)
    direct = ir_measures.calc_aggregate([ir_measures.parse_measure(name) for name in names],
                                        ir_measures.read_trec_qrels(str(files["qrels"])),
                                        ir_measures.read_trec_run(str(files["a.trec"])))
    assert [record["measure"] for record in records] == names
    assert {r["measure"]: r["value"] for r in records} == pytest.approx(
        {name: direct[ir_measures.parse_measure(name)] for name in names})
    assert all(set(record) == {"run", "measure", "value"} for record in records)


def test_table_with_baseline_marks_significance(files, capsys):
    clirplug_eval("--qrels", files["qrels"], files["a.trec"], files["b.trec"], "--baseline", files["a.trec"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["run", "MAP", "nDCG", "nDCG@10", "P@10", "R@1000", "PRES@1000"]
    assert lines[1].startswith(str(files["a.trec"])) and lines[2].startswith(str(files["b.trec"]))
    assert "*" not in lines[1] and "*" not in lines[2]  # 3 queries: no p-value can be below 0.125
    assert "paired randomization test" in lines[-1]


def test_json_per_query_with_p_values(files, capsys):
    clirplug_eval("--qrels", files["qrels"], files["a.trec"], files["b.trec"], "--baseline", files["a.trec"],
                  "--measures", "MAP P@1", "--per-query", "--format", "json", "--permutations", "2000")
    records = json.loads(capsys.readouterr().out)
    assert len(records) == 2 * 2 * 4  # runs x measures x (3 queries + aggregate)
    per_query = [r for r in records if "qid" in r]
    assert {r["qid"] for r in per_query} == {"q1", "q2", "q3"}
    tested = [r for r in records if "p_value" in r]
    assert {(r["run"], r["measure"]) for r in tested} == {(str(files["b.trec"]), "MAP"), (str(files["b.trec"]), "P@1")}
    assert all("qid" not in r and 0 < r["p_value"] <= 1 for r in tested)
    # b - a per query: P@1 (0, +1, -1) sums to 0; AP (+1/6, +3/4, -1) reaches |-1/12| under
    # every one of the 8 sign flips: both exact p-values are 1
    assert [r["p_value"] for r in tested] == [1.0, 1.0]


def test_csv(files, capsys):
    clirplug_eval("--qrels", files["qrels"], files["b.trec"], "--measures", "P@1", "--format", "csv")
    assert capsys.readouterr().out == f"run,measure,value\n{files['b.trec']},P@1,0.666667\n"


def test_baseline_not_listed_is_added_first(files, capsys):
    clirplug_eval("--qrels", files["qrels"], files["b.trec"], "--baseline", files["a.trec"], "--measures", "P@1",
                  "--format", "json")
    records = json.loads(capsys.readouterr().out)
    assert [r["run"] for r in records] == [str(files["a.trec"]), str(files["b.trec"])]


def test_user_errors(files, tmp_path):
    with pytest.raises(ClirplugError, match="unknown measure 'FOO'"):
        clirplug_eval("--qrels", files["qrels"], files["a.trec"], "--measures", "FOO")
    bad = tmp_path / "bad.trec"
    bad.write_text("q1 Q0 a 1 1.0 A\nq1 Q0 b 2\n")
    with pytest.raises(ClirplugError, match=r"bad\.trec:2: expected 6 fields"):
        clirplug_eval("--qrels", files["qrels"], bad)


def test_defaults_and_choices_are_the_library_s_and_load_no_numpy():
    """``--measures`` defaults to the library's measures, ``--correction`` offers its corrections, and
    building the command line (every ``clirplug`` call does) imports neither numpy nor pandas."""
    parser = argparse.ArgumentParser(prog="clirplug eval")
    eval_cli.add_arguments(parser)
    actions = {action.dest: action for action in parser._actions}
    assert actions["measures"].default.split() == clirplug.eval.DEFAULT_MEASURES
    assert list(actions["correction"].choices) == list(CORRECTIONS) == ["holm"]
    code = "import sys; from clirplug.cli import build_parser; build_parser(); print('numpy' in sys.modules, 'pandas' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split() == ["False", "False"]


def test_marker_on_a_consistent_improvement(tmp_path, capsys):
    """20 queries, the system finds the relevant document at rank 1, the baseline at rank 2."""
    qrels, base, system = tmp_path / "qrels", tmp_path / "base", tmp_path / "system"
    qrels.write_text("".join(f"q{i} 0 rel 1\n" for i in range(20)))
    base.write_text("".join(f"q{i} Q0 other 1 2.0 B\nq{i} Q0 rel 2 1.0 B\n" for i in range(20)))
    system.write_text("".join(f"q{i} Q0 rel 1 2.0 S\nq{i} Q0 other 2 1.0 S\n" for i in range(20)))
    clirplug_eval("--qrels", qrels, base, system, "--baseline", base, "--measures", "MAP R@1000")
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[1:] == ["0.5000", "1.0000"]
    assert lines[2].split()[1:] == ["1.0000*", "1.0000"]  # p = 1/10001 for MAP; R@1000 is equal


def test_holm_correction_removes_markers_of_two_borderline_runs(tmp_path, capsys):
    """6 queries, two systems each finding the relevant document at rank 1 where the baseline finds it at rank 2:
    the exact p of each is 2 / 2^6 = 0.031 (only the two all-equal sign vectors reach the mean), below 0.05;
    Holm over the two runs doubles the smaller p, to about 0.062: neither is marked any more."""
    qrels, base, one, two = (tmp_path / name for name in ("qrels", "base", "one", "two"))
    qrels.write_text("".join(f"q{i} 0 rel 1\n" for i in range(6)))
    base.write_text("".join(f"q{i} Q0 other 1 2.0 B\nq{i} Q0 rel 2 1.0 B\n" for i in range(6)))
    for system in (one, two):
        system.write_text("".join(f"q{i} Q0 rel 1 2.0 S\nq{i} Q0 other 2 1.0 S\n" for i in range(6)))
    argv = ["--qrels", qrels, base, one, two, "--baseline", base, "--measures", "MAP"]
    clirplug_eval(*argv)
    plain = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in plain[2:4]] == ["1.0000*", "1.0000*"]
    clirplug_eval(*argv, "--correction", "holm")
    corrected = capsys.readouterr().out.splitlines()
    assert [line.split()[1] for line in corrected[2:4]] == ["1.0000", "1.0000"]
    assert "holm-adjusted over the 2 runs tested on each measure" in corrected[-1]
    clirplug_eval(*argv, "--correction", "holm", "--format", "json")
    tested = [r for r in json.loads(capsys.readouterr().out) if "p_value" in r]
    assert len(tested) == 2 and tested[0]["p_value"] == tested[1]["p_value"] == pytest.approx(2 / 2**6, abs=0.006)
    assert [r["p_holm"] for r in tested] == [min(1.0, 2 * tested[0]["p_value"])] * 2


def test_holm_adjusts_each_measure_over_the_runs(files, capsys):
    third = files["b.trec"].with_name("c.trec")
    third.write_text(RUN_B.replace("q1 Q0 a 1", "q1 Q0 z 1").replace(" B\n", " C\n"))
    clirplug_eval("--qrels", files["qrels"], files["a.trec"], files["b.trec"], third, "--baseline", files["a.trec"],
                  "--measures", "MAP P@1 RR", "--format", "json", "--correction", "holm")
    records = json.loads(capsys.readouterr().out)
    for measure in ("MAP", "P@1", "RR"):
        tested = [r for r in records if r["measure"] == measure and "p_value" in r]
        assert [r["run"] for r in tested] == [str(files["b.trec"]), str(third)]
        assert [r["p_holm"] for r in tested] == holm([r["p_value"] for r in tested]).tolist()


def test_correction_needs_a_baseline(files):
    with pytest.raises(ClirplugError, match="--correction holm needs --baseline RUN"):
        clirplug_eval("--qrels", files["qrels"], files["a.trec"], files["b.trec"], "--correction", "holm")
