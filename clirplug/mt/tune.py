"""Tuning feature weights for BLEU by Pairwise Ranking Optimization (Hopkins & May 2011).

Why PRO rather than MERT (Och 2003): PRO reduces tuning to binary classification of
n-best pairs, so it is deterministic given its seed, needs no line search over a piecewise
constant, non-convex error surface (MERT's random restarts and coordinate directions), and
stays stable as features are added (MERT degrades beyond a dozen or so). Our models have
about ten dense features, where both work; PRO's convex inner problem is simpler to get
right and to test.

Each iteration (Hopkins & May 2011, §3): decode the tuning sentences into n-best lists under
the current weights and merge them into per-sentence pools; for each sentence sample
``samples`` candidate pairs (Γ = 5000), keep those whose sentence BLEU+1 differs by more than
``threshold`` (0.05, i.e. 5 points on sacrebleu's 0-100 scale), take the ``keep`` (Ξ = 50) with
the largest differences, and add each as the two examples ``(f_i - f_j, sign)`` and
``(f_j - f_i, -sign)``; train an L2-regularised logistic regression (their MegaM maxent) on
all examples; mix the result into the current weights (after scaling it to their L1 norm) with
coefficient ``interpolation`` (Ψ; the paper's 0.1 over 25-30 iterations, 0.5 here for fewer
iterations). The weights of the iteration whose 1-best output has the best corpus BLEU are
returned.

BLEU is sacrebleu's on already tokenized text (``tokenize="none"``); sentence BLEU+1 is
sacrebleu's ``add-k`` smoothing with k = 1 (Lin & Och 2004), computed here vectorized from
n-gram statistics (checked against sacrebleu in the tests).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

import numpy as np

MAX_ORDER = 4


def ngram_stats(hypothesis: Sequence[str], reference: Sequence[str]) -> np.ndarray:
    """BLEU sufficient statistics: clipped matches (4), hypothesis n-grams (4), lengths (2)."""
    stats = np.zeros(2 * MAX_ORDER + 2)
    for n in range(1, MAX_ORDER + 1):
        hyp = Counter(tuple(hypothesis[i:i + n]) for i in range(len(hypothesis) - n + 1))
        ref = Counter(tuple(reference[i:i + n]) for i in range(len(reference) - n + 1))
        stats[n - 1] = sum(min(c, ref[g]) for g, c in hyp.items())
        stats[MAX_ORDER + n - 1] = max(len(hypothesis) - n + 1, 0)
    stats[-2], stats[-1] = len(hypothesis), len(reference)
    return stats


def sentence_bleu(stats: np.ndarray) -> np.ndarray:
    """Sentence BLEU+1 (0-100) of each row of ``stats`` (sacrebleu's add-k, k = 1)."""
    stats = np.atleast_2d(np.asarray(stats, dtype=float))
    correct, total = stats[:, :MAX_ORDER].copy(), stats[:, MAX_ORDER:2 * MAX_ORDER].copy()
    hyp_len, ref_len = stats[:, -2], stats[:, -1]
    any_match = correct.sum(axis=1) > 0
    correct[:, 1:] += 1
    total[:, 1:] += 1
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(total > 0, correct / total, 0.0)
        logs = np.where(precision > 0, np.log(np.where(precision > 0, precision, 1.0)), -9999999999.0)
        brevity = np.where(hyp_len < ref_len, np.exp(1 - ref_len / np.maximum(hyp_len, 1)), 1.0)
    score = 100.0 * brevity * np.exp(logs.mean(axis=1))
    return np.where(any_match & (hyp_len > 0), score, 0.0)


def corpus_bleu(hypotheses: Sequence[Sequence[str]], references: Sequence[Sequence[str]]) -> float:
    """sacrebleu's corpus BLEU (0-100) of tokenized hypotheses against one reference each."""
    from sacrebleu.metrics import BLEU

    bleu = BLEU(tokenize="none", force=True)  # the input is tokenized on purpose
    return bleu.corpus_score([" ".join(h) for h in hypotheses], [[" ".join(r) for r in references]]).score


def _logistic_regression(x: np.ndarray, y: np.ndarray, l2: float) -> np.ndarray:
    """Weights minimising ``Σ log(1 + exp(-y w·x)) + l2/2 |w|²`` (L-BFGS)."""
    from scipy.optimize import minimize
    from scipy.special import expit, log1p

    def loss(w):
        margin = y * (x @ w)
        value = np.sum(np.where(margin > 0, log1p(np.exp(-margin)), -margin + log1p(np.exp(margin))))
        gradient = -(x.T @ (y * expit(-margin)))
        return value + 0.5 * l2 * w @ w, gradient + l2 * w

    return minimize(loss, np.zeros(x.shape[1]), jac=True, method="L-BFGS-B").x


def pro(decode: Callable[[dict[str, float]], list[list]], references: Sequence[Sequence[str]],
        weights: Mapping[str, float], iterations: int = 8, samples: int = 5000, keep: int = 50,
        threshold: float = 5.0, interpolation: float = 0.5, l2: float = 0.1, seed: int = 0,
        log: Callable[[str], None] | None = None) -> tuple[dict[str, float], list[dict]]:
    """Tune ``weights`` for corpus BLEU with PRO (see the module docstring).

    Parameters
    ----------
    decode : callable
        ``decode(weights)`` returns, per tuning sentence, its n-best list: objects with
        ``words`` (tuple of str) and ``features`` (name -> value), such as
        :class:`clirplug.mt.decoder.Translation`.
    references : sequence of token sequences
        One tokenized reference per tuning sentence.
    weights : mapping
        The starting point (e.g. :data:`clirplug.mt.features.DEFAULT_WEIGHTS`).

    Returns
    -------
    best : dict
        The weights whose 1-best output scored the highest corpus BLEU.
    history : list of dict
        Per iteration: ``{"iteration", "bleu", "pairs", "weights"}``.
    """
    rng = np.random.default_rng(seed)
    current = dict(weights)
    pools: list[dict[tuple[str, ...], tuple[dict, float]]] = [{} for _ in references]
    history: list[dict] = []
    best, best_bleu = dict(current), -1.0
    for iteration in range(iterations):
        nbests = decode(current)
        bleu = corpus_bleu([nbest[0].words if nbest else () for nbest in nbests], references)
        history.append({"iteration": iteration, "bleu": bleu, "weights": dict(current)})
        if log:
            log(f"PRO iteration {iteration}: BLEU {bleu:.2f}")
        if bleu > best_bleu:
            best, best_bleu = dict(current), bleu
        for pool, nbest, reference in zip(pools, nbests, references):
            for t in nbest:
                if t.words not in pool:
                    pool[t.words] = (t.features, float(sentence_bleu(ngram_stats(t.words, reference))[0]))
        names = sorted(set(current) | {f for pool in pools for feats, _ in pool.values() for f in feats})
        x, y = _sample_pairs(pools, names, rng, samples, keep, threshold)
        history[-1]["pairs"] = len(y)
        if not len(y):
            break
        learned = _logistic_regression(x, y, l2)
        previous = np.array([current.get(name, 0.0) for name in names])
        scale = np.abs(previous).sum() / max(np.abs(learned).sum(), 1e-12)
        mixed = interpolation * scale * learned + (1 - interpolation) * previous
        current = {name: float(v) for name, v in zip(names, mixed)}
    return best, history


def _sample_pairs(pools, names, rng, samples, keep, threshold):
    """Hopkins & May's sampler: Γ random pairs per sentence, the Ξ most different kept."""
    rows, labels = [], []
    for pool in pools:
        if len(pool) < 2:
            continue
        entries = list(pool.values())
        feats = np.array([[f.get(name, 0.0) for name in names] for f, _ in entries])
        scores = np.array([b for _, b in entries])
        i = rng.integers(0, len(entries), size=samples)
        j = rng.integers(0, len(entries), size=samples)
        difference = scores[i] - scores[j]
        chosen = np.flatnonzero(np.abs(difference) > threshold)
        chosen = chosen[np.argsort(-np.abs(difference[chosen]), kind="stable")[:keep]]
        delta = feats[i[chosen]] - feats[j[chosen]]
        sign = np.sign(difference[chosen])
        rows.extend([delta, -delta])
        labels.extend([sign, -sign])
    if not rows:
        return np.zeros((0, len(names))), np.zeros(0)
    return np.vstack(rows), np.concatenate(labels)
