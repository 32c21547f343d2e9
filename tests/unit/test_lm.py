"""Modified Kneser-Ney: hand-computed probabilities, normalization, and kenlm reading our ARPA."""

import math
import random

import numpy as np
import pytest

from clirplug.errors import ClirplugError
from clirplug.mt.lm import (
    FALLBACK_DISCOUNTS,
    UNK,
    LanguageModel,
    estimate,
    modified_kn_discounts,
    write_arpa,
)

pytestmark = pytest.mark.cli

# ---------------------------------------------------------------- FIXTURES


def lookup(model) -> dict[tuple[str, ...], tuple[float, float]]:
    """``n-gram -> (log10 p, log10 backoff)`` of every n-gram of ``model``, read off its arrays as write_arpa reads them."""
    table, grams = {}, None
    for n in range(1, model.order + 1):
        grams = model.texts(n, grams)
        backoffs = model.log10_backoff[n - 1] if n < model.order else np.full(len(grams), np.nan)
        for gram, prob, backoff in zip(grams, model.log10_prob[n - 1].tolist(), backoffs.tolist()):
            table[gram] = (prob, 0.0 if math.isnan(backoff) else backoff)
    return table


def log10_prob(table, word: str, context: tuple[str, ...]) -> float:
    """``log10 p(word | context)`` by back-off over :func:`lookup`'s table (unknown words are ``<unk>``)."""
    if (word,) not in table:
        word = UNK
    context = tuple(w if (w,) in table else UNK for w in context)
    penalty = 0.0
    while (*context, word) not in table:
        penalty += table.get(context, (0.0, 0.0))[1]
        context = context[1:]
    return penalty + table[(*context, word)][0]


def word_scores(lm, words, bos: bool = True, eos: bool = True) -> list[float]:
    """kenlm's ``log10 p(w_i | history)`` of each word (and ``</s>`` when ``eos``), through the incremental
    states the decoder scores with."""
    state = lm.begin_state() if bos else lm.null_state()
    scores = []
    for word in [*words, "</s>"] if eos else words:
        score, state = lm.advance(state, word)
        scores.append(score)
    return scores


TOY = [["a", "b"], ["a", "a"]]  # <s> a b </s>, <s> a a </s>


@pytest.fixture
def toy_lm(tmp_path):
    model = estimate(TOY, order=2, discount_fallback=FALLBACK_DISCOUNTS)
    write_arpa(model, tmp_path / "toy.arpa")
    return model, LanguageModel(tmp_path / "toy.arpa")


def _random_corpus(seed, n=60):
    rng = random.Random(seed)
    words = "a b c d e f".split()
    return [[rng.choice(words[: rng.randint(2, 6)]) for _ in range(rng.randint(1, 8))] for _ in range(n)]


# ---------------------------------------------------------------- TESTS: discounts


def test_discounts_from_counts_of_counts():
    # t1..t4 = 10, 5, 3, 2: Y = 10 / (10 + 2*5) = 1/2
    counts = np.array([1] * 10 + [2] * 5 + [3] * 3 + [4] * 2 + [7])
    d1, d2, d3 = modified_kn_discounts(counts, order=1)
    assert d1 == pytest.approx(1 - 2 * 0.5 * 5 / 10)
    assert d2 == pytest.approx(2 - 3 * 0.5 * 3 / 5)
    assert d3 == pytest.approx(3 - 4 * 0.5 * 2 / 3)


def test_discounts_need_counts_of_counts():
    with pytest.raises(ClirplugError, match="t1..t4 = \\[1, 2, 0, 0\\]"):
        modified_kn_discounts(np.array([1, 2, 2]), order=2)
    assert modified_kn_discounts(np.array([1, 2, 2]), 2, fallback=(0.5, 1, 1.5)) == (0.5, 1.0, 1.5)
    with pytest.raises(ClirplugError, match="discount fallback"):
        estimate(TOY, order=2)


# ---------------------------------------------------------------- TESTS: hand-computed probabilities
#
# Bigram model of <s> a b </s> / <s> a a </s>; both orders fall back to D = (0.5, 1, 1.5).
# Unigram adjusted counts are continuation counts: a: {<s>, a} = 2, b: {a} = 1, </s>: {b, a} = 2;
# total 5; gamma() = (0.5*1 + 1*2) / 5 = 0.5, spread over |V| = 4 (a, b, </s>, <unk>; not <s>).
P_A = (2 - 1) / 5 + 0.5 / 4
P_B = (1 - 0.5) / 5 + 0.5 / 4
P_EOS = (2 - 1) / 5 + 0.5 / 4
P_UNK = 0.5 / 4
# bigrams keep raw counts: <s> a = 2; a b = a a = a </s> = 1; b </s> = 1
GAMMA_BOS, GAMMA_A, GAMMA_B = 1.0 * 1 / 2, 0.5 * 3 / 3, 0.5 * 1 / 1
HAND = {
    ("a", ("<s>",)): (2 - 1.0) / 2 + GAMMA_BOS * P_A,
    ("b", ("<s>",)): GAMMA_BOS * P_B,
    ("b", ("a",)): (1 - 0.5) / 3 + GAMMA_A * P_B,
    ("a", ("a",)): (1 - 0.5) / 3 + GAMMA_A * P_A,
    ("</s>", ("a",)): (1 - 0.5) / 3 + GAMMA_A * P_EOS,
    ("</s>", ("b",)): (1 - 0.5) / 1 + GAMMA_B * P_EOS,
    ("a", ("b",)): GAMMA_B * P_A,
    ("zzz", ("a",)): GAMMA_A * P_UNK,
    ("a", ()): P_A,
    ("</s>", ()): P_EOS,
}


def test_hand_computed_probabilities(toy_lm):
    model, _ = toy_lm
    assert model.discounts == [FALLBACK_DISCOUNTS, FALLBACK_DISCOUNTS]
    table = lookup(model)
    for (word, context), p in HAND.items():
        assert log10_prob(table, word, context) == pytest.approx(math.log10(p), abs=1e-12), (word, context)
    assert table["<s>",] == (-99.0, pytest.approx(math.log10(GAMMA_BOS)))
    assert table["a", "b"][1] == 0.0  # the top order has no backoff weights


def test_kenlm_reads_the_hand_computed_values(toy_lm):
    _, lm = toy_lm
    expected = [math.log10(HAND["a", ("<s>",)]), math.log10(HAND["b", ("a",)]), math.log10(HAND["</s>", ("b",)])]
    assert word_scores(lm, ["a", "b"]) == pytest.approx(expected, abs=1e-6)
    assert lm.score(["a", "b"]) == pytest.approx(sum(expected), abs=1e-6)
    assert word_scores(lm, ["a", "zzz"], eos=False)[1] == pytest.approx(math.log10(HAND["zzz", ("a",)]), abs=1e-6)
    assert lm.perplexity([["a", "b"]]) == pytest.approx(10 ** (-sum(expected) / 3), rel=1e-5)


# ---------------------------------------------------------------- TESTS: invariants


@pytest.mark.parametrize("seed, order", [(0, 2), (1, 3), (2, 4), (3, 3)])
def test_every_context_sums_to_one(seed, order):
    model = estimate(_random_corpus(seed), order=order, discount_fallback=FALLBACK_DISCOUNTS)
    table = lookup(model)
    vocabulary = [w for w in model.vocabulary if w != "<s>"]
    contexts = {gram[:-1] for gram in table} | {gram for gram in table if gram[-1] != "</s>"}
    contexts |= {("<s>",) + gram for gram in contexts if "<s>" not in gram and len(gram) < order - 1}
    contexts |= {("unseen-word",), ("a", "unseen-word")}
    for context in contexts:
        total = sum(10 ** log10_prob(table, word, context[-(order - 1) :] if order > 1 else ()) for word in vocabulary)
        assert total == pytest.approx(1.0, abs=1e-9), context


@pytest.mark.parametrize("seed, order", [(4, 3), (5, 4)])
def test_kenlm_scores_equal_our_own(seed, order, tmp_path):
    corpus = _random_corpus(seed)
    model = estimate(corpus, order=order, discount_fallback=FALLBACK_DISCOUNTS)
    write_arpa(model, tmp_path / "lm.arpa")
    lm = LanguageModel(tmp_path / "lm.arpa")
    table = lookup(model)
    # every n-gram of the model, scored in its own context, plus unseen sentences
    probes = [list(gram) for gram in table if "<s>" not in gram[1:]]
    probes += [[random.Random(seed).choice("abcdefg") for _ in range(6)] for _ in range(20)]
    checked = 0
    for gram in probes:
        bos = gram[0] == "<s>"
        words = gram[1:] if bos else gram
        if not words or "<s>" in words:
            continue
        eos = words[-1] == "</s>"
        words = words[:-1] if eos else words
        history = ["<s>"] if bos else []
        own = []
        for word in words + (["</s>"] if eos else []):
            own.append(log10_prob(table, word, tuple(history[-(order - 1) :])))
            history.append(word)
        assert word_scores(lm, words, bos=bos, eos=eos) == pytest.approx(own, abs=1e-5), gram
        checked += 1
    assert checked > 50


def test_estimation_does_not_depend_on_sentence_order(tmp_path):
    corpus = _random_corpus(6)
    write_arpa(estimate(corpus, 3, FALLBACK_DISCOUNTS), tmp_path / "a.arpa")
    write_arpa(estimate(corpus[::-1], 3, FALLBACK_DISCOUNTS), tmp_path / "b.arpa")
    assert (tmp_path / "a.arpa").read_bytes() == (tmp_path / "b.arpa").read_bytes()


def test_load_errors(tmp_path):
    with pytest.raises(ClirplugError, match="no such language model"):
        LanguageModel(tmp_path / "missing.arpa")
    (tmp_path / "bad.arpa").write_text("not an arpa file\n")
    with pytest.raises(ClirplugError, match="cannot load"):
        LanguageModel(tmp_path / "bad.arpa")


@pytest.mark.manclir
def test_manclir_slice_sums_to_one(manclir_de, tmp_path):
    """An order-4 model of 3000 bitext lines: Σ_w p(w|h) = 1 over the vocabulary for sampled h (via kenlm)."""
    from clirplug.mt.preprocess import preprocess

    lines = (manclir_de / "bitext.train.en").read_text(encoding="utf-8").splitlines()[:3000]
    sentences = [preprocess(line, "en") for line in lines]
    model = estimate(sentences, order=4)  # real counts: the discounts are estimated at every order
    write_arpa(model, tmp_path / "lm.arpa")
    lm = LanguageModel(tmp_path / "lm.arpa")
    vocabulary = [w for w in model.vocabulary if w != "<s>"]
    rng = random.Random(0)
    for tokens in rng.sample([s for s in sentences if len(s) > 4], 5):
        cut = rng.randint(0, len(tokens) - 1)
        for start, context in ((True, tokens[:cut][-3:]), (False, tokens[cut : cut + 3])):
            state = lm.begin_state() if start else lm.null_state()
            for word in context:
                _, state = lm.advance(state, word)
            total = sum(10 ** lm.advance(state, word)[0] for word in vocabulary)
            assert total == pytest.approx(1.0, abs=1e-4), context


def test_cli_train_lm(tmp_path, capsys):
    from clirplug.cli import main

    (tmp_path / "text.en").write_text("A b.\nA a!\n", encoding="utf-8")
    (tmp_path / "docs.jsonl").write_text('{"id": "x", "title": "B a", "contents": "A b. B b a."}\n', encoding="utf-8")
    out = tmp_path / "model" / "lm.arpa"
    out.parent.mkdir()  # an output's folder must exist (docs/reliability.md)
    args = ["train", "lm", "--text", str(tmp_path / "text.en"), "--jsonl", str(tmp_path / "docs.jsonl"),
            "--order", "3", "--out", str(out), "--discount-fallback"]
    assert main(args) == 0
    # sentences: a b . / a a ! / b a / a b . b b a .  ("b." looks like an initial: no sentence break)
    expected = estimate([s.split() for s in ["a b .", "a a !", "b a", "a b . b b a ."]], 3, FALLBACK_DISCOUNTS)
    write_arpa(expected, tmp_path / "expected.arpa")
    assert out.read_bytes() == (tmp_path / "expected.arpa").read_bytes()
    assert "text.en: " in capsys.readouterr().err  # a progress bar per file read
    assert main(args) == 0
    assert "up to date, skipped" in capsys.readouterr().err
    assert main([*args, "--force", "--quiet"]) == 0
    assert "text.en: " not in capsys.readouterr().err
    (tmp_path / "bad.jsonl").write_text("{oops\n", encoding="utf-8")
    assert main(["train", "lm", "--jsonl", str(tmp_path / "bad.jsonl"), "--out", str(out)]) == 2
    assert "bad.jsonl:1: invalid JSON" in capsys.readouterr().err


def test_loading_prints_nothing(toy_lm, capfd):
    """kenlm's own messages (its advice to build a binary file, its star bar) never reach the terminal."""
    _, lm = toy_lm
    capfd.readouterr()
    LanguageModel(lm.path)
    assert capfd.readouterr() == ("", "")
