"""Reranking the decoder's n-best query translations for retrieval with MIRA (Nikoulina et al., EACL 2012, §3.2).

For a training query ``q`` the decoder proposes ``GEN(q)``, its n-best translations ``t_1..t_N``;
each has a feature vector ``F(t)`` (the decoder's features, query-genre ones, see
:func:`genre_features`, and retrieval ones read off the target index, see
:func:`retrieval_features`) and the average precision ``AP(t)`` of a BM25 search with ``t`` over
the target collection. MIRA (Crammer & Singer 2003, applied to SMT by Watanabe et al. 2007 and
Chiang et al. 2008) learns weights ``λ`` under which the oracle ``t* = argmax_t AP(t)``
outscores every ``t_j`` by at least the loss ``l_j = AP(t*) − AP(t_j)`` (the paper's
objective ``min ½‖λ‖² + C Σ_i max_j (l_ij − λ·(F(t*_i) − F(t_ij)))``), online: each step
solves ``min ½‖λ' − λ‖² + C ξ`` subject to the most violated constraint, i.e. with
``Δ = F(t*) − F(t_j)`` for ``j = argmax_j l_j − λ·Δ_j``::

    τ = min(C, (l_j − λ·Δ) / ‖Δ‖²),    λ ← λ + τ Δ

(passive-aggressive PA-I). Queries are visited in a seeded random order for several epochs and
the weights returned are the average over every step, starting from the decoder's tuned
weights (the other weights from 0), so that without updates the reranked 1-best is the
decoder's. ``C`` is chosen by cross-validation over the training queries, as in the paper,
with the one-standard-error rule; the grid holds ``C = 0`` (no update), so the decoder's
1-best is kept unless reranking beats it on held-out training queries by more than noise.

A multi-sentence query (``desc``) is translated sentence by sentence, as DT does
(:mod:`clirplug.qt.dt`): each sentence is one training instance whose candidates are the
query with that sentence's n-best alternatives and every other sentence at its decoder
1-best; at test time each sentence's n-best list is reranked on its own.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from clirplug.bm25 import ANSERINI_B, ANSERINI_K1
from clirplug.errors import ClirplugError
from clirplug.eval.measures import average_precision
from clirplug.rerank.config import MIRA_C_GRID, MIRA_EPOCHS, MIRA_FOLDS, MIRA_NBEST

GENRE_FEATURES = ("QueryLength", "Copied", "StopwordRatio")
GENRE_STOPWORDS = "en-small"  # shipped list (clirplug/data/stopwords/) behind QueryLength and StopwordRatio
RETRIEVAL_FEATURES = ("Unmatched", "MeanIdf", "MaxIdf")
FORMAT = "clirplug-mira/1"
SEARCHES_FORMAT = "clirplug-mira-searches/1"

# ============================================================================ features and AP


def genre_features(source: Sequence[str], words: Sequence[str], stopwords: frozenset[str]) -> dict[str, float]:
    """Query-genre features of a translation ``words`` of the source tokens ``source``.

    ``QueryLength``: distinct target words that are not stopwords (the terms BM25 sees);
    ``Copied``: target words equal to a source token, case-insensitively (names, commands,
    numbers, whether passed through or translated by an identity rule); ``StopwordRatio``:
    the share of target words that are stopwords (0 for an empty translation).
    """
    lowered = [w.lower() for w in words]
    src = {w.lower() for w in source}
    stops = sum(w in stopwords for w in lowered)
    return {
        "QueryLength": float(len({w for w in lowered if w not in stopwords})),
        "Copied": float(sum(w in src for w in lowered)),
        "StopwordRatio": stops / len(lowered) if lowered else 0.0,
    }


def retrieval_features(text: str, index) -> dict[str, float]:
    """Retrieval features of the DT query ``text`` from the target index's statistics (no search).

    ``text`` is analyzed by the index's analyzer, as BM25 search analyzes a query; over its
    distinct terms (the clauses of the bag-of-words query): ``Unmatched`` counts those no
    document holds (df = 0: a translation no document uses is useless to retrieval);
    ``MeanIdf`` and ``MaxIdf`` are the mean and the maximum Lucene BM25 idf
    ``log(1 + (N − df + 0.5) / (df + 0.5))`` of the others (0 when none is matched).

    Parameters
    ----------
    text : str
    index : clirplug.lucene.reader.LuceneIndex
        Or any object with its ``analyze``, ``df`` and ``idf``.
    """
    terms = sorted(set(index.analyze(text))) if text.strip() else []
    df = np.asarray(index.df(terms), dtype=np.float64) if terms else np.zeros(0)
    idf = np.asarray(index.idf(df[df > 0]), dtype=np.float64)
    return {"Unmatched": float(np.sum(df == 0)),
            "MeanIdf": float(idf.mean()) if len(idf) else 0.0,
            "MaxIdf": float(idf.max()) if len(idf) else 0.0}


def query_words(translation, stop: frozenset[str]) -> list[str]:
    """The words of a translation that go into the DT query (``stop`` removed, as DT removes them)."""
    return [w for w in translation.words if w.lower() not in stop]


def candidate_features(translation, source: Sequence[str], genre_stop: frozenset[str], index=None,
                       stop: frozenset[str] = frozenset()) -> dict[str, float]:
    """``F(t)``: the decoder's features of ``translation``, its genre features and, given the target
    ``index``, the retrieval features of its DT query words (``stop``, DT's stopwords, removed)."""
    features = {**translation.features, **genre_features(source, translation.words, genre_stop)}
    if index is not None:
        features.update(retrieval_features(" ".join(query_words(translation, stop)), index))
    return features


def feature_matrix(feature_dicts: Sequence[Mapping[str, float]], names: Sequence[str]) -> np.ndarray:
    """Rows ``F(t)`` over ``names`` (absent features are 0)."""
    return np.array([[float(f.get(name, 0.0)) for name in names] for f in feature_dicts], dtype=np.float64)


# ============================================================================ MIRA


class Instance(NamedTuple):
    """One query (or one sentence of a multi-sentence query) with its n-best candidates."""

    qid: str
    features: np.ndarray  # (N, K): F(t_j) a row, the decoder's order (row 0 = its 1-best)
    ap: np.ndarray  # (N,): AP(t_j)


def mira_step(weights: np.ndarray, features: np.ndarray, ap: np.ndarray, C: float) -> tuple[np.ndarray, float]:
    """One MIRA step (PA-I on the most violated margin constraint) on one instance.

    The oracle is the candidate of highest AP (of highest current score among ties); the
    constraint is the candidate ``j`` maximizing ``l_j − λ·(F(t*) − F(t_j))``, among those whose
    features differ from the oracle's.

    Returns
    -------
    (numpy.ndarray, float)
        The new weights and the step size ``τ`` (0 when no constraint is violated).
    """
    scores = features @ weights
    best = ap.max()
    tied = np.flatnonzero(ap == best)
    oracle = tied[np.argmax(scores[tied])]
    delta = features[oracle] - features
    norms = np.einsum("ij,ij->i", delta, delta)
    violation = np.where(norms > 0, (best - ap) - (scores[oracle] - scores), -np.inf)
    j = int(np.argmax(violation))
    if not violation[j] > 0:
        return weights, 0.0
    tau = min(C, float(violation[j] / norms[j]))
    return weights + tau * delta[j], tau


def train_mira(instances: Sequence[Instance], initial: np.ndarray, C: float, epochs: int = MIRA_EPOCHS,
               seed: int = 0) -> np.ndarray:
    """Averaged MIRA weights: ``epochs`` passes over ``instances`` in seeded random orders,
    starting from ``initial``; the mean of the weights after every step.

    The mean is accumulated as ``initial`` plus the mean change from it, so that without
    updates (``C = 0``) the result is ``initial`` exactly, not up to rounding.
    """
    start = np.array(initial, dtype=np.float64)
    weights, moved, steps = start, np.zeros_like(start), 0
    rng = np.random.default_rng(seed)
    for _ in range(epochs):
        for i in rng.permutation(len(instances)):
            weights, _ = mira_step(weights, instances[i].features, instances[i].ap, C)
            moved += weights - start
            steps += 1
    return start + moved / steps if steps else start


def choose(features: np.ndarray, weights: np.ndarray) -> int:
    """The reranked 1-best: the candidate of highest ``λ·F`` (the earliest, i.e. the decoder's order, on ties)."""
    return int(np.argmax(features @ weights))


def mean_chosen_ap(instances: Sequence[Instance], weights: np.ndarray) -> float:
    """Mean AP of the candidates ``weights`` choose (over instances)."""
    return float(np.mean([inst.ap[choose(inst.features, weights)] for inst in instances])) if instances else 0.0


def held_out_choices(instances: Sequence[Instance], initial: np.ndarray, grid: Sequence[float],
                     epochs: int = MIRA_EPOCHS, folds: int = MIRA_FOLDS, seed: int = 0) -> list[np.ndarray]:
    """Per ``C`` of ``grid``: the AP of the candidate chosen for each instance by weights trained
    on the other folds (instances in the same order for every ``C``).

    Queries (all sentences of one query together) are split into ``folds`` seeded folds.
    """
    qids = sorted({inst.qid for inst in instances})
    fold_of = dict(zip(qids, np.random.default_rng([seed, 1]).permutation(len(qids)) % folds))
    parts = [[inst for inst in instances if fold_of[inst.qid] == k] for k in range(folds)]
    result = []
    for C in grid:
        chosen = []
        for k in range(folds):
            rest = [inst for m, part in enumerate(parts) if m != k for inst in part]
            weights = train_mira(rest, initial, C, epochs, seed)
            chosen.extend(inst.ap[choose(inst.features, weights)] for inst in parts[k])
        result.append(np.array(chosen, dtype=np.float64))
    return result


def paired_standard_errors(choices: Sequence[np.ndarray]) -> np.ndarray:
    """Per ``C``: the standard error of the mean of the per-instance differences between the best
    ``C``'s held-out APs (highest mean) and this ``C``'s (0 for the best one itself)."""
    best = choices[int(np.argmax([float(ap.mean()) for ap in choices]))]
    return np.array([float((best - ap).std(ddof=1) / np.sqrt(len(ap))) if len(ap) > 1 else 0.0 for ap in choices])


def one_standard_error_choice(grid: Sequence[float], choices: Sequence[np.ndarray]) -> float:
    """The smallest ``C`` whose held-out mean AP is within one standard error of the best one's.

    The "one-standard-error rule" (Hastie, Tibshirani & Friedman, *The Elements of Statistical
    Learning*, §7.10): the standard error is that of the per-instance paired differences with the
    best ``C`` (:func:`paired_standard_errors`), so a gain smaller than its own noise keeps the
    more conservative model (``C = 0``: the decoder's 1-best).
    """
    means = [float(ap.mean()) for ap in choices]
    errors = paired_standard_errors(choices)
    return float(min(C for C, mean, error in zip(grid, means, errors) if max(means) - mean <= error))


# ============================================================================ training data


def build_instances(topics, field: str, translator, searcher, qrels, index=None, nbest: int = MIRA_NBEST,
                    stopwords: Iterable[str] = (), hits: int = 1000, progress: bool = True,
                    searches: dict[str, dict[str, float]] | None = None):
    """Training instances: each query's (sentence's) n-best candidates with their features and AP.

    Parameters
    ----------
    topics : list of clirplug.io.topics.Topic
    field : str
        ``title`` is translated whole, other fields sentence by sentence (as DT does).
    translator : clirplug.mt.translator.Translator
    searcher : clirplug.lucene.search.Bm25Searcher
    qrels : pandas.DataFrame
        Judgements; ``relevance >= 1`` is relevant. Topics without a relevant document are skipped.
    index : clirplug.lucene.reader.LuceneIndex, optional
        The searched index's statistics, for the retrieval features (none without it).
    nbest : int
    stopwords : iterable of str
        Removed from each translation before search (DT's ``--stopwords``).
    hits : int
        Depth of each BM25 search (AP is computed over it).
    searches : dict, optional
        ``qid -> {query text: AP}`` of searches already run with this searcher, qrels and depth;
        only the missing queries are searched, and added to it.

    Returns
    -------
    (list of str, list of (str, list of dict, numpy.ndarray)), dict
        The feature names seen, the instances as (qid, feature dicts, AP) and statistics
        (searches run, distinct queries, instances, informative ones).
    """
    from tqdm import tqdm

    from clirplug.stopwords import load_stopwords

    stop = frozenset(w.lower() for w in stopwords)
    genre_stop = load_stopwords(GENRE_STOPWORDS)
    relevant: dict[str, set[str]] = {}
    for qid, docid, grade in zip(qrels["qid"], qrels["docid"], qrels["relevance"]):
        if grade >= 1:
            relevant.setdefault(str(qid), set()).add(str(docid))
    topics = [t for t in topics if t.id in relevant]
    translator.restrict_topics(topics, field)
    searches = {} if searches is None else searches
    raw, names, searched, queries = [], set(), 0, set()
    for topic in tqdm(topics, desc="n-best AP", unit=" topics", disable=not progress, file=sys.stderr):
        ap_of = searches.setdefault(topic.id, {})
        sentences = translator.topic_sentences(topic, field)
        lists = [translator.translate(tokens, nbest) for tokens in sentences]
        firsts = [" ".join(query_words(cands[0], stop)) if cands else "" for cands in lists]
        for s, (tokens, cands) in enumerate(zip(sentences, lists)):
            if len(cands) < 2:
                continue  # nothing to choose from
            aps = []
            for cand in cands:
                text = " ".join(part for part in firsts[:s] + [" ".join(query_words(cand, stop))] + firsts[s + 1:]
                                if part)
                if text not in ap_of:
                    found = [d in relevant[topic.id] for d, _ in searcher.search(text, hits)]
                    ap_of[text] = average_precision(found, len(relevant[topic.id]))
                    searched += 1
                queries.add((topic.id, text))
                aps.append(ap_of[text])
            dicts = [candidate_features(cand, tokens, genre_stop, index, stop) for cand in cands]
            names.update(*dicts)
            raw.append((topic.id, dicts, np.array(aps)))
    informative = sum(1 for _, _, ap in raw if ap.max() > ap.min())
    stats = {"topics": len(topics), "instances": len(raw), "informative_instances": informative,
             "distinct_queries": len(queries), "searches": searched}
    return sorted(names), raw, stats


def searches_key(qrels, searcher, hits: int) -> str:
    """What the AP of a query text depends on: the judgements, the index, BM25's k1 and b, the depth."""
    import hashlib

    judged = sorted(zip(qrels["qid"].astype(str), qrels["docid"].astype(str), qrels["relevance"].astype(int)))
    key = [judged, str(Path(searcher.index).resolve()), searcher.k1, searcher.b, hits]
    return hashlib.sha256(json.dumps(key, default=str).encode()).hexdigest()


def read_searches(path, key: str) -> dict[str, dict[str, float]]:
    """The ``qid -> {query text: AP}`` table kept in ``path`` for ``key`` (empty when absent or made
    under another key: other judgements, index or search settings)."""
    import gzip

    path = Path(path)
    if not path.is_file():
        return {}
    try:
        data = json.loads(gzip.decompress(path.read_bytes()))
    except (OSError, ValueError, EOFError):
        return {}
    if not isinstance(data, dict) or data.get("format") != SEARCHES_FORMAT or data.get("key") != key:
        return {}
    return data["ap"]


def write_searches(path, key: str, searches: Mapping[str, Mapping[str, float]]) -> None:
    """Keep the ``qid -> {query text: AP}`` table in ``path`` (gzipped JSON, atomically)."""
    import gzip

    from clirplug.atomic import atomic_open

    data = {"format": SEARCHES_FORMAT, "key": key, "ap": {qid: dict(sorted(table.items()))
                                                         for qid, table in sorted(searches.items()) if table}}
    with atomic_open(path, "wb") as out:
        out.write(gzip.compress(json.dumps(data, ensure_ascii=False).encode("utf-8"), mtime=0))


# ============================================================================ model


class MiraModel:
    """Reranking weights over ``names`` (decoder, genre and retrieval features), with the settings they were trained for.

    Parameters
    ----------
    names : sequence of str
    weights : sequence of float
        The averaged MIRA weights.
    settings : dict
        ``kind``, ``nbest``, ``field``, ``C``, ``epochs``, ``seed`` ...
    stats : dict
        Training statistics (instances, cross-validation table, train APs).
    """

    def __init__(self, names: Sequence[str], weights, settings: Mapping, stats: Mapping | None = None):
        self.names = list(names)
        self.weights = np.asarray(weights, dtype=np.float64)
        self.settings = dict(settings)
        self.stats = dict(stats or {})
        self._genre_stop = None

    @property
    def uses_index(self) -> bool:
        """Whether the model weighs retrieval features, so that :meth:`rank` needs the target index."""
        return any(name in RETRIEVAL_FEATURES for name in self.names)

    def rank(self, translations, source: Sequence[str], index=None, stopwords: Iterable[str] = ()) -> int:
        """Index of the reranked 1-best among ``translations`` (n-best of the tokens ``source``).

        ``index`` (a :class:`clirplug.lucene.reader.LuceneIndex` of the searched collection) is
        needed when :attr:`uses_index`; ``stopwords`` are DT's, removed before search.
        """
        if self._genre_stop is None:
            from clirplug.stopwords import load_stopwords

            self._genre_stop = load_stopwords(GENRE_STOPWORDS)
        if self.uses_index and index is None:
            raise ClirplugError("this MIRA model weighs retrieval features "
                                f"({', '.join(RETRIEVAL_FEATURES)}): give the searched index to rerank with it")
        stop = frozenset(w.lower() for w in stopwords)
        dicts = [candidate_features(t, source, self._genre_stop, index if self.uses_index else None, stop)
                 for t in translations]
        return choose(feature_matrix(dicts, self.names), self.weights)

    def save(self, path) -> None:
        """Write the model as JSON, atomically."""
        from clirplug.atomic import atomic_open

        data = {"format": FORMAT, "weights": dict(zip(self.names, self.weights.tolist())),
                "settings": self.settings, "stats": self.stats}
        with atomic_open(path) as out:
            json.dump(data, out, indent=1, ensure_ascii=False)
            out.write("\n")

    @classmethod
    def load(cls, path) -> MiraModel:
        """Read a model written by :meth:`save` (models without retrieval features too)."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as error:
            raise ClirplugError(f"{path}: cannot read a MIRA model ({error})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ClirplugError(f"{path}: not a MIRA model (expected format {FORMAT!r}; train one with "
                                f"`clirplug train mira`)")
        weights = data.get("weights")
        if not isinstance(weights, dict) or not all(isinstance(v, (int, float)) for v in weights.values()):
            raise ClirplugError(f"{path}: field 'weights' must map feature names to numbers")
        return cls(list(weights), list(weights.values()), data.get("settings", {}), data.get("stats", {}))


def train(topics, qrels, translator, searcher, index=None, field: str = "title", nbest: int = MIRA_NBEST,
          grid: Sequence[float] = MIRA_C_GRID, epochs: int = MIRA_EPOCHS, folds: int = MIRA_FOLDS, seed: int = 0,
          stopwords: Iterable[str] = (), hits: int = 1000, progress: bool = True, searches_path=None) -> MiraModel:
    """Learn reranking weights for ``translator``'s n-best lists on training topics (Nikoulina et al. 2012).

    ``C`` is chosen among ``grid`` by ``folds``-fold cross-validation with the one-standard-error
    rule (the plain argmax is recorded in the statistics too), then the weights are trained on
    all instances. See :func:`build_instances` for the parameters (with ``index`` the
    retrieval features are used). With ``searches_path`` the AP of every query searched is kept
    there and reused (:func:`read_searches`): features are always recomputed, searches never twice.
    """
    return train_parts([(topics, translator)], qrels, searcher, index, field, nbest, grid, epochs, folds, seed,
                       stopwords, hits, progress, searches_path)[0]


def train_parts(parts, qrels, searcher, index=None, field: str = "title", nbest: int = MIRA_NBEST,
                grid: Sequence[float] = MIRA_C_GRID, epochs: int = MIRA_EPOCHS, folds: int = MIRA_FOLDS,
                seed: int = 0, stopwords: Iterable[str] = (), hits: int = 1000, progress: bool = True,
                searches_path=None, held_out: bool = False) -> tuple[MiraModel, list[MiraModel]]:
    """:func:`train` on the n-best lists of several parts, each ``(topics, translator)``: cross-fitting, where each
    fold's topics are decoded by the model trained without their pages.

    The translators must decode with the same weights (a fold's model keeps the final model's), MIRA's start.
    Returns the model trained on every part's instances and, with ``held_out``, per part the model trained on
    the other parts' only (that part's own run is then scored by weights that never saw its topics' qrels).
    """
    stopwords = list(stopwords)
    translators = [translator for _, translator in parts]
    if any(t.weights != translators[0].weights for t in translators[1:]):
        raise ClirplugError("the models of the parts decode with different weights; MIRA starts from one decoder's")
    searches, key = {}, None
    if searches_path is not None:
        key = searches_key(qrels, searcher, hits)
        searches = read_searches(searches_path, key)
    known = sum(map(len, searches.values()))
    names, raws, stats = set(), [], {}
    try:
        for topics, translator in parts:
            part_names, raw, part_stats = build_instances(topics, field, translator, searcher, qrels, index, nbest,
                                                          stopwords, hits, progress, searches)
            names.update(part_names)
            raws.append(raw)
            stats = {name: stats.get(name, 0) + count for name, count in part_stats.items()}
    finally:  # an interrupted build keeps the searches it ran
        if searches_path is not None and sum(map(len, searches.values())) > known:
            write_searches(searches_path, key, searches)
    names = sorted(names)
    instances = [[Instance(qid, feature_matrix(dicts, names), ap) for qid, dicts, ap in raw] for raw in raws]
    initial = np.array([translators[0].weights.get(name, 0.0) for name in names])
    settings = {"kind": translators[0].kind, "nbest": nbest, "field": field, "C": None, "epochs": epochs, "folds": folds,
                "seed": seed, "pop_limit": translators[0].pop_limit, "hits": hits, "stopwords": sorted(stopwords)}
    if len(parts) > 1:
        stats["parts"] = len(parts)
    model = fit([inst for part in instances for inst in part], names, initial, grid, settings, stats)
    if not held_out:
        return model, []
    others = []
    for k in range(len(parts)):
        rest = [inst for m, part in enumerate(instances) if m != k for inst in part]
        others.append(fit(rest, names, initial, grid, settings, {"held_out_part": k, "instances": len(rest)}))
    return model, others


def fit(instances: Sequence[Instance], names: Sequence[str], initial: np.ndarray, grid: Sequence[float],
        settings: Mapping, stats: Mapping) -> MiraModel:
    """The model of weights over ``names`` trained on ``instances`` from ``initial``, ``C`` chosen among ``grid``
    by cross-validation with the one-standard-error rule (``settings``: ``epochs``, ``folds``, ``seed``, kept
    with ``C`` in the model's settings; ``stats`` extended with the cross-validation's and training's)."""
    if not instances:
        raise ClirplugError("no training topic has a relevant document and two or more translations: "
                            "check --topics, --qrels and --nbest")
    epochs, seed = settings["epochs"], settings["seed"]
    choices = held_out_choices(instances, initial, grid, epochs, min(settings["folds"], len({i.qid for i in instances})),
                               seed)
    means = [float(ap.mean()) for ap in choices]
    C = one_standard_error_choice(grid, choices)
    weights = train_mira(instances, initial, C, epochs, seed)
    stats = {**stats,
             "cross_validation": [[float(c), round(m, 6)] for c, m in zip(grid, means)],
             "cross_validation_se": [round(float(e), 6) for e in paired_standard_errors(choices)],
             "C": C, "C_argmax": float(grid[int(np.argmax(means))]), "cv_ap_argmax": round(max(means), 6),
             "train_ap_decoder_1best": round(mean_chosen_ap(instances, initial), 6),
             "train_ap_reranked": round(mean_chosen_ap(instances, weights), 6),
             "train_ap_oracle": round(float(np.mean([inst.ap.max() for inst in instances])), 6),
             "initial_weights": dict(zip(names, initial.tolist()))}
    return MiraModel(names, weights, {**settings, "C": C}, stats)


# ============================================================================ DT with the reranked 1-best


def reranked_query(translator, model: MiraModel, topic, field: str, stopwords: Iterable[str] = (), index=None) -> str:
    """The DT query of a topic's ``field`` with each sentence's n-best list reranked by ``model`` (``index``:
    the searched index's statistics, needed by a model with retrieval features, see :meth:`MiraModel.rank`)."""
    stop = frozenset(w.lower() for w in stopwords)
    words = []
    for tokens in translator.topic_sentences(topic, field):
        cands = translator.translate(tokens, int(model.settings.get("nbest", MIRA_NBEST)))
        if cands:
            words.extend(query_words(cands[model.rank(cands, tokens, index, stop)], stop))
    return " ".join(words)


def mira_weights(mira, kind: str, stopwords: Iterable[str]) -> MiraModel:
    """The weights file ``mira`` (:meth:`MiraModel.save`), checked against the grammar ``kind`` and the DT
    ``stopwords`` searched with: those it was trained with."""
    weights = MiraModel.load(mira)
    trained_kind = weights.settings.get("kind")
    if trained_kind is not None and trained_kind != kind:
        raise ClirplugError(f"{mira}: trained on {trained_kind} n-best lists; give --kind {trained_kind}")
    stopwords = sorted(stopwords)
    trained = weights.settings.get("stopwords")
    if trained is not None and sorted(w.lower() for w in trained) != sorted(w.lower() for w in stopwords):
        raise ClirplugError(f"{mira}: trained with {len(trained)} DT stopwords, given {len(stopwords)}: "
                            "give the --stopwords list used by `clirplug train mira`")
    return weights


def mira_queries(topics, field: str, translator, weights: MiraModel, stopwords: Iterable[str] = (), index=None,
                 progress: bool = True, latencies: dict[str, float] | None = None) -> dict[str, str]:
    """``qid -> query`` of every topic, the MIRA-reranked 1-best of each sentence (:func:`reranked_query`;
    ``index``: the searched index's reader, for weights with retrieval features); ``latencies`` gets each
    topic's seconds (n-best lists decoded and reranked)."""
    import time

    from tqdm import tqdm

    translator.restrict_topics(topics, field)
    queries = {}
    for t in tqdm(topics, desc="translating", unit=" topics", disable=not progress, file=sys.stderr):
        start = time.perf_counter()
        queries[t.id] = reranked_query(translator, weights, t, field, stopwords, index)
        if latencies is not None:
            latencies[t.id] = latencies.get(t.id, 0.0) + time.perf_counter() - start
    return queries


def search_run(topics, *, index, model, mira, field: str = "title", kind: str = "hiero", src_lang: str = "de",
               stopwords: Iterable[str] = (), hits: int = 1000, k1: float = ANSERINI_K1, b: float = ANSERINI_B,
               progress: bool = True):
    """DT with the MIRA-reranked 1-best of each sentence (``clirplug search --method dt-mira``).

    ``model`` is the translation model folder, ``mira`` the weights file of :meth:`MiraModel.save`
    (trained on ``kind`` n-best lists with the DT ``stopwords`` given here); the other parameters
    are those of :func:`clirplug.qt.dt.dt_run`. Returns the run frame (qid, docid, rank, score).
    """
    from clirplug.lucene.reader import LuceneIndex
    from clirplug.lucene.search import bm25_search
    from clirplug.mt.translator import Translator

    stopwords = sorted(stopwords)
    weights = mira_weights(mira, kind, stopwords)
    translator = Translator(model, kind=kind, src_lang=src_lang)
    reader = LuceneIndex(index, progress=progress) if weights.uses_index else None
    try:
        queries = mira_queries(topics, field, translator, weights, stopwords, reader, progress)
    finally:
        if reader is not None:
            reader.close()
    return bm25_search(index, queries, hits=hits, k1=k1, b=b, progress=progress)
