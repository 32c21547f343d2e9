"""Outputs named for real, in child processes: ``python -m clirplug`` given a symbolic link, a FIFO, a
device node or a process substitution as ``--output`` refuses before any work and leaves it as it was;
``-`` writes the run or the translation to standard output; missing folders above an output are created.

Every child runs with a timeout: a command that opened a FIFO would block, one that waited for
input would hang, and either fails the case instead.
"""

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import OLD, QRELS, run_cli, snapshot

pytestmark = pytest.mark.cli

TIMEOUT = 120  # seconds; the commands below take one or two
REPO = Path(__file__).resolve().parents[2]
FUSE = ["fuse", "--runs", "a.trec", "b.trec"]
TUNED = ["--tune-on", "qrels.txt"]
TRANSLATE = ["translate", "--model", "model", "--input", "topics.jsonl", "--format", "tsv", "--no-cache", "--quiet"]


def clirplug(workspace, *argv) -> subprocess.CompletedProcess:
    """``python -m clirplug ARGV`` run in ``workspace``."""
    return subprocess.run([sys.executable, "-m", "clirplug", *argv], cwd=workspace, capture_output=True, text=True,
                          timeout=TIMEOUT, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})


def refused(result, message: str) -> None:
    """Exit code 2, one ``clirplug: error:`` line matching ``message``, no traceback, nothing on stdout."""
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert re.fullmatch(f"clirplug: error: {message}.*\n", result.stderr), result.stderr


@pytest.fixture
def qrels(workspace):
    (workspace / "qrels.txt").write_text(QRELS)
    return workspace


@pytest.mark.parametrize("target", ["old.trec", "/proc/self/fd/1"], ids=["a link to a file", "a link like /dev/stdout"])
def test_a_symbolic_link_is_refused_and_left_as_it_was(workspace, target):
    """/dev/stdout is such a link: run as root, it was replaced by a regular file holding the run."""
    os.symlink(target, workspace / "link")
    before = snapshot(workspace)
    refused(clirplug(workspace, *FUSE, "--output", "link"), "--output link: is a symbolic link, which writing would "
                                                            r"replace; name a regular file or - \(standard output\)")
    assert os.readlink(workspace / "link") == target and snapshot(workspace) == before


def test_a_fifo_is_refused_without_opening_it(workspace):
    os.mkfifo(workspace / "fifo")
    before = snapshot(workspace)
    refused(clirplug(workspace, *FUSE, "--output", "fifo"), r"--output fifo: is a FIFO \(named pipe\)")
    assert stat.S_ISFIFO(os.lstat(workspace / "fifo").st_mode) and snapshot(workspace) == before


def test_a_device_node_is_refused(workspace):
    """A node of /dev/null's numbers, made here, so that a failure replaces no device of the system."""
    try:
        os.mknod(workspace / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("this process may not make device nodes")
    refused(clirplug(workspace, *FUSE, "--output", "null", *TUNED), "--output null: is a character device")
    assert stat.S_ISCHR(os.lstat(workspace / "null").st_mode)
    assert not list(workspace.glob("null.kappa*"))


def test_a_process_substitution_is_refused_before_the_work(workspace):
    """``--output >(cmd)`` names /dev/fd/N, a link to a pipe; the run used to be computed before it failed."""
    result = subprocess.run(["bash", "-c", '"$0" -m clirplug fuse --runs a.trec b.trec --output >(cat >piped.txt)',
                             sys.executable], cwd=workspace, capture_output=True, text=True, timeout=TIMEOUT)
    refused(result, r"--output /dev/fd/\d+: is a symbolic link, which writing would replace")


def test_dash_writes_the_run_to_standard_output_and_the_notes_to_stderr(qrels, capsys, monkeypatch):
    monkeypatch.chdir(qrels)
    assert run_cli([*FUSE, *TUNED, "--curve", "file", "--output", "fused.trec", "--run-tag", "clirplug"], qrels,
                   capsys)[0] == 0
    to_stdout = clirplug(qrels, *FUSE, *TUNED, "--curve", "piped", "--output", "-")
    assert to_stdout.returncode == 0, to_stdout.stderr
    assert to_stdout.stdout == (qrels / "fused.trec").read_text()  # the tag: clirplug, as write_run's
    assert re.search(r"^kappa = .* curve in piped\.tsv and piped\.png\nwrote -: 2 topics, 4 lines$", to_stdout.stderr,
                     re.MULTILINE), to_stdout.stderr
    assert not (qrels / "-").exists()


def test_dash_writes_the_translation_to_standard_output(workspace):
    result = clirplug(workspace, *TRANSLATE, "--output", "-")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "q1\tcopy files\nq2\tmove files\n"
    assert not (workspace / "-").exists()


def test_missing_folders_above_an_output_are_created_when_it_is_written(qrels):
    fused = clirplug(qrels, *FUSE, *TUNED, "--curve", "curves/demo/kappa", "--output", "runs/demo/fused.trec")
    translated = clirplug(qrels, *TRANSLATE, "--output", "topics/new/t.tsv", "--forest", "forests/new")
    assert fused.returncode == translated.returncode == 0, fused.stderr + translated.stderr
    assert sorted(str(p.relative_to(qrels)) for folder in ("runs", "curves", "topics", "forests")
                  for p in (qrels / folder).rglob("*") if p.is_file()) == [
        "curves/demo/kappa.png", "curves/demo/kappa.tsv", "forests/new/q1.0.json.gz", "forests/new/q2.0.json.gz",
        "runs/demo/fused.trec", "topics/new/t.tsv"]


def test_a_refused_command_creates_no_folder(workspace):
    before = snapshot(workspace)
    refused(clirplug(workspace, *FUSE, "--depth", "0", "--output", "runs/new/fused.trec"),
            "--depth must be at least 1, got 0")
    assert snapshot(workspace) == before


@pytest.mark.parametrize("command", [["experiment", str(REPO / "clirplug" / "data" / "demo.yaml")], ["demo"]],
                         ids=["experiment", "demo"])
@pytest.mark.parametrize("make, kind", [
    (lambda lock: (lock.mkdir(), (lock / "x").write_text(OLD)), "a folder"),
    (os.mkfifo, r"a FIFO \(named pipe\)"),
    (lambda lock: lock.symlink_to("elsewhere"), "a symbolic link"),
], ids=["a folder", "a FIFO", "a dangling link"])
def test_a_root_lock_that_is_not_a_file_is_refused(workspace, command, make, kind):
    """``ROOT/.clirplug.lock`` a folder (IsADirectoryError before), a FIFO or a link: one line, nothing changed."""
    (workspace / "root").mkdir()
    make(workspace / "root" / ".clirplug.lock")
    before = snapshot(workspace)
    refused(clirplug(workspace, *command, "--root", "root", "--quiet"),
            rf"{re.escape(str(workspace))}/root/\.clirplug\.lock: is {kind}, not the root's lock file; remove it")
    assert snapshot(workspace) == before
