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


def test_each_method_s_options_come_from_its_flags():
    from clirplug.cli.serve import searcher_options

    args = build_parser().parse_args(["serve", "--index", "i", "--method", "fusion", "--fuse", "dt, dense",
                                      "--kappa", "0.3", "--fuser", "rrf", "--words", "16", "--depth", "50",
                                      "--search", "hnsw", "--ef-search", "200"])
    options = searcher_options(args)
    assert options["fusion"] == {"searchers": ["dt", "dense"], "method": "rrf", "kappa": 0.3}
    assert options["dense"] == {"encoder": "e5", "words": 16, "search": "hnsw", "m": 16, "ef_construction": 100,
                                  "ef_search": 200, "query": "source"} and options["boost"] == {"depth": 50}
    assert options["bowfd"]["first_stage"] == "dt" and options["dt"]["k1"] == 0.9
    args = build_parser().parse_args(["serve", "--index", "i", "--method", "boost", "--first-stage", "psq"])
    assert searcher_options(args)["boost"]["first_stage"] == searcher_options(args)["bowfd"]["first_stage"] == "psq"


@pytest.mark.parametrize("argv, message", [
    (["--method", "fusion"], "fusion needs --fuse: the searchers whose runs it fuses"),
    (["--method", "fusion", "--fuse", "dt,dense"], "dt needs --model: a translation model folder"),
    (["--method", "fusion", "--fuse", "bm25,dense", "--model", "m"], "fusion takes no --model"),
    (["--method", "fusion", "--fuse", "bm25,fusion"], "fusion is built on itself: fusion -> fusion"),
    (["--method", "fusion", "--fuse", "bm25,nope"], "unknown method 'nope': choose one of bm25, dt, dt-mira"),
    (["--method", "bowfd", "--first-stage", "bowfd"], "bowfd is built on itself: bowfd -> bowfd"),
    (["--method", "dense"], "dense needs --corpus"),
    (["--method", "bm25", "--corpus", "c"], "bm25 takes no --corpus"),
])
def test_a_system_missing_a_need_is_refused_before_anything_loads(argv, message):
    """The service composes ``--method`` through the registry; what a method lacks is named by its flag."""
    from clirplug.cli.serve import searcher_options, service
    from clirplug.errors import ClirplugError

    args = build_parser().parse_args(["serve", "--index", "i", *argv])
    with pytest.raises(ClirplugError, match=message):
        service(args, searcher_options(args))
