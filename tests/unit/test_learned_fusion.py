"""The learned fusion (clirplug.fusion.learned): its features, its objective against brute force, its MAP against
trec_eval's, its choice of inputs on a hand-made example, its reload through a system file, the experiment's plan."""

import json
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from clirplug.api import Searcher
from clirplug.cli import main
from clirplug.errors import ClirplugError
from clirplug.eval.measures import evaluate
from clirplug.fusion import fuse, get_parts
from clirplug.fusion.learned import (
    FEATURES,
    _judged,
    feature_table,
    fit_pairwise,
    learn,
    logistic_objective,
    mean_average_precision,
    out_of_fold,
    sample_pairs,
)
from clirplug.io.runs import read_run, run_frame, write_run
from clirplug.methods import METHODS, Method
from clirplug.settings import Settings

pytestmark = pytest.mark.cli

RUN_A = {"q1": {"d1": 3.0, "d2": 1.0, "d3": -1.0}, "q2": {"x": 5.0, "y": 4.0}}
RUN_B = {"q1": {"d2": 2.0, "d4": 6.0}, "q2": {"y": 1.0}}


def scores(frame):
    return {(q, d): s for q, d, s in zip(frame["qid"], frame["docid"], frame["score"])}


def collection(seed=1, topics=30, docs=120):
    """Graded qrels (5 relevant documents a topic) and runs of it: ``perfect`` ranks by the grades, ``noisy`` by
    the grades plus much noise, ``random`` at random."""
    rng = np.random.default_rng(seed)
    names = [f"d{j:03d}" for j in range(docs)]
    qrels, grade = [], {}
    for i in range(topics):
        qid = f"t{i:02d}.{i}"
        for docid in rng.choice(names, 5, replace=False):
            grade[(qid, docid)] = int(rng.integers(1, 3))
            qrels.append((qid, "0", docid, grade[(qid, docid)]))
    qrels = pd.DataFrame(qrels, columns=["qid", "iteration", "docid", "relevance"])

    def run(noise):
        return pd.DataFrame([(qid, docid, grade.get((qid, docid), 0) + noise * rng.normal())
                             for qid in sorted({q for q, _ in grade}) for docid in names],
                            columns=["qid", "docid", "score"])

    return qrels, {"random": run(1000.0), "perfect": run(0.0), "noisy": run(3.0)}


def test_each_run_gives_a_document_its_min_max_and_borda_scores_reciprocal_rank_and_hit():
    table = feature_table([RUN_A, RUN_B], depth=2)
    rows = {(q, d): i for i, (q, d) in enumerate(zip(table.qids, table.docids))}
    assert list(rows) == [("q1", "d1"), ("q1", "d2"), ("q1", "d4"), ("q2", "x"), ("q2", "y")]  # d3 is below A's top 2
    d2 = table.values[rows[("q1", "d2")]]  # rank 2 in A (3, 1: Borda 1/4) and in B (6, 2: Borda 2/8)
    assert d2[0].tolist() == [0.0, 0.25, 1 / 62, 1.0] and d2[1].tolist() == [0.0, 0.25, 1 / 62, 1.0]
    assert table.values[rows[("q1", "d1")]].tolist() == [[1.0, 0.75, 1 / 61, 1.0], [0.0, 0.0, 0.0, 0.0]]  # not in B
    assert table.values[rows[("q2", "y")]][1].tolist() == [1.0, 1.0, 1 / 61, 1.0]  # one document: min-max gives 1


def test_combsum_borda_and_rrf_are_learned_fusions_with_their_weights():
    combsum = fuse("learned", [RUN_A, RUN_B], weights=[1, 0, 0, 0, 1, 0, 0, 0])
    assert scores(combsum) == pytest.approx(scores(fuse("combsum", [RUN_A, RUN_B])))
    borda = fuse("learned", [RUN_A, RUN_B], weights=[0, 0.3, 0, 0, 0, 0.7, 0, 0])
    assert scores(borda) == pytest.approx(scores(fuse("borda", [RUN_A, RUN_B], weights=[0.3, 0.7])))
    rrf = fuse("learned", [RUN_A, RUN_B], weights=[0, 0, 2, 0, 0, 0, 1, 0], depth=2)
    assert scores(rrf) == pytest.approx(scores(fuse("rrf", [RUN_A, RUN_B], weights=[2, 1], depth=2)))
    assert rrf["qid"].tolist() == fuse("rrf", [RUN_A, RUN_B], weights=[2, 1], depth=2)["qid"].tolist()
    hits = fuse("learned", [RUN_A, RUN_B], weights=[0, 0, 0, 1, 0, 0, 0, -1])  # negative weights are allowed
    assert scores(hits)[("q1", "d4")] == -1.0 and scores(hits)[("q1", "d2")] == 0.0


def test_the_learned_fusion_refuses_a_wrong_number_of_weights_and_a_kappa():
    with pytest.raises(ClirplugError, match="needs its weights: 4 per run"):
        fuse("learned", [RUN_A, RUN_B])
    with pytest.raises(ClirplugError, match="got 2 learned fusion weight"):
        fuse("learned", [RUN_A, RUN_B], weights=[0.5, 0.5])
    with pytest.raises(ClirplugError, match="has no kappa"):
        get_parts("learned")


def test_the_map_of_a_scored_table_is_trec_evals_map_of_the_fused_run():
    qrels, runs = collection()
    weights = [0.3, 1.0, -2.0, 0.1, 1.0, -4.0, 5.0, 0.0, 0.5, 2.0, 0.0, -0.2]
    for depth in (20, 120):
        judged = _judged(list(runs.values()), qrels, depth)
        table = judged.table
        value = mean_average_precision(judged, np.ones(len(table.qids), dtype=bool), table.scores(weights))
        fused = fuse("learned", list(runs.values()), weights=weights, depth=depth)
        assert value == pytest.approx(evaluate(qrels, {"fused": fused}, ["MAP"])["value"].iloc[0], abs=1e-12)


def test_the_pairs_are_of_different_grades_all_of_them_or_a_seeded_sample():
    qrels, runs = collection(topics=6, docs=30)
    judged = _judged([runs["perfect"]], qrels, 100)
    better, worse = sample_pairs(judged, 10_000, seed=0)
    expected = 0
    for code in set(judged.table.qid_codes.tolist()):
        grades = judged.grades[judged.table.qid_codes == code]
        expected += sum(int((grades < g).sum()) for g in grades if g >= 1)
    assert len(better) == expected
    assert (judged.grades[better] > judged.grades[worse]).all() and (judged.grades[better] >= 1).all()
    assert (judged.table.qid_codes[better] == judged.table.qid_codes[worse]).all()
    assert len(set(zip(better.tolist(), worse.tolist()))) == expected  # each pair once
    sampled = sample_pairs(judged, 7, seed=3)
    assert len(sampled[0]) == 7 * 6 and all(np.array_equal(a, b) for a, b in zip(sampled, sample_pairs(judged, 7, seed=3)))
    assert not np.array_equal(sampled[1], sample_pairs(judged, 7, seed=4)[1])


def test_the_fitted_weights_minimise_the_objective_by_brute_force():
    rng = np.random.default_rng(0)
    differences = rng.normal(size=(300, 2)) * [1.0, 0.1] + [0.4, 0.01]
    l2 = 0.05
    weights = fit_pairwise(differences, l2)
    # the objective is on standardised features: w_std = w * scale
    scale = np.sqrt((differences ** 2).mean(axis=0))
    z, best = differences / scale, weights * scale
    value = logistic_objective(best, z, l2)
    grid = np.linspace(-3, 3, 121)
    brute = min((logistic_objective(np.array([a, b]), z, l2), a, b) for a in grid for b in grid)
    assert value <= brute[0] + 1e-12
    assert best == pytest.approx(brute[1:], abs=0.03)


def test_a_perfect_run_is_chosen_first_and_carries_the_weight_and_a_random_one_is_left_out():
    qrels, runs = collection()
    model = learn(list(runs.values()), list(runs), qrels, depths=(50, 120), l2s=(0.01, 0.1), folds=3, pairs=50)
    assert model["inputs"][0] == "perfect" and "random" not in model["inputs"]
    assert model["cv_map"] == pytest.approx(1.0)
    assert model["selection"][0]["tried"]["perfect"] == pytest.approx(1.0)
    perfect = model["weights"]["perfect"]
    assert perfect["score"] + perfect["borda"] > 0 and perfect["rr"] > 0
    assert len(model["fold_weights"]) == 3 and len(model["fuse_weights"]) == 4 * len(model["inputs"])
    assert [row["depth"] for row in model["grid"]] == [50, 50, 120, 120]
    again = learn(list(runs.values()), list(runs), qrels, depths=(50, 120), l2s=(0.01, 0.1), folds=3, pairs=50)
    assert json.dumps(again, sort_keys=True) == json.dumps(model, sort_keys=True)
    held = out_of_fold(model, qrels["qid"])
    assert set(held) == set(qrels["qid"]) and {tuple(w) for w in held.values()} == {tuple(w) for w in model["fold_weights"]}


def test_learning_needs_as_many_topics_as_folds():
    qrels, runs = collection(topics=2)
    with pytest.raises(ClirplugError, match="over 3 folds but has 2 topics"):
        learn([runs["perfect"]], ["perfect"], qrels, folds=3)


# ----------------------------------------------------------------------------- reload through a system file

@dataclass(frozen=True)
class FileRun(Settings):
    """``file-run``: a run file's rankings."""


class FileSearcher(Searcher):
    """The rankings of a run file (the searcher of a method registered for the test)."""

    def __init__(self, *, run: str):
        self.file = run
        self._spec = {"run": run}

    def run(self, topics, k=1000, progress=False):
        frame = read_run(self.file)
        frame = frame[frame["qid"].isin([t.id for t in topics])]
        return frame.groupby("qid", sort=False).head(k).assign(translation=None)


def test_a_learned_fusion_reloads_from_its_system_file_and_the_fuse_command_applies_its_weights(tmp_path, monkeypatch):
    from clirplug.api import load_system
    from clirplug.io.topics import Topic
    from clirplug.system_file import write_system

    monkeypatch.setitem(METHODS, "file-run", Method(FileRun, f"{__name__}:fuse", f"{__name__}:FileSearcher", (),
                                                    "a run file", experiment=False))
    runs = {"a": RUN_A, "b": RUN_B}
    for name, run in runs.items():
        write_run(run_frame((q, sorted(d.items(), key=lambda x: -x[1])) for q, d in run.items()), tmp_path / f"{name}.trec")
        write_system(tmp_path / f"{name}.system.json",
                     {"root": ".", "name": name, "method": "file-run", "field": "title", "tag": name, "hits": 10,
                      "options": {"run": str(tmp_path / f"{name}.trec")}})
    weights = [0.5, 0.0, 10.0, 0.0, 1.0, 2.0, -3.0, 0.25]
    write_system(tmp_path / "fused.system.json",
                 {"root": ".", "name": "fused", "method": "fusion", "field": "title", "tag": "fused", "hits": 10,
                  "searchers": ["a.system.json", "b.system.json"],
                  "options": {"method": "learned", "weights": weights, "depth": 2}})
    searcher = load_system(tmp_path / "fused.system.json")
    fused = searcher.run([Topic("q1", "eins", ""), Topic("q2", "zwei", "")], 10)
    expected = fuse("learned", [RUN_A, RUN_B], weights=weights, depth=2)
    assert fused[["qid", "docid"]].values.tolist() == expected[["qid", "docid"]].values.tolist()
    assert fused["score"].tolist() == pytest.approx(expected["score"].tolist())
    out = tmp_path / "cli.trec"
    assert main(["fuse", "--runs", str(tmp_path / "a.trec"), str(tmp_path / "b.trec"), "--method", "learned",
                 "--weights", *map(str, weights), "--depth", "2", "--output", str(out)]) == 0
    assert read_run(out)["docid"].tolist() == expected["docid"].tolist()


# ----------------------------------------------------------------------------- the experiment's plan

def test_the_demo_plan_learns_from_every_held_out_run_and_writes_an_out_of_fold_train_run(monkeypatch):
    from clirplug.data import demo_config
    from clirplug.experiment.config import load_config
    from clirplug.experiment.plan import build_plan

    plan = build_plan(load_config(demo_config()))
    learn_stage = plan.stages["learn.all.title"]
    # boosting and BOW-FD learn from the train qrels without cross-fitting: their train runs are in-sample
    assert learn_stage.settings["runs"] == ["dt", "dt-queries", "psq", "dense"]
    assert learn_stage.settings["grid"] == {"depth": [100, 1000], "l2": [0.001, 0.01, 0.1]}
    tune_run = plan.stages["run.all.train.title"]
    assert tune_run.kind == "fusion-learned" and tune_run.inputs and tune_run.inputs_from[0] == learn_stage.outputs[0]
    assert not plan.stages["run.all.dev.title"].inputs


def test_a_learned_fusion_entry_is_checked(tmp_path):
    from clirplug.data import demo_config
    from clirplug.experiment.config import load_config
    from clirplug.experiment.plan import build_plan

    for grid, message in (({"depth": [0]}, "grid.depth: expected a non-empty list of integers from 1 to hits"),
                          ({"l2": []}, "grid.l2: expected a non-empty list of positive numbers"),
                          ({"k": [1]}, "grid: expected a mapping with keys depth, l2")):
        with pytest.raises(ClirplugError, match=message):
            build_plan(load_config(demo_config(), overrides=[f"runs.all.grid={json.dumps(grid)}"]))
    with pytest.raises(ClirplugError, match="fuser: expected learned, or one of borda"):
        build_plan(load_config(demo_config(), overrides=['runs.dt+psq.fuser=["borda", "learned"]']))
    assert FEATURES == ("score", "borda", "rr", "hit")
