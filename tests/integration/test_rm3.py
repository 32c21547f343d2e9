"""RM3 on a translated query: clirplug's search through Anserini's Rm3Reranker equals Anserini's own
SimpleSearcher with set_rm3, docids and scores."""

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


@pytest.mark.parametrize("rm3", [Rm3(), Rm3(fb_terms=5, fb_docs=3, original_query_weight=0.3)])
def test_rm3_equals_anserini_simple_searcher_with_set_rm3(demo_index, rm3):
    ours = Bm25Searcher(demo_index, 0.9, 0.4)
    reference = SimpleSearcher(demo_index, 0.9, 0.4, rm3=rm3)
    for query in QUERIES:
        expanded = ours.search(query, 100, rm3=rm3)
        assert expanded == reference.search(query, 100), query
        assert expanded != ours.search(query, 100), query  # the feedback changed the ranking
    run = ours.search_all({str(i): query for i, query in enumerate(QUERIES)}, 100, progress=False, rm3=rm3)
    assert run[run["qid"] == "1"][["docid", "score"]].apply(tuple, axis=1).tolist() == ours.search(QUERIES[1], 100, rm3)
    ours.close()
    reference.close()


def test_rm3_settings_are_checked():
    from clirplug.errors import ClirplugError

    assert rm3_of("none") is None and rm3_of("rm3") == Rm3(10, 10, 0.5)  # Anserini's defaults
    for bad in ({"fb_terms": 0}, {"fb_docs": 1.5}, {"original_query_weight": 1.2}):
        with pytest.raises(ClirplugError):
            Rm3(**bad)
    with pytest.raises(ClirplugError, match="prf"):
        rm3_of("rocchio")
