"""Faults simulated for real: ``python -m clirplug`` killed (SIGKILL) or interrupted (SIGINT) while it
indexes or runs an experiment stage, two experiments on one root at once, and a full disk.

Each case runs the command in a child process and asserts its exit code, one ``clirplug:`` line on
stderr naming the file (besides the progress lines of ``index`` and ``experiment``), no traceback,
earlier outputs unchanged, and, after a kill, that the next run removes what is left and completes.
The disk is made full with RLIMIT_FSIZE in the child (SIGXFSZ ignored): a write beyond the limit
fails with EFBIG, as one on a full disk fails with ENOSPC.
"""

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import OLD, RUN_A, RUN_B, snapshot

pytestmark = pytest.mark.jvm

REPO = Path(__file__).resolve().parents[2]
DEMO_CONFIG = REPO / "clirplug" / "data" / "demo.yaml"
DEMO_DATA = REPO / "clirplug" / "data" / "demo"
# the smallest experiment: index, floor, ceiling, system files and report on the demo's dev titles
SMALL = ["--set", "runs={}", "--set", "fields=[title]", "--set", "translations.outputs=[]", "--quiet"]
PROGRESS = re.compile(r"indexing \d+ documents with Lucene .*|\[\d+/\d+\] .*|\d+ of \d+ stages ran; .*")
FILLER_DOCS = 8000  # enough for Lucene to write for a second or two
LIMITED = ("import resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
           "resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]),) * 2); "
           "from clirplug.cli import main; sys.exit(main(sys.argv[2:]))")


def command(*argv, file_size=None) -> list[str]:
    """``python -m clirplug ARGV``; with ``file_size``, no file it writes may grow beyond that many bytes."""
    argv = [str(arg) for arg in argv]
    if file_size is None:
        return [sys.executable, "-m", "clirplug", *argv]
    return [sys.executable, "-c", LIMITED, str(file_size), *argv]


def start(argv) -> subprocess.Popen:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}  # a file-size limit must not meet a .pyc
    return subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run(argv) -> tuple[int, str, str]:
    proc = start(argv)
    out, err = proc.communicate(timeout=600)
    return proc.returncode, out, err


def wait_for(proc: subprocess.Popen, path: Path) -> None:
    """Return as soon as ``path`` exists: the child is then at a known point."""
    deadline = time.monotonic() + 300
    while not path.exists():
        assert proc.poll() is None, f"ended before {path} appeared: {proc.communicate()[1]}"
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.005)


def interrupt_when(proc: subprocess.Popen, path: Path, signum: int) -> tuple[int, str]:
    """Send ``signum`` as soon as ``path`` exists; (exit code, stderr)."""
    wait_for(proc, path)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err


def the_message(err: str) -> str:
    """The one ``clirplug:`` line of ``err``; every other line is progress, and there is no traceback."""
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    messages = [line for line in lines if line.startswith("clirplug: ")]
    assert len(messages) == 1 and all(line in messages or PROGRESS.fullmatch(line) for line in lines), err
    return messages[0]


def changed(before: dict, after: dict) -> set[str]:
    """The files of a :func:`conftest.snapshot` ``before`` that ``after`` holds no more, or holds changed."""
    return {name for name in before if after.get(name, "gone") != before[name]}


def documents(collection: Path) -> int:
    return len((collection / "corpus.jsonl").read_text(encoding="utf-8").splitlines())


def litter(folder: Path) -> list[str]:
    """Temporary files and folders anywhere under ``folder``."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob(".*") if p.name.endswith((".tmp", ".building")))


@pytest.fixture(scope="module")
def filler_corpus(tmp_path_factory) -> Path:
    """The demo corpus and FILLER_DOCS made-up documents, in a copy of the demo collection."""
    import shutil

    folder = tmp_path_factory.mktemp("big") / "big"
    shutil.copytree(DEMO_DATA, folder)
    rng = random.Random(0)
    words = [f"w{i}" for i in range(5000)]
    with open(folder / "corpus.jsonl", "a", encoding="utf-8") as out:
        out.writelines(json.dumps({"id": f"filler.{i}", "contents": " ".join(rng.choices(words, k=60))}) + "\n"
                       for i in range(FILLER_DOCS))
    return folder


# ------------------------------------------------------------------------------------ clirplug index

LUCENE_WRITES = "index/_0.fdt"  # in the work folder: stored fields, written by Lucene's indexing thread


@pytest.mark.parametrize("signum, moment, left", [
    (signal.SIGKILL, LUCENE_WRITES, None),
    (signal.SIGINT, LUCENE_WRITES, "the next build removes Lucene's partial files in {work}"),
    (signal.SIGINT, "corpus/docs.jsonl", "nothing of it is left"),  # the corpus is being staged
], ids=["SIGKILL while Lucene writes", "SIGINT while Lucene writes", "SIGINT while staging"])
def test_an_interrupted_index_build_is_cleaned_and_rerun(tmp_path, filler_corpus, signum, moment, left):
    indexes = tmp_path / "indexes"
    indexes.mkdir()
    (indexes / "old.txt").write_text(OLD)  # an earlier output beside the index
    target, work = indexes / "big", indexes / ".big.building"
    argv = command("index", "--corpus", filler_corpus / "corpus.jsonl", "--index", target, "--quiet")
    code, err = interrupt_when(start(argv), work / moment, signum)
    assert not target.exists()
    if signum == signal.SIGKILL:
        assert code == -signal.SIGKILL and litter(indexes) == [".big.building"]
    else:
        assert code == 130
        left = left.format(work=work)
        assert the_message(err) == f"clirplug: interrupted; {target} was not built; {left}"
        assert litter(indexes) == ([".big.building"] if str(work) in left else [])  # it says what it leaves
    was_left = work.exists()
    code, out, err = run(argv)
    assert code == 0 and "Traceback" not in err, err
    assert (f"clirplug: warning: {work}: removed the files of an interrupted build" in err) == was_left
    assert f"index {target}: {documents(filler_corpus)} documents" in out
    assert sorted(p.name for p in indexes.iterdir()) == ["big", "old.txt"] and (indexes / "old.txt").read_text() == OLD


# ------------------------------------------------------------------------------------ clirplug experiment

@pytest.fixture
def root_with_an_earlier_experiment(tmp_path) -> Path:
    """A root where the experiment ``small`` (the demo collection) has run: its files are earlier outputs."""
    root = tmp_path / "root"
    code, _, err = run(command("experiment", DEMO_CONFIG, "--root", root, "--set", "name=small", *SMALL))
    assert code == 0, err
    return root


def big_experiment(root: Path, filler_corpus: Path) -> list[str]:
    return command("experiment", DEMO_CONFIG, "--root", root, "--set", "name=big", "--set", "collection.name=big",
                   "--set", f"collection.path={filler_corpus}", *SMALL)


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_an_interrupted_experiment_keeps_earlier_outputs_and_resumes(root_with_an_earlier_experiment, filler_corpus,
                                                                     signum):
    root = root_with_an_earlier_experiment
    earlier = snapshot(root)
    work = root / "indexes" / ".big.building"
    code, err = interrupt_when(start(big_experiment(root, filler_corpus)), work / LUCENE_WRITES, signum)
    if signum == signal.SIGKILL:
        assert code == -signal.SIGKILL
        # a writer killed mid-file leaves its temporary beside the target: the next run removes it
        (root / "runs" / "big").mkdir(parents=True, exist_ok=True)
        (root / "runs" / "big" / ".dev.title.floor.trec.k1ll3d_x.tmp").write_text("half a run")
    else:
        assert code == 130
        assert the_message(err) == (f"clirplug: interrupted; {root / 'indexes' / 'big'} was not built; the next build "
                                    f"removes Lucene's partial files in {work}; finished stages are kept; the same "
                                    "command resumes with the others")
    assert changed(earlier, snapshot(root)) == {".clirplug.lock"}  # the killed run's process id
    code, _, err = run(big_experiment(root, filler_corpus))  # the lock died with the process
    assert code == 0 and "Traceback" not in err, err
    assert "[1/5] index: running" in err and not litter(root)
    assert f"clirplug: warning: {work}: removed the files of an interrupted build" in err
    assert ("removed 1 temporary files left by an interrupted run" in err) == (signum == signal.SIGKILL)
    assert changed(earlier, snapshot(root)) == {".clirplug.lock"}
    index_record = json.loads((root / "runs" / "big" / "stages" / "index.json").read_text())
    assert index_record["metrics"]["documents"] == documents(filler_corpus)


def test_a_killed_stage_worker_is_one_line_and_the_rerun_resumes(tmp_path, filler_corpus):
    """A worker of ``--jobs 2`` killed (as the kernel kills one when memory runs out) stops the run with one line."""
    root = tmp_path / "root"
    proc = start(big_experiment(root, filler_corpus) + ["--jobs", "2"])
    wait_for(proc, root / "indexes" / ".big.building" / LUCENE_WRITES)
    workers = [pid for pid in map(int, Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split())
               if "spawn_main" in Path(f"/proc/{pid}/cmdline").read_text()]
    assert workers
    for pid in workers:
        os.kill(pid, signal.SIGKILL)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and "Traceback" not in err, err
    assert [line for line in err.splitlines() if line.startswith("clirplug: error:")] == [
        "clirplug: error: index: its worker process died (killed, e.g. by the system when memory ran out; "
        "try --threads 1); finished stages are kept: rerun to resume"]
    code, _, err = run(big_experiment(root, filler_corpus) + ["--jobs", "2"])
    assert code == 0 and "Traceback" not in err, err


def stage_workers(proc: subprocess.Popen) -> list[int]:
    """The spawned worker processes of ``proc`` (once it has started them)."""
    deadline = time.monotonic() + 300
    while True:
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        workers = [pid for pid in map(int, children) if "spawn_main" in Path(f"/proc/{pid}/cmdline").read_text()]
        if workers:
            return workers
        assert proc.poll() is None and time.monotonic() < deadline, "no worker process started"
        time.sleep(0.01)


def alive(pids: list[int], seconds: float = 10.0) -> list[int]:
    """The processes of ``pids`` still running after up to ``seconds`` (zombies count as ended)."""
    deadline = time.monotonic() + seconds
    while True:
        running = [pid for pid in pids if Path(f"/proc/{pid}").exists()
                   and Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"]
        if not running or time.monotonic() > deadline:
            return running
        time.sleep(0.05)


def test_workers_die_with_a_killed_experiment(tmp_path, filler_corpus):
    """kill -9 of ``experiment --threads 2``: its workers end too, none lives on with parent 1."""
    proc = start(big_experiment(tmp_path / "root", filler_corpus) + ["--threads", "2"])
    workers = stage_workers(proc)
    proc.kill()
    proc.communicate(timeout=60)
    assert alive(workers) == []


def test_sigterm_stops_a_background_experiment_like_ctrl_c(tmp_path, filler_corpus):
    """``kill`` (SIGTERM) of an experiment started in the background, where SIGINT is ignored: the
    interrupt's one line, its busy workers stopped, finished stages kept, and the rerun completes."""
    root = tmp_path / "root"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.Popen(big_experiment(root, filler_corpus) + ["--threads", "2"], cwd=REPO, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    workers = stage_workers(proc)
    proc.terminate()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert the_message(err).startswith("clirplug: interrupted; ")
    assert "finished stages are kept; the same command resumes with the others" in err
    assert alive(workers) == []
    code, _, err = run(big_experiment(root, filler_corpus) + ["--threads", "2"])
    assert code == 0 and "Traceback" not in err, err


def test_a_second_experiment_on_the_same_root_refuses(tmp_path, filler_corpus):
    root = tmp_path / "root"
    first = start(big_experiment(root, filler_corpus))
    wait_for(first, root / "indexes" / ".big.building")  # the first holds the lock and is building
    code, _, err = run(command("experiment", DEMO_CONFIG, "--root", root, *SMALL))
    assert code == 2 and not (root / "runs" / "demo").exists()
    assert the_message(err) == (f"clirplug: error: {root / '.clirplug.lock'}: another experiment (process {first.pid}) "
                                "is running on this root; wait for it to end or choose another --root")
    _, err = first.communicate(timeout=600)
    assert first.returncode == 0, err
    code, _, err = run(big_experiment(root, filler_corpus))  # the first one's files are whole: all up to date
    assert code == 0 and err.count("up to date") == 5, err


# ------------------------------------------------------------------------------------ a full disk

@pytest.fixture
def outputs(tmp_path) -> Path:
    for name, text in {"a.trec": RUN_A, "b.trec": RUN_B, "old.trec": OLD}.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def check_disk_full(argv, folder: Path, file_size: int, written: Path) -> str:
    """Run ARGV with files limited to ``file_size`` bytes: one line naming ``written``, ``folder`` unchanged."""
    before = snapshot(folder)
    code, _, err = run(command(*argv, file_size=file_size))
    assert code == 2
    assert the_message(err) == f"clirplug: error: no space left writing {written}"
    assert snapshot(folder) == before  # the earlier outputs as they were, and no temporary left
    return err


def test_a_full_disk_while_writing_a_run(outputs):
    check_disk_full(["fuse", "--runs", outputs / "a.trec", outputs / "b.trec", "--output", outputs / "old.trec"],
                    outputs, 64, outputs / "old.trec")


def test_a_full_disk_while_staging_the_corpus(outputs):
    check_disk_full(["index", "--corpus", DEMO_DATA / "corpus.jsonl", "--index", outputs / "index", "--quiet"],
                    outputs, 10_000, outputs / "index")


def test_a_full_disk_while_lucene_writes(outputs, tmp_path_factory):
    """Documents of unique random words: Lucene's term dictionary outgrows the staged corpus, so the
    limit set between the two sizes is met in Java, after staging."""
    from clirplug.lucene.index import build_index

    rng = random.Random(1)
    docs = [{"id": f"r{i}", "contents": " ".join("".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=8))
                                                  for _ in range(110))} for i in range(300)]
    corpus = tmp_path_factory.mktemp("random") / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(doc, ensure_ascii=False) + "\n" for doc in docs), encoding="utf-8")
    build_index(corpus, corpus.parent / "index", progress=False)
    staged, largest = corpus.stat().st_size, max(p.stat().st_size for p in (corpus.parent / "index").iterdir())
    assert largest > staged * 1.02, "the limit must fall between the staged corpus and Lucene's largest file"
    err = check_disk_full(["index", "--corpus", corpus, "--index", outputs / "index", "--quiet"],
                          outputs, (staged + largest) // 2, outputs / "index")
    assert "indexing 300 documents with Lucene" in err  # the corpus was staged: Java met the limit


def test_a_full_disk_in_an_experiment_stage(tmp_path):
    root = tmp_path / "root"
    code, _, err = run(command("experiment", DEMO_CONFIG, "--root", root, *SMALL))
    assert code == 0, err
    ceiling = root / "runs" / "demo" / "dev.title.ceiling.trec"
    assert ceiling.stat().st_size > 50_000
    before = snapshot(root)
    code, _, err = run(command("experiment", DEMO_CONFIG, "--root", root, *SMALL, "--set", "hits=999",
                               file_size=50_000))
    assert code == 2
    assert the_message(err) == f"clirplug: error: no space left writing {ceiling}" and not litter(root)
    # changed: the floor run (rerun, smaller than the limit), the cut-off ceiling stage's record, the lock
    assert changed(before, snapshot(root)) <= {"runs/demo/dev.title.floor.trec", "runs/demo/dev.title.floor.json",
                                               "runs/demo/stages/run.floor.dev.title.json",
                                               "runs/demo/stages/run.ceiling.dev.title.json", ".clirplug.lock"}


# A real full disk: a tmpfs of SIZE mounted at FOLDER in a mount namespace of its own (gone with the process),
# an earlier output written on it, then the command; afterwards what is left on it is listed in LISTING
ON_A_SMALL_DISK = """\
size=$1 folder=$2 listing=$3; shift 3
mount -t tmpfs -o size=$size tmpfs "$folder" || exit 99
printf '%s' "$OLD" > "$folder/old.txt"
"$@"; code=$?
ls -A "$folder" > "$listing"; cat "$folder/old.txt" >> "$listing"
exit $code
"""


@pytest.mark.parametrize("size", ["320k", "480k"], ids=["AlreadyClosedException before", "Lucene's log before"])
def test_a_real_full_disk_while_lucene_writes(tmp_path, size):
    """``clirplug index`` onto a tmpfs too small for the index (the demo corpus: 266 KB staged, 340 KB of index):
    Lucene met the full disk at a flush and reported it as ``AlreadyClosedException: this IndexWriter is closed``
    (320k), or wrote ``No space left on device`` in its log (480k). Both are one line naming the index, and the
    disk holds its earlier file and nothing else."""
    folder, listing = tmp_path / "disk", tmp_path / "listing.txt"
    folder.mkdir()
    namespace = ["unshare", "--mount"] if os.geteuid() == 0 else ["unshare", "--user", "--map-root-user", "--mount"]
    argv = [*namespace, "sh", "-c", ON_A_SMALL_DISK, "sh", size, folder, listing,
            *command("index", "--corpus", DEMO_DATA / "corpus.jsonl", "--index", folder / "index", "--quiet")]
    proc = subprocess.run([str(arg) for arg in argv], cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "OLD": OLD})
    if proc.returncode == 99 or not listing.exists() and "unshare" in proc.stderr:
        pytest.skip(f"cannot mount a tmpfs in a mount namespace here: {proc.stderr.strip()}")
    assert proc.returncode == 2
    assert the_message(proc.stderr) == f"clirplug: error: no space left writing {folder / 'index'}"
    assert listing.read_text() == "old.txt\n" + OLD
