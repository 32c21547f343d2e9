"""Golden outputs of the decoder: a speed-up of cube pruning or forest building must not change
one bit of what the decoder returns.

``tests/data/decoder_golden/`` holds small hiero and flat grammars and a trigram LM trained on
``tests/data/minifr``, sentences, and ``golden.json`` (see its README): for every grammar, pop
limit and sentence, the forest (a digest of every node label, edge, template, alignment, rule,
feature value and level), the 1-best (from ``translate`` and from Viterbi), 10-best and unique
5-best translations and the goal's inside score, floats written with ``float.hex``. The values
were recorded with the decoder as it was before the cube pruning speed-up of issue #17 (commit
a3bc831); rerecord them only for a change that is meant to alter the output::

    python tests/unit/test_decoder_golden.py --record       # golden.json from the current decoder
    python tests/unit/test_decoder_golden.py --build-model  # the grammars and LM (then --record)

Small pop limits make cube pruning cut the search in most cells, and the minifr grammar's many
equal feature values make ties frequent, so the pop order and its tie-breaking are exercised.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from clirplug.mt.decoder import Decoder, translations
from clirplug.mt.grammar import read_grammar
from clirplug.mt.kbest import kbest, unique_kbest
from clirplug.mt.lm import LanguageModel
from clirplug.mt.semiring import LOG

pytestmark = pytest.mark.unit

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "decoder_golden"
WEIGHTS = {"EgivenF": -0.8, "FgivenE": -0.3, "LexEgivenF": -0.4, "LexFgivenE": -0.2, "CountEF": 0.3, "CountF": -0.1,
           "LanguageModel": 0.7, "WordPenalty": -0.25, "Glue": 0.15, "PassThrough": -0.9}
POP_LIMITS = {"hiero": (1, 4, 30), "flat": (1, 4, 200)}  # 200: the default


def _hex(value: float) -> str:
    return float(value).hex()


def forest_digest(forest) -> str:
    """SHA-256 of everything a forest holds, floats exact (independent of rule formatting)."""
    features = forest.features.tocsr()
    rules = list(dict.fromkeys(r for r in forest.rules if r is not None))  # each rule once
    number = {r: k for k, r in enumerate(rules)}
    data = {
        "labels": [list(label) if isinstance(label, tuple) else label for label in forest.labels],
        "heads": forest.heads.tolist(),
        "tails": [list(t) for t in forest.tails],
        "templates": [list(t) for t in forest.templates],
        "alignments": [[list(a) for a in alignment] for alignment in forest.alignments],
        "rules": [[r.lhs, list(r.src), list(r.tgt), [[k, _hex(v)] for k, v in r.features],
                   [list(a) for a in r.alignment]] for r in rules],
        "edge_rules": [None if r is None else number[r] for r in forest.rules],
        "names": list(forest.feature_names),
        "indptr": features.indptr.tolist(),
        "indices": features.indices.tolist(),
        "values": [_hex(v) for v in features.data.tolist()],
        "levels": forest.levels.tolist(),
    }
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def _translation(t) -> list:
    return [" ".join(t.words), _hex(t.score), sorted([k, _hex(v)] for k, v in t.features.items()),
            [list(a) for a in t.alignment], [[r.lhs, list(r.src), list(r.tgt)] for r in t.rules]]


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def record(decoder: Decoder, tokens: list[str]) -> dict:
    """Everything the decoder outputs for ``tokens`` (the golden values of one case): the
    translations as ``[words, score]``, with a digest of their features, alignments and rules."""
    forest = decoder.forest(tokens)
    weights = decoder.weights
    best = _translation(decoder.translate(tokens)[0])
    nbest = [_translation(t) for t in translations(forest, kbest(forest, weights, 10))]
    unique = [_translation(t) for t in translations(forest, unique_kbest(forest, weights, 5, 30))]
    return {
        "nodes": forest.num_nodes,
        "edges": forest.num_edges,
        "forest": forest_digest(forest),
        "best": best[:2],
        "viterbi": _translation(translations(forest, [forest.viterbi(weights)])[0]) == best,
        "nbest": [t[:2] for t in nbest],
        "unique": [t[:2] for t in unique],
        "details": _digest([best, nbest, unique]),
        "inside": _hex(forest.inside(forest.edge_scores(weights), LOG)[forest.goal]),
    }


def sentences() -> list[list[str]]:
    return [line.split() for line in (FIXTURE / "sentences.txt").read_text(encoding="utf-8").splitlines()]


def decoders():
    """``(kind, pop limit) -> Decoder``; one decoder per grammar decodes every case in turn, as a
    long run does (its per-sentence state must not leak into the next sentence)."""
    lm = LanguageModel(FIXTURE / "lm.arpa")
    out = {}
    for kind, pop_limits in POP_LIMITS.items():
        rules = read_grammar(FIXTURE / f"grammar.{kind}.gz")
        for pop_limit in pop_limits:
            out[kind, pop_limit] = Decoder(rules, lm, WEIGHTS, pop_limit=pop_limit)
    return out


def all_records(decoders_by_case: dict | None = None) -> dict:
    return {f"{kind} {pop_limit}": [record(decoder, tokens) for tokens in sentences()]
            for (kind, pop_limit), decoder in (decoders_by_case or decoders()).items()}


@pytest.fixture(scope="module")
def golden() -> dict:
    return json.loads((FIXTURE / "golden.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def trained() -> dict:
    return decoders()


@pytest.fixture(scope="module")
def recorded(trained) -> dict:
    return all_records(trained)


def test_the_fixture_exercises_pruning_ties_and_unknown_words(golden):
    tokens = sentences()
    assert len(tokens) >= 20 and [] in tokens  # the empty sentence too
    small, large = golden["hiero 4"], golden["hiero 30"]
    assert sum(a["edges"] < b["edges"] for a, b in zip(small, large)) >= 10  # pop limits that cut
    assert any(len({t[1] for t in case["nbest"]}) < len(case["nbest"]) for case in large)  # equal scores


@pytest.mark.parametrize("case", [f"{kind} {limit}" for kind, limits in POP_LIMITS.items() for limit in limits])
def test_decoder_outputs_equal_the_golden_ones_bit_for_bit(golden, recorded, case):
    for tokens, want, got in zip(sentences(), golden[case], recorded[case], strict=True):
        assert got == want, (case, " ".join(tokens))


def test_decoding_again_gives_the_same_forests(golden, trained, recorded):
    """A second pass over the sentences with the decoders of the first (compiled rules warm)."""
    for (kind, pop_limit), decoder in trained.items():
        forests = [forest_digest(decoder.forest(tokens)) for tokens in sentences()]
        assert forests == [case["forest"] for case in golden[f"{kind} {pop_limit}"]], (kind, pop_limit)


# ---------------------------------------------------------------------- fixture (re)generation

def build_model() -> None:
    """Train the fixture's grammars and LM on minifr's train bitext, kept to the rules usable on
    ``sentences.txt`` (needs only clirplug; takes a few seconds)."""
    from clirplug.mt import align
    from clirplug.mt.extract import ParallelText, extract_flat, extract_hiero
    from clirplug.mt.grammar import SourcePhrases, write_grammar
    from clirplug.mt.lm import FALLBACK_DISCOUNTS, estimate, write_arpa
    from clirplug.mt.preprocess import preprocess
    from clirplug.mt.symmetrize import symmetrize

    minifr = FIXTURE.parent / "minifr"
    src = [preprocess(line, "fr") for line in (minifr / "bitext.train.fr").read_text(encoding="utf-8").splitlines()]
    tgt = [preprocess(line, "en") for line in (minifr / "bitext.train.en").read_text(encoding="utf-8").splitlines()]
    forward = align.train(src, tgt).alignments
    reverse = [sorted((i, j) for j, i in links) for links in align.train(tgt, src).alignments]
    text = ParallelText(src, tgt, [sorted(set(links)) for links in symmetrize(forward, reverse)])
    restriction = SourcePhrases(sentences())
    for kind, rules in (("hiero", extract_hiero(text, max_initial=6)), ("flat", extract_flat(text))):
        write_grammar([r for r in rules if restriction.admits(" ".join(r.src))], FIXTURE / f"grammar.{kind}.gz")
    write_arpa(estimate(tgt, order=3, discount_fallback=FALLBACK_DISCOUNTS), FIXTURE / "lm.arpa")


def write_golden() -> None:
    """Record ``golden.json`` with the current decoder, one sentence a line."""
    cases = [f"{json.dumps(case)}: [\n" + ",\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n]"
             for case, records in all_records().items()]
    (FIXTURE / "golden.json").write_text("{\n" + ",\n".join(cases) + "\n}\n", encoding="utf-8")


if __name__ == "__main__":
    if "--build-model" in sys.argv[1:]:
        build_model()
    if "--record" in sys.argv[1:]:
        write_golden()
