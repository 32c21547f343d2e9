"""The README's ```sh and ```python blocks run as written, in order, from one empty directory.

As a reader would after ``make install``: the shell blocks with ``bash -e`` and the venv's ``bin`` first on
``PATH``, the Python blocks with the venv's python, all in the same empty temporary directory (so they write
``indexes/``, ``models/`` and ``runs/`` there and find the demo through ``clirplug demo --path``). The Python
blocks run one after the other in one interpreter, sharing their names (as in one session: the PyTerrier block
uses the searchers the first block built).

A block that is an illustration and cannot run here carries ``<!-- readme-test: skip (why) -->`` on the line
before it; ``SKIPPED`` below lists them, so that a new skip is a change to this test too.

One explicit substitution: the manclir-de block runs with ``M`` set to the embedded demo collection (which has
manclir-de's layout), not to ``../shared/data/manclir-de``: its dense search embeds all 3,178 pages of
manclir-de, over 2.5 minutes on 2 cores (its indexing and BM25 search take about 20 s). That the block's
``$M/...`` files exist in manclir-de is checked on the collection itself (skipped where it is absent).
"""

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.jvm  # the blocks index and search with Lucene (in subprocesses)

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
MANCLIR_DE = REPO.parent / "shared" / "data" / "manclir-de"  # as tests/conftest.py finds the shared data
VENV_BIN = Path(sys.executable).parent  # the venv the suite runs in (make test: .venv/bin/python)

# first line of each block the README marks as an illustration -> why it cannot run here
SKIPPED = {
    "make demo    # creates .venv/, then runs the main job on the embedded German-English demo":
        "the set-up itself: the README test runs inside `make test`, and the demo experiment takes minutes",
    "clirplug serve --index indexes/demo --model models/demo --method psq   # --port 8080 --host 127.0.0.1":
        "the server runs until it is stopped; tests/integration/test_serve.py starts and stops it",
    "curl 'http://127.0.0.1:8080/search?q=Verzeichnisbaum+anzeigen&k=10'": "asks the server above",
    'searcher = clirplug.load_system("demo-output/runs/demo/recommended.title.json")   # e.g. psq+dense, as tuned':
        "reads `make demo`'s output, demo-output/: minutes of the demo experiment; "
        "tests/integration/test_systems.py loads system files",
}
MANCLIR_BLOCK = "M=${M:-../shared/data/manclir-de}"  # the first line of the block that reads $M

_FENCE = re.compile(r"^```(sh|python)\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)
_MARK = re.compile(r"<!--\s*readme-test:\s*skip\s*\((.*)\)\s*-->")


@dataclass
class Block:
    lang: str
    code: str
    line: int  # of the opening fence in README.md
    skip: str | None  # the reason of its readme-test: skip comment

    @property
    def first(self) -> str:
        return self.code.splitlines()[0]


def readme_blocks(text: str) -> list[Block]:
    blocks = []
    for match in _FENCE.finditer(text):
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = _MARK.fullmatch(before.strip())
        blocks.append(Block(match.group(1), match.group(2), text.count("\n", 0, match.start()) + 1,
                            mark.group(1) if mark else None))
    return blocks


def _env(**extra) -> dict:
    env = {key: value for key, value in os.environ.items() if key not in ("M", "D", "PYTHONPATH")}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    return {**env, **extra}


def _run(command, cwd, env, what, timeout=600):
    start = time.monotonic()
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    seconds = time.monotonic() - start
    assert result.returncode == 0, (f"{what} failed (exit {result.returncode}):\n"
                                    f"--- stdout\n{result.stdout[-3000:]}\n--- stderr\n{result.stderr[-5000:]}")
    print(f"{what}: {seconds:.1f} s")
    return result


def test_readme_skips_only_the_listed_blocks():
    blocks = readme_blocks(README.read_text(encoding="utf-8"))
    assert {block.first: block.skip for block in blocks if block.skip} == SKIPPED
    assert [block.lang for block in blocks].count("python") >= 3 and [block.lang for block in blocks].count("sh") >= 3
    assert sum(block.first.startswith(MANCLIR_BLOCK) for block in blocks) == 1


def test_manclir_de_has_the_files_the_readme_reads():
    if not MANCLIR_DE.is_dir():
        pytest.skip(f"{MANCLIR_DE} is absent: this test needs the shared data beside the repository")
    (block,) = [b for b in readme_blocks(README.read_text(encoding="utf-8")) if b.first.startswith(MANCLIR_BLOCK)]
    files = set(re.findall(r"\$M/(\S+)", block.code))
    assert files and all((MANCLIR_DE / name).is_file() for name in files), sorted(files)


_PYTHON_DRIVER = """
import json, sys
namespace = {"__name__": "__main__"}
for line, code in json.load(open(sys.argv[1], encoding="utf-8")):
    print(f"--- README.md:{line}", flush=True)
    exec(compile(code, f"README.md:{line}", "exec"), namespace)
"""


def test_readme_blocks_run_from_an_empty_directory(tmp_path):
    from clirplug.data import demo_path

    blocks = [block for block in readme_blocks(README.read_text(encoding="utf-8")) if not block.skip]
    work = tmp_path / "reader"
    work.mkdir()
    for block in (b for b in blocks if b.lang == "sh"):
        # the substitution the module docstring states: the manclir-de block on the demo collection
        env = _env(M=str(demo_path())) if block.first.startswith(MANCLIR_BLOCK) else _env()
        script = tmp_path / f"block{block.line}.sh"
        script.write_text(block.code, encoding="utf-8")
        _run(["bash", "-e", str(script)], work, env, f"README.md:{block.line} (sh)")
    python = [[block.line, block.code] for block in blocks if block.lang == "python"]
    (tmp_path / "blocks.json").write_text(json.dumps(python), encoding="utf-8")
    (tmp_path / "driver.py").write_text(_PYTHON_DRIVER, encoding="utf-8")
    _run([str(VENV_BIN / "python"), str(tmp_path / "driver.py"), str(tmp_path / "blocks.json")], work, _env(),
         f"README.md python blocks at lines {', '.join(str(line) for line, _ in python)}")
    assert (work / "runs" / "fused.title.trec").stat().st_size > 0  # the first Python block's run
