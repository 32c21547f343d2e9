"""``clirplug serve``'s options and its errors before anything is loaded."""

import pytest

from clirplug.cli import build_parser, main

pytestmark = pytest.mark.cli


def test_the_options_follow_clirplug_search():
    args = build_parser().parse_args(["serve", "--index", "i", "--model", "m", "--method", "psq", "--psq", "pL=0.01",
                                      "--kind", "flat", "--lang", "fr"])
    assert (args.index, args.model, args.method, args.psq, args.kind, args.src_lang) == ("i", "m", "psq", "pL=0.01",
                                                                                          "flat", "fr")
    assert (args.host, args.port, args.k1, args.b) == ("127.0.0.1", 8080, 0.9, 0.4)


@pytest.mark.parametrize("argv, message", [
    (["--port", "70000"], "--port must be from 0 to 65535, got 70000"),
    (["--depth", "0"], "--depth must be at least 1, got 0"),
    (["--b", "2"], "BM25 b must lie in [0, 1], got 2.0"),
    ([], "no-such-index: not a Lucene index"),
])
def test_bad_options_are_one_error_line(capsys, tmp_path, argv, message):
    assert main(["serve", "--index", str(tmp_path / "no-such-index"), *argv]) == 2
    error = capsys.readouterr().err
    assert error.startswith("clirplug: error: ") and message in error and error.count("\n") == 1
