"""evaluate(): measure names, trec_eval semantics (ties, -c, graded qrels), ir_measures agreement."""

import math

import ir_measures
import pandas as pd
import pytest

from clirplug.errors import ClirplugError
from clirplug.eval.measures import evaluate, parse_measures

pytestmark = pytest.mark.unit

QRELS = pd.DataFrame({
    "qid": ["q1", "q1", "q1", "q2", "q2", "q3"],
    "docid": ["a", "b", "c", "a", "d", "x"],
    "relevance": [2, 1, 0, 1, 0, 1],
})
RUN = pd.DataFrame({
    "qid": ["q1"] * 4 + ["q2"] * 3 + ["q9"],
    "docid": ["b", "z", "a", "c", "d", "y", "a", "a"],
    "score": [4.0, 3.0, 2.0, 1.0, 0.9, 0.8, 0.7, 5.0],
})


def values(frame):
    return dict(zip(frame["measure"], frame["value"]))


def test_hand_computed_values_with_graded_qrels_and_missing_query():
    """q1: b(1) z a(2) c(0); q2: d(0) y a(1); q3 (in the qrels) is missing from the run: 0."""
    result = values(evaluate(QRELS, {"r": RUN}, ["MAP", "P@2", "nDCG", "RR", "NumRelRet"]))
    ap = [(1 / 1 + 2 / 3) / 2, (1 / 3) / 1, 0.0]
    assert result["MAP"] == pytest.approx(sum(ap) / 3)
    assert result["P@2"] == pytest.approx((1 / 2 + 0 + 0) / 3)  # relevance 1 counts as relevant
    dcg1, idcg1 = 1 / math.log2(2) + 2 / math.log2(4), 2 / math.log2(2) + 1 / math.log2(3)  # gains are grades
    dcg2, idcg2 = 1 / math.log2(4), 1.0
    assert result["nDCG"] == pytest.approx((dcg1 / idcg1 + dcg2 / idcg2 + 0) / 3)
    assert result["RR"] == pytest.approx((1 + 1 / 3 + 0) / 3)
    assert result["NumRelRet"] == 3  # counts are summed, not averaged


def test_ties_are_broken_by_docid_descending_like_trec_eval():
    qrels = pd.DataFrame({"qid": ["q"], "docid": ["a"], "relevance": [1]})
    run = pd.DataFrame({"qid": "q", "docid": ["a", "b"], "score": [1.0, 1.0]})
    assert values(evaluate(qrels, {"r": run}, ["P@1", "RR"])) == {"P@1": 0.0, "RR": 0.5}


def test_per_query_rows_and_order():
    frame = evaluate(QRELS, {"r": RUN, "s": RUN}, ["P@2", "AP"], per_query=True)
    assert list(frame.columns) == ["run", "measure", "qid", "value"]
    assert frame["qid"].tolist()[:4] == ["q1", "q2", "q3", "all"]  # q9 is not judged: ignored
    assert list(dict.fromkeys(zip(frame["run"], frame["measure"]))) == [("r", "P@2"), ("r", "AP"), ("s", "P@2"), ("s", "AP")]


@pytest.mark.parametrize("names", [["nDCG", "nDCG@10", "P@10", "R@1000", "AP", "RR", "Rprec", "Bpref"]])
def test_agrees_with_ir_measures_called_directly(names):
    """Without ties and with every judged query in the run, ir_measures gives the same numbers."""
    run = RUN[RUN["qid"] != "q9"]
    qrels = QRELS[QRELS["qid"] != "q3"]
    ours = values(evaluate(qrels, {"r": run}, names))
    direct = ir_measures.calc_aggregate(
        [ir_measures.parse_measure(name) for name in names],
        qrels.rename(columns={"qid": "query_id", "docid": "doc_id"}),
        run.rename(columns={"qid": "query_id", "docid": "doc_id"}),
    )
    assert ours == pytest.approx({name: direct[ir_measures.parse_measure(name)] for name in names})


def test_aliases_and_trec_names_keep_the_users_name():
    frame = evaluate(QRELS, {"r": RUN}, "MAP AP map ndcg_cut_10 nDCG@10 MRR PRES@10")
    result = values(frame)
    assert list(result) == ["MAP", "AP", "map", "ndcg_cut_10", "nDCG@10", "MRR", "PRES@10"]
    assert result["MAP"] == result["AP"] == result["map"] and result["ndcg_cut_10"] == result["nDCG@10"]


def test_dict_runs_are_accepted():
    run = {"q1": {"b": 4.0, "a": 2.0}}
    assert values(evaluate(QRELS, {"r": run}, ["P@1"])) == {"P@1": pytest.approx(1 / 3)}


def test_every_bad_measure_is_reported_at_once():
    with pytest.raises(ClirplugError) as error:
        parse_measures("MAP FOO PRES P@x")
    message = str(error.value)
    assert "'FOO'" in message and "'PRES' needs a cutoff" in message and "'P@x'" in message
    with pytest.raises(ClirplugError, match="no measure"):
        parse_measures("")


@pytest.mark.parametrize("seed", range(5))
def test_trec_average_precision_equals_trec_eval_bit_for_bit(seed):
    """Random rankings with ties, graded qrels, queries without relevant documents or without hits."""
    import numpy as np
    import pandas as pd

    from clirplug.eval.measures import aggregate, evaluate, parse_measures, trec_average_precision
    from clirplug.io.runs import sort_run

    rng = np.random.default_rng(seed)
    rows = [(f"q{q}", f"d{d}", round(float(rng.normal()), 1)) for q in range(30)
            for d in rng.choice(300, size=int(rng.integers(1, 200)), replace=False)]
    run = sort_run(pd.DataFrame(rows, columns=["qid", "docid", "score"]), ties="trec_eval")
    qrels = pd.DataFrame([(f"q{q}", f"d{d}", int(rng.integers(0, 3))) for q in range(3, 33)
                          for d in rng.choice(300, size=40, replace=False)], columns=["qid", "docid", "relevance"])
    judged = qrels[qrels["relevance"] >= 1]
    relevant = run.merge(judged[["qid", "docid"]].assign(hit=True), on=["qid", "docid"], how="left")["hit"].notna()
    ap = trec_average_precision(run["qid"].to_numpy(), relevant.to_numpy(), judged.groupby("qid").size().to_dict())
    expected = evaluate(qrels, {"run": run}, ["AP"], per_query=True)
    by_qid = dict(zip(expected["qid"], expected["value"]))
    qids = sorted(set(qrels["qid"]))
    assert [ap.get(q, 0.0) for q in qids] == [by_qid[q] for q in qids]
    assert aggregate(parse_measures("MAP")[0], [ap.get(q, 0.0) for q in qids]) == by_qid["all"]
