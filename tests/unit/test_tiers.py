"""Every test module names its tier, and only the ``jvm`` tier reaches for Lucene (docs/testing.md).

``tests/conftest.py`` catches a ``unit`` or ``cli`` test that starts the JVM while it runs; these
checks read the source, so they also cover the modules a run did not collect.
"""

import ast
from pathlib import Path

import pytest
import test_code_rules
from test_code_rules import imported_modules

pytestmark = pytest.mark.unit

TESTS = Path(__file__).resolve().parents[1]
TIERS = ("unit", "cli", "jvm")
LUCENE = ("jnius", "clirplug.lucene", "lucene_tiny")  # the JVM, clirplug's Lucene package, the tiny-index helper
COMMANDS = ("clirplug.cli", "clirplug.__main__", "conftest.run_cli")
# imports of clirplug.lucene that start no JVM: module -> why
NO_JVM = {"unit/test_mira.py": "LuceneIndex.idf, the formula of an index's idf, on a fake index",
          "unit/test_languages.py": "clirplug.lucene.languages, the table of analyzer class names"}


def module_tiers(path: Path) -> list[str]:
    """The tier markers of the module's top-level ``pytestmark = pytest.mark.X`` (or a list of marks)."""
    for node in ast.parse(path.read_text(encoding="utf-8"), filename=str(path)).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "pytestmark" for t in node.targets):
            marks = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
            marks = [mark.func if isinstance(mark, ast.Call) else mark for mark in marks]
            return [mark.attr for mark in marks
                    if isinstance(mark, ast.Attribute) and ast.unparse(mark.value) == "pytest.mark" and mark.attr in TIERS]
    return []


def _modules():
    return {str(path.relative_to(TESTS)): path for path in sorted(TESTS.rglob("test_*.py"))}


def _importing(path: Path, prefixes) -> list[str]:
    return sorted(name for name in imported_modules(path)
                  if any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes))


def test_the_tiers_are_registered(pytestconfig):
    registered = {line.partition(":")[0].strip() for line in pytestconfig.getini("markers")}
    assert set(TIERS) <= registered


def test_every_test_module_names_one_tier():
    modules = _modules()
    assert len(modules) > 30, "the check finds no test module"
    wrong = {name: module_tiers(path) for name, path in modules.items() if len(module_tiers(path)) != 1}
    assert not wrong, ("each test module needs one `pytestmark = pytest.mark.unit` (or cli, or jvm) "
                       f"after its imports; these have {wrong}")


def test_only_jvm_modules_import_lucene():
    found = {name: _importing(path, LUCENE) for name, path in _modules().items() if module_tiers(path) != ["jvm"]}
    found = {name: imports for name, imports in found.items() if imports and name not in NO_JVM}
    assert not found, f"these unit or cli modules import Lucene; mark them `pytestmark = pytest.mark.jvm`: {found}"


def test_unit_modules_run_no_command():
    found = {name: _importing(path, COMMANDS) for name, path in _modules().items() if module_tiers(path) == ["unit"]}
    found = {name: imports for name, imports in found.items() if imports}
    assert not found, f"these unit modules run clirplug commands; mark them `pytestmark = pytest.mark.cli`: {found}"


def test_the_checks_see_a_bad_module(tmp_path, monkeypatch):
    monkeypatch.setattr(test_code_rules, "REPO", tmp_path)  # imported_modules names modules relative to it
    module = tmp_path / "test_bad.py"
    module.write_text("import pytest\nfrom clirplug.cli import main\nfrom clirplug.lucene.search import bm25_search\n"
                      "pytestmark = [pytest.mark.manclir, pytest.mark.unit(reason='x')]\n")
    assert module_tiers(module) == ["unit"]
    assert _importing(module, LUCENE) == ["clirplug.lucene.search", "clirplug.lucene.search.bm25_search"]
    assert _importing(module, COMMANDS) == ["clirplug.cli", "clirplug.cli.main"]
    module.write_text("import pytest\n\n\ndef test_nothing():\n    pass\n")
    assert module_tiers(module) == []
