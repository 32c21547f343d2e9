"""PSQ over Lucene: the identity table is Lucene's BM25; brute force agrees on random tables; CLI."""

import json

import numpy as np
import pytest

from clirplug.cli import main
from clirplug.io.runs import read_run
from clirplug.io.topics import read_topics
from clirplug.lucene.index import build_index
from clirplug.lucene.reader import LuceneIndex
from clirplug.lucene.search import Bm25Searcher, anserini_score_ties
from clirplug.qt.psq import PsqScorer, source_projection

from lucene_tiny import TINY_DOCS, write_jsonl

pytestmark = pytest.mark.jvm


def _check_identity(scorer, searcher, text, hits):
    """PSQ with p(t|t) = 1 over the analyzed query equals Lucene's BM25 ranking and scores."""
    query = [{((term, 0),): 1.0} for term in scorer.index.analyze(text)]
    ours = scorer.top(*scorer.score(query), hits)
    lucene = searcher.search(text, hits)
    assert len(ours) == len(lucene)
    if not ours:
        return
    # Anserini rounds to 1e-4 and lowers ties by 1e-6 each: adjust ours alike, then compare rank by rank
    # (a score on a rounding boundary may round the other way: one unit of 1e-4, plus float32 spacing
    # of a few 1e-6 at scores around 20-60)
    adjusted = anserini_score_ties(np.array([s for _, s in ours], dtype=np.float32))
    np.testing.assert_allclose(adjusted, [s for _, s in lucene], atol=1.1e-4, rtol=0)
    raw = dict(ours)
    for (our_doc, our_score), (lucene_doc, _) in zip(ours, lucene):
        if our_doc != lucene_doc:  # only near-ties may swap (float32 in Lucene, float64 here)
            assert abs(our_score - raw.get(lucene_doc, -1.0)) < 1e-4


def test_identity_table_is_lucene_bm25_on_manclir(manclir_index, manclir_de):
    index = LuceneIndex(manclir_index, progress=False)
    scorer, searcher = PsqScorer(index), Bm25Searcher(manclir_index)
    topics = read_topics(manclir_de / "topics.dev.jsonl")
    for topic in topics[:120]:  # a sample keeps the test short; benchmarks/psq.py identity checks all
        _check_identity(scorer, searcher, topic.title, 1000)
    for topic in topics[:30]:  # a repeated token counts once per occurrence, as Anserini's boost does
        _check_identity(scorer, searcher, topic.desc, 1000)
    searcher.close()


def test_identity_with_other_bm25_parameters(tiny_index):
    scorer, searcher = PsqScorer(tiny_index, k1=1.2, b=0.75), Bm25Searcher(tiny_index, k1=1.2, b=0.75)
    for text in ["files directory files", "print standard output", "nothing matches xyzzy"]:
        _check_identity(scorer, searcher, text, 10)


@pytest.mark.parametrize("progress", [True, False])
def test_the_document_vectors_show_progress_unless_quiet(tiny_corpus, tmp_path, capfd, progress):
    """A scorer opened on a path reads the index's document vectors on first use, with a progress bar only when
    asked (an experiment's --quiet, the Python API)."""
    build_index(tiny_corpus, tmp_path / "index", language="en", progress=False)
    capfd.readouterr()
    PsqScorer(tmp_path / "index", progress=progress).score([{(("file", 0),): 1.0}])
    assert ("reading document vectors" in capfd.readouterr().err) == progress


def _brute_force(index, texts, query, k1, b):
    """PSQ from raw analyzed document texts: positions by the analyzer, phrases counted by hand."""
    n = len(texts)
    avgdl = index.avg_doc_length
    positions = {docid: index.analyze_phrase(text) for docid, text in texts.items()}

    def tf(expression, docid):
        tokens = {(term, pos) for term, pos in positions[docid]}
        starts = [pos for term, pos in positions[docid] if term == expression[0][0]]
        return sum(all((term, start + offset) in tokens for term, offset in expression) for start in starts)

    scores = {}
    for docid in texts:
        dl = index.doc_lengths[index.doc_index(docid)]
        total, matched = 0.0, False
        for dist in query:
            tf_f = sum(p * tf(e, docid) for e, p in dist.items())
            df_f = sum(p * sum(tf(e, d) > 0 for d in texts) for e, p in dist.items())
            if tf_f > 0:
                matched = True
                idf = np.log(1 + (n - df_f + 0.5) / (df_f + 0.5))
                total += idf * tf_f / (tf_f + k1 * (1 - b + b * dl / avgdl))
        if matched:
            scores[docid] = total
    return scores


def test_vectorized_psq_equals_brute_force_on_random_tables(tiny_index):
    index = LuceneIndex(tiny_index, progress=False)
    texts = {d["id"]: f"{d['title']}\n{d['contents']}" for d in TINY_DOCS}
    vocabulary = sorted({term for text in texts.values() for term, _ in index.analyze_phrase(text)})
    phrases = ["standard output", "source file", "a destination file", "each file", "files in a directory",
               "the files", "output standard"]
    expressions = [((t, 0),) for t in vocabulary] + [index.analyze_phrase(p) for p in phrases] + [(("nosuchterm", 0),)]
    rng = np.random.default_rng(7)
    for k1, b in [(0.9, 0.4), (1.2, 0.75)]:
        scorer = PsqScorer(index, k1=k1, b=b)
        for _ in range(25):
            query = []
            for _ in range(rng.integers(1, 5)):
                chosen = rng.choice(len(expressions), size=rng.integers(1, 6), replace=False)
                probs = rng.dirichlet(np.ones(len(chosen))) * rng.uniform(0.3, 1.0)
                query.append({expressions[c]: float(p) for c, p in zip(chosen, probs)})
            if rng.random() < 0.3:
                query.append(dict(query[0]))  # a repeated source token
            expected = _brute_force(index, texts, query, k1, b)
            docs, scores = scorer.score(query)
            got = {str(index.docids[d]): s for d, s in zip(docs, scores)}
            assert got.keys() == expected.keys()
            for docid, score in expected.items():
                assert got[docid] == pytest.approx(score, rel=1e-9, abs=1e-12)


def _reference_score(scorer, query):
    """PsqScorer.score as first written (matrix columns by fancy indexing, sums by np.unique): the oracle."""
    import scipy.sparse as sp

    from clirplug import bm25

    projection, counts, expressions = source_projection(query)
    index = scorer.index
    single = [e[0][0] for e in expressions if len(e) == 1]
    columns = index.term_columns(single)
    parts = {}
    if single:
        matrix = index.matrix_csc[:, columns[columns >= 0]]
        for k, position in enumerate(np.flatnonzero(columns >= 0)):
            parts[single[position]] = (matrix.indices[matrix.indptr[k]:matrix.indptr[k + 1]],
                                       matrix.data[matrix.indptr[k]:matrix.indptr[k + 1]])
    indptr, indices, data = [0], [], []
    for expression in expressions:
        if len(expression) == 1:
            docs, tfs = parts.get(expression[0][0], (np.zeros(0, np.int32), np.zeros(0, np.float32)))
        else:
            docs, tfs = index.phrase_postings(expression)
        indices.append(docs)
        data.append(tfs)
        indptr.append(indptr[-1] + len(docs))
    tf_e = sp.csc_matrix((np.concatenate(data).astype(np.float64), np.concatenate(indices), np.array(indptr)),
                         shape=(index.matrix.shape[0], len(expressions)))
    tf = (tf_e @ projection).tocoo()
    idf = index.idf(projection.T @ np.diff(tf_e.indptr).astype(np.float64))
    values = bm25.score(tf.data, scorer._norms[tf.row], counts[tf.col] * idf[tf.col])
    docs, inverse = np.unique(tf.row, return_inverse=True)
    scores = np.bincount(inverse, weights=values, minlength=len(docs))
    order = np.lexsort((scorer._docid_rank[docs], -scores))
    return [(str(index.docids[d]), float(s)) for d, s in zip(docs[order], scores[order])]


def test_score_and_top_equal_the_reference_exactly(tiny_index):
    index = LuceneIndex(tiny_index, progress=False)
    texts = [f"{d['title']} {d['contents']}" for d in TINY_DOCS]
    vocabulary = sorted({term for text in texts for term, _ in index.analyze_phrase(text)})
    expressions = [((t, 0),) for t in vocabulary] + [index.analyze_phrase(p) for p in
                                                      ("standard output", "source file", "the files")]
    expressions.append((("nosuchterm", 0),))
    rng = np.random.default_rng(11)
    scorer = PsqScorer(index, k1=0.9, b=0.4)
    for _ in range(40):
        query = []
        for _ in range(rng.integers(1, 6)):
            chosen = rng.choice(len(expressions), size=rng.integers(1, 7), replace=False)
            probs = rng.dirichlet(np.ones(len(chosen)))
            query.append({expressions[c]: float(p) for c, p in zip(chosen, probs)})
        if rng.random() < 0.3:
            query.append(dict(query[-1]))
        expected = _reference_score(scorer, query)
        assert scorer.top(*scorer.score(query), len(TINY_DOCS)) == expected  # the same floats, in the same order
        assert scorer.top(*scorer.score(query), 2) == expected[:2]


def test_phrase_frequencies_match_lucene(tiny_index):
    from clirplug.lucene.query import LuceneScores, text_phrase_query

    index = LuceneIndex(tiny_index, progress=False)
    lucene = LuceneScores(tiny_index)
    for text in ["standard output", "a destination file", "files in a directory", "each file"]:
        expression = index.analyze_phrase(text)
        assert len(expression) > 1
        docs, freqs = index.phrase_postings(expression)
        query = text_phrase_query(text, index.language)
        assert len(docs) == lucene.count(query)
        for doc, freq in zip(docs.tolist(), freqs.tolist()):
            assert f"phraseFreq={freq:g}" in lucene.explain(query, doc)
    lucene.close()


def test_expressions_analyze_and_merge_targets(tiny_index):
    scorer = PsqScorer(tiny_index)
    query = scorer.expressions([{"files": 0.5, "file": 0.2, "the": 0.2, "standard output": 0.1}, {"the": 1.0}])
    # "the" analyzes to nothing: its mass goes to the other targets in proportion
    assert query == [{(("file", 0),): pytest.approx(0.875), (("standard", 0), ("output", 1)): pytest.approx(0.125)}]


def test_cli_search_with_a_table(tiny_index, tmp_path):
    table = tmp_path / "table.json"
    table.write_text(json.dumps({"datei": {"file": 0.8, "files": 0.2}, "liste": {"list": 1.0},
                                 "verzeichnis": {"directory": 0.7, "folder": 0.3}}), encoding="utf-8")
    topics = tmp_path / "topics.tsv"
    topics.write_text("q1\tDatei Verzeichnis\nq2\tliste die Dateien\n", encoding="utf-8")
    out = tmp_path / "psq.trec"
    assert main(["search", "--index", str(tiny_index), "--topics", str(topics), "--output", str(out),
                 "--method", "psq", "--table", str(table), "--psq", "stop=large,pC=0.9", "--quiet"]) == 0
    run = read_run(out)
    assert set(run["qid"]) == {"q1", "q2"}
    q1 = run[run["qid"] == "q1"]
    assert q1["docid"].iloc[0] in {"ls.1", "cp.1", "mv.1", "rm.1"}
    assert main(["search", "--index", str(tiny_index), "--topics", str(topics), "--output", str(out),
                 "--method", "psq", "--quiet"]) == 2  # neither --table nor --model


def test_cli_psq_errors(tiny_index, tmp_path, capsys):
    topics = tmp_path / "topics.tsv"
    topics.write_text("q1\tDatei\n", encoding="utf-8")
    base = ["search", "--index", str(tiny_index), "--topics", str(topics), "--output", str(tmp_path / "r.trec"),
            "--method", "psq", "--quiet"]
    bad = tmp_path / "bad.tsv"
    bad.write_text("datei\tfile\n", encoding="utf-8")
    assert main(base + ["--table", str(bad)]) == 2
    assert "bad.tsv:1: expected 'source<TAB>target<TAB>probability'" in capsys.readouterr().err
    assert main(base + ["--model", str(tmp_path / "nomodel")]) == 2
    assert "no such model folder" in capsys.readouterr().err
    assert main(base + ["--table", str(bad), "--psq", "lambda=1"]) == 2
    assert "--psq lambda: expected 3 non-negative weights for token:grammar:nbest, got 1" in capsys.readouterr().err


@pytest.mark.parametrize("spec", ["lambda=1:0:0", "lambda=0.4:0.3:0.3,nbest=3"])
def test_cli_equals_the_experiments_psq(tiny_index, tmp_path, spec):
    """``clirplug search --method psq --model`` and the experiment's path (``psq_tune.Builders`` and
    ``run_settings``, the PsqSource of a model folder) give the same run."""
    from test_bowfd_lucene import GRAMMAR, LM_TEXT

    from clirplug.mt.grammar import parse_rule, write_grammar
    from clirplug.mt.lexicon import LexicalTable
    from clirplug.mt.lm import FALLBACK_DISCOUNTS, estimate, write_arpa
    from clirplug.qt.psq_tables import PsqSettings
    from clirplug.qt.psq_tune import Builders, run_settings

    model = tmp_path / "model"
    model.mkdir()
    write_grammar([parse_rule(line) for line in GRAMMAR.splitlines()], model / "grammar.hiero.gz")
    write_arpa(estimate([s.split() for s in LM_TEXT], order=3, discount_fallback=FALLBACK_DISCOUNTS), model / "lm.arpa")
    LexicalTable.from_entries([("dateien", "files", 0.7), ("dateien", "data", 0.3), ("kopieren", "copy", 1.0),
                               ("verzeichnis", "directory", 0.6), ("verzeichnis", "folder", 0.4)]).save(
        model / "lex.e_given_f.npz")
    topics = tmp_path / "topics.jsonl"
    topics.write_text('{"id": "a", "title": "dateien kopieren", "desc": "Dateien kopieren. Verzeichnis verschieben."}\n'
                      '{"id": "b", "title": "verzeichnis", "desc": "dateien in verzeichnis verschieben"}\n')
    out = tmp_path / "psq.trec"
    assert main(["search", "--index", str(tiny_index), "--topics", str(topics), "--field", "desc", "--output", str(out),
                 "--method", "psq", "--model", str(model), "--psq", spec, "--hits", "5", "--quiet"]) == 0
    builders = Builders(model, "hiero", read_topics(topics))
    latencies = {"a": 100.0}
    experiment = run_settings(PsqScorer(tiny_index), builders, "desc", PsqSettings.parse(spec), hits=5,
                              latencies=latencies)
    assert sorted(latencies) == ["a", "b"] and latencies["a"] > 100.0 and 0 < latencies["b"] < 100
    cli = read_run(out)
    assert cli[["qid", "docid", "rank"]].values.tolist() == experiment[["qid", "docid", "rank"]].values.tolist()
    np.testing.assert_allclose(cli["score"], experiment["score"], rtol=1e-6)


def test_tuning_ap_equals_evaluate(tmp_path):
    """The tuning stage's AP of each topic and MAP (``psq_tune.TuningAP``) equal ``evaluate``'s of the PSQ run bit for
    bit: ties (each document indexed twice) read in trec_eval's order, runs cut at the depth, a judged document the
    index lacks, topics with no relevant document, with no query, or searched twice by the same query."""
    import pandas as pd

    from clirplug.eval.measures import evaluate
    from clirplug.lucene.index import build_index
    from clirplug.qt.psq import psq_search
    from clirplug.qt.psq_tune import TuningAP

    docs = TINY_DOCS + [{**doc, "id": doc["id"] + "b"} for doc in TINY_DOCS]
    build_index(write_jsonl(tmp_path / "corpus.jsonl", docs), tmp_path / "index", language="en", progress=False)
    scorer = PsqScorer(tmp_path / "index")
    rng = np.random.default_rng(3)
    words = ["files", "directory", "copy", "print", "standard output", "remove", "patterns", "xyzzy", "source file"]
    queries = {f"q{i}": [{str(w): float(p) for w, p in zip(rng.choice(words, 3, replace=False), rng.dirichlet([1] * 3))}
                         for _ in range(rng.integers(1, 4))] for i in range(40)}
    ids = [doc["id"] for doc in docs] + ["gone.1"]
    qrels = pd.DataFrame([(qid, docid, int(rng.integers(0, 3))) for qid in [*queries, "q99"]
                          for docid in rng.choice(ids, 5, replace=False)], columns=["qid", "docid", "relevance"])
    qrels.loc[qrels["qid"] == "q0", "relevance"] = 0
    for hits in (3, 7, 1000):
        tuning = TuningAP(scorer, qrels, hits)
        run = psq_search(scorer, queries, hits=hits, progress=False)
        expected = evaluate(qrels, {"run": run}, ["MAP"], per_query=True).set_index("qid")["value"]
        assert [tuning.average_precision(qid, query) for qid, query in queries.items()] == \
            [expected[qid] for qid in queries]
        assert tuning.mean(queries) == expected["all"] > 0
        assert tuning.mean(queries) == expected["all"]  # the second time from the memo
        fewer = {qid: query for qid, query in queries.items() if qid != "q1"}
        assert tuning.mean(fewer) == evaluate(qrels, {"run": run[run["qid"] != "q1"]}, ["MAP"])["value"].iloc[0]


def test_tuning_ap_of_passages_equals_evaluate_of_their_pages(tmp_path):
    """On passages, the tuning stage's AP (``TuningAP`` with ``max_passage_hits``) equals ``evaluate``'s of the PSQ
    passage run scored as pages (``max_passage``) bit for bit: passages tied within a page and pages tied with each
    other, passage and page depths cut, a judged page without passages."""
    import pandas as pd

    from clirplug.eval.measures import evaluate
    from clirplug.lucene.index import build_index
    from clirplug.passages import max_passage
    from clirplug.qt.psq import psq_search
    from clirplug.qt.psq_tune import TuningAP

    passages = []
    for doc in TINY_DOCS:
        words = doc["contents"].split()
        halves = [" ".join(words[:len(words) // 2]), " ".join(words[len(words) // 2:])]
        for page in (doc["id"], doc["id"] + "b"):  # page "x.1b" repeats page "x.1": tied pages
            passages += [{"id": f"{page}#{n}", "title": doc["title"], "contents": text}
                         for n, text in enumerate([*halves, halves[0]], 1)]  # passage 3 repeats passage 1
    build_index(write_jsonl(tmp_path / "passages.jsonl", passages), tmp_path / "index", language="en",
                progress=False)
    scorer = PsqScorer(tmp_path / "index")
    rng = np.random.default_rng(4)
    words = ["files", "directory", "copy", "print", "standard output", "remove", "patterns", "xyzzy", "source file"]
    queries = {f"q{i}": [{str(w): float(p) for w, p in zip(rng.choice(words, 3, replace=False), rng.dirichlet([1] * 3))}
                         for _ in range(rng.integers(1, 4))] for i in range(30)}
    pages = sorted({p["id"].partition("#")[0] for p in passages}) + ["gone.1"]
    qrels = pd.DataFrame([(qid, docid, int(rng.integers(0, 3))) for qid in queries
                          for docid in rng.choice(pages, 5, replace=False)], columns=["qid", "docid", "relevance"])
    for hits, page_hits in ((3, 2), (7, 5), (1000, 3), (1000, 1000)):
        tuning = TuningAP(scorer, qrels, hits, page_hits)
        run = max_passage(psq_search(scorer, queries, hits=hits, progress=False), page_hits)
        expected = evaluate(qrels, {"run": run}, ["MAP"], per_query=True).set_index("qid")["value"]
        assert [tuning.average_precision(qid, query) for qid, query in queries.items()] == \
            [expected.get(qid, 0.0) for qid in queries]
        assert tuning.mean(queries) == expected["all"] > 0
