"""``pip install clirplug`` from its wheel: BM25 on the demo in a fresh venv, with no pyserini and no torch.

The wheel is built from a copy of the package (so that nothing is written into the checkout) with Anserini's jar
taken from this venv's pyserini, as setup.py bundles it; the fresh venv gets the wheel and its dependencies by pip
(from pip's cache and indexes; ``--no-compile`` and a venv without its own pip keep it to seconds). Its
``clirplug index``, ``search`` and ``eval`` must write the run this checkout writes. About 40 seconds.
"""

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from clirplug.cli import main
from clirplug.data import demo_path

pytestmark = pytest.mark.jvm

REPO = Path(__file__).resolve().parents[2]
# pyserini's dense-retrieval stack: none of it may come with clirplug (matplotlib is the `plots` extra)
ABSENT = ("pyserini", "torch", "transformers", "onnxruntime", "openai", "faiss", "sentence_transformers", "matplotlib")


def _pyserini_jars() -> Path:
    spec = importlib.util.find_spec("pyserini")  # found, never imported (it imports torch)
    assert spec is not None, "this test takes Anserini's jar from pyserini (make install installs it with --no-deps)"
    return Path(spec.submodule_search_locations[0]) / "resources" / "jars"


def _run(command, cwd, env=None):
    result = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True)
    assert result.returncode == 0, f"{' '.join(map(str, command))}\n{result.stdout}\n{result.stderr}"
    return result


def test_the_wheel_alone_indexes_searches_and_evaluates_the_demo(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(REPO / "clirplug", source / "clirplug",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.checked", "jars/anserini-*"))
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    build_env = {**os.environ, "CLIRPLUG_ANSERINI_JAR": str(_pyserini_jars())}
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", tmp_path / "dist", source],
         tmp_path, build_env)
    (wheel,) = (tmp_path / "dist").glob("clirplug-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    jar = sorted(_pyserini_jars().glob("anserini-*-fatjar.jar"))[-1]
    assert {f"clirplug/lucene/jars/{jar.name}", "clirplug/lucene/jars/LICENSE.txt",
            "clirplug/lucene/jars/NOTICE", "clirplug/data/demo/corpus.jsonl"} <= set(names)

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], tmp_path)
    python, clirplug = venv / "bin" / "python", venv / "bin" / "clirplug"
    _run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-compile", wheel], tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ANSERINI_CLASSPATH", "JAVA_HOME", "VIRTUAL_ENV")}
    found = _run([python, "-c", f"import importlib.util as u; print([m for m in {ABSENT!r} if u.find_spec(m)])"],
                 tmp_path, env).stdout.strip()
    assert found == "[]", f"installed with clirplug's wheel: {found}"

    work = tmp_path / "work"
    work.mkdir()
    demo = Path(_run([clirplug, "demo", "--path"], work, env).stdout.strip())
    assert demo.is_relative_to(venv) and (demo / "corpus.jsonl").is_file()
    _run([clirplug, "index", "--corpus", demo / "corpus.jsonl", "--index", "indexes/demo", "--language", "en", "--quiet"],
         work, env)
    search = ["--topics", demo / "topics.dev.jsonl", "--field", "desc", "--output", "runs/bm25.desc.trec", "--quiet"]
    _run([clirplug, "search", "--index", "indexes/demo", *search], work, env)
    scores = _run([clirplug, "eval", "--qrels", demo / "qrels.dev.txt", "runs/bm25.desc.trec"], work, env).stdout

    # the same commands in this checkout's venv (in-process, on the packaged demo of this checkout)
    here = tmp_path / "here"
    local = demo_path()
    assert main(["index", "--corpus", str(local / "corpus.jsonl"), "--index", str(here / "demo"), "--language", "en",
                 "--quiet"]) == 0
    assert main(["search", "--index", str(here / "demo"), "--topics", str(local / "topics.dev.jsonl"), "--field", "desc",
                 "--output", str(here / "bm25.desc.trec"), "--quiet"]) == 0
    run = (work / "runs" / "bm25.desc.trec").read_text()
    assert run == (here / "bm25.desc.trec").read_text() and len(run.splitlines()) > 100
    header, row = scores.splitlines()[:2]
    assert header.split()[:2] == ["run", "MAP"] and re.fullmatch(r"0\.\d{4}", row.split()[1]), scores
