"""MIRA n-best reranking end to end over a real Lucene index, with a hand-made n-best "decoder"."""

import pandas as pd
import pytest

from clirplug.eval.measures import average_precision
from clirplug.io.topics import Topic, topic_field
from clirplug.lucene.search import Bm25Searcher
from clirplug.mt.decoder import Translation
from clirplug.rerank.mira import (
    build_instances,
    reranked_query,
    train,
)


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


QRELS = pd.DataFrame({"qid": ["q1", "q2", "q3"], "docid": ["cp.1", "rm.1", "cp.1"], "relevance": [1, 1, 1]})


def test_instances_hold_bm25_ap_of_each_candidate(searcher):
    topics = [Topic("q1", "kopieren", "verzeichnis. kopieren")]
    names, raw, stats = build_instances(topics, "desc", FakeTranslator(), searcher, QRELS, nbest=2, progress=False)
    assert names == ["Copied", "LanguageModel", "QueryLength", "StopwordRatio"]
    assert len(raw) == 2 and stats["instances"] == 2
    # sentence 0 varies, sentence 1 stays at its 1-best "remove" (and the other way round)
    ap = lambda text: average_precision([d == "cp.1" for d, _ in searcher.search(text)], 1)
    assert raw[0][2].tolist() == [ap("directory remove"), ap("folder remove")]
    assert raw[1][2].tolist() == [ap("directory remove"), ap("directory copy")]
    assert raw[1][2][1] > raw[1][2][0]  # "copy" finds cp.1
    assert raw[1][1][1]["LanguageModel"] == -2.0 and raw[1][1][1]["QueryLength"] == 1.0
    assert stats["searches"] == 3  # "directory remove" is searched once


def test_trained_weights_pick_the_retrieval_oracle(searcher):
    topics = [Topic("q1", "kopieren", ""), Topic("q2", "löschen", "")]
    translator = FakeTranslator()
    model = train(topics, QRELS, translator, searcher, "title", nbest=2, grid=[1.0], epochs=10, folds=2,
                  progress=False)
    assert model.stats["train_ap_decoder_1best"] < model.stats["train_ap_reranked"] == model.stats["train_ap_oracle"]
    assert model.weights[model.names.index("LanguageModel")] < 0  # it learned to prefer the LM's second choice
    assert reranked_query(translator, model, "kopieren", split_sentences=False) == "copy"
    assert reranked_query(translator, model, "verzeichnis. kopieren", split_sentences=True) == "folder copy"


def test_cached_instances_are_reused_without_searching(searcher, tmp_path):
    topics = [Topic("q1", "kopieren", ""), Topic("q2", "löschen", "")]
    cache = tmp_path / "instances.json.gz"
    first = train(topics, QRELS, FakeTranslator(), searcher, "title", nbest=2, grid=[1.0], folds=2, progress=False,
                  instances_path=cache)
    # the same settings: read back, no searcher needed
    again = train(topics, QRELS, FakeTranslator(), None, "title", nbest=2, grid=[1.0], folds=2, progress=False,
                  instances_path=cache)
    assert again.names == first.names and again.weights.tolist() == first.weights.tolist()
    # another search depth: the key differs, so the instances are rebuilt (and this searcher-less call fails)
    with pytest.raises(AttributeError):
        train(topics, QRELS, FakeTranslator(), None, "title", nbest=2, grid=[1.0], folds=2, hits=10, progress=False,
              instances_path=cache)
