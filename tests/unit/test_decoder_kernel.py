"""The compiled cube pruning kernel (:mod:`clirplug.mt.cube`) against the Python reference loop
(``Decoder(..., kernel=False)``, :meth:`Decoder._cube`): forests, 1-best, 10-best, unique 5-best
and inside scores must be equal bit for bit (``record`` of the golden test), on the golden
fixture's grammars and on random grammars with frequent ties, with and without an LM, with a
negative LM weight, and when the LM memo is restarted between sentences."""

from __future__ import annotations

import pickle
import random

import pytest
from test_decoder_golden import FIXTURE, WEIGHTS, record, sentences

from clirplug.mt import cube
from clirplug.mt.decoder import Decoder
from clirplug.mt.grammar import Rule, read_grammar
from clirplug.mt.lm import LanguageModel

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def lm() -> LanguageModel:
    return LanguageModel(FIXTURE / "lm.arpa")


def _pair(rules, lm, weights, pop_limit):
    fast = Decoder(rules, lm, weights, pop_limit=pop_limit)
    slow = Decoder(rules, lm, weights, pop_limit=pop_limit, kernel=False)
    assert fast.kernel and not slow.kernel
    return fast, slow


@pytest.mark.parametrize("pop_limit", [1, 3, 30])
@pytest.mark.parametrize("kind", ["hiero", "flat"])
def test_kernel_equals_reference_on_the_fixture(lm, kind, pop_limit):
    fast, slow = _pair(read_grammar(FIXTURE / f"grammar.{kind}.gz"), lm, WEIGHTS, pop_limit)
    for tokens in sentences():
        assert record(fast, tokens) == record(slow, tokens), tokens


def random_grammar(rng: random.Random, source: list[str], target: list[str]) -> list[Rule]:
    """Rules over ``source`` and ``target`` words with 0-2 nonterminals in any order, features
    from a few values (so scores tie), alignments between terminals."""
    rules = []
    for _ in range(rng.randint(30, 120)):
        arity = rng.choice([0, 0, 1, 1, 2, 2])
        src = [rng.choice(source) for _ in range(rng.randint(1, 3))]
        for k in range(1, arity + 1):
            src.insert(rng.randint(0, len(src)), f"[X,{k}]")
        tgt = [rng.choice(target) for _ in range(rng.randint(0 if arity else 1, 3))]
        for k in rng.sample(range(1, arity + 1), arity):
            tgt.insert(rng.randint(0, len(tgt)), f"[X,{k}]")
        terminals = [(s, t) for s in range(len(src)) for t in range(len(tgt))
                     if not src[s].startswith("[") and not tgt[t].startswith("[")]
        links = tuple(sorted(rng.sample(terminals, min(len(terminals), rng.randint(0, 2)))))
        features = (("EgivenF", rng.choice([0.0, 0.5, 1.0, 2.0])), ("FgivenE", rng.choice([0.0, 1.0])))
        rules.append(Rule("X", tuple(src), tuple(tgt), features, links))
    return rules


@pytest.mark.parametrize("seed", range(6))
def test_kernel_equals_reference_on_random_grammars(lm, seed, monkeypatch):
    rng = random.Random(seed)
    source = [f"s{k}" for k in range(8)]
    target = sorted({w for tokens in sentences() for w in tokens})[:12] + ["unseen"]  # "unseen": <unk>
    rules = random_grammar(rng, source, target)
    weights = {**WEIGHTS, "LanguageModel": [0.7, 1.3, -0.4, 0.0, 0.7, 0.7][seed]}
    with_lm = None if seed == 4 else lm
    if seed == 5:
        monkeypatch.setattr(cube, "MEMO_LIMIT", 3)  # a new LM memo for nearly every sentence
    fast, slow = _pair(rules, with_lm, weights, pop_limit=rng.choice([1, 2, 5, 40]))
    for _ in range(12):
        tokens = [rng.choice(source + ["oov"]) for _ in range(rng.randint(0, 9))]
        assert record(fast, tokens) == record(slow, tokens), tokens


def test_rules_with_three_nonterminals_use_the_reference_loop(lm):
    rules = [Rule("X", ("a",), ("x",)), Rule("X", ("[X,1]", "[X,2]", "b", "[X,3]"), ("[X,3]", "[X,1]", "[X,2]"))]
    decoder = Decoder(rules, lm)
    assert not decoder.kernel
    assert decoder.translate("a a b a".split())[0].words == ("x", "x", "x")


def test_a_decoder_without_lm_pickles_after_decoding():
    decoder = Decoder(read_grammar(FIXTURE / "grammar.flat.gz"), None, WEIGHTS)  # kenlm models do not pickle
    tokens = sentences()[0]
    decoder.forest(tokens)
    assert record(pickle.loads(pickle.dumps(decoder)), tokens) == record(decoder, tokens)
