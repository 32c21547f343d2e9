"""Translator: grammar restricted to the input's words, and the n-best cache served for smaller n."""

import json

import pytest

from clirplug.mt import translator as translator_module
from clirplug.mt.grammar import format_rule, parse_rule, write_grammar
from clirplug.mt.translator import Translator, translation_json

from test_decoder import ARPA, GRAMMAR

pytestmark = pytest.mark.unit


@pytest.fixture()
def model(tmp_path):
    write_grammar([parse_rule(line) for line in GRAMMAR.splitlines()], tmp_path / "grammar.hiero.gz")
    (tmp_path / "lm.arpa").write_text(ARPA)
    return tmp_path


def _nbest(translator, tokens, n):
    return [(t.words, round(t.score, 9)) for t in translator.translate(tokens, n)]


def test_restricted_grammar_gives_the_full_grammars_translations(model):
    sentences = [["x", "y"], ["x", "w", "y", "q"], ["w"]]
    full = Translator(model, cache=False)
    restricted = Translator(model, cache=False)
    restricted.restrict(sentences[:2])
    for tokens in sentences:
        assert _nbest(restricted, tokens, 5) == _nbest(full, tokens, 5)
    assert {"x y", "x w y q", "w y"} <= restricted.restriction.phrases and "y x" not in restricted.restriction.phrases
    assert len(restricted.decoder.rules_by_src) < len(full.decoder.rules_by_src)


def test_a_word_outside_the_restriction_adds_its_rules_to_the_decoder(model):
    translator = Translator(model, cache=False)
    translator.restrict([["w"]])
    assert _nbest(translator, ["w"], 3) == _nbest(Translator(model, cache=False), ["w"], 3)
    before = translator.decoder
    sources = set(before.rules_by_src)
    assert _nbest(translator, ["x", "y"], 3) == _nbest(Translator(model, cache=False), ["x", "y"], 3)
    assert translator.decoder is before and "x y" in translator.restriction.phrases
    assert sources < set(before.rules_by_src)


@pytest.mark.parametrize("kind", ["flat", "hiero"])
@pytest.mark.parametrize("indexed", [False, True])
def test_a_translation_does_not_depend_on_the_queries_translated_before(tmp_path, monkeypatch, kind, indexed):
    """Each sentence translated alone, and after the others (its rules added to the decoder), in both orders:
    the same n-best lists, scores, features, alignments and rules, and the same forests; with the grammar read
    by scanning or through its index."""
    import shutil

    from test_decoder_golden import FIXTURE, WEIGHTS, sentences

    from clirplug.mt import grammar

    monkeypatch.setattr(grammar, "INDEX_MIN_SIZE", 0 if indexed else 1 << 62)

    for name in (f"grammar.{kind}.gz", "lm.arpa"):
        shutil.copy(FIXTURE / name, tmp_path / name)
    queries = sentences()

    def translate(translator, tokens):
        translator.restrict([tokens])
        forest = translator.forest(tokens)
        return (json.dumps([translation_json(t) for t in translator.translate(tokens, 5, forest=forest)]),
                json.dumps(forest.to_json(format_rule)))

    alone = [translate(Translator(tmp_path, kind, WEIGHTS, cache=False), tokens) for tokens in queries]
    for order in (queries, queries[::-1]):
        translator = Translator(tmp_path, kind, WEIGHTS, cache=False)
        after = {tuple(tokens): translate(translator, tokens) for tokens in order}
        assert [after[tuple(tokens)] for tokens in queries] == alone
    assert (tmp_path / f"grammar.{kind}.gz.index").is_file() == indexed


def test_nbest_cache_serves_shorter_lists_and_recomputes_longer(model, monkeypatch):
    from clirplug.mt.translator import NBEST_KEPT

    tokens = ["x", "w", "y", "q"]
    reference = _nbest(Translator(model, cache=False), tokens, NBEST_KEPT + 2)
    assert len(reference) == NBEST_KEPT + 2
    translator = Translator(model)
    assert _nbest(translator, tokens, 1) == reference[:1]  # the entry keeps NBEST_KEPT
    fresh = Translator(model)
    monkeypatch.setattr(translator_module, "read_grammar", lambda *args: (_ for _ in ()).throw(AssertionError))
    assert _nbest(fresh, tokens, 4) == reference[:4]  # served from the entry of the 1-best's decoding
    assert _nbest(fresh, tokens, NBEST_KEPT) == reference[:NBEST_KEPT]
    monkeypatch.undo()
    assert _nbest(fresh, tokens, NBEST_KEPT + 2) == reference  # longer: decoded again, entry replaced
    monkeypatch.setattr(translator_module, "read_grammar", lambda *args: (_ for _ in ()).throw(AssertionError))
    assert _nbest(Translator(model), tokens, NBEST_KEPT + 1) == reference[:NBEST_KEPT + 1]


def test_rules_given_with_the_restriction_are_used_instead_of_a_second_read(model, monkeypatch):
    from clirplug.mt.grammar import SourcePhrases, read_grammar

    sentences = [["x", "y"], ["x", "w", "y", "q"]]
    reference = [_nbest(Translator(model, cache=False), tokens, 5) for tokens in sentences]
    rules = read_grammar(model / "grammar.hiero.gz", SourcePhrases(sentences))
    translator = Translator(model, cache=False)
    translator.restrict(sentences, rules)
    monkeypatch.setattr(translator_module, "read_grammar", lambda *args: (_ for _ in ()).throw(AssertionError))
    assert [_nbest(translator, tokens, 5) for tokens in sentences] == reference
    monkeypatch.undo()
    assert _nbest(translator, ["w"], 3) == _nbest(Translator(model, cache=False), ["w"], 3)  # enlarged: read again


def test_cached_lists_equal_the_decoded_ones_with_shared_rules_parsed_once(model):
    tokens = ["x", "w", "y", "q"]
    decoded = Translator(model).translate(tokens, 10)
    for unique in (False, True):
        Translator(model).translate(tokens, 6, unique=unique)  # written to the cache
        read = Translator(model).translate(tokens, 6, unique=unique)
        assert read == Translator(model, cache=False).translate(tokens, 6, unique=unique)
        shared = {id(rule) for t in read for rule in t.rules}
        assert len(shared) == len({rule for t in read for rule in t.rules})  # one object per distinct rule
    assert Translator(model).translate(tokens, 10) == decoded


def test_a_grown_restriction_keeps_the_decoder_and_its_language_model(model):
    translator = Translator(model, cache=False)
    translator.restrict([["w"]])
    first, lm = translator.decoder, translator.decoder.lm
    translator.translate(["x", "y"], 3)  # outside the restriction: the new phrases' rules are added
    assert translator.decoder is first and translator.decoder.lm is lm
    assert _nbest(translator, ["x", "y"], 3) == _nbest(Translator(model, cache=False), ["x", "y"], 3)
