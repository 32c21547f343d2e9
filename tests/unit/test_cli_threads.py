"""``--threads``: the one name of a command's parallel workers (Pyserini's), ``--jobs`` its hidden old name."""

import re

import pytest
from test_cli_options import _options

from clirplug.cli import build_parser, main

pytestmark = pytest.mark.cli

# command -> (its required arguments, with placeholders; the default of --threads)
COMMANDS = {
    ("train", "boost"): (["--topics", "t", "--qrels", "q", "--corpus", "c", "--output", "o.npz"], 2),
    ("train", "bowfd"): (["--model", "m", "--index", "i", "--topics", "t", "--qrels", "q", "--candidates", "r",
                          "--output", "w"], 2),
    ("experiment",): (["exp.yaml"], None),
    ("demo",): ([], None),
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_help_names_threads_and_hides_jobs(command, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args([*command, "--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    assert re.search(r"^  --threads N\b", text, re.MULTILINE) and "--jobs" not in text


@pytest.mark.parametrize("command", list(COMMANDS))
def test_jobs_parses_as_threads(command):
    required, default = COMMANDS[command]
    parser = build_parser()
    assert parser.parse_args([*command, *required]).threads == default
    assert parser.parse_args([*command, *required, "--threads", "3"]).threads == 3
    assert parser.parse_args([*command, *required, "--jobs", "4"]).threads == 4
    options = _options(" ".join(command))
    assert options["--jobs"] is options["--threads"]
    assert "jobs" not in vars(parser.parse_args([*command, *required]))


@pytest.mark.parametrize("command", [("train", "boost"), ("train", "bowfd"), ("experiment",)])
@pytest.mark.parametrize("option", ["--threads", "--jobs"])
def test_fewer_than_one_thread_is_one_error_line(command, option, tmp_path, capsys):
    """Refused before any input is read (the placeholder files do not exist)."""
    required, _ = COMMANDS[command]
    assert main([*command, *required, option, "0"]) == 2
    assert capsys.readouterr().err.splitlines() == ["clirplug: error: --threads must be at least 1, got 0"]
