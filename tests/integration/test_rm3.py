"""RM3 on a translated query: clirplug's search (the relevance model in numpy, clirplug.lucene.feedback) equals
Anserini's own SimpleSearcher with set_rm3, docids and scores."""

import pytest

from clirplug.lucene.anserini import SimpleSearcher
from clirplug.lucene.rm3 import Rm3, rm3_of
from clirplug.lucene.search import Bm25Searcher

pytestmark = pytest.mark.jvm

QUERIES = ["copy files to a directory", "list the running processes", "compress an archive"]


@pytest.fixture(scope="module")
def demo_index(tmp_path_factory):
    """The demo's English pages indexed (326 documents: enough for RM3's 10 feedback documents)."""
    from clirplug.data import demo_config
    from clirplug.lucene.index import build_index

    index = tmp_path_factory.mktemp("rm3") / "demo"
    build_index(demo_config().parent / "demo" / "corpus.jsonl", index, language="en", progress=False)
    return index


def english_sentences(count: int) -> list[str]:
    """The first ``count`` English lines of the demo's dev bitext: queries of every length."""
    from clirplug.data import demo_config

    lines = (demo_config().parent / "demo" / "bitext.dev.en").read_text(encoding="utf-8").splitlines()
    return lines[:count]


# Anserini's defaults; few terms of few documents; more terms than Java's smallest HashMap holds (12) and more
# documents than the first stage hands over (50)
@pytest.mark.parametrize("rm3", [Rm3(), Rm3(fb_terms=5, fb_docs=3, original_query_weight=0.3),
                                 Rm3(fb_terms=40, fb_docs=60, original_query_weight=0.7)])
def test_rm3_equals_anserini_simple_searcher_with_set_rm3(demo_index, rm3):
    ours = Bm25Searcher(demo_index, 0.9, 0.4)
    reference = SimpleSearcher(demo_index, 0.9, 0.4, rm3=rm3)
    for query in QUERIES:
        expanded = ours.search(query, 100, rm3=rm3)
        assert expanded == reference.search(query, 100), query
        assert expanded != ours.search(query, 100), query  # the feedback changed the ranking
    for query in english_sentences(60):
        assert ours.search(query, 1000, rm3=rm3) == reference.search(query, 1000), query
    run = ours.search_all({str(i): query for i, query in enumerate(QUERIES)}, 100, progress=False, rm3=rm3)
    assert run[run["qid"] == "1"][["docid", "score"]].apply(tuple, axis=1).tolist() == ours.search(QUERIES[1], 100, rm3)
    ours.close()
    reference.close()


@pytest.mark.parametrize("rm3", [Rm3(), Rm3(fb_terms=40, fb_docs=60, original_query_weight=0.7)])
def test_the_expanded_query_has_anserinis_terms_and_float_weights(demo_index, rm3):
    """Every weight to the last bit (rankings alone would hide it: scores are rounded to 1e-4)."""
    from clirplug.lucene.anserini import rm3_feedback_terms

    ours = Bm25Searcher(demo_index, 0.9, 0.4)
    for query in QUERIES + english_sentences(20):
        expanded = ours.rm3_terms(query, rm3)
        assert expanded == rm3_feedback_terms(ours, query, rm3), query
        assert len(expanded) > len(set(query.lower().split())), query  # feedback terms were added
    assert ours.rm3_terms(" ", rm3) == {}
    ours.close()


def test_rm3_settings_are_checked():
    from clirplug.errors import ClirplugError

    assert rm3_of("none") is None and rm3_of("rm3") == Rm3(10, 10, 0.5)  # Anserini's defaults
    for bad in ({"fb_terms": 0}, {"fb_docs": 1.5}, {"original_query_weight": 1.2}):
        with pytest.raises(ClirplugError):
            Rm3(**bad)
    with pytest.raises(ClirplugError, match="prf"):
        rm3_of("rocchio")


def test_rm3_grid_is_every_combination_in_order_and_checked():
    from clirplug.errors import ClirplugError
    from clirplug.lucene.rm3 import rm3_grid

    assert rm3_grid({"fb_terms": [10, 20], "original_query_weight": [0.3, 0.5]}) == [
        Rm3(10, 10, 0.3), Rm3(10, 10, 0.5), Rm3(20, 10, 0.3), Rm3(20, 10, 0.5)]  # fb_docs: Anserini's default
    for bad, message in (({"fb_terms": 10}, "grid.fb_terms: expected a non-empty list"), ({"k": [1]}, "grid: expected"),
                         ({"fb_docs": [0]}, "grid.fb_docs: must be"), ({}, "grid: expected")):
        with pytest.raises(ClirplugError, match=message):
            rm3_grid(bad)


def test_choose_rm3_keeps_the_best_setting_on_the_qrels_first_on_ties(demo_index):
    import pandas as pd

    from clirplug.eval.measures import evaluate
    from clirplug.qt.dt import choose_rm3

    searcher = Bm25Searcher(demo_index, 0.9, 0.4)
    queries = {str(i): query for i, query in enumerate(QUERIES)}
    qrels = pd.DataFrame({"qid": ["0", "0", "1", "2"], "docid": ["vaultcopy.1", "synccopy.1", "schedls.1", "sqztest.1"],
                          "relevance": [1, 1, 1, 1]})
    grid = [Rm3(10, 10, 0.5), Rm3(5, 3, 0.3), Rm3(5, 3, 0.3), Rm3(20, 5, 0.9)]
    best, values = choose_rm3(searcher, queries, qrels, grid, hits=100)
    by_hand = [float(evaluate(qrels, {"run": searcher.search_all(queries, 100, progress=False, rm3=rm3)}, ["MAP"])
                     ["value"].iloc[0]) for rm3 in grid]
    assert values == by_hand and values[1] == values[2] and len(set(values)) > 1
    assert best is grid[values.index(max(values))]  # the first of equal values
    searcher.close()
