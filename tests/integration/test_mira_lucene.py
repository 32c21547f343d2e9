"""MIRA n-best reranking end to end over a real Lucene index, with a hand-made n-best "decoder"."""

import math

import pandas as pd
import pytest

from clirplug.corpus import read_corpus
from clirplug.eval.measures import average_precision
from clirplug.io.topics import Topic, topic_field
from clirplug.lucene.reader import LuceneIndex
from clirplug.lucene.search import Bm25Searcher
from clirplug.mt.decoder import Translation
from clirplug.qt.mira import (
    RETRIEVAL_FEATURES,
    build_instances,
    reranked_query,
    retrieval_features,
    train,
)

pytestmark = pytest.mark.jvm


def _t(words, lm):
    return Translation(tuple(words.split()), lm, {"LanguageModel": lm}, (), ())


class FakeTranslator:
    """The Translator interface MIRA uses, over fixed n-best lists (decoder weight: LanguageModel 1)."""

    def __init__(self):
        self.kind, self.pop_limit = "flat", 200
        self.weights = {"LanguageModel": 1.0}
        self.lists = {
            ("kopieren",): [_t("remove", -1.0), _t("copy", -2.0)],  # the decoder prefers the wrong one
            ("löschen",): [_t("copy", -1.0), _t("remove", -2.0)],
            ("verzeichnis",): [_t("directory", -1.0), _t("folder", -3.0)],
        }

    def sentences(self, text, split=True):
        return [part.split() for part in (text.split(". ") if split else [text])]

    def translate(self, tokens, nbest=1):
        return self.lists[tuple(tokens)][:nbest]

    def topic_sentences(self, topic, field):
        return self.sentences(topic_field(topic, field), split=field != "title")

    def restrict_topics(self, topics, field):
        pass


@pytest.fixture()
def searcher(tiny_index):
    searcher = Bm25Searcher(tiny_index)
    yield searcher
    searcher.close()


@pytest.fixture(scope="module")
def index(tiny_index):
    index = LuceneIndex(tiny_index, progress=False)
    yield index
    index.close()


QRELS = pd.DataFrame({"qid": ["q1", "q2", "q3"], "docid": ["cp.1", "rm.1", "cp.1"], "relevance": [1, 1, 1]})


def test_instances_hold_bm25_ap_of_each_candidate(searcher):
    topics = [Topic("q1", "kopieren", "verzeichnis. kopieren")]
    names, raw, stats = build_instances(topics, "desc", FakeTranslator(), searcher, QRELS, nbest=2, progress=False)
    assert names == ["Copied", "LanguageModel", "QueryLength", "StopwordRatio"]
    assert len(raw) == 2 and stats["instances"] == 2
    # sentence 0 varies, sentence 1 stays at its 1-best "remove" (and the other way round)
    def ap(text):
        return average_precision([d == "cp.1" for d, _ in searcher.search(text)], 1)

    assert raw[0][2].tolist() == [ap("directory remove"), ap("folder remove")]
    assert raw[1][2].tolist() == [ap("directory remove"), ap("directory copy")]
    assert raw[1][2][1] > raw[1][2][0]  # "copy" finds cp.1
    assert raw[1][1][1]["LanguageModel"] == -2.0 and raw[1][1][1]["QueryLength"] == 1.0
    assert stats["searches"] == 3  # "directory remove" is searched once


def test_trained_weights_pick_the_retrieval_oracle(searcher):
    topics = [Topic("q1", "kopieren", ""), Topic("q2", "löschen", "")]
    translator = FakeTranslator()
    model = train(topics, QRELS, translator, searcher, None, "title", nbest=2, grid=[1.0], epochs=10, folds=2,
                  progress=False)
    assert model.stats["train_ap_decoder_1best"] < model.stats["train_ap_reranked"] == model.stats["train_ap_oracle"]
    assert model.weights[model.names.index("LanguageModel")] < 0  # it learned to prefer the LM's second choice
    assert reranked_query(translator, model, Topic("q", "kopieren", ""), "title") == "copy"
    assert reranked_query(translator, model, Topic("q", "", "verzeichnis. kopieren"), "desc") == "folder copy"


class CountingSearcher:
    """A searcher that counts its searches."""

    def __init__(self, searcher):
        self.inner, self.count = searcher, 0
        self.index, self.k1, self.b = searcher.index, searcher.k1, searcher.b

    def search(self, text, hits=1000):
        self.count += 1
        return self.inner.search(text, hits)


def test_retrieval_features_on_a_real_index(index, tiny_corpus):
    # by hand: "copy" analyzes to "copi", in cp.1 only (its title "copy", its text "copies"); N = 6
    idf = math.log(1 + (6 - 1 + 0.5) / (1 + 0.5))
    assert retrieval_features("copy xyzzy", index) == pytest.approx({"Unmatched": 1.0, "MeanIdf": idf, "MaxIdf": idf})
    # brute force: df by analyzing every document's text with the index's analyzer
    docs = [set(index.analyze(doc.text)) for doc in read_corpus(tiny_corpus)]
    query = "the files of a directory, and patterns nobody frobnicates"
    terms = set(index.analyze(query))
    df = {t: sum(t in doc for doc in docs) for t in terms}
    idfs = [math.log(1 + (len(docs) - d + 0.5) / (d + 0.5)) for d in df.values() if d]
    expected = {"Unmatched": float(sum(d == 0 for d in df.values())), "MeanIdf": sum(idfs) / len(idfs),
                "MaxIdf": max(idfs)}
    assert expected["Unmatched"] == 2 and len(idfs) == 3  # "nobodi", "frobnic"; "file", "directori", "pattern"
    assert retrieval_features(query, index) == pytest.approx(expected)


def test_models_with_retrieval_features_rerank_with_the_index(searcher, index):
    topics = [Topic("q1", "kopieren", ""), Topic("q2", "löschen", "")]
    names, raw, _ = build_instances(topics, "title", FakeTranslator(), searcher, QRELS, index, nbest=2, progress=False)
    assert set(RETRIEVAL_FEATURES) <= set(names)
    copy = raw[0][1][1]  # q1's second candidate, "copy"
    assert copy["Unmatched"] == 0 and copy["MeanIdf"] == pytest.approx(retrieval_features("copy", index)["MeanIdf"])
    translator = FakeTranslator()
    model = train(topics, QRELS, translator, searcher, index, "title", nbest=2, grid=[1.0], folds=2, progress=False)
    assert model.uses_index
    assert reranked_query(translator, model, Topic("q", "kopieren", ""), "title", index=index) == "copy"


def test_searches_are_kept_and_reused(searcher, tmp_path):
    topics = [Topic("q1", "kopieren", ""), Topic("q2", "löschen", "")]
    cache = tmp_path / "searches.json.gz"
    counting = CountingSearcher(searcher)
    first = train(topics, QRELS, FakeTranslator(), counting, None, "title", nbest=2, grid=[1.0], folds=2,
                  progress=False, searches_path=cache)
    assert counting.count == first.stats["searches"] == first.stats["distinct_queries"] == 4
    # the same qrels and search settings: read back, nothing searched, the same model
    again = train(topics, QRELS, FakeTranslator(), counting, None, "title", nbest=2, grid=[1.0], folds=2,
                  progress=False, searches_path=cache)
    assert counting.count == 4 and again.stats["searches"] == 0
    assert again.names == first.names and again.weights.tolist() == first.weights.tolist()
    # a new topic searches only its own queries
    more = topics + [Topic("q3", "verzeichnis", "")]
    train(more, QRELS, FakeTranslator(), counting, None, "title", nbest=2, grid=[1.0], folds=2, progress=False,
          searches_path=cache)
    assert counting.count == 6
    # another search depth: another key, so everything is searched again
    train(topics, QRELS, FakeTranslator(), counting, None, "title", nbest=2, grid=[1.0], folds=2, hits=10,
          progress=False, searches_path=cache)
    assert counting.count == 10
