"""The layer table of docs/architecture.md ("Layers and what each may import"), read from the document and enforced on
every import of every module of the package (those inside functions too).

Each row is a layer: its "where" cell lists entries (separated by ``,`` or ``;``, parenthesized text aside), an entry
being the paths (a folder ``x/`` or a file ``x.py``) of one item: ``qt/``, ``boost.py`` with ``_boost_kernels.py``. A
module belongs to the entry whose path matches it most closely (``rerank/config.py`` before ``rerank/``); a module no
entry names belongs to the row saying "every module not named above". The "may import" cell names the layers a
layer's modules may import ("every layer below": the rows under it); a module may always import its own entry, and
other entries of its own layer only when the cell names that layer: a method importing another method fails. The
front ends' cell adds which front ends each may import (``X any``, ``X only Y``, ``X none``). An import is a module of
the package (``from clirplug import bm25`` imports ``clirplug.bm25``; the bare package ``clirplug`` is its
``__init__``'s namespace and not counted).
"""

import re
from pathlib import Path

import pytest
from test_code_rules import PACKAGE, REPO, import_statements

pytestmark = pytest.mark.unit

DOC = REPO / "docs" / "architecture.md"
HEADING = "## Layers and what each may import"
BELOW = "every layer below"
UNNAMED = "every module not named above"
FRONT = "of the front ends:"


def _paths(text: str) -> tuple[str, ...]:
    return tuple(path for path in re.findall(r"`([^`]+)`", text) if path.endswith(("/", ".py")))


def read_table(markdown: str) -> list[dict]:
    """The rows of the layer table: ``{"layer", "entries": [paths, ...], "unnamed", "may": {layers},
    "front": {entry paths: None (any) or a set of paths}}``."""
    section = markdown[markdown.index(HEADING):]
    lines = [line for line in section.splitlines()[1:] if line.startswith("|")]
    rows = []
    for line in lines[2:]:
        layer, where, may = (cell.strip() for cell in line.strip().strip("|").split("|"))
        bare = re.sub(r"\([^()]*\)", "", where)
        entries = [paths for piece in re.split(r"[,;]", bare) if (paths := _paths(piece))]
        rule, _, front = may.partition(FRONT)
        rows.append({"layer": layer, "entries": entries, "unnamed": UNNAMED in where, "rule": rule, "front": {}})
        for part in filter(str.strip, front.split(";")):
            sources, keyword, targets = re.split(r"\b(any|only|none)\b", part, maxsplit=1)
            for path in _paths(sources):
                rows[-1]["front"][path] = None if keyword == "any" else set(_paths(targets))
    names = [row["layer"] for row in rows]
    for i, row in enumerate(rows):
        row["may"] = set(names[i + 1:]) if BELOW in row["rule"] else {name for name in names if name in row["rule"]}
    return rows


def _place(relative: str, rows: list[dict]) -> tuple[str, tuple[str, ...]]:
    """``(layer, entry)`` of a module's path relative to the package."""
    best = None
    for row in rows:
        for entry in row["entries"]:
            for path in entry:
                if relative == path or (path.endswith("/") and relative.startswith(path)):
                    if best is None or len(path) > best[0]:
                        best = (len(path), row["layer"], entry)
    if best is not None:
        return best[1], best[2]
    default = next(row["layer"] for row in rows if row["unnamed"])
    return default, (relative.split("/")[0] + ("/" if "/" in relative else ""),)


def _imports(path: Path, package: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of the package that ``path`` imports, anywhere in it."""
    found = set()
    for base, names in import_statements(path, package.parent):
        named = [f"{base}.{name}" for name in names if f"{base}.{name}" in modules]
        found.update(named or [base])
    return {name.removesuffix(".__init__") for name in found if name in modules and name != package.name}


def violations(package: Path, rows: list[dict]) -> list[str]:
    """``"module -> module (layer -> layer)"`` for each import the table does not allow."""
    files = sorted(package.rglob("*.py"))
    modules = {".".join(p.relative_to(package.parent).with_suffix("").parts).removesuffix(".__init__"): p
               for p in files}
    place = {name: _place(str(p.relative_to(package)), rows) for name, p in modules.items()}
    may = {row["layer"]: row["may"] for row in rows}
    front = {path: rule for row in rows for path, rule in row["front"].items()}
    found = []
    for name, path in modules.items():
        layer, entry = place[name]
        for other in sorted(_imports(path, package, modules)):
            other_layer, other_entry = place[other]
            if entry == other_entry or other_layer in may[layer]:
                continue
            rules = [front[p] for p in entry if p in front]
            if layer == other_layer and rules and (rules[0] is None or set(other_entry) & rules[0]):
                continue
            found.append(f"{name} -> {other} ({layer} -> {other_layer})")
    return found


@pytest.fixture(scope="module")
def table():
    return read_table(DOC.read_text(encoding="utf-8"))


def test_the_table_is_read_as_written(table):
    assert [row["layer"] for row in table] == ["front ends", "registry", "training steps", "methods", "models",
                                               "engines and formats"]
    methods = next(row for row in table if row["layer"] == "methods")
    assert methods["entries"] == [("qt/",), ("rerank/",), ("boost.py", "_boost_kernels.py"), ("fusion/",),
                                  ("dense.py", "_dense_kernels.py")]
    assert methods["may"] == {"models", "engines and formats"}
    assert table[0]["may"] == {"registry", "training steps", "methods", "models", "engines and formats"}
    assert table[0]["front"]["serve/"] == {"api.py"} and table[0]["front"]["cli/"] is None
    assert table[0]["front"]["experiment/"] == set()
    assert _place("rerank/config.py", table)[0] == _place("stage_record.py", table)[0] == "engines and formats"


def test_every_import_follows_the_layer_table(table):
    assert violations(PACKAGE, table) == []


def test_a_method_importing_another_method_fails(table, tmp_path):
    """A synthetic package under the real table: dense importing boost (a sibling method) and an engine importing a
    model are found; a method importing its own entry, a model and an engine is not."""
    package = tmp_path / "clirplug"
    for name, text in {"__init__.py": "", "boost.py": "import numpy\n", "_boost_kernels.py": "",
                       "dense.py": "def f():\n    from clirplug import boost\n",
                       "qt/__init__.py": "", "qt/dt.py": "from . import psq\nfrom clirplug.mt import decoder\n"
                                                         "from clirplug.io.runs import read_run\n",
                       "qt/psq.py": "from clirplug import _boost_kernels\n",
                       "mt/__init__.py": "", "mt/decoder.py": "", "io/__init__.py": "",
                       "io/runs.py": "import clirplug.mt.decoder\n"}.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text, encoding="utf-8")
    boost = package / "boost.py"
    assert violations(package, table) == ["clirplug.dense -> clirplug.boost (methods -> methods)",
                                          "clirplug.io.runs -> clirplug.mt.decoder (engines and formats -> models)",
                                          "clirplug.qt.psq -> clirplug._boost_kernels (methods -> methods)"]
    boost.write_text("from clirplug.qt import dt\n", encoding="utf-8")
    assert "clirplug.boost -> clirplug.qt.dt (methods -> methods)" in violations(package, table)
