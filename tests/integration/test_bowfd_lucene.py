"""BOW-FD with a real decoder forest and the Lucene statistics of a tiny index."""

import json

import numpy as np
import pytest

from clirplug.mt.grammar import parse_rule, write_grammar
from clirplug.mt.lm import FALLBACK_DISCOUNTS, estimate, write_arpa

pytestmark = pytest.mark.jvm

# German -> English: ambiguous words whose translations the documents tell apart
GRAMMAR = """\
[X] ||| dateien ||| files ||| EgivenF=0.1 FgivenE=0.2 ||| 0-0
[X] ||| dateien ||| data ||| EgivenF=0.6 FgivenE=0.5 ||| 0-0
[X] ||| kopieren ||| copy ||| EgivenF=0.2 FgivenE=0.2 ||| 0-0
[X] ||| kopieren ||| duplicate ||| EgivenF=0.7 FgivenE=0.4 ||| 0-0
[X] ||| verschieben ||| move ||| EgivenF=0.1 FgivenE=0.1 ||| 0-0
[X] ||| verschieben ||| shift ||| EgivenF=0.5 FgivenE=0.6 ||| 0-0
[X] ||| verzeichnis ||| directory ||| EgivenF=0.3 FgivenE=0.2 ||| 0-0
[X] ||| verzeichnis ||| folder ||| EgivenF=0.2 FgivenE=0.3 ||| 0-0
[X] ||| in ||| into ||| EgivenF=0.3 FgivenE=0.3 ||| 0-0
[X] ||| in ||| in the ||| EgivenF=0.4 FgivenE=0.3 ||| 0-0
[X] ||| dateien [X,1] ||| [X,1] files ||| EgivenF=0.3 FgivenE=0.3 ||| 0-1
[X] ||| [X,1] in [X,2] ||| [X,1] into a [X,2] ||| EgivenF=0.5 FgivenE=0.4 ||| 1-1
"""
LM_TEXT = ["copy files into a directory", "move files into a folder", "the data in the folder", "files"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bowfd-model")
    write_grammar([parse_rule(line) for line in GRAMMAR.splitlines()], folder / "grammar.hiero.gz")
    write_arpa(estimate([s.split() for s in LM_TEXT], order=3, discount_fallback=FALLBACK_DISCOUNTS), folder / "lm.arpa")
    return folder


@pytest.fixture(scope="module")
def bowfd(model_dir, tiny_index):
    from clirplug.lucene.reader import LuceneIndex
    from clirplug.mt.translator import Translator
    from clirplug.rerank.bowfd import BowFD, BowfdConfig, BowfdWeights

    translator = Translator(model_dir, cache=False)
    index = LuceneIndex(tiny_index, progress=False)
    return BowFD(translator, index, BowfdWeights(smt=dict(translator.weights), v=1.6), BowfdConfig(field="desc"))


QUERIES = ["dateien kopieren", "dateien in verzeichnis verschieben", "Dateien in Verzeichnis kopieren. Dateien verschieben."]


def lucene_bm25(index_path, index, term, docnum, k1, b):
    """The paper's bm25(t, d) from Lucene itself: Lucene's BM25 term score (idf · saturated tf,
    Lucene >= 8) rescaled from Lucene's idf to the RSJ weight, with df from Lucene's reader."""
    from clirplug.lucene.query import LuceneScores, term_query

    lucene = LuceneScores(index_path, k1, b)
    score, df, n = lucene.score(term_query(term), docnum), lucene.df(term), index.num_docs
    lucene.close()
    return score * np.log((n - df + 0.5) / (df + 0.5)) / np.log1p((n - df + 0.5) / (df + 0.5))


@pytest.mark.parametrize("text", QUERIES)
def test_winning_derivations_fire_the_lucene_bm25_of_their_yields(bowfd, tiny_index, text):
    from clirplug.rerank.bowfd import (
        bm25_matrix,
        derivation_edge_counts,
        derivation_yield,
    )

    sentences = bowfd.prepare(text)
    docs = np.arange(bowfd.index.num_docs)
    scores, results = bowfd.score(sentences, docs, back_pointers=True)
    for sentence, result in zip(sentences, results):
        bm25 = bm25_matrix(bowfd.index, sentence.terms, docs, 1.2, 0.75)
        smt = sentence.edge_scores(bowfd.weights)
        for d in docs:
            pointers = result.back_pointers(d)
            counts = derivation_edge_counts(sentence.forest, pointers)
            fired = float((sentence.counts.T @ counts) @ bm25[d])
            words = derivation_yield(sentence.forest, pointers)
            terms = bowfd.index.analyze(" ".join(words))  # the yield analyzed as one text, by Lucene
            expected = sum(lucene_bm25(tiny_index, bowfd.index, t, d, 1.2, 0.75) for t in terms)
            assert fired == pytest.approx(expected, rel=1e-5, abs=1e-6)
            assert result.scores[d] == pytest.approx(counts @ smt + 1.6 * fired, rel=1e-6, abs=1e-5)  # float32
    assert len(sentences) == max(1, text.count("."))
    np.testing.assert_array_equal(scores, bowfd.score(sentences, docs)[0])  # explaining changes no score
    np.testing.assert_allclose(scores, sum(r.scores for r in results))  # 6 documents < sentence depth


def test_v_zero_scores_every_document_with_the_smt_viterbi(bowfd):
    from clirplug.rerank.bowfd import BowfdWeights

    weights = BowfdWeights(smt=bowfd.weights.smt, v=0.0)
    sentences = bowfd.prepare(QUERIES[1])
    scores, _ = bowfd.score(sentences, np.arange(bowfd.index.num_docs), weights=weights)
    viterbi = sum(s.forest.viterbi(weights.smt).score for s in sentences)
    np.testing.assert_allclose(scores, np.full(bowfd.index.num_docs, viterbi))


def test_forced_decoding_prefers_the_document_with_the_translation_it_can_produce(bowfd):
    docids = bowfd.index.docids.tolist()
    scores, _ = bowfd.score(bowfd.prepare("dateien kopieren"), np.arange(bowfd.index.num_docs))
    assert docids[int(np.argmax(scores))] == "cp.1"  # "copies ... file": the copy/files derivation
    scores, results = bowfd.score(bowfd.prepare("verzeichnis verschieben"), np.arange(bowfd.index.num_docs))
    assert docids[int(np.argmax(scores))] == "mv.1"  # "moves files into a directory"
    # cat.1 and grep.1 hold none of directory, folder, move, shift: pre-filtered, SMT Viterbi score
    skipped = sorted(docids[d] for d in np.flatnonzero(~results[0].active))
    assert skipped == ["cat.1", "grep.1"]
    assert scores[docids.index("cat.1")] == pytest.approx(results[0].smt_score) == scores.min()


def test_latencies_are_added_per_reranked_topic_and_leave_the_run_unchanged(bowfd):
    """The experiment times each query through ``latencies``: topics with candidates only, added to what it held."""
    import pandas as pd

    from clirplug.io.topics import Topic

    topics = [Topic(f"q{i}", text, text) for i, text in enumerate(QUERIES)]
    candidates = pd.DataFrame({"qid": ["q0", "q0", "q1", "q1"], "docid": ["cp.1", "mv.1", "mv.1", "cat.1"],
                               "score": [2.0, 1.0, 2.0, 1.0]})
    latencies = {"q0": 100.0}
    timed = bowfd.rerank(topics, candidates, latencies=latencies)
    pd.testing.assert_frame_equal(timed, bowfd.rerank(topics, candidates))
    assert sorted(latencies) == ["q0", "q1"] and latencies["q0"] > 100.0 and 0 < latencies["q1"] < 100


def test_cli_rerank_writes_a_run_and_explanations(model_dir, tiny_index, tmp_path):
    from clirplug.cli import main
    from clirplug.io.runs import read_run

    topics = tmp_path / "topics.jsonl"
    topics.write_text("".join(json.dumps({"id": f"q{i}", "title": q, "desc": q, "lang": "de"}) + "\n"
                              for i, q in enumerate(QUERIES)))
    docs = ["ls.1", "cp.1", "mv.1", "rm.1", "cat.1", "grep.1", "not-in-index.1"]
    candidates = tmp_path / "cand.trec"
    candidates.write_text("".join(f"q{i} Q0 {d} {r} {10 - r} bm25\n"
                                  for i in range(len(QUERIES)) for r, d in enumerate(docs, 1)))
    out, explain = tmp_path / "bowfd.trec", tmp_path / "why.jsonl"
    code = main(["rerank", "--method", "bowfd", "--model", str(model_dir), "--index", str(tiny_index),
                 "--topics", str(topics), "--field", "desc", "--candidates", str(candidates), "--output", str(out),
                 "--explain", str(explain), "--depth", "5", "--quiet"])
    assert code == 0
    run = read_run(out)
    assert sorted(run["qid"].unique()) == ["q0", "q1", "q2"]
    assert (run.groupby("qid").size() == 5).all()  # the top 5 candidates, all in the index
    records = [json.loads(line) for line in explain.read_text().splitlines()]
    assert len(records) == 15
    two = next(r for r in records if r["qid"] == "q2")
    assert len(two["sentences"]) == 2 and all("yield" in s and "bm25" in s for s in two["sentences"])
    bad = main(["rerank", "--method", "bowfd", "--model", str(model_dir), "--topics", str(topics),
                "--candidates", str(candidates), "--output", str(tmp_path / "x.trec")])
    assert bad == 2  # no --index: a user error, no traceback


def test_cli_train_bowfd_chooses_v_learns_and_the_weights_rerank(model_dir, tiny_index, tmp_path):
    from clirplug.cli import main
    from clirplug.rerank.bowfd import BowfdWeights

    queries = {"t0": "dateien kopieren", "t1": "dateien verschieben", "t2": "verzeichnis kopieren",
               "t3": "dateien in verzeichnis verschieben", "t4": "in verzeichnis kopieren", "t5": "dateien"}
    relevant = {"t0": "cp.1", "t1": "mv.1", "t2": "cp.1", "t3": "mv.1", "t4": "cp.1", "t5": "cat.1"}
    topics = tmp_path / "topics.jsonl"
    topics.write_text("".join(json.dumps({"id": q, "title": t, "desc": t, "lang": "de"}) + "\n"
                              for q, t in queries.items()))
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{q} 0 {d} 2\n" for q, d in relevant.items()) + "t0 0 ls.1 1\n")
    docs = ["ls.1", "cp.1", "mv.1", "rm.1", "cat.1", "grep.1"]
    candidates = tmp_path / "cand.trec"
    candidates.write_text("".join(f"{q} Q0 {d} {r} {10 - r} bm25\n" for q in queries for r, d in enumerate(docs, 1)))
    weights = tmp_path / "bowfd.weights"
    code = main(["train", "bowfd", "--model", str(model_dir), "--index", str(tiny_index), "--topics", str(topics),
                 "--qrels", str(qrels), "--candidates", str(candidates), "--output", str(weights), "--lex",
                 "--v-grid", "0", "1.6", "--epochs", "2", "--holdout", "0.34", "--jobs", "1", "--quiet"])
    assert code == 0
    learned = BowfdWeights.load(weights)
    assert learned.v in (0.0, 1.6) and learned.lex_enabled
    text = weights.read_text()
    assert "v_grid = 0:" in text and "history = " in text  # the options and the learning curve are recorded
    out = tmp_path / "ltr.trec"
    assert main(["rerank", "--method", "bowfd", "--model", str(model_dir), "--index", str(tiny_index),
                 "--topics", str(topics), "--candidates", str(candidates), "--weights", str(weights),
                 "--output", str(out), "--quiet"]) == 0
    assert len(out.read_text().splitlines()) == 36


def test_rerank_run_takes_the_weights_file_or_the_weights_loaded(model_dir, tiny_index, tmp_path):
    import dataclasses

    import pandas as pd

    from clirplug.io.runs import run_frame
    from clirplug.io.topics import Topic
    from clirplug.rerank.bowfd import BowfdWeights, rerank_run

    weights = BowfdWeights(smt={"EgivenF": 0.5}, v=0.8, ir={"files": 2.0})
    weights.save(tmp_path / "bowfd.weights")
    kept = dataclasses.replace(weights, smt=dict(weights.smt))
    topics = [Topic("q1", "dateien kopieren", "dateien kopieren"), Topic("q2", "verzeichnis", "verzeichnis")]
    candidates = run_frame([(q, [("ls.1", 3.0), ("cp.1", 2.0), ("mv.1", 1.0)]) for q in ("q1", "q2")])
    runs = [rerank_run(topics, candidates, model=str(model_dir), index=tiny_index, weights=given, progress=False)
            for given in (tmp_path / "bowfd.weights", weights)]
    pd.testing.assert_frame_equal(*runs)
    assert weights == kept  # copied, not changed


def test_records_of_the_reranking_pass_are_the_derivations_of_its_documents(bowfd):
    """``rerank(records=...)`` hands back each topic's winning derivations from its own scoring pass: those
    ``derivations`` finds for the same documents, and the run is the one reranked without them."""
    import pandas as pd

    from clirplug.io.topics import Topic

    topics = [Topic(f"q{i}", text, text) for i, text in enumerate(QUERIES)]
    docids = ["cp.1", "mv.1", "cat.1"]
    candidates = pd.DataFrame({"qid": [t.id for t in topics for _ in docids], "docid": docids * len(topics),
                               "score": [3.0, 2.0, 1.0] * len(topics)})
    records: dict = {}
    run = bowfd.rerank(topics, candidates, records=records)
    pd.testing.assert_frame_equal(run, bowfd.rerank(topics, candidates))
    assert list(records) == [t.id for t in topics]
    for topic in topics:
        assert records[topic.id] == bowfd.derivations(topic.desc, docids)
        assert any(sentence["bm25"] for record in records[topic.id] for sentence in record["sentences"])


def test_forests_read_from_the_cache_give_the_hits_scores_and_derivations_of_fresh_ones(model_dir, tiny_index,
                                                                                       tmp_path):
    """BOW-FD with each forest decoded afresh, then written to the binary cache, then read from it, then read from
    an entry of the earlier JSON form: the same run (docids, exact scores) and the same winning derivations."""
    import gzip
    import shutil

    import pandas as pd

    from clirplug.io.topics import Topic
    from clirplug.lucene.reader import LuceneIndex
    from clirplug.mt.grammar import format_rule
    from clirplug.mt.translator import Translator
    from clirplug.rerank.bowfd import BowFD, BowfdConfig, BowfdWeights

    model = tmp_path / "model"
    shutil.copytree(model_dir, model, ignore=shutil.ignore_patterns("cache"))  # the other tests fill its cache
    index = LuceneIndex(tiny_index, progress=False)
    topics = [Topic(f"q{i}", text, text) for i, text in enumerate(QUERIES)]
    docids = index.docids.tolist()
    candidates = pd.DataFrame({"qid": [t.id for t in topics for _ in docids], "docid": docids * len(topics),
                               "score": [float(len(docids) - r) for r in range(len(docids))] * len(topics)})

    def reranked(translator):
        weights = BowfdWeights(smt=dict(translator.weights), v=1.6)
        records: dict = {}
        run = BowFD(translator, index, weights, BowfdConfig(field="desc")).rerank(topics, candidates, records=records)
        return run, records

    fresh, fresh_records = reranked(Translator(model, cache=False))
    assert not (model / "cache").exists()
    for _ in ("written", "read"):
        run, records = reranked(Translator(model))
        pd.testing.assert_frame_equal(run, fresh, check_exact=True)
        assert records == fresh_records
    entries = sorted((model / "cache").rglob("*.forest.npz"))
    assert len(entries) == 4  # one per distinct sentence
    translator = Translator(model)
    for tokens in {tuple(t) for topic in topics for t in translator.topic_sentences(topic, "desc")}:
        legacy = translator._key(tokens, "forest")
        legacy.write_bytes(gzip.compress(json.dumps(translator.forest(tokens).to_json(format_rule)).encode()))
        translator._key(tokens, "forest", ".npz").unlink()
    run, records = reranked(Translator(model))
    pd.testing.assert_frame_equal(run, fresh, check_exact=True)
    assert records == fresh_records
    assert sorted((model / "cache").rglob("*.forest.npz")) == entries  # written again as binary files
