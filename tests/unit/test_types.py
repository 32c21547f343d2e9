"""The type checker: mypy runs on the modules ``[tool.mypy]`` of pyproject.toml names (the registry, the API, the
search service, settings, formats and the experiment) and finds no error (docs/testing.md)."""

import subprocess
import sys
import tomllib

import pytest
from test_code_rules import REPO

pytestmark = pytest.mark.unit

CHECKED = {"clirplug/methods.py", "clirplug/api.py", "clirplug/serve", "clirplug/settings.py", "clirplug/io",
           "clirplug/experiment"}
CACHE = REPO / ".pytest_cache" / "mypy"  # warm after the first run: seconds instead of half a minute


def _mypy(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(CACHE), *arguments], cwd=REPO,
                          capture_output=True, text=True)


def test_the_configuration_checks_the_guarded_modules():
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert CHECKED <= set(config["files"]) and config["ignore_missing_imports"] is True


def test_mypy_finds_no_error():
    result = _mypy()
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_reports_an_error(tmp_path):
    """The checker is live with this configuration: a wrong return type is an error."""
    wrong = tmp_path / "wrong.py"
    wrong.write_text("from clirplug.methods import get_method\n\n\ndef help_of(name: str) -> int:\n"
                     "    return get_method(name).help\n", encoding="utf-8")
    result = _mypy(str(wrong))
    assert result.returncode == 1 and 'Incompatible return value type (got "str", expected "int")' in result.stdout
