"""The decoder against brute-force enumeration of every derivation, with a hand-written LM."""

import itertools
import math

import numpy as np
import pytest

from clirplug.mt.decoder import Decoder
from clirplug.mt.features import (
    DEFAULT_WEIGHTS,
    GLUE,
    LANGUAGE_MODEL,
    PASS_THROUGH,
    WORD_PENALTY,
)
from clirplug.mt.grammar import Rule, is_nonterminal, nt_index, parse_rule, read_grammar
from clirplug.mt.kbest import kbest
from clirplug.mt.lm import LanguageModel
from clirplug.mt.semiring import REAL

pytestmark = pytest.mark.cli

# A trigram LM written by hand (kenlm reads ARPA directly); log10 probabilities.
ARPA = """\\data\\
ngram 1=7
ngram 2=7
ngram 3=3

\\1-grams:
-1.0\t<unk>\t0
-99\t<s>\t-0.3
-0.8\t</s>\t0
-0.7\ta\t-0.2
-0.9\tb\t-0.3
-1.1\tc\t-0.1
-1.2\td\t-0.2

\\2-grams:
-0.3\t<s> a\t-0.1
-0.5\ta b\t-0.05
-0.4\tb c
-0.6\tc </s>
-0.5\tb a\t-0.1
-0.7\td </s>
-0.4\ta c

\\3-grams:
-0.1\t<s> a b
-0.2\ta b c
-0.15\tb a c

\\end\\
"""

GRAMMAR = """\
[X] ||| x ||| a ||| EgivenF=0.3 FgivenE=0.2 ||| 0-0
[X] ||| x ||| b ||| EgivenF=0.5 FgivenE=0.9 ||| 0-0
[X] ||| y ||| c ||| EgivenF=0.1 FgivenE=0.4 ||| 0-0
[X] ||| y ||| a c ||| EgivenF=0.7 FgivenE=0.3 ||| 0-1
[X] ||| z ||| d ||| EgivenF=0.2 FgivenE=0.2 ||| 0-0
[X] ||| x y ||| b a ||| EgivenF=0.4 FgivenE=0.6 ||| 0-1 1-0
[X] ||| [X,1] y ||| c [X,1] ||| EgivenF=0.9 FgivenE=0.1 ||| 0-1 1-0
[X] ||| [X,1] w [X,2] ||| [X,2] a [X,1] ||| EgivenF=0.6 FgivenE=0.5 ||| 0-2 1-1 2-0
[X] ||| x [X,1] ||| [X,1] b d ||| EgivenF=1.1 FgivenE=0.8 ||| 0-1
[X] ||| w ||| b ||| EgivenF=0.3 FgivenE=0.3 ||| 0-0
"""

WEIGHTS = {**DEFAULT_WEIGHTS, LANGUAGE_MODEL: 0.8, WORD_PENALTY: -0.3, GLUE: 0.2, PASS_THROUGH: -0.7,
           "EgivenF": -1.0, "FgivenE": -0.4}


@pytest.fixture(scope="module")
def lm(tmp_path_factory):
    path = tmp_path_factory.mktemp("lm") / "tiny.arpa"
    path.write_text(ARPA)
    return LanguageModel(path)


@pytest.fixture(scope="module")
def rules():
    return [parse_rule(line) for line in GRAMMAR.splitlines()]


def brute_force(rules, tokens, lm, weights, max_span=10):
    """Every derivation as (score, words, features), by direct recursion over spans."""
    n = len(tokens)
    single = {(r.src[0]) for r in rules if len(r.src) == 1}

    def match(src, i, j):  # every way src covers tokens[i:j]: list of NT spans in source order
        if not src:
            return [[]] if i == j else []
        head, rest = src[0], src[1:]
        if not is_nonterminal(head):
            return [m for m in match(rest, i + 1, j)] if i < j and tokens[i] == head else []
        return [[(i, k)] + m for k in range(i + 1, j + 1) for m in match(rest, k, j)]

    def x(i, j):
        out = []
        for r in rules:
            arity = r.arity
            if arity and j - i > max_span:
                continue
            for spans in match(r.src, i, j):
                for children in itertools.product(*(x(*s) for s in spans)):
                    words = []
                    for t in r.tgt:
                        words.extend(children[nt_index(t) - 1][0] if is_nonterminal(t) else [t])
                    feats = dict(r.feature_dict())
                    feats[WORD_PENALTY] = -sum(not is_nonterminal(t) for t in r.tgt)
                    for child in children:
                        for k, v in child[1].items():
                            feats[k] = feats.get(k, 0) + v
                    out.append((words, feats))
        if j == i + 1 and tokens[i] not in single:
            out.append(([tokens[i]], {PASS_THROUGH: 1.0, WORD_PENALTY: -1.0}))
        return out

    def s(j):
        out = list(x(0, j))
        for k in range(1, j):
            for (lw, lf), (rw, rf) in itertools.product(s(k), x(k, j)):
                feats = {key: lf.get(key, 0) + rf.get(key, 0) for key in set(lf) | set(rf)}
                feats[GLUE] = feats.get(GLUE, 0) + 1
                out.append((lw + rw, feats))
        return out

    result = []
    for words, feats in s(n):
        feats = dict(feats)
        feats[LANGUAGE_MODEL] = lm.score(words, bos=True, eos=True)
        score = sum(weights.get(k, 0.0) * v for k, v in feats.items())
        result.append((score, tuple(words), feats))
    return sorted(result, key=lambda r: -r[0])


SENTENCES = [["x"], ["x", "y"], ["x", "y", "z"], ["x", "w", "y", "q"], ["z", "x", "y", "x"], ["x", "w", "x", "y", "z"]]


@pytest.mark.parametrize("tokens", SENTENCES, ids=[" ".join(t) for t in SENTENCES])
def test_exhaustive_decoding_equals_brute_force(rules, lm, tokens):
    decoder = Decoder(rules, lm, WEIGHTS, pop_limit=100000)
    forest = decoder.forest(tokens)
    every = brute_force(rules, tokens, lm, decoder.weights)
    # the same derivations: their number, best score, and the k-best scores and yields
    assert forest.inside(np.ones(forest.num_edges), REAL)[forest.goal] == len(every)
    best = forest.viterbi(decoder.weights)
    assert math.isclose(best.score, every[0][0], abs_tol=1e-6)
    k = min(len(every), 30)
    found = decoder.translate(tokens, nbest=k)
    np.testing.assert_allclose([t.score for t in found], [e[0] for e in every[:k]], atol=1e-5)
    assert all(a.score >= b.score - 1e-9 for a, b in itertools.pairwise(found))
    # yields match as multisets per score level (ties may come in any order)
    brute = {}
    for score, words, _ in every:
        brute.setdefault(round(score, 5), []).append(words)
    for t in found:
        assert t.words in brute[round(t.score, 5)]
    # every n-best entry rescored from scratch: features x weights, LM through kenlm
    for t in found:
        assert math.isclose(t.features.get(LANGUAGE_MODEL, 0.0), lm.score(t.words, bos=True, eos=True),
                            abs_tol=1e-4)
        assert math.isclose(sum(decoder.weights.get(f, 0) * v for f, v in t.features.items()), t.score, abs_tol=1e-6)


@pytest.mark.parametrize("tokens", SENTENCES[2:], ids=[" ".join(t) for t in SENTENCES[2:]])
def test_unique_nbest_equals_best_derivation_of_each_brute_force_yield(rules, lm, tokens):
    decoder = Decoder(rules, lm, WEIGHTS, pop_limit=100000)
    best_per_yield = {}
    for score, words, _ in brute_force(rules, tokens, lm, decoder.weights):  # best first
        best_per_yield.setdefault(words, score)
    expected = sorted(best_per_yield.items(), key=lambda item: -item[1])
    found = decoder.translate(tokens, nbest=8, unique=True)
    assert len({t.words for t in found}) == len(found) == min(8, len(expected))
    np.testing.assert_allclose([t.score for t in found], [score for _, score in expected[: len(found)]], atol=1e-6)
    for t in found:
        assert math.isclose(t.score, best_per_yield[t.words], abs_tol=1e-6)


def test_alignment_follows_rules_and_pass_through(rules, lm):
    decoder = Decoder(rules, lm, WEIGHTS, pop_limit=100000)
    tokens = ["x", "w", "y", "q"]
    for t in decoder.translate(tokens, nbest=20):
        for s, j in t.alignment:
            assert 0 <= s < len(tokens) and 0 <= j < len(t.words)
        if t.words[-1] == "q":  # the unknown word passes through, aligned to itself
            assert (3, len(t.words) - 1) in t.alignment
        assert t.features[PASS_THROUGH] == 1.0
    # a hand-checked case: "x y" with the swapping rule "x y -> b a" (0-1 1-0)
    only = Decoder([parse_rule("[X] ||| x y ||| b a ||| EgivenF=0.4 ||| 0-1 1-0")], lm, WEIGHTS)
    (best,) = only.translate(["x", "y"])
    assert best.words == ("b", "a") and best.alignment == ((0, 1), (1, 0))


@pytest.mark.parametrize("pop_limit", [1, 3, 10, 200])
def test_pruned_forest_viterbi_rescored_from_scratch(rules, lm, pop_limit):
    rng = np.random.default_rng(pop_limit)
    decoder = Decoder(rules, lm, WEIGHTS, pop_limit=pop_limit)
    exhaustive = Decoder(rules, lm, WEIGHTS, pop_limit=100000)
    for _ in range(5):
        tokens = [str(t) for t in rng.choice(["x", "y", "z", "w", "q"], size=7)]
        forest = decoder.forest(tokens)
        best = forest.viterbi(decoder.weights)
        words, _ = forest.derivation_yield(best)
        features = forest.derivation_features(best)
        grammar_part = sum(decoder.weights.get(f, 0) * v for f, v in features.items() if f != LANGUAGE_MODEL)
        lm_part = decoder.weights[LANGUAGE_MODEL] * lm.score(words, bos=True, eos=True)
        assert math.isclose(best.score, grammar_part + lm_part, abs_tol=1e-5)
        # pruning can only lose derivations, and never more pops than asked per cell
        assert best.score <= exhaustive.forest(tokens).viterbi(decoder.weights).score + 1e-9
        per_cell = {}
        for h in forest.heads:
            per_cell[forest.labels[h][:3]] = per_cell.get(forest.labels[h][:3], 0) + 1
        assert max(c for cell, c in per_cell.items() if cell[0] != "GOAL") <= pop_limit


def test_max_span_and_edge_cases(rules, lm):
    tokens = ["x", "z", "y"]  # "[X,1] y" over "x [X,1]" would need a span of 3
    short = Decoder(rules, lm, WEIGHTS, pop_limit=100000, max_span=2)
    every = brute_force(rules, tokens, lm, short.weights, max_span=2)
    forest = short.forest(tokens)
    assert forest.inside(np.ones(forest.num_edges), REAL)[forest.goal] == len(every)
    assert len(every) < len(brute_force(rules, tokens, lm, short.weights, max_span=10))
    (empty,) = short.translate([])
    assert empty.words == () and math.isclose(empty.features[LANGUAGE_MODEL], lm.score([], bos=True, eos=True))
    no_lm = Decoder(rules, None, WEIGHTS).translate(["x", "y"], nbest=3)
    assert all(LANGUAGE_MODEL not in t.features for t in no_lm)
    assert kbest(Decoder(rules, None, WEIGHTS).forest(["q"]), WEIGHTS, 5)[0].score == pytest.approx(
        WEIGHTS[PASS_THROUGH] - WEIGHTS[WORD_PENALTY])
    (copied,) = Decoder(rules, None, WEIGHTS).translate(["q"])
    assert Rule("X", ("q",), ("q",), ((PASS_THROUGH, 1.0),), ((0, 0),)) in copied.rules


def _cdec_tree(rules, position=0):
    """cdec prints a derivation's rules in pre-order; rebuild the tree ``(src, tgt, children)``."""
    src, tgt = rules[position][0].split(), rules[position][1].split()
    position += 1
    children = []
    for token in src:
        if is_nonterminal(token):
            child, position = _cdec_tree(rules, position)
            children.append(child)
    return (src, tgt, children), position


def _cdec_expand(node, side):
    src, tgt, children = node
    links = [nt_index(t) for t in src if is_nonterminal(t)]
    out = []
    for token in (src, tgt)[side]:
        out += _cdec_expand(children[links.index(nt_index(token))], side) if is_nonterminal(token) else [token]
    return out


def test_cdec_grammars_and_derivations(cdec_clef06):
    """Real cdec grammars decode; every cdec 1-best derivation is a derivation of our decoder."""
    import re

    text = (cdec_clef06 / "nbest" / "title_en-fr-trans1.xml").read_text(encoding="utf-8")
    queries = re.findall(r'<query id="(\d+)" grammar="[^"]*grammar\.(\d+)">(.*?)\n?</query>', text, re.DOTALL)
    assert len(queries) == 50
    weights = {str(i): -1.0 for i in range(7)}
    for number, (_qid, grammar, body) in enumerate(queries):
        _raw, first, *_rest = body.split("||||")
        rules = [r.split("|||") for r in first.split(";;;")[1:]]
        root, _ = _cdec_tree(rules)
        src, tgt = _cdec_expand(root, 0), tuple(_cdec_expand(root, 1))
        used = [parse_rule(" ||| ".join(r)) for r in rules if r[2] != "PassThrough"]
        ours = {t.words for t in Decoder(used, None, weights, pop_limit=10000).translate(src, nbest=1000)}
        assert tgt in ours, (src, tgt)
        if number % 10 == 0:  # the whole per-query grammar parses the query too
            full = Decoder(read_grammar(cdec_clef06 / "grammars" / f"grammar.{grammar}.gz"), None, weights)
            (best,) = full.translate(src)
            assert best.words and all(r.lhs in ("X", "S") for r in best.rules)


def test_translate_cli_cache_and_forests(tmp_path, rules, monkeypatch, capsys):
    import json

    from clirplug.cli import main
    from clirplug.mt import translator as translator_module
    from clirplug.mt.grammar import write_grammar
    from clirplug.mt.hypergraph import Hypergraph

    model = tmp_path / "model"
    model.mkdir()
    write_grammar(rules, model / "grammar.hiero.gz")
    (model / "lm.arpa").write_text(ARPA)
    (tmp_path / "in.txt").write_text("x y\nX w y q\n\n", encoding="utf-8")
    topics = tmp_path / "topics.jsonl"
    topics.write_text(json.dumps({"id": "t1", "title": "x", "desc": "X y wort. Z x w y."}) + "\n", encoding="utf-8")
    assert main(["translate", "--model", str(model), "--input", str(tmp_path / "in.txt"),
                 "--output", str(tmp_path / "out.txt")]) == 0
    lines = (tmp_path / "out.txt").read_text().splitlines()
    expected = Decoder(rules, str(model / "lm.arpa"), WEIGHTS | DEFAULT_WEIGHTS)
    assert lines == [" ".join(expected.translate(["x", "y"])[0].words),
                     " ".join(expected.translate(["x", "w", "y", "q"])[0].words), ""]
    # a second run is served from the cache: the grammar is never read
    monkeypatch.setattr(translator_module, "read_grammar", lambda *args: (_ for _ in ()).throw(AssertionError))
    assert main(["translate", "--model", str(model), "--input", str(tmp_path / "in.txt"),
                 "--output", str(tmp_path / "again.txt")]) == 0
    assert (tmp_path / "again.txt").read_text().splitlines() == lines
    monkeypatch.undo()
    # topics: desc sentence by sentence, n-best JSON, forests on disk
    assert main(["translate", "--model", str(model), "--input", str(topics), "--field", "desc", "--nbest", "3",
                 "--derivations", "--format", "jsonl", "--forest", str(tmp_path / "forests"), "--no-cache"]) == 0
    (record,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert record["id"] == "t1" and [s["source"] for s in record["sentences"]] == [["x", "y", "wort", "."], ["z", "x", "w", "y", "."]]
    assert all(len(s["nbest"]) == 3 for s in record["sentences"])
    forest = Hypergraph.load(tmp_path / "forests" / "t1.1.json.gz", parse_rule)
    assert forest.viterbi(DEFAULT_WEIGHTS).score == pytest.approx(record["sentences"][1]["nbest"][0]["score"])
    # user errors are reported without a traceback
    assert main(["translate", "--model", str(tmp_path), "--input", str(topics)]) == 2
    assert "grammar.hiero.gz: missing" in capsys.readouterr().err
