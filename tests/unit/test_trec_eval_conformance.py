"""Acceptance: reproduce trec_eval's own expected outputs (usnistgov/trec_eval, test/).

``results.test`` has ranks out of score order and tied scores; trec_eval orders by score
descending, ties by docno descending. Expected values are trec_eval's printed ones
(4 decimals), so ours must agree within half a unit of the 4th decimal.
"""

import pytest

from clirplug.eval.measures import evaluate
from clirplug.io.qrels import read_qrels
from clirplug.io.runs import read_run

pytestmark = pytest.mark.unit

# trec_eval name -> clirplug (ir_measures) name
MEASURES = {
    "map": "MAP",
    "P_5": "P@5",
    "P_10": "P@10",
    "P_100": "P@100",
    "recip_rank": "RR",
    "Rprec": "Rprec",
    "bpref": "Bpref",
    "num_rel_ret": "NumRelRet",
}
NDCG = {"ndcg_cut_10": "nDCG@10"}  # from out.test.meas_params


def expected(path, names):
    """{(trec_eval measure, qid): value} for ``names`` from a trec_eval output file."""
    table = {}
    for line in path.read_text().splitlines():
        measure, qid, value = line.split()
        if measure in names:
            table[measure, qid] = float(value)
    return table


@pytest.fixture(scope="module")
def ours(trec_eval_fixtures):
    qrels = read_qrels(trec_eval_fixtures / "qrels.test")
    run = read_run(trec_eval_fixtures / "results.test")
    frame = evaluate(qrels, {"test": run}, list(MEASURES.values()) + list(NDCG.values()), per_query=True)
    return {(measure, qid): value for measure, qid, value in zip(frame["measure"], frame["qid"], frame["value"])}


@pytest.mark.parametrize("output, names, per_query", [
    ("out.test", MEASURES, False),
    ("out.test.aq", MEASURES, True),
    ("out.test.meas_params", NDCG, True),
])
def test_reproduces_trec_eval(trec_eval_fixtures, ours, output, names, per_query):
    reference = expected(trec_eval_fixtures / output, names)
    assert {measure for measure, _ in reference} == set(names)  # every measure is in the file
    assert {qid for _, qid in reference} == ({"301", "302", "303", "all"} if per_query else {"all"})
    for (measure, qid), value in reference.items():
        assert ours[names[measure], qid] == pytest.approx(value, abs=0.5e-4 + 1e-12), (measure, qid)
