"""MIRA n-best reranking (clirplug.qt.mira): updates and features computed by hand, AP against trec_eval's,
the model file."""

import math

import numpy as np
import pandas as pd
import pytest

from clirplug.errors import ClirplugError
from clirplug.eval.measures import average_precision
from clirplug.lucene.reader import LuceneIndex
from clirplug.mt.decoder import Translation
from clirplug.qt.mira import (
    Instance,
    MiraModel,
    candidate_features,
    choose,
    genre_features,
    held_out_choices,
    mira_step,
    one_standard_error_choice,
    paired_standard_errors,
    retrieval_features,
    train_mira,
)

pytestmark = pytest.mark.unit

# Three candidates over two features; the decoder's weights (1, 0) rank candidate 0 first.
FEATURES = np.array([[2.0, 0.0], [1.0, 1.0], [0.0, 3.0]])
AP = np.array([0.2, 0.8, 0.5])


def test_first_update_by_hand():
    # scores (2, 1, 0); oracle = candidate 1 (AP 0.8). Violations l_j - (s_o - s_j):
    # j=0: 0.6 - (1 - 2) = 1.6, Δ = (-1, 1), |Δ|² = 2; j=2: 0.3 - (1 - 0) = -0.7.
    # τ = min(C, 1.6 / 2) = 0.8; w = (1, 0) + 0.8 (-1, 1) = (0.2, 0.8).
    weights, tau = mira_step(np.array([1.0, 0.0]), FEATURES, AP, C=1.0)
    assert tau == pytest.approx(0.8)
    np.testing.assert_allclose(weights, [0.2, 0.8])
    # the oracle now beats candidate 0 by exactly its loss 0.6 (PA: the smallest change)
    scores = FEATURES @ weights
    assert scores[1] - scores[0] == pytest.approx(0.6)


def test_clip_limits_the_step():
    weights, tau = mira_step(np.array([1.0, 0.0]), FEATURES, AP, C=0.5)
    assert tau == 0.5
    np.testing.assert_allclose(weights, [0.5, 0.5])


def test_second_update_and_average_by_hand():
    # from (0.2, 0.8): scores (0.4, 1.0, 2.4); j=0: 0.6 - 0.6 = 0; j=2: 0.3 - (1.0 - 2.4) = 1.7,
    # Δ = (1, -2), |Δ|² = 5, τ = 0.34; w = (0.2 + 0.34, 0.8 - 0.68) = (0.54, 0.12).
    weights, tau = mira_step(np.array([0.2, 0.8]), FEATURES, AP, C=1.0)
    assert tau == pytest.approx(0.34)
    np.testing.assert_allclose(weights, [0.54, 0.12])
    # two epochs over the one instance: the average of (0.2, 0.8) and (0.54, 0.12)
    averaged = train_mira([Instance("q", FEATURES, AP)], np.array([1.0, 0.0]), C=1.0, epochs=2)
    np.testing.assert_allclose(averaged, [0.37, 0.46])


def test_zero_clip_keeps_the_decoder_weights():
    start = np.array([1.0, 0.0])
    np.testing.assert_array_equal(train_mira([Instance("q", FEATURES, AP)], start, C=0.0, epochs=3), start)
    # exactly, also for weights whose plain running mean would round (0.1 summed 7 times and divided by 7 is not 0.1)
    odd = np.array([0.1, -0.3756831219759477])
    assert sum([0.1] * 7) / 7 != 0.1
    np.testing.assert_array_equal(train_mira([Instance("q", FEATURES, AP)], odd, C=0.0, epochs=7), odd)
    means = [ap.mean() for ap in held_out_choices([Instance(f"q{i}", FEATURES, AP) for i in range(4)], start,
                                                    [0.0, 1.0], folds=2)]
    assert means[0] == pytest.approx(0.2)  # the decoder's 1-best, candidate 0
    assert means[1] > 0.2  # updates move away from the decoder's choice


def test_no_update_when_the_oracle_wins_by_its_margins():
    # scores (0, 1, 0.5): the oracle (1) beats 0 by 1 >= 0.6 and 2 by 0.5 >= 0.3
    weights = np.array([0.1, 0.0])
    feats = np.array([[0.0, 0.0], [10.0, 0.0], [5.0, 0.0]])
    kept, tau = mira_step(weights, feats, AP, C=1.0)
    assert tau == 0.0 and kept is weights


def test_oracle_ties_take_the_highest_score_and_identical_features_are_skipped():
    feats = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    ap = np.array([0.5, 0.5, 0.0])  # candidates 0 and 1 tie; candidate 2 has the oracle 0's features
    weights, tau = mira_step(np.array([1.0, 0.0]), feats, ap, C=10.0)
    # oracle = 0 (score 1 > 0); candidate 2 has Δ = 0 (cannot be separated): no violated constraint left
    # (candidate 1: loss 0, margin 1 - 0 >= 0)
    assert tau == 0.0
    np.testing.assert_array_equal(weights, [1.0, 0.0])


def test_choose_keeps_the_decoder_order_on_ties():
    assert choose(np.array([[1.0], [1.0], [0.0]]), np.array([2.0])) == 0
    assert choose(FEATURES, np.array([0.0, 1.0])) == 2


def test_training_separates_a_separable_problem():
    # brute force check: on random instances whose AP is a linear function of the features,
    # the averaged weights pick the best-AP candidate far more often than the start weights
    rng = np.random.default_rng(3)
    truth = np.array([1.0, -2.0, 0.5])
    instances = []
    for i in range(60):
        feats = rng.normal(size=(8, 3))
        utility = feats @ truth
        ap = (utility - utility.min()) / (utility.max() - utility.min())
        instances.append(Instance(f"q{i}", feats, ap))
    start = np.array([0.0, 1.0, 0.0])
    learned = train_mira(instances, start, C=1.0, epochs=10, seed=0)
    def hits(w):
        return sum(choose(inst.features, w) == int(np.argmax(inst.ap)) for inst in instances)

    assert hits(learned) >= 50 > hits(start)
    # deterministic given the seed
    np.testing.assert_array_equal(learned, train_mira(instances, start, C=1.0, epochs=10, seed=0))
    choices = held_out_choices(instances, start, [1e-6, 1.0], epochs=5, folds=3)
    assert len(choices) == 2 and choices[1].mean() > choices[0].mean()


def test_average_precision_equals_trec_eval():
    from clirplug.eval.measures import evaluate

    ranking = ["d3", "d1", "d7", "d2", "d9"]
    relevant = {"d1", "d2", "d4"}
    # hand: relevant at ranks 2 and 4 -> (1/2 + 2/4) / 3
    hits = [docid in relevant for docid in ranking]
    assert average_precision(hits, len(relevant)) == pytest.approx((0.5 + 0.5) / 3)
    run = pd.DataFrame({"qid": "q", "docid": ranking, "rank": range(1, 6), "score": [5.0, 4, 3, 2, 1]})
    qrels = pd.DataFrame({"qid": ["q"] * 4, "docid": ["d1", "d2", "d3", "d4"], "relevance": [1, 1, 0, 2]})
    value = evaluate(qrels, {"r": run}, ["MAP"])["value"].iloc[0]
    assert average_precision(hits, len(relevant)) == pytest.approx(value)
    assert average_precision([False] * len(ranking), 0) == 0.0


def test_genre_features_by_hand():
    stop = frozenset({"the", "of"})
    f = genre_features(["grub", "Konfiguration"], ["the", "GRUB", "configuration", "of", "grub"], stop)
    assert f == {"QueryLength": 2.0, "Copied": 2.0, "StopwordRatio": 0.4}
    assert genre_features(["x"], [], stop) == {"QueryLength": 0.0, "Copied": 0.0, "StopwordRatio": 0.0}


def test_model_file_round_trip_and_errors(tmp_path):
    model = MiraModel(["LanguageModel", "Copied"], [0.5, -1.25], {"kind": "flat", "nbest": 10}, {"C": 0.01})
    model.save(tmp_path / "m.json")
    loaded = MiraModel.load(tmp_path / "m.json")
    assert loaded.names == model.names and loaded.settings == model.settings
    np.testing.assert_array_equal(loaded.weights, model.weights)
    (tmp_path / "bad.json").write_text('{"format": "other"}')
    with pytest.raises(ClirplugError, match="bad.json: not a MIRA model"):
        MiraModel.load(tmp_path / "bad.json")
    with pytest.raises(ClirplugError, match="missing.json: cannot read"):
        MiraModel.load(tmp_path / "missing.json")


def test_one_standard_error_rule_by_hand():
    grid = [0.0, 0.1, 1.0]
    base = np.array([0.5, 0.5, 0.5, 0.5])
    # C = 1 gains 0.1 on every instance (no noise): it is chosen
    assert one_standard_error_choice(grid, [base, base, base + 0.1]) == 1.0
    # C = 1 gains 0.05 on average with differences (0.2, 0.2, 0, -0.2):
    # SE = sqrt((0.15² + 0.15² + 0.05² + 0.25²) / 3) / 2 = 0.0957 > 0.05, so C = 0 is kept
    noisy = base + np.array([0.2, 0.2, 0.0, -0.2])
    assert one_standard_error_choice(grid, [base, base, noisy]) == 0.0
    se = math.sqrt((0.15**2 + 0.15**2 + 0.05**2 + 0.25**2) / 3) / 2
    np.testing.assert_allclose(paired_standard_errors([base, base, noisy]), [se, se, 0.0])


class FakeIndex:
    """Index statistics by hand: N = 10 documents, whitespace analysis that drops "the", Lucene's idf."""

    num_docs = 10
    idf = LuceneIndex.idf  # the formula under test, on this object's N

    def __init__(self):
        self.doc_freq = {"copy": 1, "file": 4, "the": 9}

    def analyze(self, text):
        return tuple(w for w in text.lower().split() if w != "the")

    def df(self, terms):
        return np.array([self.doc_freq.get(t, 0) for t in terms])


def test_retrieval_features_by_hand():
    idf_copy = math.log(1 + (10 - 1 + 0.5) / (1 + 0.5))  # 1.99243
    idf_file = math.log(1 + (10 - 4 + 0.5) / (4 + 0.5))  # 0.89382
    f = retrieval_features("The copy FILE xyzzy", FakeIndex())
    assert f == pytest.approx({"Unmatched": 1.0, "MeanIdf": (idf_copy + idf_file) / 2, "MaxIdf": idf_copy})
    assert f["MeanIdf"] == pytest.approx(1.443124, abs=1e-6)
    # distinct terms: repeating a word changes nothing (it is one clause of the bag-of-words query)
    assert retrieval_features("copy copy file xyzzy xyzzy", FakeIndex()) == f
    nothing = {"Unmatched": 0.0, "MeanIdf": 0.0, "MaxIdf": 0.0}
    assert retrieval_features("", FakeIndex()) == nothing and retrieval_features("the", FakeIndex()) == nothing
    assert retrieval_features("xyzzy plugh", FakeIndex()) == {"Unmatched": 2.0, "MeanIdf": 0.0, "MaxIdf": 0.0}


def _t(words, lm):
    return Translation(tuple(words.split()), lm, {"LanguageModel": lm}, (), ())


def test_candidate_features_use_the_dt_query_words():
    stop = frozenset({"the"})
    f = candidate_features(_t("copy the xyzzy", -1.0), ["kopieren"], stop)
    assert set(f) == {"LanguageModel", "QueryLength", "Copied", "StopwordRatio"}  # no index: no retrieval features
    # DT's stopwords are removed before analysis: "file" never reaches the query
    g = candidate_features(_t("copy file xyzzy", -1.0), ["kopieren"], stop, FakeIndex(), frozenset({"file"}))
    assert g["LanguageModel"] == -1.0 and g["Unmatched"] == 1.0
    assert g["MeanIdf"] == g["MaxIdf"] == pytest.approx(math.log(1 + 9.5 / 1.5))


def test_rank_with_retrieval_features_needs_the_index():
    cands = [_t("xyzzy", -1.0), _t("copy", -2.0)]  # the decoder prefers the word no document holds
    model = MiraModel(["LanguageModel", "Unmatched"], [1.0, -5.0], {"nbest": 2})
    assert model.uses_index
    with pytest.raises(ClirplugError, match="give the searched index"):
        model.rank(cands, ["kopieren"])
    # scores: -1 - 5 * 1 = -6 against -2 - 0 = -2
    assert model.rank(cands, ["kopieren"], FakeIndex()) == 1
    # with "xyzzy" a DT stopword the first query is empty, so nothing is unmatched: -1 against -2
    assert model.rank(cands, ["kopieren"], FakeIndex(), stopwords=["xyzzy"]) == 0
    # a model without retrieval features (an older model file) ranks without the index
    old = MiraModel(["LanguageModel", "Copied"], [1.0, 0.0], {"nbest": 2})
    assert not old.uses_index and old.rank(cands, ["kopieren"]) == 0


def test_search_refuses_other_dt_stopwords_than_training(tmp_path):
    from clirplug.qt.mira import search_run

    MiraModel(["LanguageModel"], [1.0], {"kind": "flat", "nbest": 2, "stopwords": ["the"]}).save(tmp_path / "m.json")
    options = {"index": str(tmp_path / "no-index"), "model": str(tmp_path / "no-model"), "mira": str(tmp_path / "m.json"),
               "kind": "flat"}
    with pytest.raises(ClirplugError, match="trained with 1 DT stopwords, given 0"):
        search_run([], **options)
    with pytest.raises(ClirplugError, match="trained with 1 DT stopwords, given 2"):
        search_run([], **options, stopwords=["the", "of"])
    with pytest.raises(ClirplugError, match="give --kind flat"):
        search_run([], **{**options, "kind": "hiero"}, stopwords=["the", "of"])
