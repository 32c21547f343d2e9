"""Binary forest files: a forest read back is the one written, and the translator's forest cache serves them."""

import functools
import gzip
import json

import numpy as np
import pytest
from test_hypergraph import random_forest

from clirplug.errors import ClirplugError
from clirplug.mt import translator as translator_module
from clirplug.mt.forest_file import FORMAT, load_forest, save_forest
from clirplug.mt.grammar import format_rule, parse_rule, write_grammar
from clirplug.mt.hypergraph import Hypergraph
from clirplug.mt.translator import Translator

from test_decoder import ARPA, GRAMMAR

pytestmark = pytest.mark.unit


def assert_same_forest(read, written):
    """Every node, edge, tail, template, alignment, rule and feature value of ``read`` is ``written``'s (labels
    as JSON gives them back: lists as tuples)."""
    assert read.labels == [_tupled(label) for label in written.labels]
    assert read.tails == written.tails and read.templates == written.templates
    assert read.alignments == written.alignments and read.rules == written.rules
    assert read.feature_names == written.feature_names
    for name in ("heads", "levels", "tail_matrix", "offsets", "level_bounds"):
        assert getattr(read, name).dtype == getattr(written, name).dtype
        np.testing.assert_array_equal(getattr(read, name), getattr(written, name))
    ours, theirs = read.features, written.features
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours.indptr, theirs.indptr)
    np.testing.assert_array_equal(ours.indices, theirs.indices)
    assert ours.data.tobytes() == theirs.data.tobytes()  # to the last bit


def _tupled(label):
    return tuple(_tupled(item) for item in label) if isinstance(label, list | tuple) else label


@pytest.fixture()
def model(tmp_path):
    write_grammar([parse_rule(line) for line in GRAMMAR.splitlines()], tmp_path / "grammar.hiero.gz")
    (tmp_path / "lm.arpa").write_text(ARPA)
    return tmp_path


@pytest.mark.parametrize("seed", range(8))
def test_a_random_forest_reads_back_exactly(tmp_path, seed):
    forest = random_forest(seed)
    save_forest(tmp_path / "f.npz", forest)
    read = load_forest(tmp_path / "f.npz")
    assert_same_forest(read, forest)
    weights = {"a": 0.7, "b": -1.3, "c": 0.4}
    assert read.viterbi(weights) == forest.viterbi(weights)


def test_a_decoder_forest_reads_back_exactly_with_its_rules_parsed_once(model, tmp_path):
    tokens = ["x", "w", "y", "q"]
    forest = Translator(model, cache=False).forest(tokens)
    assert len(forest.rules) > len(set(map(id, forest.rules)))  # rules shared by several edges (LM states)
    save_forest(tmp_path / "f.npz", forest, format_rule)
    parse = functools.lru_cache(maxsize=None)(parse_rule)
    read = load_forest(tmp_path / "f.npz", parse)
    assert_same_forest(read, forest)
    assert len({id(rule) for rule in read.rules}) == len(set(read.rules))  # one object per distinct rule
    assert_same_forest(Hypergraph.from_json(forest.to_json(format_rule), parse_rule), read)  # as the JSON form


def test_a_damaged_or_foreign_forest_file_is_refused_with_its_name(tmp_path):
    forest = random_forest(0)
    good = tmp_path / "good.npz"
    save_forest(good, forest)
    raw = good.read_bytes()
    (tmp_path / "truncated.npz").write_bytes(raw[: len(raw) // 2])
    (tmp_path / "text.npz").write_text("not a forest")
    with np.load(good) as arrays:
        parts = dict(arrays)
    other = json.loads(parts["header"].tobytes())
    other["format"] = "clirplug-forest/0"
    np.savez(tmp_path / "other.npz", **{**parts, "header": np.frombuffer(json.dumps(other).encode(), np.uint8)})
    np.savez(tmp_path / "short.npz", **{**parts, "heads": parts["heads"][:-1]})
    np.savez(tmp_path / "missing.npz", **{k: v for k, v in parts.items() if k != "shape"})
    for name in ("truncated", "text", "other", "short", "missing", "absent"):
        with pytest.raises(ClirplugError, match=f"{name}.npz: cannot read the forest"):
            load_forest(tmp_path / f"{name}.npz")
    assert FORMAT in str(pytest.raises(ClirplugError, load_forest, tmp_path / "other.npz").value)


def test_the_translator_caches_forests_as_binary_files_equal_to_the_decoded_ones(model, monkeypatch):
    tokens = ["x", "w", "y", "q"]
    decoded = Translator(model, cache=False).forest(tokens)
    assert_same_forest(Translator(model).forest(tokens), decoded)  # decoded, written
    (entry,) = (model / "cache").rglob("*.forest.npz")
    assert not list((model / "cache").rglob("*.forest.json.gz"))
    monkeypatch.setattr(translator_module, "read_grammar", lambda *args: (_ for _ in ()).throw(AssertionError))
    assert_same_forest(Translator(model).forest(tokens), decoded)  # read, not decoded
    entry.write_bytes(entry.read_bytes()[:100])  # damaged: decoded and written again
    monkeypatch.undo()
    assert_same_forest(Translator(model).forest(tokens), decoded)
    assert_same_forest(load_forest(entry, parse_rule), decoded)


def test_a_forest_cached_as_json_is_read_and_written_again_as_a_binary_file(model, monkeypatch):
    tokens = ["x", "w", "y", "q"]
    decoded = Translator(model, cache=False).forest(tokens)
    translator = Translator(model)
    legacy = translator._key(tokens, "forest")  # the earlier entry: gzipped JSON
    legacy.parent.mkdir(parents=True)
    legacy.write_bytes(gzip.compress(json.dumps(decoded.to_json(format_rule)).encode()))
    monkeypatch.setattr(translator_module, "read_grammar", lambda *args: (_ for _ in ()).throw(AssertionError))
    assert_same_forest(translator.forest(tokens), decoded)
    assert_same_forest(load_forest(translator._key(tokens, "forest", ".npz"), parse_rule), decoded)
    assert legacy.is_file()  # left as it was
