"""Rules of the code itself: ruff's checks (pyproject.toml, [tool.ruff]) and where the JVM may be touched.

Only ``clirplug/lucene/`` talks to Java (STYLE.md, practice 5): it alone imports ``jnius``, and
only it imports its JVM module ``clirplug.lucene._jvm``; the rest of the package, its tests and
its benchmarks use the functions of ``clirplug.lucene`` (Lucene's own reference values too:
``clirplug.lucene.query``, ``clirplug.lucene.anserini``).
"""

import ast
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "clirplug"
LUCENE = PACKAGE / "lucene"


def test_ruff_finds_nothing():
    ruff = pytest.importorskip("ruff")
    result = subprocess.run([ruff.find_ruff_bin(), "check", "--no-cache", "clirplug", "tests"], cwd=REPO,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_statements(path: Path, root: Path | None = None) -> list[tuple[str, list[str]]]:
    """Each import statement of the file (those inside functions too) as ``(module, names)``, absolute: ``import a``
    is ``("a", [])``, ``from .b import c`` in ``pkg/m.py`` is ``("pkg.b", ["c"])``; module names are relative to
    ``root`` (default: the repository)."""
    name = _module_name(path, REPO if root is None else root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    statements = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            statements += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            statements.append((base, [alias.name for alias in node.names]))
    return statements


def imported_modules(path: Path) -> set[str]:
    """Every module the file imports, absolute (``from a import b`` counts ``a`` and ``a.b``)."""
    return {name for base, names in import_statements(path) for name in (base, *(f"{base}.{n}" for n in names))}


def _outside_lucene():
    """Every Python file of the package, its tests and its benchmarks, but ``clirplug/lucene/``."""
    files = [path for folder in (PACKAGE, REPO / "tests", REPO / "benchmarks") for path in sorted(folder.rglob("*.py"))]
    return [path for path in files if LUCENE not in path.parents]


def _importers(paths, wanted):
    return [str(path.relative_to(REPO)) for path in paths
            if any(name == wanted or name.startswith(wanted + ".") for name in imported_modules(path))]


def test_only_clirplug_lucene_imports_jnius():
    assert _importers(_outside_lucene(), "jnius") == []
    assert _importers(sorted(LUCENE.rglob("*.py")), "jnius"), "the rule checks nothing: no module imports jnius"


def test_only_clirplug_lucene_imports_its_jvm_module():
    assert _importers(_outside_lucene(), "clirplug.lucene._jvm") == []


def test_imports_are_resolved_as_python_resolves_them(tmp_path, monkeypatch):
    """The import scanner itself: absolute, ``from``, relative and package-relative forms."""
    package = tmp_path / "clirplug" / "sub"
    package.mkdir(parents=True)
    monkeypatch.setitem(globals(), "REPO", tmp_path)
    module = package / "mod.py"
    module.write_text("import jnius\nfrom ..lucene import _jvm\nfrom . import sibling\nfrom clirplug.lucene._jvm import jclass\n")
    assert imported_modules(module) >= {"jnius", "clirplug.lucene", "clirplug.lucene._jvm", "clirplug.sub.sibling"}
    init = package / "__init__.py"
    init.write_text("from .mod import x\n")
    assert "clirplug.sub.mod" in imported_modules(init)


def _package_graph() -> dict[str, set[str]]:
    """clirplug module -> the clirplug modules it imports (anywhere in the file, lazily or not)."""
    modules = {_module_name(path, REPO): path for path in PACKAGE.rglob("*.py")}
    return {name: {m for m in imported_modules(path) if m in modules and m != name} for name, path in modules.items()}


def test_experiment_does_not_import_the_command_line():
    upward = sorted(f"{name} -> {m}" for name, imports in _package_graph().items()
                    if name.startswith("clirplug.experiment") for m in imports if m.startswith("clirplug.cli"))
    assert upward == []


def test_the_library_does_not_import_the_command_line():
    """Only the command line (and ``python -m clirplug``) imports ``clirplug.cli``."""
    upward = sorted(f"{name} -> {m}" for name, imports in _package_graph().items()
                    if not name.startswith("clirplug.cli") and name != "clirplug.__main__"
                    for m in imports if m.startswith("clirplug.cli"))
    assert upward == []


def test_the_library_does_not_import_the_python_api():
    """The API (``clirplug.api``, ``clirplug.pyterrier``) is a front end: the library below never imports it,
    only the front ends built on it do (the search service, ``clirplug.serve``; ``clirplug search --system``)."""
    front = ("clirplug.api", "clirplug.pyterrier")
    upward = sorted(f"{name} -> {m}" for name, imports in _package_graph().items()
                    if name not in front and not name.startswith(("clirplug.serve", "clirplug.cli"))
                    for m in imports if m in front)
    assert upward == []


def test_only_the_web_application_imports_the_web_stack():
    """FastAPI, Starlette, uvicorn and pydantic are the optional extra ``clirplug[serve]``: the web application
    imports them (pydantic also its schema module), itself imported on first use."""
    app, schema = PACKAGE / "serve" / "app.py", PACKAGE / "serve" / "schema.py"
    web = [path for path in sorted(PACKAGE.rglob("*.py")) if path not in (app, schema)]
    for package in ("fastapi", "starlette", "uvicorn", "pydantic"):
        assert _importers(web, package) == [], package
    assert _importers([schema], "fastapi") == [] and _importers([schema], "uvicorn") == []
    assert _importers([app], "fastapi") and _importers([schema], "pydantic"), "the rule checks nothing"


def test_only_clirplug_pyterrier_imports_pyterrier():
    """PyTerrier is the optional extra ``clirplug[pyterrier]``: one module imports it, itself imported on first use."""
    assert _importers([path for path in sorted(PACKAGE.rglob("*.py")) if path.name != "pyterrier.py"], "pyterrier") == []
    assert _importers([PACKAGE / "pyterrier.py"], "pyterrier"), "the rule checks nothing: no module imports pyterrier"


def _packages_run(importer: str, imported: str) -> set[str]:
    """The packages whose ``__init__`` importing ``imported`` runs first, but the importer's own (already running)."""
    parts = imported.split(".")
    own = {".".join(importer.split(".")[:i]) for i in range(1, importer.count(".") + 1)}
    return {".".join(parts[:i]) for i in range(1, len(parts))} - own


def import_circle(graph: dict[str, set[str]]) -> list[str]:
    """A circle of ``graph`` (module -> the modules it imports) as ``[a, b, ..., a]``; [] when there is none."""
    state = {}

    def visit(name, path):
        if state.get(name) == "open":
            return path[path.index(name):] + [name]
        if state.get(name) != "done":
            state[name] = "open"
            for other in sorted(graph[name]):
                circle = visit(other, path + [name])
                if circle:
                    return circle
            state[name] = "done"
        return []

    for name in sorted(graph):
        circle = visit(name, [])
        if circle:
            return circle
    return []


def test_the_package_imports_without_a_circle():
    """No module imports, even inside a function, a module that imports it back, directly or not (a package
    imported counts its ``__init__``): each layer depends on the layers below only (docs/architecture.md)."""
    graph = {name: imports | {p for m in imports for p in _packages_run(name, m)} for name, imports in _package_graph().items()}
    graph = {name: {m for m in imports if m in graph and m != name} for name, imports in graph.items()}
    assert import_circle(graph) == []


def test_an_import_circle_is_found():
    assert import_circle({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert import_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert import_circle({"x": {"b"}, "b": {"c"}, "c": {"b"}}) == ["b", "c", "b"]
    assert _packages_run("clirplug.io.topics", "clirplug.irds.sub") == {"clirplug.irds"}


def _method_names(tree) -> list[tuple[int, str]]:
    """``(line, name)`` of each method's name written in ``tree`` to dispatch on it: a string constant equal to a name
    of ``clirplug.methods.METHODS`` that is

    * matched: an operand of a comparison (``==``, ``!=``, ``in``, ``not in``) or an element of a display compared
      with, a ``case`` pattern, or the argument of ``str.startswith``/``endswith``;
    * tabled: a key of a dict display, or an element of a set, list or tuple display, holding two or more method
      names (a table by method: ``{"dt": _dt, "psq": _psq}``, ``{"bm25", "dt"}``, a default list of methods).

    Any other occurrence is data, not dispatch: one key naming a field (a searcher's ``bm25`` argument, an answer's
    ``psq`` table, a sidecar's ``["psq"]``), a run tag, a docstring's example, ``--method``'s default (a choice the
    registry checks like the user's)."""
    from clirplug.methods import METHODS

    def named(node) -> bool:
        return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in METHODS

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            operands += [item for operand in operands if isinstance(operand, ast.Set | ast.List | ast.Tuple)
                         for item in operand.elts]
            found += [operand for operand in operands if named(operand)]
        elif isinstance(node, ast.MatchValue) and named(node.value):
            found.append(node.value)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("startswith", "endswith")):
            found += [argument for argument in node.args if named(argument)]
        elif isinstance(node, ast.Dict | ast.Set | ast.List | ast.Tuple):
            items = node.keys if isinstance(node, ast.Dict) else node.elts
            names = [item for item in items if named(item)]
            found += names if len(names) > 1 else []
    return sorted((node.lineno, node.value) for node in found)


FRONT_ENDS = [PACKAGE / "cli", PACKAGE / "api.py", PACKAGE / "pyterrier.py", PACKAGE / "serve", REPO / "benchmarks"]


def test_the_front_ends_name_no_method_but_through_the_registry():
    """The command line, the Python API, the search service, the PyTerrier transformers and the benchmarks reach every
    method through its entry in ``clirplug.methods.METHODS`` (its settings class, searcher, library function, needs,
    whether it reranks; STYLE.md, practice 13): none matches a method's name or keeps a table by method name
    (:func:`_method_names` says which occurrences count). ``clirplug/methods.py`` is the one table; the experiment has its
    own rule (below: only its planners, one module per method, name methods)."""
    fronts = [file for path in FRONT_ENDS for file in ([path] if path.is_file() else sorted(path.rglob("*.py")))]
    named = [(str(path.relative_to(REPO)), *found) for path in fronts
             for found in _method_names(ast.parse(path.read_text(encoding="utf-8")))]
    assert named == []


def test_a_method_name_used_to_dispatch_is_found():
    planted = ('if method == "dense":\n    searcher = SEARCHERS["psq"]\nshown = {"psq": 1}\n'
               'RUNNERS = {"dt": 1, "psq": 2}\nNEEDS = {"bm25", "dt"}\nlisted = ("dt",)\n'
               'match method:\n    case "boost":\n        pass\nif "x" not in ("bowfd", "y"):\n    pass\n'
               'held = name.startswith("boost")\nparser.add_argument("--method", default="bm25")\n')
    assert _method_names(ast.parse(planted)) == [(1, "dense"), (4, "dt"), (4, "psq"), (5, "bm25"), (5, "dt"),
                                                 (8, "boost"), (10, "bowfd"), (12, "boost")]


def _method_comparisons(tree) -> list[tuple[int, str]]:
    """``(line, name)`` of each method's name that the code dispatches on: compared (``==``, ``in``, a ``case``).
    Subscripts are data's field names (a stage's ``bm25`` settings, a PSQ tuning's ``psq``)."""
    from clirplug.methods import METHODS

    def named(node) -> list[tuple[int, str]]:
        return [(n.lineno, n.value) for n in ast.walk(node)
                if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in METHODS]

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            found += named(node)
        elif isinstance(node, ast.match_case):
            found += named(node.pattern)
    return sorted(set(found))


def test_the_experiment_reaches_methods_through_the_registry_and_their_planners():
    """The experiment finds a run's planner, and through it the method's stages, in the method's registry entry
    (docs/architecture.md, "Adding a method"): outside the planners (one module per method), none of its modules
    dispatches on a method's name."""
    experiment = PACKAGE / "experiment"
    modules = [path for path in sorted(experiment.rglob("*.py")) if experiment / "planners" not in path.parents]
    named = [(str(path.relative_to(REPO)), *found) for path in modules
             for found in _method_comparisons(ast.parse(path.read_text(encoding="utf-8")))]
    assert named == []
    planted = ('if stage.kind in ("dt", "psq"):\n    pass\nelif "dense" == kind:\n    pass\nmatch m:\n'
               '    case "boost":\n        pass\nshown = {"psq": 1}\nmethod = s["bm25"]\n')
    assert _method_comparisons(ast.parse(planted)) == [(1, "dt"), (1, "psq"), (3, "dense"), (6, "boost")]
