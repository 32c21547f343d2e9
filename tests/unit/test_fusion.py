"""Fusion: weighted Borda count (Sokolov et al. 2013, Section 4), RRF, CombSUM/CombMNZ, kappa tuning."""

import pandas as pd
import pytest

from clirplug.cli import main
from clirplug.errors import ClirplugError
from clirplug.fusion import FUSERS, LEARNED, PARTS, fuse
from clirplug.fusion.tune import best_kappa, kappa_curve, kappa_grid, plot_curve, write_curve
from clirplug.io.runs import read_run, sort_run, write_run

pytestmark = pytest.mark.cli

# ----------------------------------------------------------------------------- FIXTURES

RUN_A = {"q1": {"d1": 3.0, "d2": 1.0, "d3": -1.0}, "q2": {"x": 5.0, "y": 5.0}}
RUN_B = {"q1": {"d2": 2.0, "d4": 6.0}, "q2": {"y": 1.0}}


def scores(frame):
    return {(q, d): s for q, d, s in zip(frame["qid"], frame["docid"], frame["score"])}


def ranking(frame, qid):
    return frame[frame["qid"] == qid]["docid"].tolist()


# ----------------------------------------------------------------------------- TESTS


def test_borda_is_the_papers_weighted_normalized_sum():
    kappa = 0.3
    fused = scores(fuse("borda", [RUN_A, RUN_B], weights=[kappa, 1 - kappa]))
    # q1 of A has a negative score: shifted by +1 to 4, 2, 0 (sum 6); B sums to 8
    assert fused[("q1", "d1")] == pytest.approx(kappa * 4 / 6)
    assert fused[("q1", "d2")] == pytest.approx(kappa * 2 / 6 + (1 - kappa) * 2 / 8)
    assert fused[("q1", "d3")] == pytest.approx(0.0)
    assert fused[("q1", "d4")] == pytest.approx((1 - kappa) * 6 / 8)  # absent from A: counts 0 there
    assert fused[("q2", "x")] == pytest.approx(kappa * 5 / 10)
    assert fused[("q2", "y")] == pytest.approx(kappa * 5 / 10 + (1 - kappa) * 1 / 1)


@pytest.mark.parametrize("kappa, single", [(1.0, RUN_A), (0.0, RUN_B)])
def test_borda_kappa_at_the_ends_reproduces_one_run(kappa, single):
    fused = fuse("borda", [RUN_A, RUN_B], weights=[kappa, 1 - kappa])
    alone = fuse("borda", [single], weights=[1.0])
    for qid in single:
        assert ranking(fused, qid)[: len(single[qid])] == ranking(alone, qid)
        assert ranking(alone, qid) == ranking(sort_run(single), qid)


def test_borda_normalizes_over_the_top_k_only():
    fused = scores(fuse("borda", [RUN_A], weights=[1.0], depth=2))
    # q1 top 2 of A: d1 (3) and d2 (1), no negative score among them: 3/4 and 1/4
    assert fused == pytest.approx({("q1", "d1"): 0.75, ("q1", "d2"): 0.25, ("q2", "y"): 0.5, ("q2", "x"): 0.5})


def test_borda_with_a_weight_vector_for_three_runs():
    run_c = {"q1": {"d3": 1.0}}
    weights = [0.5, 0.3, 0.2]
    fused = scores(fuse("borda", [RUN_A, RUN_B, run_c], weights=weights))
    assert fused[("q1", "d3")] == pytest.approx(0.5 * 0 / 6 + 0.2 * 1.0)
    assert fused[("q1", "d2")] == pytest.approx(0.5 * 2 / 6 + 0.3 * 2 / 8)


def test_rrf_is_a_sum_of_reciprocal_ranks():
    fused = scores(fuse("rrf", [RUN_A, RUN_B]))
    assert fused[("q1", "d2")] == pytest.approx(1 / (60 + 2) + 1 / (60 + 2))
    assert fused[("q1", "d4")] == pytest.approx(1 / (60 + 1))
    # q2 of A ties x and y at 5: ranked as sort_run orders them (docid ascending), x first
    assert fused[("q2", "x")] == pytest.approx(1 / (60 + 1))
    assert fused[("q2", "y")] == pytest.approx(1 / (60 + 2) + 1 / (60 + 1))


def test_combsum_and_combmnz_over_min_max_scores():
    combsum = scores(fuse("combsum", [RUN_A, RUN_B]))
    combmnz = scores(fuse("combmnz", [RUN_A, RUN_B]))
    # min-max of A q1: (3, 1, -1) -> (1, 0.5, 0); B q1: (6, 2) -> (1, 0)
    assert combsum[("q1", "d1")] == pytest.approx(1.0)
    assert combsum[("q1", "d2")] == pytest.approx(0.5 + 0.0)
    assert combsum[("q1", "d4")] == pytest.approx(1.0)
    assert combmnz[("q1", "d2")] == pytest.approx(2 * (0.5 + 0.0))
    assert combmnz[("q1", "d4")] == pytest.approx(1 * 1.0)
    # all-equal scores (q2 of A, q2 of B) map to 1
    assert combsum[("q2", "y")] == pytest.approx(2.0) and combmnz[("q2", "y")] == pytest.approx(4.0)


@pytest.mark.parametrize("method", list(FUSERS))
def test_every_method_cuts_to_depth_and_sorts(method):
    weights = [1.0, 0.5, 2.0, -0.1] * 2 if method == LEARNED else None  # the learned fusion has no default weights
    fused = fuse(method, [RUN_A, RUN_B], weights=weights, depth=2)
    assert fused.groupby("qid").size().max() <= 2
    for _, group in fused.groupby("qid"):
        assert list(group["score"]) == sorted(group["score"], reverse=True)


@pytest.mark.parametrize("method", list(FUSERS))
def test_fusing_every_query_at_once_equals_fusing_each_alone(method):
    """The experiment's fusion stages fuse a run's queries at once: each query's scores, bit for bit, are those
    of fusing it alone (queries of many documents, ties, a query missing from one run)."""
    import numpy as np

    rng = np.random.default_rng(7)
    runs = []
    for missing in ("q3", "q5"):
        rows = [(f"q{q}", f"d{d}", float(rng.integers(0, 40)) / 7 - 1)
                for q in range(6) if f"q{q}" != missing for d in rng.choice(300, 120, replace=False)]
        runs.append(pd.DataFrame(rows, columns=["qid", "docid", "score"]))
    weights = [1.0, 0.5, 2.0, -0.1, 0.3, 1.5, -0.7, 0.2] if method == LEARNED else [0.3, 0.7]
    together = sort_run(fuse(method, runs, weights=weights, depth=50))
    alone = sort_run(pd.concat([fuse(method, [run[run["qid"] == qid] for run in runs], weights=weights, depth=50)
                                for qid in sorted(set(runs[0]["qid"]) | set(runs[1]["qid"]))], ignore_index=True))
    assert together["qid"].nunique() == 6
    assert together[["qid", "docid", "score"]].to_dict("list") == alone[["qid", "docid", "score"]].to_dict("list")


@pytest.mark.parametrize("weights", [[1.0], [0.5, -0.5], [float("nan"), 1.0]])
def test_bad_weights_are_user_errors(weights):
    with pytest.raises(ClirplugError):
        fuse("borda", [RUN_A, RUN_B], weights=weights)


def test_unknown_method_lists_the_choices():
    with pytest.raises(ClirplugError, match="borda"):
        fuse("nosuch", [RUN_A])


# ----------------------------------------------------------------------------- kappa tuning


def tuning_case():
    # A is sure and right on q1, unsure and wrong on q2; B the converse: fusing fixes both
    run_a = pd.DataFrame({"qid": ["q1", "q1", "q2", "q2"], "docid": ["d1", "d9", "d8", "d2"], "score": [10.0, 0.01, 1.1, 1.0]})
    run_b = pd.DataFrame({"qid": ["q1", "q1", "q2", "q2"], "docid": ["d9", "d1", "d2", "d8"], "score": [1.1, 1.0, 10.0, 0.01]})
    qrels = pd.DataFrame({"qid": ["q1", "q2"], "docid": ["d1", "d2"], "relevance": [1, 1]})
    return run_a, run_b, qrels


def test_kappa_grid():
    assert kappa_grid(0.25) == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert kappa_grid(0.3)[-1] == 1.0
    with pytest.raises(ClirplugError):
        kappa_grid(0)


def test_kappa_curve_and_best_kappa():
    run_a, run_b, qrels = tuning_case()
    curve = kappa_curve([run_a, run_b], qrels, grid=[0.0, 0.5, 1.0])
    # kappa 1 = A alone: AP 1 (q1) and 1/2 (q2); kappa 0 = B alone: 1/2 and 1
    d1 = 0.5 * 10 / 10.01 + 0.5 * 1.0 / 2.1
    d9 = 0.5 * 0.01 / 10.01 + 0.5 * 1.1 / 2.1
    assert d1 > d9  # so at kappa 0.5 the relevant document leads q1 (and, symmetrically, q2)
    assert curve["MAP"].tolist() == pytest.approx([0.75, 1.0, 0.75])
    assert best_kappa(curve) == 0.5
    flat = pd.DataFrame({"kappa": [0.0, 0.4, 0.7], "MAP": [0.2, 0.2, 0.2]})
    assert best_kappa(flat) == 0.4  # ties go to the kappa closest to 0.5
    with pytest.raises(ClirplugError):
        kappa_curve([run_a], qrels)


@pytest.mark.parametrize("measure", ["MAP", "nDCG@10"])  # MAP has its own exact path (no run is built)
@pytest.mark.parametrize("method", sorted(PARTS))  # the methods tuned by kappa (all but learned)
def test_kappa_curve_equals_fusing_each_kappa(method, measure):
    """The curve reuses each run's contributions; it must equal fusing and evaluating kappa by kappa."""
    import numpy as np

    from clirplug.eval.measures import evaluate
    from clirplug.fusion import get_parts
    from clirplug.fusion.tune import _aligned, _fused

    rng = np.random.default_rng(7)
    runs = []
    for shift in (0.0, -3.0):  # the second run has negative scores; rounding makes ties
        rows = [(f"q{q}", f"d{d}", round(float(rng.normal()) + shift, 1))
                for q in range(6) for d in rng.choice(40, size=25, replace=False)]
        runs.append(pd.DataFrame(rows, columns=["qid", "docid", "score"]))
    qrels = pd.DataFrame([(f"q{q}", f"d{d}", int(rng.integers(0, 3))) for q in range(5) for d in range(40)],
                         columns=["qid", "docid", "relevance"])
    grid = kappa_grid(0.1)
    curve = kappa_curve(runs, qrels, method, grid, depth=20, measure=measure)
    judged = [run[run["qid"] != "q5"] for run in runs]
    slow = evaluate(qrels, {repr(k): fuse(method, judged, [k, 1 - k], depth=20) for k in grid}, [measure])
    assert curve[measure].tolist() == slow["value"].tolist()
    assert curve["kappa"].tolist() == grid
    parts, by_hits = get_parts(method)
    table = _aligned(parts(judged, 20))
    for kappa in (0.0, 0.3, 1.0):  # the same run, row for row and bit for bit
        fast = sort_run(_fused(table, kappa, 20, by_hits))
        expected = sort_run(fuse(method, judged, [kappa, 1 - kappa], depth=20))
        pd.testing.assert_frame_equal(fast, expected)


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("depth", [1, 7, 60, 1000])
def test_map_curve_equals_trec_eval_bit_for_bit(seed, depth, compiled, monkeypatch):
    """The AP of the MAP path, compiled and in numpy (without numba), against evaluating each fused run:
    many ties, cuts inside tie blocks, queries without relevant documents, judged queries without hits,
    scores of both signs."""
    import numpy as np

    from clirplug.eval.measures import evaluate
    from clirplug.fusion import tune

    if compiled:
        assert tune._ap_kernel() is not None  # numba is in the dev extra: the compiled case is not vacuous
    else:
        monkeypatch.setattr(tune, "_ap_kernel", lambda: None)
    rng = np.random.default_rng(seed)
    runs = []
    for shift in (0.0, -1.0):
        rows = [(f"q{q}", f"d{d}", round(float(rng.normal()) + shift, 1)) for q in range(25)
                for d in rng.choice(200, size=int(rng.integers(1, 120)), replace=False)]
        runs.append(pd.DataFrame(rows, columns=["qid", "docid", "score"]))
    qrels = pd.DataFrame([(f"q{q}", f"d{d}", int(rng.integers(0, 3))) for q in range(3, 30)
                          for d in rng.choice(200, size=30, replace=False)], columns=["qid", "docid", "relevance"])
    grid = kappa_grid(0.25)
    for method in ("borda", "rrf"):
        curve = kappa_curve(runs, qrels, method, grid, depth=depth, measure="MAP")
        judged = [run[run["qid"].isin(set(qrels["qid"]))] for run in runs]
        slow = evaluate(qrels, {repr(k): fuse(method, judged, [k, 1 - k], depth=depth) for k in grid}, ["MAP"])
        assert curve["MAP"].tolist() == slow["value"].tolist()


def test_curve_table_and_png(tmp_path):
    run_a, run_b, qrels = tuning_case()
    curve = kappa_curve([run_a, run_b], qrels, grid=kappa_grid(0.5))
    write_curve(curve, tmp_path / "c.tsv")
    plot_curve(curve, tmp_path / "c.png", labels=("A", "B"))
    lines = (tmp_path / "c.tsv").read_text().splitlines()
    assert lines[0] == "kappa\tMAP" and len(lines) == 4
    assert (tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_fuse_with_tuning(tmp_path):
    run_a, run_b, qrels = tuning_case()
    write_run(run_a, tmp_path / "a.trec")
    write_run(run_b, tmp_path / "b.trec")
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\nq2 0 d2 1\n")
    out = tmp_path / "fused.trec"
    code = main(["fuse", "--runs", str(tmp_path / "a.trec"), str(tmp_path / "b.trec"), "--tune-on",
                 str(tmp_path / "qrels.txt"), "--grid-step", "0.5", "--output", str(out)])
    assert code == 0
    assert (tmp_path / "fused.trec.kappa.png").exists() and (tmp_path / "fused.trec.kappa.tsv").exists()
    fused = read_run(out)
    assert set(fused["qid"]) == {"q1", "q2"}
    assert (tmp_path / "fused.trec.kappa.tsv").read_text().splitlines()[1:] == ["0.0000\t0.7500", "0.5000\t1.0000", "1.0000\t0.7500"]
    expected = fuse("borda", [run_a, run_b], weights=[0.5, 0.5])
    assert scores(fused) == pytest.approx(scores(expected))


def test_cli_fuse_run_tag_and_score_format(tmp_path):
    write_run(RUN_A, tmp_path / "a.trec")
    write_run(RUN_B, tmp_path / "b.trec")
    runs = ["fuse", "--runs", str(tmp_path / "a.trec"), str(tmp_path / "b.trec"), "--method", "rrf"]
    assert main([*runs, "--output", str(tmp_path / "exact.txt")]) == 0
    assert main([*runs, "--output", str(tmp_path / "six.trec"), "--score-format", "pyserini", "--run-tag", "T"]) == 0
    exact, six = read_run(tmp_path / "exact.txt"), read_run(tmp_path / "six.trec")
    assert set(exact["tag"]) == {"exact"} and set(six["tag"]) == {"T"}
    assert exact["docid"].tolist() == six["docid"].tolist()
    assert six["score"].tolist() == [round(score, 6) for score in exact["score"]] != exact["score"].tolist()
    assert all(len(line.split()[4].partition(".")[2]) == 6 for line in (tmp_path / "six.trec").read_text().splitlines())


def test_cli_fuse_rejects_kappa_for_three_runs(tmp_path, capsys):
    write_run(pd.DataFrame(RUN_A["q1"].items(), columns=["docid", "score"]).assign(qid="q1"), tmp_path / "a.trec")
    paths = [str(tmp_path / "a.trec")] * 3
    assert main(["fuse", "--runs", *paths, "--kappa", "0.3", "--output", str(tmp_path / "o.trec")]) == 2
    assert "exactly two runs" in capsys.readouterr().err
