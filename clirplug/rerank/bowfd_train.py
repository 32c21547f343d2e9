"""Learning to rank for BOW-FD (Hieber & Riezler 2015, §4).

Preference pairs ``(d+, d-)`` with ``rl(d+) > rl(d-)`` come from the train-split qrels: each
relevant document against every judged document of lower grade and against the top
``negatives`` unjudged documents of a first-stage candidate run (the hardest irrelevant ones).
The loss is the margin-rescaled hinge ``[score(q, d-) - score(q, d+) + Δ]_+`` with
``Δ = rl(d+) - rl(d-)``; its subgradient is the feature difference ``Φ(h-, d-) - Φ(h+, d+)`` of
the two documents' Viterbi derivations (summed over the query's sentences). Updates follow
Adadelta (Zeiler 2012; ρ = 0.95, ε = 1e-6, applied every step, a zero gradient only decays the
accumulators), over a fixed cyclic sequence of pairs (query by query, relevant document by
relevant document; Bertsekas 2011), with iterative parameter mixing (McDonald et al. 2010):
the queries are split into ``shards`` shards trained from the same weights (in up to ``jobs``
parallel workers, which do not change the result), and the weights are averaged after each epoch. Regularization is early stopping: the weights of
the epoch with the best MAP on held-out train queries are kept (epoch 0, the starting weights,
included). As in the paper, training starts from the SMT weights of the model and the grid-searched
IR default ``v``, and the SMT weights stay frozen unless asked otherwise; the trained features
are the per-term IR weights (``IR:t``, starting at ``v``) and, with LEX, the sparse indicators.

Scale. A BOW-FD ranking does not change when every weight (SMT, IR, LEX) is multiplied by the same
``c > 0`` (the Viterbi max of a linear score is positively homogeneous), so the scale of the start
weights is arbitrary: the decoder tuner fixes it (PRO rescales to the L1 norm of its start weights)
and ``v`` adapts to it (manclir-de: v = 0.05 / 0.025 where the paper has 1.6 / 0.8). The hinge's
margin ``Δ = rl(d+) - rl(d-)`` and Adadelta's steps (about ``sqrt(ε / (1 - ρ)) ≈ 0.0045`` per
coordinate at first, whatever the gradient's scale) are not scale-free: they assume weights of
order one, as the paper's are. At v = 0.05 the score differences of training pairs are ~0.1 against
margins of 1-2, so nearly every pair stays violated (the hinge degenerates into an unbounded linear
loss) and one epoch moves term weights by about their own size, many below zero. So training runs
in the units of ``v`` (``LtrSettings.unit_v``): the start weights are divided by ``v`` (IR default 1,
IR features in BM25 units, the paper's regime), and the learned weights are multiplied back, which
ranks exactly as trained; weights that did not move are returned unchanged.

Reach. BOW-FD reranks the top ``depth`` candidates of a first-stage run, so a relevant document
outside them can never be placed by it; its pairs (hopelessly violated: the first stage missed it
because it matches the translation badly) would dominate the loss and pull weights away from the
ranking that is evaluated. :func:`training_documents` with ``depth`` keeps the judged documents of
the reranked candidates only (the paper scores the whole collection, where every document is reachable).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from clirplug.errors import ClirplugError
from clirplug.eval.measures import average_precision
from clirplug.executor import ExecutorSettings, make_executor
from clirplug.rerank.bowfd import (
    IR_PREFIX,
    SCORE_DTYPE,
    SMT_PREFIX,
    BowFD,
    BowfdWeights,
    PreparedSentence,
    bm25_matrix,
    combine_sentences,
    derivation_edge_counts,
    score_sentence,
)
from clirplug.rerank.config import LtrSettings

ADADELTA_RHO = 0.95  # Adadelta's decay rate and ε: Zeiler's defaults, as the paper
ADADELTA_EPSILON = 1e-6


class FeatureSpace:
    """Global feature names (``SMT:*``, ``IR:*``, ``LEX*``) and their positions in one weight vector."""

    def __init__(self):
        self.names: list[str] = []
        self.index: dict[str, int] = {}

    def ids(self, names) -> np.ndarray:
        """Positions of ``names``, adding new ones."""
        out = np.empty(len(names), dtype=np.int64)
        for i, name in enumerate(names):
            position = self.index.get(name)
            if position is None:
                position = self.index[name] = len(self.names)
                self.names.append(name)
            out[i] = position
        return out

    def vector(self, weights: BowfdWeights) -> np.ndarray:
        """``weights`` as a vector over the space (terms without a weight of their own: ``v``)."""
        theta = np.zeros(len(self.names))
        for i, name in enumerate(self.names):
            if name.startswith(SMT_PREFIX):
                theta[i] = weights.smt.get(name[len(SMT_PREFIX):], 0.0)
            elif name.startswith(IR_PREFIX):
                theta[i] = weights.ir.get(name[len(IR_PREFIX):], weights.v)
            else:
                theta[i] = weights.lex.get(name, 0.0)
        return theta

    def weights(self, theta: np.ndarray, base: BowfdWeights) -> BowfdWeights:
        """The vector back as weights: ``base`` updated with every feature of the space."""
        smt, ir, lex = dict(base.smt), dict(base.ir), dict(base.lex)
        for name, value in zip(self.names, theta.tolist()):
            if name.startswith(SMT_PREFIX):
                smt[name[len(SMT_PREFIX):]] = value
            elif name.startswith(IR_PREFIX):
                if value != base.v:
                    ir[name[len(IR_PREFIX):]] = value
            elif value != 0.0:
                lex[name] = value
        return BowfdWeights(smt=smt, v=base.v, ir=ir, lex=lex, lex_enabled=base.lex_enabled)

    def trainable(self, train_smt: bool) -> np.ndarray:
        """Mask of the features learning may change."""
        return np.array([train_smt or not n.startswith(SMT_PREFIX) for n in self.names], dtype=bool)


class TrainQuery:
    """One query's sentences, documents (with relevance and BM25 rows) and preference pairs.

    ``pairs`` are ``(i+, i-, margin)`` over ``docids`` in the paper's cyclic order.
    """

    def __init__(self, qid: str, sentences: list[PreparedSentence], docids: list[str], relevance: np.ndarray,
                 bm25: list[np.ndarray], space: FeatureSpace):
        self.qid, self.sentences, self.docids, self.relevance, self.bm25 = qid, sentences, docids, relevance, bm25
        self.smt_ids = [space.ids([SMT_PREFIX + n for n in s.forest.feature_names]) for s in sentences]
        self.ir_ids = [space.ids([IR_PREFIX + t for t in s.terms]) for s in sentences]
        self.lex_ids = [space.ids(list(s.lex_names)) for s in sentences]
        # the feature matrices transposed once (edge counts to feature values), not at every subgradient
        self.transposed = [(s.forest.features.T, s.counts.T, s.lex.T) for s in sentences]
        order = sorted(range(len(docids)), key=lambda i: (-relevance[i], docids[i]))
        self.pairs = [(p, n, float(relevance[p] - relevance[n]))
                      for p in order if relevance[p] > 0 for n in order if relevance[n] < relevance[p]]

    def scores(self, theta: np.ndarray, docs: np.ndarray, k: int, back_pointers: bool = False):
        """Combined BOW-FD scores of ``docs`` (positions in ``docids``) under ``theta``, and per-sentence results.

        With ``back_pointers`` (a subgradient step), the Viterbi sums are float64.
        """
        dtype = np.float64 if back_pointers else SCORE_DTYPE
        results = []
        for s, sentence in enumerate(self.sentences):
            edge = sentence.forest.features @ theta[self.smt_ids[s]]
            if len(self.lex_ids[s]):
                edge = edge + sentence.lex @ theta[self.lex_ids[s]]
            results.append(score_sentence(sentence, edge, theta[self.ir_ids[s]], self.bm25[s][docs], back_pointers,
                                          dtype=dtype))
        return combine_sentences([r.scores for r in results], k), results

    def features(self, results, docs: np.ndarray, j: int, size: int) -> np.ndarray:
        """``Φ(h, d)`` of column ``j`` (document ``docs[j]``): its winning derivations' features, summed."""
        phi = np.zeros(size)
        for s, (sentence, result) in enumerate(zip(self.sentences, results)):
            counts = derivation_edge_counts(sentence.forest, result.back_pointers(j))
            smt, terms, lex = self.transposed[s]
            np.add.at(phi, self.smt_ids[s], smt @ counts)
            np.add.at(phi, self.ir_ids[s], (terms @ counts) * self.bm25[s][docs[j]])
            if len(self.lex_ids[s]):
                np.add.at(phi, self.lex_ids[s], lex @ counts)
        return phi


class Adadelta:
    """Zeiler's (2012) Adadelta, Algorithm 1, on the coordinates of ``mask``."""

    def __init__(self, size: int, rho: float, epsilon: float):
        self.rho, self.epsilon = rho, epsilon
        self.grad2 = np.zeros(size)
        self.step2 = np.zeros(size)

    def step(self, theta: np.ndarray, gradient: np.ndarray) -> None:
        """One update of ``theta`` in place."""
        rho, eps = self.rho, self.epsilon
        self.grad2 = rho * self.grad2 + (1 - rho) * gradient * gradient
        delta = -np.sqrt(self.step2 + eps) / np.sqrt(self.grad2 + eps) * gradient
        self.step2 = rho * self.step2 + (1 - rho) * delta * delta
        theta += delta


def train_epoch(queries: list[TrainQuery], theta: np.ndarray, optimizer: Adadelta, mask: np.ndarray,
                k: int) -> tuple[np.ndarray, float, int]:
    """One cyclic pass of hinge-loss Adadelta steps over the pairs of ``queries``.

    Returns the new weights, the summed loss (before each step) and the number of violated pairs.
    """
    theta = theta.copy()
    loss, violated = 0.0, 0
    for query in queries:
        for positive, negative, margin in query.pairs:
            docs = np.array([positive, negative])
            scores, results = query.scores(theta, docs, k, back_pointers=True)
            value = scores[1] - scores[0] + margin
            gradient = np.zeros(len(theta))
            if value > 0:
                loss += value
                violated += 1
                size = len(theta)
                gradient = (query.features(results, docs, 1, size) - query.features(results, docs, 0, size)) * mask
            optimizer.step(theta, gradient)
    return theta, loss, violated


# ---------------------------------------------------------------- parallel epochs

_SHARDS: list[list[TrainQuery]] = []


def _shard_epoch(job):
    shard, theta, optimizer, mask, k = job
    theta, loss, violated = train_epoch(_SHARDS[shard], theta, optimizer, mask, k)
    return theta, optimizer, loss, violated


@dataclass
class HeldOut:
    """A held-out query: its candidates' relevance in candidate order and its number of relevant documents."""

    query: TrainQuery
    num_relevant: int


def mean_average_precision(held_out: list[HeldOut], theta: np.ndarray, k: int) -> float:
    """MAP of the held-out queries reranked by ``theta`` (ties by docid descending, as trec_eval reads a run)."""
    values = []
    for item in held_out:
        docs = np.arange(len(item.query.docids))
        scores, _ = item.query.scores(theta, docs, k)
        docid_rank = np.argsort(np.argsort(np.array(item.query.docids, dtype=object)))
        order = np.lexsort((-docid_rank, -scores))
        values.append(average_precision(item.query.relevance[order], item.num_relevant))
    return float(np.mean(values)) if values else 0.0


def _set_shards(shards) -> None:
    """Executor initializer: give a worker the training shards (once, not with every epoch's tasks)."""
    _SHARDS[:] = shards


def train(train_queries: list[TrainQuery], held_out: list[HeldOut], space: FeatureSpace, start: BowfdWeights,
          config: LtrSettings, sentence_depth: int, *, jobs: int | ExecutorSettings = 2,
          progress: bool = True) -> tuple[BowfdWeights, list[dict]]:
    """Pairwise LTR with Adadelta, iterative parameter mixing and early stopping (see the module docstring).

    ``jobs``: the shards' workers (an int: local processes; :class:`clirplug.executor.ExecutorSettings`).
    Returns the weights of the best epoch and one record per epoch (loss, violated pairs, held-out MAP).
    """
    if isinstance(jobs, int) and jobs < 1:
        raise ClirplugError(f"BOW-FD training needs at least one job, got {jobs!r}")
    scale = training_scale(start, config)
    original = space.vector(start)
    theta = original * scale
    scaled_start = theta.copy()
    mask = space.trainable(config.train_smt)
    count = max(1, min(config.shards, len(train_queries)))
    shards = [train_queries[i::count] for i in range(count)]
    optimizers = [Adadelta(len(theta), ADADELTA_RHO, ADADELTA_EPSILON) for _ in range(count)]
    best_map = mean_average_precision(held_out, theta, sentence_depth)
    history = [{"epoch": 0, "held_out_map": best_map}]
    best_theta, best_epoch = theta.copy(), 0
    executor = make_executor(jobs, initializer=_set_shards, initargs=(shards,))  # the shards travel once
    try:
        for epoch in range(1, config.epochs + 1):
            work = [(i, theta, optimizers[i], mask, sentence_depth) for i in range(count)]
            results = executor.map(_shard_epoch, work)
            theta = np.mean([r[0] for r in results], axis=0)  # iterative parameter mixing
            optimizers = [r[1] for r in results]
            score = mean_average_precision(held_out, theta, sentence_depth)
            record = {"epoch": epoch, "loss": sum(r[2] for r in results), "violated": sum(r[3] for r in results),
                      "pairs": sum(len(q.pairs) for q in train_queries), "held_out_map": score}
            history.append(record)
            if progress:
                print("BOW-FD LTR " + " ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}"
                                               for k, v in record.items()), file=sys.stderr)
            if score > best_map or not held_out:  # without held-out queries: the last epoch
                best_map, best_theta, best_epoch = score, theta.copy(), epoch
            elif epoch - best_epoch >= config.patience:
                break
    finally:
        executor.close()
        _SHARDS.clear()
    history.append({"best_epoch": best_epoch, "held_out_map": best_map})
    # back to the start's scale (ranks as trained); untouched weights exactly as they were
    return space.weights(np.where(best_theta == scaled_start, original, best_theta / scale), start), history


def training_scale(start: BowfdWeights, config: LtrSettings) -> float:
    """The factor the start weights are multiplied by for training: ``1 / v`` (IR default weight 1)
    with ``config.unit_v`` and ``v > 0``, else 1."""
    return 1.0 / start.v if config.unit_v and start.v > 0 else 1.0


# ---------------------------------------------------------------- building the data


def build_query(model: BowFD, qid: str, text: str, docids: list[str], relevance: np.ndarray,
                space: FeatureSpace) -> TrainQuery | None:
    """A :class:`TrainQuery` from a BOW-FD model (forests, analyzer, index); ``None`` when nothing is left."""
    rows, kept = model.doc_rows(docids)
    if not kept:
        return None
    grade = dict(zip(docids, relevance.tolist()))
    sentences = model.prepare(text)
    if not sentences:
        return None
    bm25 = [bm25_matrix(model.index, s.terms, rows, model.config.k1, model.config.b) for s in sentences]
    return TrainQuery(qid, sentences, kept, np.array([grade[d] for d in kept], dtype=float), bm25, space)


def training_documents(candidates: list[str], judged: dict[str, int], negatives: int,
                       depth: int | None = None) -> tuple[list[str], np.ndarray]:
    """A query's training documents: its judged ones and its top ``negatives`` unjudged candidates.

    With ``depth`` (the number of candidates BOW-FD reranks), only the judged documents among the top
    ``depth`` candidates: the others cannot be reached by reranking (see the module docstring).
    Without it, every judged document.
    """
    unjudged = [d for d in candidates if d not in judged][:negatives]
    if depth is not None:
        reached = set(candidates[:depth])
        judged = {d: g for d, g in judged.items() if d in reached}
    docids = sorted(judged) + unjudged
    return docids, np.array([judged.get(d, 0) for d in docids], dtype=float)


V_EXTENSIONS = 4  # at most this many halvings (or doublings) past an edge of the grid


def choose_v(held_out: list[HeldOut], space: FeatureSpace, start: BowfdWeights, grid, sentence_depth: int) -> list:
    """MAP of the held-out queries for each ``v`` of ``grid`` (IR weights all equal to ``v``), in the order
    evaluated. While the best ``v`` is the smallest (largest) evaluated, its half (double) is tried too, up
    to :data:`V_EXTENSIONS` times, so that the choice is not cut off by the grid's edge."""
    def measure(v):
        weights = BowfdWeights(smt=start.smt, v=float(v), lex=start.lex, lex_enabled=start.lex_enabled)
        return float(v), mean_average_precision(held_out, space.vector(weights), sentence_depth)

    table = [measure(v) for v in grid]
    for _ in range(V_EXTENSIONS):
        best = max(table, key=lambda row: row[1])[0]  # the first best on ties
        values = [v for v, _ in table]
        if best == min(values) and len(values) > 1:
            table.append(measure(best / 2))
        elif best == max(values) and len(values) > 1:
            table.append(measure(best * 2))
        else:
            break
    return table


def config_comment(config: LtrSettings, extra: dict) -> str:
    """The header of a weights file: every option that made it."""
    options = {name: getattr(config, name) for name in LtrSettings.__dataclass_fields__}
    options.update(rho=ADADELTA_RHO, epsilon=ADADELTA_EPSILON)
    return "\n".join(["clirplug BOW-FD weights (Hieber & Riezler 2015), trained by `clirplug train bowfd`"] +
                     [f"{k} = {v}" for k, v in {**options, **extra}.items()])
