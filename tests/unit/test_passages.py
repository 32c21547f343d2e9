"""Passage collections: pages cut into passages (hand examples), MaxP against a brute-force reference."""

import json
import random

import pandas as pd
import pytest

from clirplug.corpus import Document, read_corpus
from clirplug.errors import ClirplugError
from clirplug.passages import max_passage, page_id, passages_of, read_passages, write_passages

pytestmark = pytest.mark.unit


# ----------------------------------------------------------------------------- cutting

def test_a_page_is_cut_into_runs_of_at_most_n_words_each_with_its_title():
    page = Document("ls.1", "ls - list directory contents", "one two  three\nfour five\tsix seven")
    assert passages_of(page, 3) == [Document("ls.1#0", "ls - list directory contents", "one two three"),
                                    Document("ls.1#1", "ls - list directory contents", "four five six"),
                                    Document("ls.1#2", "ls - list directory contents", "seven")]  # the last short


def test_a_page_of_exactly_n_words_is_one_passage_and_a_page_without_contents_is_its_title():
    assert passages_of(Document("a", "T", "w1 w2 w3"), 3) == [Document("a#0", "T", "w1 w2 w3")]
    assert passages_of(Document("b", "T", ""), 3) == [Document("b#0", "T", "")]
    assert passages_of(Document("c", "", "  \n "), 3) == [Document("c#0", "", "")]
    assert passages_of(Document("d", "", "x y z w"), 100) == [Document("d#0", "", "x y z w")]


def test_the_passages_hold_every_word_of_the_page_in_order():
    words = [f"w{i}" for i in range(257)]
    passages = passages_of(Document("p", "title", " ".join(words)), 100)
    assert [len(p.contents.split()) for p in passages] == [100, 100, 57]
    assert " ".join(p.contents for p in passages).split() == words
    assert all(p.title == "title" for p in passages)


def test_write_passages_streams_a_corpus_to_jsonl_that_reads_back(tmp_path):
    corpus = tmp_path / "pages.jsonl"
    corpus.write_text("".join(json.dumps(record) + "\n" for record in [
        {"id": "a.1", "title": "A", "contents": "one two three four five"},
        {"id": "b.1", "contents": ""}]), encoding="utf-8")
    out = tmp_path / "passages.jsonl"
    counts = write_passages(corpus, out, words=2, progress=False)
    assert (counts["pages"], counts["passages"]) == (2, 4)
    assert list(read_corpus(out)) == [Document("a.1#0", "A", "one two"), Document("a.1#1", "A", "three four"),
                                      Document("a.1#2", "A", "five"), Document("b.1#0", "", "")]
    assert list(read_passages(corpus, 2)) == list(read_corpus(out))
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left


def test_a_bad_word_count_or_corpus_is_one_error_and_nothing_is_written(tmp_path):
    corpus = tmp_path / "pages.jsonl"
    corpus.write_text('{"id": "a", "contents": "x"}\n{"id": "a", "contents": "y"}\n', encoding="utf-8")
    with pytest.raises(ClirplugError, match="at least 1 word"):
        write_passages(corpus, tmp_path / "out.jsonl", words=0, progress=False)
    with pytest.raises(ClirplugError, match="pages.jsonl:2: duplicate document id 'a'"):
        write_passages(corpus, tmp_path / "out.jsonl", words=5, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pages.jsonl"]


# ----------------------------------------------------------------------------- MaxP

def test_page_ids_split_at_the_last_delimiter():
    assert [page_id(p) for p in ("ls.1#0", "a#b#12", "plain", "x#")] == ["ls.1", "a#b", "plain", "x"]
    assert page_id("a|3", "|") == "a"


def _brute_force_maxp(rows, hits):
    """Each query's pages by their best passage, score descending then page id ascending, the first ``hits``."""
    best = {}
    for qid, docid, score in rows:
        page = docid.rsplit("#", 1)[0]
        best.setdefault(qid, {})
        best[qid][page] = max(score, best[qid].get(page, float("-inf")))
    out = []
    for qid in sorted(best):
        ranked = sorted(best[qid].items(), key=lambda item: (-item[1], item[0]))[:hits]
        out += [(qid, page, rank, score) for rank, (page, score) in enumerate(ranked, 1)]
    return out


@pytest.mark.parametrize("seed", range(5))
def test_maxp_equals_a_brute_force_reference_with_ties(seed):
    rng = random.Random(seed)
    rows = []
    for qid in ("q1", "q2", "q10"):
        for page in range(rng.randint(1, 30)):
            for k in range(rng.randint(1, 4)):
                rows.append((qid, f"p{page}.{rng.randint(1, 8)}#{k}", float(rng.randint(0, 6))))  # many ties
    rows = list({(q, d): (q, d, s) for q, d, s in rows}.values())
    rng.shuffle(rows)
    run = pd.DataFrame(rows, columns=["qid", "docid", "score"])
    for hits in (1, 5, 1000):
        got = max_passage(run, hits)
        assert list(got.itertuples(index=False, name=None)) == _brute_force_maxp(rows, hits)


def test_maxp_by_hand_and_on_a_dict_run():
    run = {"q": {"a#0": 1.0, "a#1": 3.0, "b#0": 3.0, "c#4": 2.0, "c#5": 0.5}}
    got = max_passage(run, 2)
    assert list(got.itertuples(index=False, name=None)) == [("q", "a", 1, 3.0), ("q", "b", 2, 3.0)]
    assert max_passage({"q": {"a|0": 1.0, "a|1": 2.0}}, 10, delimiter="|")["docid"].tolist() == ["a"]
    assert max_passage(pd.DataFrame(columns=["qid", "docid", "score"]), 10).empty
    assert list(max_passage({}, 10).columns) == ["qid", "docid", "rank", "score"]


def test_maxp_refuses_a_bad_run_in_one_line():
    with pytest.raises(ClirplugError, match="run score nan is not finite for query 'q', document 'a#1'"):
        max_passage({"q": {"a#0": 1.0, "a#1": float("nan")}}, 10)
    with pytest.raises(ClirplugError, match="lacks column"):
        max_passage(pd.DataFrame({"qid": ["q"], "docid": ["a#0"]}), 10)


def test_maxp_refuses_a_bad_depth_or_delimiter():
    with pytest.raises(ClirplugError, match="--max-passage-hits must be at least 1"):
        max_passage({"q": {"a#0": 1.0}}, 0)
    with pytest.raises(ClirplugError, match="delimiter cannot be empty"):
        max_passage({"q": {"a#0": 1.0}}, 10, delimiter="")


def test_dense_words_are_chosen_by_the_maxp_of_passage_runs():
    """choose_words on a passage collection: each value's passage run measured as pages against page qrels."""
    from clirplug.dense import choose_words
    from clirplug.io.runs import run_frame

    class Passages:  # a searcher of fixed passage rankings
        def __init__(self, ranked):
            self.ranked = ranked

        def search_all(self, queries, hits, progress=False, timed=None):
            return run_frame([(qid, self.ranked[:hits]) for qid in queries])

    qrels = pd.DataFrame({"qid": ["q"], "docid": ["good"], "relevance": [1]})
    # as pages, the vectors of 16 words rank the relevant page second (AP 0.5), those of 48 words first (AP 1.0)
    searchers = {16: Passages([("b#0", 3.0), ("good#1", 2.0), ("c#0", 1.0)]),
                 48: Passages([("good#0", 3.0), ("b#0", 2.0), ("b#1", 1.0)])}
    best, values = choose_words(searchers, {"q": "query"}, qrels, hits=10, max_passage_hits=5)
    assert (best, values) == (48, {16: 0.5, 48: 1.0})
    passages_only = choose_words(searchers, {"q": "query"}, qrels, hits=10)[1]
    assert passages_only == {16: 0.0, 48: 0.0}  # passage ids match no page of the qrels
