"""Tuning feature weights for BLEU by Pairwise Ranking Optimization (Hopkins & May 2011).

Why PRO rather than MERT (Och 2003): PRO reduces tuning to binary classification of
n-best pairs, so it is deterministic given its seed, needs no line search over a piecewise
constant, non-convex error surface (MERT's random restarts and coordinate directions), and
stays stable as features are added (MERT degrades beyond a dozen or so). Our models have
about ten dense features, where both work; PRO's convex inner problem is simpler to get
right and to test.

Each iteration (Hopkins & May 2011, §3): decode the tuning sentences into n-best lists under
the current weights (unique yields, as cdec tunes: a hiero n-best list of derivations is
mostly spurious ambiguity) and merge them into per-sentence pools; for each sentence sample
``samples`` candidate pairs (Γ = 5000), keep those whose sentence BLEU+1 differs by more than
``threshold`` (0.05, i.e. 5 points on sacrebleu's 0-100 scale), take the ``keep`` (Ξ = 50) with
the largest differences, and add each as the two examples ``(f_i - f_j, sign)`` and
``(f_j - f_i, -sign)``; train an L2-regularised logistic regression (their MegaM maxent) on
all examples and scale the result to the current weights' L1 norm. The paper mixes it into the
current weights with a fixed coefficient Ψ (0.1 over 25-30 iterations); with a handful of
iterations a fixed large Ψ overshoots (a hiero run went 58.8 → 44.6 → 54.8 BLEU with Ψ = 0.5), so
here Ψ is chosen by a line search over ``steps`` (0, 0.05, ..., 1) maximising the corpus BLEU of
the pools reranked by the mixed weights (MERT's objective, Och 2003, on the accumulated n-best
lists; Ψ = 0 keeps the current weights, and PRO stops when no step improves). The weights of
the iteration whose decoded 1-best output has the best corpus BLEU are returned.

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


def bleu_from_stats(stats: np.ndarray) -> float:
    """Corpus BLEU (0-100) from summed :func:`ngram_stats` (sacrebleu's default ``exp`` smoothing
    of zero matches: the n-th zero precision counts as ``1 / 2^n`` over its total)."""
    correct, total = stats[:MAX_ORDER], stats[MAX_ORDER:2 * MAX_ORDER]
    hyp_len, ref_len = stats[-2], stats[-1]
    if hyp_len == 0 or correct[0] == 0:
        return 0.0
    logs, factor = [], 1.0
    for n in range(MAX_ORDER):
        if total[n] == 0:
            return 0.0
        if correct[n] == 0:
            factor *= 2
            logs.append(np.log(1.0 / (factor * total[n])))
        else:
            logs.append(np.log(correct[n] / total[n]))
    brevity = 1.0 if hyp_len > ref_len else np.exp(1 - ref_len / hyp_len)
    return float(100.0 * brevity * np.exp(np.mean(logs)))


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
        threshold: float = 5.0, steps: int = 20, l2: float = 0.1, seed: int = 0,
        log: Callable[[str], None] | None = None,
        checkpoint: Callable[[dict[str, float], list[dict]], None] | None = None) -> tuple[dict[str, float], list[dict]]:
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
    steps : int
        The line search tries Ψ = 0, 1/steps, ..., 1.
    checkpoint : callable, optional
        Called as ``checkpoint(best, history)`` after each decoding pass (e.g. to save the best
        weights so far, so a stopped run keeps them).

    Returns
    -------
    best : dict
        The weights whose 1-best output scored the highest corpus BLEU.
    history : list of dict
        Per iteration: ``{"iteration", "bleu", "pairs", "step", "pool_bleu", "weights"}``.
    """
    rng = np.random.default_rng(seed)
    current = dict(weights)
    pools: list[dict[tuple[str, ...], tuple[dict, np.ndarray]]] = [{} for _ in references]
    history: list[dict] = []
    best, best_bleu = dict(current), -1.0
    for iteration in range(iterations):
        nbests = decode(current)
        bleu = corpus_bleu([nbest[0].words if nbest else () for nbest in nbests], references)
        history.append({"iteration": iteration, "bleu": bleu, "weights": dict(current)})
        if bleu > best_bleu:
            best, best_bleu = dict(current), bleu
        if checkpoint:
            checkpoint(best, history)
        for pool, nbest, reference in zip(pools, nbests, references):
            for t in nbest:
                if t.words not in pool:
                    pool[t.words] = (t.features, ngram_stats(t.words, reference))
        names = sorted(set(current) | {f for pool in pools for feats, _ in pool.values() for f in feats})
        matrices = [(np.array([[f.get(name, 0.0) for name in names] for f, _ in pool.values()]),
                     np.array([stats for _, stats in pool.values()])) for pool in pools if pool]
        x, y = _sample_pairs(matrices, rng, samples, keep, threshold)
        history[-1]["pairs"] = len(y)
        if log:
            log(f"PRO iteration {iteration}: BLEU {bleu:.2f}, {len(y)} training pairs")
        if not len(y):
            break
        learned = _logistic_regression(x, y, l2)
        previous = np.array([current.get(name, 0.0) for name in names])
        learned *= np.abs(previous).sum() / max(np.abs(learned).sum(), 1e-12)
        step, pool_bleu = _line_search(matrices, previous, learned, steps)
        history[-1].update(step=step, pool_bleu=pool_bleu)
        if log:
            log(f"  line search: step {step:.2f}, BLEU of the reranked pools {pool_bleu:.2f}")
        if step == 0.0:
            break
        current = {name: float(v) for name, v in zip(names, step * learned + (1 - step) * previous)}
    return best, history


def _line_search(matrices, previous: np.ndarray, learned: np.ndarray, steps: int) -> tuple[float, float]:
    """The mixing step ``Ψ`` in ``0, 1/steps, ..., 1`` whose weights ``Ψ·learned + (1-Ψ)·previous``
    give the reranked pools the best corpus BLEU (the smallest such step on ties), and that BLEU."""
    best_step, best_bleu = 0.0, -1.0
    for step in np.linspace(0.0, 1.0, steps + 1):
        w = step * learned + (1 - step) * previous
        total = sum(stats[int(np.argmax(feats @ w))] for feats, stats in matrices)
        bleu = bleu_from_stats(total)
        if bleu > best_bleu + 1e-9:
            best_step, best_bleu = float(step), bleu
    return best_step, best_bleu


def _sample_pairs(matrices, rng, samples, keep, threshold):
    """Hopkins & May's sampler: Γ random pairs per sentence, the Ξ most different kept.

    ``matrices`` holds per sentence its pool's feature matrix and BLEU statistics.
    """
    rows, labels = [], []
    for feats, stats in matrices:
        if len(feats) < 2:
            continue
        scores = sentence_bleu(stats)
        i = rng.integers(0, len(feats), size=samples)
        j = rng.integers(0, len(feats), size=samples)
        difference = scores[i] - scores[j]
        chosen = np.flatnonzero(np.abs(difference) > threshold)
        chosen = chosen[np.argsort(-np.abs(difference[chosen]), kind="stable")[:keep]]
        delta = feats[i[chosen]] - feats[j[chosen]]
        sign = np.sign(difference[chosen])
        rows.extend([delta, -delta])
        labels.extend([sign, -sign])
    width = matrices[0][0].shape[1] if matrices else 0
    if not rows:
        return np.zeros((0, width)), np.zeros(0)
    return np.vstack(rows), np.concatenate(labels)
