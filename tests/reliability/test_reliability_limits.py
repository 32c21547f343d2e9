"""Bounded work and safe writes below the command line: deep forests, long queries, atomic paths."""

import json
from types import SimpleNamespace

import pytest
from conftest import check_refused, put, run_cli

from clirplug.atomic import atomic_open, atomic_path
from clirplug.errors import ClirplugError
from clirplug.executor import ExecutorSettings
from clirplug.io.topics import Topic
from clirplug.mt.hypergraph import HypergraphBuilder
from clirplug.mt.kbest import kbest, unique_kbest
from clirplug.mt.preprocess import MAX_SENTENCE_TOKENS, chunks, topic_sentences

pytestmark = pytest.mark.cli

DEPTH = 5000  # far beyond Python's default recursion limit of 1000


def chain_forest(depth):
    """A forest whose derivations are chains of ``depth`` edges, with two choices at the bottom."""
    builder = HypergraphBuilder()
    leaf = builder.add_node("leaf")
    builder.add_edge(leaf, (), {"a": 1.0}, ("a",))
    builder.add_edge(leaf, (), {"b": 1.0}, ("b",))
    node = leaf
    for _ in range(depth):
        head = builder.add_node()
        builder.add_edge(head, (node,), {"step": 1.0}, (0, "w"))
        node = head
    return builder.build(node)


def test_deep_forests_are_traversed_without_recursion():
    forest = chain_forest(DEPTH)
    weights = {"a": 2.0, "b": 1.0, "step": 0.0}
    best = forest.viterbi(weights)
    words, _ = forest.derivation_yield(best)
    assert words == ("a",) + ("w",) * DEPTH
    assert [d.score for d in kbest(forest, weights, 3)] == [2.0, 1.0]
    distinct = unique_kbest(forest, weights, 2, 10)
    assert [forest.derivation_yield(d)[0][0] for d in distinct] == ["a", "b"]


def test_long_sentences_are_cut_into_balanced_chunks():
    tokens = [f"w{i}" for i in range(2 * MAX_SENTENCE_TOKENS + 1)]
    pieces = chunks(tokens)
    assert [len(p) for p in pieces] == [67, 67, 67] and sum(pieces, []) == tokens
    assert chunks(tokens[:MAX_SENTENCE_TOKENS]) == [tokens[:MAX_SENTENCE_TOKENS]]
    topic = Topic("q1", " ".join(tokens), "Kurz. Lang " + " ".join(tokens))
    assert [len(s) for s in topic_sentences(topic, "title", "de", str.split)] == [67, 67, 67]
    assert [len(s) for s in topic_sentences(topic, "desc", "de", str.split)] == [1, 67, 67, 68]


def test_a_1000_word_title_is_translated_in_chunks(workspace, capsys):
    title = " ".join(["dateien kopieren"] * 500)
    put(workspace, {"long.jsonl": json.dumps({"id": "q1", "title": title}) + "\n"})
    code, _, err = run_cli(["translate", "--model", "{w}/model", "--input", "{w}/long.jsonl", "--format", "jsonl",
                            "--output", "{w}/long.out", "--no-cache"], workspace, capsys)
    assert code == 0, err
    sentences = json.loads((workspace / "long.out").read_text())["sentences"]
    assert [len(s["source"]) for s in sentences] == [MAX_SENTENCE_TOKENS] * 10
    assert all(s["nbest"][0]["words"][:2] == ["copy", "files"] for s in sentences)


def test_a_long_plain_text_line_is_translated_in_chunks(workspace, capsys):
    put(workspace, {"long.txt": " ".join(["dateien"] * 250) + "\nkopieren\n"})
    code, _, err = run_cli(["translate", "--model", "{w}/model", "--input", "{w}/long.txt", "--output",
                            "{w}/long.out", "--no-cache"], workspace, capsys)
    assert code == 0, err
    assert (workspace / "long.out").read_text().splitlines() == [" ".join(["files"] * 250), "copy"]


def test_the_experiment_translation_output_decodes_a_long_line_in_chunks(workspace, monkeypatch):
    """The mt-eval stage (BLEU of the bitext's first lines) cuts a 250-word line like ``translate`` does."""
    from clirplug.experiment.kinds import STAGE_KINDS
    from clirplug.experiment.plan import Stage
    from clirplug.mt.translator import Translator

    decoded = []
    translate = Translator.translate
    monkeypatch.setattr(Translator, "translate", lambda self, tokens, *a: decoded.append(len(tokens)) or
                        translate(self, tokens, *a))

    put(workspace, {"bitext.de": " ".join(["dateien"] * 250) + "\nkopieren\n", "bitext.en": "files\ncopy\n"})
    stage = Stage("mt-eval.hiero.dev", "mt-eval", {"output": "hiero", "model": str(workspace / "model"), "lang": "de",
                                                  "doc_lang": "en", "lines": 2},
                  inputs=(workspace / "bitext.de", workspace / "bitext.en"), outputs=(workspace / "bitext.out",))
    function, _ = STAGE_KINDS["mt-eval"]
    metrics = function(stage, SimpleNamespace(workers=ExecutorSettings(jobs=1)))
    assert metrics["sentences"] == 2 and max(decoded) <= MAX_SENTENCE_TOKENS and sum(decoded) == 251
    assert (workspace / "bitext.out").read_text().splitlines() == [" ".join(["files"] * 250), "copy"]


def test_the_experiment_translation_output_does_not_depend_on_the_workers(workspace):
    """mt-eval deals the lines over ``--jobs`` workers and puts their translations back in line order."""
    from clirplug.experiment.kinds import STAGE_KINDS
    from clirplug.experiment.plan import Stage

    put(workspace, {"bitext.de": "dateien kopieren\nkopieren\ndateien\n" + " ".join(["dateien"] * 250) + "\n",
                    "bitext.en": "copy files\ncopy\nfiles\nfiles\n"})
    function, _ = STAGE_KINDS["mt-eval"]
    outputs, metrics = [], []
    for jobs in (1, 2):
        output = workspace / f"bitext.{jobs}.out"
        stage = Stage("mt-eval.hiero.dev", "mt-eval", {"output": "hiero", "model": str(workspace / "model"),
                                                      "lang": "de", "doc_lang": "en", "lines": 4},
                      inputs=(workspace / "bitext.de", workspace / "bitext.en"), outputs=(output,))
        metrics.append(function(stage, SimpleNamespace(workers=ExecutorSettings(jobs=jobs)))["bleu"])
        outputs.append(output.read_text())
    assert outputs[0] == outputs[1] and outputs[0].splitlines()[1] == "copy"
    assert metrics[0] == metrics[1]


def test_atomic_writes_never_replace_a_folder(tmp_path, monkeypatch):
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "keep.txt").write_text("kept")
    monkeypatch.chdir(tmp_path)
    for target in (folder, "."):
        with pytest.raises(ClirplugError, match="is a folder; refusing to replace it"):
            with atomic_open(target) as handle:
                handle.write("x")
    assert (folder / "keep.txt").read_text() == "kept"
    for made_meanwhile, message in ((lambda path: path.mkdir(), "is a folder"),
                                    (lambda path: path.write_text("theirs"), "already exists")):
        with pytest.raises(ClirplugError, match=f"built: {message}; refusing to replace it"):
            with atomic_path(tmp_path / "built") as building:
                building.mkdir()
                made_meanwhile(tmp_path / "built")  # someone else's output appears while we build ours
        assert sorted(p.name for p in tmp_path.iterdir()) == ["built", "results"]  # no temporary left
        (tmp_path / "built").rmdir() if (tmp_path / "built").is_dir() else (tmp_path / "built").unlink()


def test_an_unwritable_output_folder_is_one_line(workspace, capsys, tmp_path):
    put(workspace, {"file": "not a folder"})
    check_refused(["fuse", "--runs", "{w}/a.trec", "{w}/b.trec", "--output", "{w}/file/run.trec"], workspace, capsys,
                  r"--output {w}/file/run\.trec: {w}/file is not a folder")
