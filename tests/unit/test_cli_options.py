"""The command line as a whole: one name per option across commands, old names hidden, plain help texts,
and no argparse in the library."""

import argparse
import ast
import dataclasses
import re

import pytest
from test_code_rules import PACKAGE, REPO, imported_modules

from clirplug.bm25 import ANSERINI_B, ANSERINI_K1, BOWFD_B, BOWFD_K1
from clirplug.cli import COMMANDS, build_parser
from clirplug.cli.options import flag
from clirplug.methods import METHODS, TRAINING, Bm25Run, BowfdRun, DtRun
from clirplug.rerank.config import BowfdConfig
from clirplug.settings import field_type

pytestmark = pytest.mark.cli

# command -> (required options, with placeholders), for parsing option lists without running anything
REQUIRED = {
    "search": ["--topics", "t.jsonl"],
    "translate": ["--model", "m", "--input", "t.jsonl"],
    "rerank": ["--method", "bowfd", "--model", "m", "--topics", "t.jsonl"],
    "fuse": ["--runs", "a.trec", "b.trec"],
}
# (command, old option, value, the current option's dest, the value parsed)
ALIASES = [
    *[(command, "--out", "run.trec", "output", "run.trec") for command in REQUIRED],
    *[(command, "--lang", "fr", "src_lang", "fr") for command in ("search", "translate", "rerank")],
]
# Options whose name every command shares: (current name, old names)
SHARED = {"--output": ["--out"], "--src-lang": ["--lang"], "--threads": []}


def parse(argv):
    return build_parser().parse_args(argv)


def help_text(capsys, monkeypatch, *command):
    monkeypatch.setenv("COLUMNS", "100")
    with pytest.raises(SystemExit) as stop:
        parse([*command, "--help"])
    assert stop.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("command, old, value, dest, parsed", ALIASES)
def test_old_option_names_parse_as_the_current_ones(command, old, value, dest, parsed):
    args = parse([command, *REQUIRED[command], *(["--output", "x"] if dest != "output" else []), old, value])
    assert getattr(args, dest) == parsed


def test_required_output_is_satisfied_by_its_old_name():
    args = parse(["search", "--topics", "t.jsonl", "--out", "run.trec"])
    assert args.output == "run.trec"
    with pytest.raises(SystemExit):
        parse(["search", "--topics", "t.jsonl"])  # neither --output nor --out


@pytest.mark.parametrize("step", sorted(TRAINING))
def test_every_training_step_writes_to_output_and_takes_out_as_a_hidden_name(step, capsys, monkeypatch):
    text = help_text(capsys, monkeypatch, "train", step)
    assert "--output" in text and not re.search(r"--out\b(?!put)", text)
    options = _options(f"train {step}")
    assert options["--out"] is options["--output"]


# (experiment and demo, which runs it, are left out: their --threads counts stage processes, not a command's threads)
@pytest.mark.parametrize("command", sorted(REQUIRED) + ["index", "eval"])
def test_help_shows_each_shared_option_under_its_current_name_only(command, capsys, monkeypatch):
    text = help_text(capsys, monkeypatch, command)
    for current, old_names in SHARED.items():
        for old in old_names:
            assert not re.search(rf"{re.escape(old)}\b(?!-)", text), f"{command} --help shows {old}"
    for other in ("--out-", "--outfile", "--jobs", "--workers", "--query-lang", "--language-src"):
        assert other not in text
    if command in ("search", "translate", "rerank", "fuse"):
        assert "--output FILE" in text


def test_demo_takes_the_experiment_options_and_hides_its_old_workdir(capsys, monkeypatch):
    demo, experiment = help_text(capsys, monkeypatch, "demo"), help_text(capsys, monkeypatch, "experiment")
    options = [re.findall(r"^  (--[\w-]+)", text, re.MULTILINE) for text in (demo, experiment)]
    assert options[0] == ["--path", *options[1]] and "--workdir" not in demo
    assert parse(["demo", "--workdir", "elsewhere"]).root == "elsewhere" and parse(["demo"]).root == "demo-output"


def test_top_level_help_is_plain_text_with_one_line_per_command(capsys, monkeypatch):
    text = help_text(capsys, monkeypatch)
    for markup in ("``", "`", ":func:", ":class:", ":mod:", ".. ", "**"):
        assert markup not in text, f"raw markup {markup!r} in clirplug --help"
    assert text.splitlines()[2].startswith("Cross-language information retrieval")
    for name in COMMANDS:
        assert re.search(rf"^    {name}\b", text, re.MULTILINE), name


@pytest.mark.parametrize("command", list(COMMANDS))
def test_each_command_help_is_one_plain_line(command):
    import importlib

    text = importlib.import_module(COMMANDS[command]).HELP
    assert "\n" not in text and "`" not in text and text == text.strip() and text[0].islower()


def test_rerank_help_lists_every_reranker_on_one_line(capsys, monkeypatch):
    from clirplug.cli.rerank import rerankers

    text = help_text(capsys, monkeypatch, "rerank")
    listing = text[text.index("rerankers (--method):"):].splitlines()[1:]
    assert [line.split()[0] for line in listing] == list(rerankers()) == [
        name for name, method in METHODS.items() if method.reranks]
    assert all(len(line) < 80 and len(line.split()) > 2 for line in listing)


def test_search_help_lists_every_method_on_one_line(capsys, monkeypatch):
    from clirplug.cli.search import search_methods

    text = help_text(capsys, monkeypatch, "search")
    listing = text[text.index("methods (--method):"):].splitlines()[1:]
    assert [line.split()[0] for line in listing] == list(search_methods()) == [
        "bm25", "dt", "dt-mira", "psq", "boost", "dense"]
    assert all(len(line) < 80 for line in listing)


# ----------------------------------------------------------------------------- outputs, checked before the command runs

# Options naming what a command writes besides every command's --output, and the folders and standard outputs among
# them: each is an Output, which clirplug.cli.main checks before the command runs (clirplug.atomic.check_output).
WRITTEN = {("rerank", "--explain"), ("translate", "--forest"), ("train mira", "--searches")}
FOLDERS = {("train align", "--output"), ("translate", "--forest")}
STDOUT = {("search", "--output"), ("rerank", "--output"), ("fuse", "--output"), ("translate", "--output")}


def _all_commands():
    from clirplug.cli.train import TRAIN_COMMANDS

    return [name for name in COMMANDS if name != "train"] + [f"train {name}" for name in TRAIN_COMMANDS]


def test_every_option_naming_what_a_command_writes_is_an_output():
    from clirplug.cli import Output

    options = {(command, option): action for command in _all_commands()
               for option, action in _options(command).items() if option.startswith("--") and option != "--out"}
    outputs = {key: action for key, action in options.items() if isinstance(action, Output)}
    assert set(outputs) == {key for key in options if key[1] == "--output"} | WRITTEN
    assert {key for key, action in outputs.items() if action.folder} == FOLDERS
    assert {key for key, action in outputs.items() if action.stdout} == STDOUT
    assert all(action.type is None for action in outputs.values())  # text: argparse's Path would drop "new/"'s slash


def test_the_commands_writing_a_run_check_its_tag():
    from clirplug.cli import RunTag

    assert [command for command in _all_commands() if isinstance(_options(command).get("--run-tag"), RunTag)] == [
        "search", "fuse", "rerank"]


def test_outputs_are_checked_before_the_command_runs(tmp_path, monkeypatch, capsys):
    from clirplug.cli import main

    monkeypatch.setattr("clirplug.cli.fuse.run", lambda args: pytest.fail("the command ran"))
    monkeypatch.chdir(tmp_path)
    assert main(["fuse", "--runs", "a.trec", "b.trec", "--output", "x/", "--run-tag", "a b"]) == 2
    assert capsys.readouterr().err == "clirplug: error: --output x/: is a folder; name the file to write\n"
    assert main(["fuse", "--runs", "a.trec", "b.trec", "--output", "x.trec", "--run-tag", "a b"]) == 2
    assert "--run-tag 'a b'" in capsys.readouterr().err


# ----------------------------------------------------------------------------- flags against the settings classes

# Where each setting of a method (clirplug.methods.METHODS) is given on the command
# line: (command, flag), or None for the tuning grids, which only an experiment searches. A flag of
# another name: dt's weights -> translate --weights, fusion's fuser -> fuse --method.
METHOD_FLAGS = {
    "bm25": {"k1": ("search", "--k1"), "b": ("search", "--b")},
    "dt": {"kind": ("search", "--kind"), "weights": ("translate", "--weights"), "prf": ("search", "--prf"),
           "fb_terms": ("search", "--fb-terms"), "fb_docs": ("search", "--fb-docs"),
           "original_query_weight": ("search", "--original-query-weight"), "grid": None},
    "dt-mira": {"kind": ("search", "--kind")},
    "psq": {"psq": ("search", "--psq"), "kind": ("search", "--kind"), "grid": None},
    "boost": {"candidates": ("rerank", "--candidates")},
    "bowfd": {"candidates": ("rerank", "--candidates"), "kind": ("rerank", "--kind"), "lm": ("rerank", "--lm"),
              "depth": ("rerank", "--depth")},
    "fusion": {"runs": ("fuse", "--runs"), "fuser": ("fuse", "--method"), "grid_step": ("fuse", "--grid-step"),
               "measure": ("fuse", "--measure"), "grid": None, "pairs": None, "seed": None, "folds": None,
               "min_gain": None},
    "dense": {"encoder": ("search", "--encoder"), "words": ("search", "--words"), "grid": None,
              "search": ("search", "--search"), "m": ("search", "--m"),
              "ef_construction": ("search", "--ef-construction"), "ef_search": ("search", "--ef-search"),
              "query": ("search", "--query"), "kind": ("search", "--kind")},
}
# Settings classes whose every setting has the flag of the same name: (class, command)
CLASS_FLAGS = [(BowfdConfig, "rerank"), *[(step.settings, f"train {name}") for name, step in TRAINING.items()]]
# Settings whose flag differs on purpose, each pinned as (setting's default, flag's default) and why:
# the test fails when either side changes.
DIFFERENT = {
    ("dt", "weights"): ("bitext", None, "the experiment chooses a weights file by name; translate takes a file"),
    ("psq", "psq"): (None, "", "a mapping or the --psq string; None and '' both give PsqSettings()"),
    ("bowfd", "candidates"): ("dt", None, "an experiment names a run of its own; rerank takes a TREC file"),
    ("bowfd", "depth"): (100, None, "rerank --depth also serves boost: None is each reranker's own default"),
    ("fusion", "fuser"): (None, "borda", "None is borda (an experiment may list fusers to choose with kappa)"),
    ("BowfdConfig", "field"): ("title", None, "rerank --field defaults to the boost model's field; bowfd reads it "
                                              "as title"),
}


def _subcommands(parser):
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def _options(command: str) -> dict:
    """The option strings of ``command``'s parser (``"train bowfd"``), each with its action."""
    parser = build_parser()
    for word in command.split():
        parser = _subcommands(parser)[word]
    return parser._option_string_actions


def _action(command: str, flag: str):
    return _options(command)[flag]


def _flag_spec(action):
    """(type, default, choices, nargs) of an argparse action; a boolean switch has type bool."""
    switch = (argparse.BooleanOptionalAction, argparse._StoreTrueAction, argparse._StoreFalseAction)
    if isinstance(action, switch):
        return bool, action.default, None, None
    return action.type or str, action.default, tuple(action.choices) if action.choices else None, action.nargs


def _setting_spec(cls, name: str):
    """(type, default, choices, nargs) that :func:`clirplug.cli.options.add_settings` gives setting ``name``."""
    base, _, is_tuple = field_type(cls, name)
    field = next(f for f in dataclasses.fields(cls) if f.name == name)
    return base, field.default, field.metadata["choices"], "+" if is_tuple else None


def _compare(owner: str, cls, name: str, command: str, flag: str):
    action = _action(command, flag)
    if (owner, name) in DIFFERENT:
        setting_default, flag_default, _ = DIFFERENT[owner, name]
        field = next(f for f in dataclasses.fields(cls) if f.name == name)
        assert (field.default, action.default) == (setting_default, flag_default), (owner, name, command, flag)
        return
    assert _flag_spec(action) == _setting_spec(cls, name), (owner, name, command, flag)


@pytest.mark.parametrize("method", sorted(METHOD_FLAGS))
def test_each_method_setting_has_a_flag_of_its_type_default_and_choices(method):
    """A setting added without a flag, a flag renamed, or a default or choice changed in one place only fails here."""
    cls = METHODS[method].settings
    assert set(METHOD_FLAGS[method]) == set(cls.names())
    for name, where in METHOD_FLAGS[method].items():
        if where is not None:
            _compare(method, cls, name, *where)


def test_every_method_of_search_rerank_fuse_and_experiments_has_settings():
    from clirplug.cli.rerank import rerankers
    from clirplug.cli.search import search_methods

    assert set(METHOD_FLAGS) == set(METHODS)
    assert set(search_methods()) <= set(METHOD_FLAGS) and set(rerankers()) <= set(METHOD_FLAGS)


@pytest.mark.parametrize("cls, command", CLASS_FLAGS, ids=[command for _, command in CLASS_FLAGS])
def test_settings_classes_built_into_flags_match_them(cls, command):
    for name in cls.names():
        _compare(cls.__name__, cls, name, command, flag(name))


def test_the_shared_bm25_and_grammar_flags_are_the_registry_s():
    """--k1/--b of search take Anserini's defaults (bowfd's own: BowfdConfig); --kind the one grammar option."""
    assert _setting_spec(Bm25Run, "k1")[1] == ANSERINI_K1 and _setting_spec(Bm25Run, "b")[1] == ANSERINI_B
    assert _flag_spec(_action("rerank", "--k1"))[1] == BOWFD_K1 and _flag_spec(_action("rerank", "--b"))[1] == BOWFD_B
    for command in ("search", "rerank", "train bowfd"):
        assert _flag_spec(_action(command, "--kind")) == _setting_spec(DtRun, "kind") == _setting_spec(BowfdRun, "kind")


# ----------------------------------------------------------------------------- the library takes no Namespace

def _library_modules():
    cli = PACKAGE / "cli"
    return [path for path in sorted(PACKAGE.rglob("*.py")) if cli not in path.parents]


def test_only_clirplug_cli_imports_argparse():
    importers = [str(path.relative_to(REPO)) for path in _library_modules() if "argparse" in imported_modules(path)]
    assert importers == []


def test_no_library_function_takes_parsed_arguments():
    """A parameter named ``args`` (not ``*args``) is how a function takes an ``argparse.Namespace``."""
    found = []
    for path in _library_modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
                if "args" in names:
                    found.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}")
    assert found == []
