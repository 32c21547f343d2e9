"""A workspace of valid inputs, and the checks every bad-input case shares.

Each case runs the real command line in-process (``clirplug.cli.main``), after replacing
some workspace files by bad ones, and must end in the promised way (docs/reliability.md):
its exit code, one line ``clirplug: error: ...`` naming the file and line or the option,
no traceback, and every file of the workspace as it was (no output replaced, none left half-written).
"""

import gzip
import json
import os
import re
from pathlib import Path

import pytest

from clirplug.mt.grammar import parse_rule, write_grammar
from clirplug.mt.lexicon import LexicalTable
from clirplug.mt.lm import FALLBACK_DISCOUNTS, estimate, write_arpa

# German -> English rules over the words of the topics below.
GRAMMAR = """\
[X] ||| dateien ||| files ||| EgivenF=0.1 FgivenE=0.2 ||| 0-0
[X] ||| dateien ||| data ||| EgivenF=0.6 FgivenE=0.5 ||| 0-0
[X] ||| kopieren ||| copy ||| EgivenF=0.2 FgivenE=0.2 ||| 0-0
[X] ||| verschieben ||| move ||| EgivenF=0.1 FgivenE=0.1 ||| 0-0
[X] ||| verzeichnis ||| directory ||| EgivenF=0.3 FgivenE=0.2 ||| 0-0
[X] ||| in ||| into ||| EgivenF=0.3 FgivenE=0.3 ||| 0-0
[X] ||| dateien [X,1] ||| [X,1] files ||| EgivenF=0.3 FgivenE=0.3 ||| 0-1
[X] ||| [X,1] in [X,2] ||| [X,1] into a [X,2] ||| EgivenF=0.5 FgivenE=0.4 ||| 1-1
[X] ||| löschen ||| remove ||| EgivenF=0.2 FgivenE=0.1 ||| 0-0
"""
LM_TEXT = ["copy files into a directory", "move files into a folder", "remove files"]
TOPICS = [
    {"id": "q1", "title": "dateien kopieren", "desc": "Dateien kopieren."},
    {"id": "q2", "title": "dateien verschieben", "desc": "Dateien in Verzeichnis verschieben."},
]
QRELS = "q1 0 cp.1 1\nq1 0 ls.1 0\nq2 0 mv.1 1\n"
RUN_A = "q1 Q0 cp.1 1 2.5 a\nq1 Q0 ls.1 2 1.5 a\nq2 Q0 mv.1 1 3.0 a\nq2 Q0 cp.1 2 1.0 a\n"
RUN_B = "q1 Q0 ls.1 1 9.0 b\nq1 Q0 cp.1 2 8.0 b\nq2 Q0 cp.1 1 7.0 b\nq2 Q0 mv.1 2 6.0 b\n"
DOCS = [
    {"id": "cp.1", "title": "copy files", "contents": "cp copies a file into a directory."},
    {"id": "mv.1", "title": "move files", "contents": "mv moves files into a directory."},
    {"id": "ls.1", "title": "list directory contents", "contents": "ls lists the files of a directory."},
]
OLD = "an earlier output that no failure may change\n"
PROGRESS_BAR = re.compile(r"\d+%\|")  # tqdm's lines, not messages


def jsonl(records) -> str:
    return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)


def write_model(folder: Path) -> Path:
    """The tiny translation model: Hiero grammar, trigram LM and lexical table p(e|f)."""
    folder.mkdir()
    write_grammar([parse_rule(line) for line in GRAMMAR.splitlines()], folder / "grammar.hiero.gz")
    write_arpa(estimate([s.split() for s in LM_TEXT], 3, FALLBACK_DISCOUNTS), folder / "lm.arpa")
    LexicalTable.from_entries([("dateien", "files", 0.7), ("dateien", "data", 0.3), ("kopieren", "copy", 1.0),
                               ("verschieben", "move", 1.0)]).save(folder / "lex.e_given_f.npz")
    return folder


@pytest.fixture(scope="session")
def model_template(tmp_path_factory) -> Path:
    return write_model(tmp_path_factory.mktemp("template") / "model")


@pytest.fixture
def workspace(tmp_path, model_template) -> Path:
    """Valid topics, qrels, runs, corpus and model; ``index/`` only looks like a Lucene index
    (commands must refuse bad input before they open it); ``old.*`` and ``out/`` are earlier outputs."""
    import shutil

    shutil.copytree(model_template, tmp_path / "model")
    files = {
        "topics.jsonl": jsonl(TOPICS), "qrels.txt": QRELS, "a.trec": RUN_A, "b.trec": RUN_B, "corpus.jsonl": jsonl(DOCS),
        "text.en": "\n".join(LM_TEXT) + "\n", "index/segments_1": "", "out/keep.txt": OLD,
        "old.trec": OLD, "old.txt": OLD, "old.json": OLD, "old.weights": OLD, "old.npz": OLD,
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


class Node:
    """A file :func:`put` makes that is not a regular one, by ``make(path)``."""

    def __init__(self, make):
        self.make = make


def symlink(target: str) -> Node:
    """A symbolic link to ``target`` (relative to the link's folder)."""
    return Node(lambda path: path.symlink_to(target))


FIFO = Node(os.mkfifo)


def put(workspace: Path, files: dict) -> None:
    """Write a case's files: text, bytes, a function of the workspace that returns bytes, a :class:`Node`, or
    ``None`` (delete)."""
    for name, content in files.items():
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if content is None:
            path.unlink()
            continue
        if isinstance(content, Node):
            content.make(path)
            continue
        if callable(content):
            content = content(workspace)
        if isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_bytes(content)


def state(path: Path):
    """What ``path`` is: a symbolic link (``("link", target)``), a FIFO (``"fifo"``), a file (its bytes) or a folder (None)."""
    if path.is_symlink():
        return "link", os.readlink(path)
    if path.is_fifo():
        return "fifo"
    return path.read_bytes() if path.is_file() else None


def snapshot(folder: Path) -> dict:
    """The :func:`state` of everything under ``folder``, by relative path."""
    return {str(p.relative_to(folder)): state(p) for p in sorted(folder.rglob("*"))}


def run_cli(argv, workspace: Path, capsys):
    """``clirplug ARGV`` in-process, ``{w}`` standing for the workspace; (exit code, stdout, stderr)."""
    from clirplug.cli import main

    capsys.readouterr()
    code = main([arg.replace("{w}", str(workspace)) for arg in argv])
    out, err = capsys.readouterr()
    return code, out, err


def check_refused(argv, workspace: Path, capsys, message: str) -> None:
    """The shared assertions of a bad-input case (see the module docstring)."""
    before = snapshot(workspace)
    code, out, err = run_cli(argv, workspace, capsys)
    lines = [line for line in err.splitlines() if line.strip() and not PROGRESS_BAR.search(line)]
    assert "Traceback" not in err
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("clirplug: error: "), err
    assert re.search(message.replace("{w}", re.escape(str(workspace))), lines[0]), lines[0]
    assert snapshot(workspace) == before, "a failed command changed the workspace"


def documented_counts() -> dict:
    """``class -> cases`` from the table of docs/reliability.md (rows ``| class | cases | ... |``)."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "reliability.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `?([\w ]+?)`? \| (\d+) \|", text, flags=re.M)
    return {name: int(count) for name, count in rows}


def gz(text: str) -> bytes:
    return gzip.compress(text.encode("utf-8"), mtime=0)
