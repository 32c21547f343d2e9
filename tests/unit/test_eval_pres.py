"""PRES (Magdy & Jones, SIGIR 2010): hand-computed values and a brute-force reference."""

import numpy as np
import pandas as pd
import pytest

from clirplug.errors import ClirplugError
from clirplug.eval.pres import pres

pytestmark = pytest.mark.unit


def frames(relevant_ranks, n_relevant, length=100, qid="q"):
    """A run of ``length`` documents with relevant ones at ``relevant_ranks`` (1-based)."""
    docids = [f"r{rank:04d}" if rank in relevant_ranks else f"n{rank:04d}" for rank in range(1, length + 1)]
    run = pd.DataFrame({"qid": qid, "docid": docids, "score": np.arange(length, 0, -1, dtype=float)})
    found = [f"r{rank:04d}" for rank in relevant_ranks]
    missing = [f"missing{i}" for i in range(n_relevant - len(found))]
    qrels = pd.DataFrame({"qid": qid, "docid": found + missing + ["n0001"], "relevance": [1] * n_relevant + [0]})
    return run, qrels


# Magdy & Jones's own example (SIGIR 2010 talk): n = 4 relevant, N_max = 100.
# PRES = 1 - (sum(r_i)/n - (n+1)/2) / N_max, unretrieved relevant at N_max + i.
@pytest.mark.parametrize("ranks, expected", [
    ([1], 1 - ((1 + 102 + 103 + 104) / 4 - 2.5) / 100),  # = 0.25 (= recall: found at the top)
    ([50, 51, 53, 54], 1 - ((50 + 51 + 53 + 54) / 4 - 2.5) / 100),  # = 0.505
    ([1, 2, 3, 4], 1.0),
    ([1, 98, 99, 100], 1 - ((1 + 98 + 99 + 100) / 4 - 2.5) / 100),  # = 0.28
    ([], 0.0),  # nothing retrieved: the worst case
])
def test_magdy_jones_example(ranks, expected):
    run, qrels = frames(ranks, 4)
    assert pres(run, qrels, 100)["q"] == pytest.approx(expected, abs=1e-12)


def test_example_values_written_out():
    values = [pres(*frames(ranks, 4), 100)["q"] for ranks in ([1], [50, 51, 53, 54], [1, 98, 99, 100])]
    assert values == pytest.approx([0.25, 0.505, 0.28])


@pytest.mark.parametrize("ranks, expected", [
    ([1, 2, 3], 3 / 5),  # best case when n > N_max: N_max / n
    ([2], 1 - ((2 + (3 + 2) + (3 + 3) + (3 + 4) + (3 + 5)) / 5 - 3) / 3),  # = 0.1333...
    ([], 0.0),
])
def test_more_relevant_documents_than_n_max(ranks, expected):
    run, qrels = frames(ranks, 5, length=10)
    assert pres(run, qrels, 3)["q"] == pytest.approx(expected, abs=1e-12)


def test_documents_beyond_n_max_do_not_count():
    run, qrels = frames([1, 20], 2)
    assert pres(run, qrels, 10)["q"] == pytest.approx(1 - ((1 + 12) / 2 - 1.5) / 10)


def test_queries_without_run_or_relevant_documents_score_zero():
    run, qrels = frames([1], 1)
    qrels = pd.concat([qrels, pd.DataFrame({"qid": ["absent", "norel"], "docid": ["x", "n0001"], "relevance": [2, 0]})])
    run = pd.concat([run, pd.DataFrame({"qid": ["norel", "notjudged"], "docid": ["n0001", "x"], "score": [1.0, 1.0]})])
    values = pres(run, qrels, 10)
    assert values.to_dict() == {"absent": 0.0, "norel": 0.0, "q": 1.0}


def test_ties_are_broken_as_trec_eval_does():
    """Equal scores: docid descending, so 'b' (non-relevant) comes before 'a'."""
    run = pd.DataFrame({"qid": "q", "docid": ["a", "b"], "score": [1.0, 1.0]})
    qrels = pd.DataFrame({"qid": ["q"], "docid": ["a"], "relevance": [1]})
    assert pres(run, qrels, 10)["q"] == pytest.approx(1 - (2 - 1) / 10)


def brute_force_pres(ranking, relevant, n_max):
    """Rnorm over a collection of N = n_max + n documents, missing relevant ones placed last."""
    n = len(relevant)
    seen = list(ranking[:n_max]) + [f"pad{i}" for i in range(n_max - len(ranking[:n_max]))]
    missing = [doc for doc in relevant if doc not in seen]
    full = seen + [f"fill{i}" for i in range(n - len(missing))] + missing  # length n_max + n
    ranks = [position + 1 for position, doc in enumerate(full) if doc in relevant]
    big_n = n_max + n
    return 1 - (sum(ranks) - n * (n + 1) / 2) / (n * (big_n - n))


def test_against_brute_force_on_random_runs():
    rng = np.random.default_rng(7)
    for trial in range(40):
        docs = [f"d{i:03d}" for i in range(60)]
        n_max = int(rng.integers(1, 40))
        relevant = set(rng.choice(docs, size=int(rng.integers(1, 30)), replace=False))
        retrieved = list(rng.choice(docs, size=int(rng.integers(0, 60)), replace=False))
        scores = rng.integers(0, 8, size=len(retrieved)).astype(float)  # many ties
        run = pd.DataFrame({"qid": "q", "docid": retrieved, "score": scores})
        order = sorted(zip(scores, retrieved), reverse=True)  # score desc, then docid desc
        qrels = pd.DataFrame({"qid": "q", "docid": sorted(relevant), "relevance": 1})
        expected = brute_force_pres([doc for _, doc in order], relevant, n_max)
        assert pres(run, qrels, n_max)["q"] == pytest.approx(expected, abs=1e-12), trial


def test_n_max_must_be_positive():
    with pytest.raises(ClirplugError, match="N_max"):
        pres(*frames([1], 1), 0)
