"""Bag-of-words forced decoding (BOW-FD; Hieber & Riezler, NAACL 2015).

A candidate document ``d`` is scored by the best derivation of the query's translation
forest when every edge also earns IR features for the target terms it produces (§3):

    score(q, d) = max_h  Σ_{e ∈ h}  w_smt·φ_smt(e) + w_lex·φ_lex(e) + Σ_t c(e, t) w_t bm25(t, d)

where ``c(e, t)`` counts the index term ``t`` among the target words of edge ``e`` (each word
mapped through the index's Lucene analyzer), so a term produced ``k`` times by a derivation
fires ``k`` times and the IR features of a derivation sum to ``BM25(h, d) = Σ_{t ∈ h} bm25(t, d)``
over its yield's terms with repetition (the paper's bag-of-words semantics). The term weight is
``bm25(t, d) = rsj(t) · tf / (k1 ((1 - b) + b dl / avdl) + tf)`` with the Robertson/Spärck Jones
``rsj(t) = log((N - df + 0.5) / (df + 0.5))`` (natural log; negative for ``df > N/2``, as
written) and ``k1 = 1.2``, ``b = 0.75`` (footnote 2; :data:`clirplug.bm25.BOWFD_K1` and ``BOWFD_B``);
``dl`` and ``avdl`` are Lucene's own (decoded length norms, field average). The per-term
weights ``w_t`` default to ``v`` (the IR default weight, ``w_ir = 1·v``; 1.6 in the paper for
Wikipedia de-en); learning to rank (:mod:`clirplug.rerank.bowfd_train`) gives terms their own
weights and may add the LEX sparse indicator features (one per aligned word pair, inserted
target word and deleted source word of a rule). Scores are in the decoder's units (log10 model
scores plus the IR part).

Inference (§3, "Implementation and Complexity Analysis"): one Viterbi pass per sentence over
all candidates at once, on an edges × documents matrix built from the sparse term incidence of
the edges and the documents' BM25 weights (:class:`~clirplug.mt.hypergraph.ViterbiPlan`, in float32 to
rank, in float64 for training's subgradients); documents that
activate no IR feature keep the SMT Viterbi score without a pass (pre-filtering); an optional
beam considers only the first ``beam`` incoming edges of a node in the decoder's (cube pruning,
best first) order. Multi-sentence queries are a product of experts: each sentence ranks the
candidates, a document outside a sentence's top ``k`` takes that ranking's minimum, and the
sentence scores (logs of the experts) are summed.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain

import numpy as np
import scipy.sparse as sp

from clirplug.atomic import atomic_open
from clirplug.bm25 import BOWFD_B, BOWFD_K1
from clirplug.errors import ClirplugError, warn, where
from clirplug.mt.features import check_feature, weight_lines
from clirplug.mt.grammar import is_nonterminal
from clirplug.mt.hypergraph import Hypergraph, ViterbiPlan
from clirplug.rerank.config import DEFAULT_DEPTH, DEFAULT_SENTENCE_DEPTH, BowfdConfig

DEFAULT_V = 1.6  # Hieber & Riezler (2015), Table 1: German-English Wikipedia
MAX_CELLS = 1_000_000  # edges × documents per pass with back pointers: bounds their memory
MAX_SCORE_CELLS = 24_000_000  # edges × documents per scores-only pass (about 100 MB in float32)
SCORE_DTYPE = np.float32  # scores-only passes: half the memory traffic of float64, ~1e-5 off at |score| ~ 100

IR_DEFAULT = "IR_default"  # the name of v in a weights file
IR_PREFIX = "IR:"  # per-term IR weights: "IR:<index term>"
SMT_PREFIX = "SMT:"  # decoder feature weights: "SMT:<feature>"
LEX_ALIGN, LEX_INSERT, LEX_DELETE = "LEXA:", "LEXI:", "LEXD:"  # LEX indicators (a "|" joins f and e)


# ============================================================================ weights


def _escape(name: str) -> str:
    return name.replace("%", "%25").replace("#", "%23").replace(" ", "%20").replace("\t", "%09")


def _unescape(name: str) -> str:
    return name.replace("%09", "\t").replace("%20", " ").replace("%23", "#").replace("%25", "%")


@dataclass
class BowfdWeights:
    """The weights of a BOW-FD model: decoder, IR default ``v``, per-term IR and LEX weights.

    Terms absent from ``ir`` weigh ``v``; LEX features absent from ``lex`` weigh 0. ``lex_enabled``
    says whether the LEX features are computed at all (BOW-FD+LEX).
    """

    smt: dict[str, float]
    v: float = DEFAULT_V
    ir: dict[str, float] = field(default_factory=dict)
    lex: dict[str, float] = field(default_factory=dict)
    lex_enabled: bool = False

    def term_weights(self, terms: Sequence[str]) -> np.ndarray:
        """``w_t`` for each term (``v`` unless learned)."""
        return np.array([self.ir.get(t, self.v) for t in terms], dtype=float)

    def save(self, path, comment: str = "") -> None:
        """Write a readable weights file: ``name value`` a line (``#`` comments; ``%``-escaped names)."""
        lines = [f"# {line}" for line in comment.splitlines()]
        lines.append(f"{IR_DEFAULT} {self.v!r}")
        lines.append(f"LEX_enabled {int(self.lex_enabled)}")
        lines += [f"{SMT_PREFIX}{_escape(n)} {float(w)!r}" for n, w in sorted(self.smt.items())]
        lines += [f"{IR_PREFIX}{_escape(t)} {float(w)!r}" for t, w in sorted(self.ir.items())]
        lines += [f"{_escape(n)} {float(w)!r}" for n, w in sorted(self.lex.items())]
        with atomic_open(path) as out:
            out.write("\n".join(lines) + "\n")

    @classmethod
    def load(cls, path, smt_names: Collection[str] | None = None) -> BowfdWeights:
        """Read a file written by :meth:`save`; ``smt_names``, if given, are the decoder features
        an ``SMT:`` weight may name (the model's, :attr:`~clirplug.mt.translator.Translator.feature_names`).

        Raises
        ------
        ClirplugError
            Naming the file and line of a malformed entry or an unknown decoder feature.
        """
        weights = cls(smt={})
        seen_default = False
        for lineno, name, value in weight_lines(path, missing="cannot read BOW-FD weights"):
            if name == IR_DEFAULT:
                weights.v, seen_default = value, True
            elif name == "LEX_enabled":
                weights.lex_enabled = bool(value)
            elif name.startswith(SMT_PREFIX):
                feature = _unescape(name[len(SMT_PREFIX):])
                if smt_names is not None:
                    check_feature(feature, smt_names, where(path, lineno))
                weights.smt[feature] = value
            elif name.startswith(IR_PREFIX):
                weights.ir[_unescape(name[len(IR_PREFIX):])] = value
            elif name.startswith((LEX_ALIGN, LEX_INSERT, LEX_DELETE)):
                weights.lex[_unescape(name)] = value
            else:
                raise ClirplugError(f"{where(path, lineno)}: unknown BOW-FD weight {name!r} "
                                    f"(expected {IR_DEFAULT}, LEX_enabled, {SMT_PREFIX}*, {IR_PREFIX}* or LEX*)")
        if not seen_default:
            raise ClirplugError(f"{path}: no {IR_DEFAULT} line: not a BOW-FD weights file")
        return weights


# ============================================================================ edge features


def edge_terms(forest: Hypergraph, analyze: Callable[[str], Sequence[str]]) -> tuple[np.ndarray, sp.csr_matrix]:
    """The index terms of the forest and the ``E × T`` counts ``c(e, t)`` of each edge's target words.

    Each target terminal of an edge's template is analyzed on its own (``analyze``, the index's
    Lucene analyzer, cached by the caller): stopwords produce no term, a word may produce several.
    """
    vocabulary: dict[str, int] = {}
    rows, cols = [], []
    for e, template in enumerate(forest.templates):
        for item in template:
            if isinstance(item, str):
                for term in analyze(item):
                    rows.append(e)
                    cols.append(vocabulary.setdefault(term, len(vocabulary)))
    counts = sp.csr_matrix((np.ones(len(rows)), (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))),
                           shape=(forest.num_edges, len(vocabulary)))
    counts.sum_duplicates()
    return np.array(list(vocabulary), dtype=object), counts


def lex_features(forest: Hypergraph) -> list[dict[str, float]]:
    """The LEX indicators of each edge (§3): ``LEXA:f|e`` per aligned terminal pair of its rule,
    ``LEXI:e`` per unaligned target terminal (insertion), ``LEXD:f`` per unaligned source terminal
    (deletion). Edges without a rule (the goal edges) have none."""
    out = []
    for rule in forest.rules:
        features: dict[str, float] = {}
        if rule is not None:
            src_terminal = [not is_nonterminal(t) for t in rule.src]
            tgt_terminal = [not is_nonterminal(t) for t in rule.tgt]
            linked_src, linked_tgt = set(), set()
            for s, t in rule.alignment:
                if src_terminal[s] and tgt_terminal[t]:
                    name = f"{LEX_ALIGN}{rule.src[s]}|{rule.tgt[t]}"
                    features[name] = features.get(name, 0.0) + 1.0
                    linked_src.add(s)
                    linked_tgt.add(t)
            for t, word in enumerate(rule.tgt):
                if tgt_terminal[t] and t not in linked_tgt:
                    features[LEX_INSERT + word] = features.get(LEX_INSERT + word, 0.0) + 1.0
            for s, word in enumerate(rule.src):
                if src_terminal[s] and s not in linked_src:
                    features[LEX_DELETE + word] = features.get(LEX_DELETE + word, 0.0) + 1.0
        out.append(features)
    return out


def _dict_rows(rows: Sequence[Mapping[str, float]]) -> tuple[tuple[str, ...], sp.csr_matrix]:
    """Feature dicts as (names, ``rows × names`` CSR matrix)."""
    names = sorted({name for row in rows for name in row})
    index = {name: i for i, name in enumerate(names)}
    r = np.repeat(np.arange(len(rows)), [len(row) for row in rows])
    c = np.array([index[name] for row in rows for name in row], dtype=np.int64)
    v = np.array([value for row in rows for value in row.values()], dtype=float)
    return tuple(names), sp.csr_matrix((v, (r, c)), shape=(len(rows), len(names)))


def restrict_incoming(forest: Hypergraph, beam: int) -> Hypergraph:
    """The forest with only the first ``beam`` incoming edges of each node, in the decoder's order
    (cube pruning pops best first), as the paper's beam discontinues the max (§3)."""
    if beam < 1:
        raise ClirplugError(f"the beam must be at least 1, got {beam}")
    position = np.arange(forest.num_edges) - forest.offsets[forest.heads]
    if np.all(position < beam):
        return forest
    return forest.subgraph(np.flatnonzero(position < beam))


class PreparedSentence:
    """One query sentence's forest with its document-independent parts.

    Attributes
    ----------
    forest : Hypergraph
    terms : numpy.ndarray of str
        The index terms its edges produce (``T``).
    counts : scipy.sparse.csr_matrix
        ``E × T`` term counts ``c(e, t)``.
    lex_names : tuple of str
    lex : scipy.sparse.csr_matrix
        ``E × L`` LEX indicators (no columns unless ``lex`` was asked for).
    tokens : tuple of str
        The source tokens.
    """

    def __init__(self, forest: Hypergraph, analyze: Callable[[str], Sequence[str]], lex: bool = False,
                 beam: int | None = None, tokens: Sequence[str] = ()):
        self.forest = restrict_incoming(forest, beam) if beam else forest
        self.terms, self.counts = edge_terms(self.forest, analyze)
        self.plan = ViterbiPlan(self.forest)
        self.plan_counts = self.counts[self.plan.order].astype(np.float32)  # rows in the plan's order (exact)
        self.lex_names, self.lex = _dict_rows(lex_features(self.forest)) if lex else ((), sp.csr_matrix(
            (self.forest.num_edges, 0)))
        self.tokens = tuple(tokens)

    def edge_scores(self, weights: BowfdWeights) -> np.ndarray:
        """The document-independent part of every edge's score: ``w_smt·φ_smt(e) + w_lex·φ_lex(e)``."""
        scores = self.forest.edge_scores(weights.smt)
        if self.lex.shape[1] and weights.lex:
            scores = scores + self.lex @ np.array([weights.lex.get(n, 0.0) for n in self.lex_names])
        return scores


# ============================================================================ IR statistics


def rsj(df, num_docs: int) -> np.ndarray:
    """Robertson/Spärck Jones weight ``log((N - df + 0.5) / (df + 0.5))`` (natural log; §3)."""
    df = np.asarray(df, dtype=float)
    return np.log((num_docs - df + 0.5) / (df + 0.5))


def bm25_matrix(index, terms: Sequence[str], docs: np.ndarray, k1: float = BOWFD_K1, b: float = BOWFD_B) -> np.ndarray:
    """``D × T`` matrix of ``bm25(t, d) = rsj(t) · tf / (k1 ((1 - b) + b dl / avdl) + tf)`` (§3).

    ``index`` is a :class:`clirplug.lucene.reader.LuceneIndex` (or any object with ``num_docs``,
    ``df``, ``tf_matrix`` and ``bm25_tf`` of the same meaning); ``docs`` are internal numbers.
    """
    terms = list(terms)
    if not terms or len(docs) == 0:
        return np.zeros((len(docs), len(terms)))
    tf = index.tf_matrix(terms, docs)
    saturated = index.bm25_tf(tf, k1, b, docs)
    weights = rsj(index.df(terms), index.num_docs)
    return np.asarray(saturated.multiply(weights[None, :]).todense()) if sp.issparse(saturated) else saturated * weights


# ============================================================================ inference


@dataclass
class SentenceScores:
    """The result of scoring documents against one sentence forest.

    ``scores`` (D,) the Viterbi scores; ``active`` (D,) bool, the documents that had a pass of
    their own (the others hold ``smt_score``); ``best`` the ``N × D_active`` back pointers of the
    active documents and ``smt_best`` those of the SMT Viterbi derivation (both only when asked for).
    """

    scores: np.ndarray
    active: np.ndarray
    smt_score: float
    smt_best: np.ndarray | None = None
    best: np.ndarray | None = None

    def back_pointers(self, d: int) -> np.ndarray:
        """The back pointers of document ``d``'s winning derivation."""
        if self.best is None or self.smt_best is None:
            raise ValueError("the scores were computed without back pointers")
        if not self.active[d]:
            return self.smt_best
        return self.best[:, int(np.count_nonzero(self.active[:d]))]


def score_sentence(sentence: PreparedSentence, edge_scores: np.ndarray, term_weights: np.ndarray,
                   bm25: np.ndarray, back_pointers: bool = False, max_cells: int | None = None,
                   dtype=SCORE_DTYPE) -> SentenceScores:
    """BOW-FD Viterbi scores of ``D`` documents for one sentence (eq. 4), all documents at once.

    Parameters
    ----------
    sentence : PreparedSentence
    edge_scores : array (E,)
        The document-independent edge scores (:meth:`PreparedSentence.edge_scores`).
    term_weights : array (T,)
        ``w_t`` per term of ``sentence.terms``.
    bm25 : array (D, T)
        ``bm25(t, d)`` (:func:`bm25_matrix`).
    back_pointers : bool
        Also keep the winning derivations (the same scores, with the memory of back pointers).
    max_cells : int, optional
        Edges × documents per pass of the numpy Viterbi (without numba; default :data:`MAX_CELLS`
        with back pointers, else :data:`MAX_SCORE_CELLS`).
    dtype : numpy dtype
        The Viterbi table's: :data:`SCORE_DTYPE` to rank, float64 for training's exact sums.
    """
    plan = sentence.plan
    weighted = np.asarray(bm25, dtype=float) * term_weights[None, :]  # D × T
    active = np.any(weighted != 0.0, axis=1)  # pre-filtering: no IR activation, no pass
    docs = np.flatnonzero(active)
    if max_cells is None:
        max_cells = MAX_CELLS if back_pointers else MAX_SCORE_CELLS
    # column 0 has no IR feature: it gives the SMT Viterbi score (and derivation); the others
    # are the active documents
    columns = np.vstack([np.zeros((1, weighted.shape[1])), weighted[docs]]).astype(dtype)
    values, best = plan.linear(edge_scores[plan.order].astype(dtype), sentence.plan_counts, columns, back_pointers,
                               max_cells)
    scores = np.full(len(weighted), values[0])
    scores[docs] = values[1:]
    if back_pointers:
        return SentenceScores(scores, active, float(values[0]), best[:, 0], best[:, 1:])
    return SentenceScores(scores, active, float(values[0]))


def combine_sentences(sentence_scores: Sequence[np.ndarray], k: int = DEFAULT_SENTENCE_DEPTH) -> np.ndarray:
    """Product of experts over sentences (§3, "Multi-Sentence Queries"), in log space.

    Each sentence ranks the documents; a document outside its top ``k`` takes the minimum score
    of that top ``k``; the (log) scores are summed over sentences.
    """
    if not sentence_scores:
        raise ValueError("no sentence scores to combine")
    total = np.zeros(len(sentence_scores[0]))
    for scores in sentence_scores:
        scores = np.asarray(scores, dtype=float)
        if k < len(scores):
            order = np.lexsort((np.arange(len(scores)), -scores))
            floor = scores[order[k - 1]]
            smoothed = np.full(len(scores), floor)
            smoothed[order[:k]] = scores[order[:k]]
            scores = smoothed
        total += scores
    return total


def derivation_edge_counts(forest: Hypergraph, pointers: np.ndarray) -> np.ndarray:
    """How often each edge occurs in the derivation that follows ``pointers`` down from the goal."""
    return np.bincount(np.asarray(derivation_walk(forest, pointers)[0], dtype=np.int64),
                       minlength=forest.num_edges).astype(float)


def derivation_yield(forest: Hypergraph, pointers: np.ndarray) -> tuple[str, ...]:
    """The target words of the derivation that follows ``pointers``."""
    return derivation_walk(forest, pointers)[1]


def derivation_walk(forest: Hypergraph, pointers: np.ndarray) -> tuple[list[int], tuple[str, ...]]:
    """The edges (in pre-order, an edge as often as it occurs) and the target words of the derivation that
    follows ``pointers`` down from the goal: :meth:`Hypergraph.derivation_yield`'s words, read off the templates
    without building the derivation tree."""
    edges: list[int] = []
    words: list[str] = []
    stack = [(int(pointers[forest.goal]), 0)]  # (edge, next template position)
    while stack:
        e, p = stack.pop()
        if p == 0:
            edges.append(e)
        template = forest.templates[e]
        while p < len(template) and isinstance(template[p], str):
            words.append(template[p])
            p += 1
        if p < len(template):  # a tail: expand it, then come back after it
            stack.append((e, p + 1))
            stack.append((int(pointers[forest.tails[e][template[p]]]), 0))
    return edges, tuple(words)


def explain_sentence(sentence: PreparedSentence, result: SentenceScores, bm25: np.ndarray) -> list[dict]:
    """Each document's winning derivation for one sentence (``result`` with back pointers; ``bm25`` its
    ``D × T`` matrix): its yield, score, whether it was pre-filtered, and the BM25 features it fired
    (``term: c(t) bm25(t, d)``, in the order of ``sentence.terms``)."""
    forest, num_docs = sentence.forest, len(result.scores)
    smt = derivation_walk(forest, result.back_pointers(int(np.argmin(result.active)))) if not result.active.all() \
        else None  # shared by the pre-filtered documents
    walks = [derivation_walk(forest, result.back_pointers(d)) if result.active[d] else smt for d in range(num_docs)]
    # each derivation's term counts c(t): its edges' rows of c(e, t) summed (small integers: exact in any order)
    lengths = np.fromiter((len(edges) for edges, _ in walks), dtype=np.int64, count=num_docs)
    edges = np.fromiter(chain.from_iterable(edges for edges, _ in walks), dtype=np.int64, count=int(lengths.sum()))
    occurrences = sp.csr_matrix((np.ones(len(edges)), (np.repeat(np.arange(num_docs), lengths), edges)),
                                shape=(num_docs, forest.num_edges))
    term_counts = (occurrences @ sentence.counts).toarray()
    rows, columns = np.nonzero((term_counts != 0) & (bm25 != 0))  # the fired terms, document by document
    names = [str(term) for term in sentence.terms[columns].tolist()]
    values = [round(value, 6) for value in (term_counts[rows, columns] * bm25[rows, columns]).tolist()]
    bounds = np.searchsorted(rows, np.arange(num_docs + 1)).tolist()
    scores, active = result.scores.tolist(), result.active.tolist()
    return [{"yield": " ".join(words), "score": scores[d], "prefiltered": not active[d],
             "bm25": dict(zip(names[bounds[d]:bounds[d + 1]], values[bounds[d]:bounds[d + 1]]))}
            for d, (_, words) in enumerate(walks)]


# ============================================================================ the reranker


class BowFD:
    """BOW-FD over a translation model and a Lucene index.

    Parameters
    ----------
    translator
        Gives ``sentences(text, split)`` and ``forest(tokens)`` (a
        :class:`clirplug.mt.translator.Translator`, or :class:`NoLMForests` for the -LM ablation).
    index
        A :class:`clirplug.lucene.reader.LuceneIndex` (statistics and analyzer).
    weights : BowfdWeights
    config : BowfdConfig
    """

    def __init__(self, translator, index, weights: BowfdWeights, config: BowfdConfig = BowfdConfig()):
        self.translator, self.index, self.weights, self.config = translator, index, weights, config
        self._row = {docid: i for i, docid in enumerate(index.docids.tolist())}
        self._words: dict[str, tuple[str, ...]] = {}

    def analyze(self, word: str) -> tuple[str, ...]:
        """The index terms of one target word (cached)."""
        terms = self._words.get(word)
        if terms is None:
            terms = self._words[word] = tuple(self.index.analyze(word))
        return terms

    def prepare(self, text: str, field: str | None = None) -> list[PreparedSentence]:
        """The prepared forests of a query text (one per sentence unless ``field`` is ``title``)."""
        field = field or self.config.field
        return [PreparedSentence(self.translator.forest(tokens), self.analyze, self.weights.lex_enabled,
                                 self.config.beam, tokens)
                for tokens in self.translator.sentences(text, split=field != "title", query=True)]

    def doc_rows(self, docids: Sequence[str]) -> tuple[np.ndarray, list[str]]:
        """Internal numbers of the ``docids`` found in the index, and those ids."""
        kept = [d for d in docids if d in self._row]
        return np.array([self._row[d] for d in kept], dtype=np.int64), kept

    def score(self, sentences: Sequence[PreparedSentence], docs: np.ndarray, back_pointers: bool = False,
              weights: BowfdWeights | None = None) -> tuple[np.ndarray, list[SentenceScores]]:
        """Combined scores of the documents ``docs`` (internal numbers) and each sentence's result."""
        scores, results, _ = self._scored(sentences, docs, back_pointers, weights)
        return scores, results

    def _scored(self, sentences, docs, back_pointers=False, weights=None):
        """:meth:`score` and each sentence's ``D × T`` BM25 matrix (its columns the sentence's terms)."""
        weights = weights or self.weights
        terms = sorted({str(t) for sentence in sentences for t in sentence.terms})
        column = {t: i for i, t in enumerate(terms)}
        bm25 = bm25_matrix(self.index, terms, docs, self.config.k1, self.config.b)  # once for all sentences
        results, own = [], []
        for sentence in sentences:
            own.append(bm25[:, [column[t] for t in sentence.terms]])
            results.append(score_sentence(sentence, sentence.edge_scores(weights), weights.term_weights(sentence.terms),
                                          own[-1], back_pointers))
        if not results:
            return np.zeros(len(docs)), results, own
        return combine_sentences([r.scores for r in results], self.config.sentence_depth), results, own

    def rerank(self, topics, candidates, depth: int = 1000, field: str | None = None, progress: bool = False,
               explain=None, latencies: dict[str, float] | None = None, records: dict[str, list[dict]] | None = None):
        """Rescore each topic's top ``depth`` candidates (a run frame); return a run frame.

        Candidates missing from the index are dropped with a warning (an error when all are). With ``explain`` (a writable text
        handle), one JSON line per (query, document) gives each sentence's winning yield, its
        score and the BM25 features it fired. With ``records`` (a dict), each topic's records of
        :meth:`derivations` (of this very scoring pass) are stored under its id. With ``latencies``, the
        seconds of each topic that has candidates are added to its entry (0 when absent).
        """
        import pandas as pd
        from tqdm import tqdm

        from clirplug.io.runs import SCORED_COLUMNS, add_latency, check_shared_topics, sort_run

        check_shared_topics(candidates, topics)
        field = field or self.config.field
        ranked = sort_run(candidates)
        groups = {qid: frame["docid"].tolist()[:depth] for qid, frame in ranked.groupby("qid", sort=False)}
        rows, missing, total = [], [], 0
        for topic in tqdm(topics, desc="BOW-FD", unit=" topics", disable=not progress, file=sys.stderr, leave=False):
            if topic.id not in groups:
                continue
            start = time.perf_counter()
            total += len(groups[topic.id])
            missing.extend((topic.id, d) for d in groups[topic.id] if d not in self._row)
            rows.extend(self._topic_rows(topic, groups[topic.id], field, explain, records))
            add_latency(latencies, topic.id, start)
        if missing:
            what = (f"{len(missing)} of {total} candidate documents are not in the index "
                    f"(first: {missing[0][1]!r} of topic {missing[0][0]!r})")
            if len(missing) == total:
                raise ClirplugError(f"BOW-FD: {what}: are the candidates from another collection?")
            warn(f"BOW-FD: {what}; they are dropped")
        frame = pd.DataFrame(rows, columns=SCORED_COLUMNS)
        return sort_run(frame)

    def _topic_rows(self, topic, candidates: Sequence[str], field: str, explain,
                    records: dict[str, list[dict]] | None = None) -> list[tuple[str, str, float]]:
        """``(qid, docid, score)`` of one topic's ``candidates`` found in the index (their records to ``explain``
        and into ``records``)."""
        import json

        from clirplug.io.topics import topic_field

        docs, docids = self.doc_rows(candidates)
        if not docids:
            return []
        sentences = self.prepare(topic_field(topic, field), field)
        if not sentences:
            return []
        derived = explain is not None or records is not None
        scores, results, bm25 = self._scored(sentences, docs, back_pointers=derived)
        if derived:
            topic_records = self._records(sentences, results, scores, docids, bm25)
            if records is not None:
                records[topic.id] = topic_records
            for record in topic_records if explain is not None else ():
                explain.write(json.dumps({"qid": topic.id, **record}, ensure_ascii=False) + "\n")
        return list(zip([topic.id] * len(docids), docids, scores.tolist()))

    def derivations(self, text: str, docids: Sequence[str], field: str | None = None) -> list[dict]:
        """The winning derivations of the query ``text`` for each of ``docids`` found in the index: the records
        of ``clirplug rerank --explain`` without the qid (docid, score, and :meth:`explain` per sentence).

        The scores are :meth:`rerank`'s, to the last bit.
        """
        docs, kept = self.doc_rows(docids)
        if not kept:
            return []
        sentences = self.prepare(text, field)
        scores, results, bm25 = self._scored(sentences, docs, back_pointers=True)
        return self._records(sentences, results, scores, kept, bm25)

    def _records(self, sentences, results, scores, docids, bm25) -> list[dict]:
        explained = [explain_sentence(sentence, result, own) for sentence, result, own in zip(sentences, results, bm25)]
        return [{"docid": docid, "score": float(scores[d]), "sentences": [sentence[d] for sentence in explained]}
                for d, docid in enumerate(docids)]


def explanation(record: Mapping, weights: BowfdWeights) -> dict:
    """A winning derivation (a record of :meth:`BowFD.derivations`) for display: ``{"derivation", "score",
    "sentences": [{"yield", "score", "terms": [{"term", "bm25", "weight", "contribution"}, ...]}, ...]}``, each
    fired term's ``c(t) bm25(t, d)``, its weight ``w_t`` and their product (its share of the score), the terms by
    falling contribution."""
    sentences = []
    for sentence in record["sentences"]:
        fired = list(sentence["bm25"].items())
        term_weights = weights.term_weights([term for term, _ in fired]) if fired else []
        terms = [{"term": term, "bm25": value, "weight": float(weight), "contribution": float(weight) * value}
                 for (term, value), weight in zip(fired, term_weights)]
        sentences.append({"yield": sentence["yield"], "score": sentence["score"],
                          "terms": sorted(terms, key=lambda term: -term["contribution"])})
    return {"derivation": " ".join(s["yield"] for s in record["sentences"]), "score": record["score"],
            "sentences": sentences}


class NoLMForests:
    """The -LM forests of a model (the paper's Table 2 ablation): its grammar and weights, no LM.

    Wraps a :class:`clirplug.mt.translator.Translator` (for tokenization, grammar and weights);
    forests are kept in memory only.
    """

    def __init__(self, translator):
        from clirplug.mt.decoder import Decoder
        from clirplug.mt.grammar import read_grammar

        self.translator = translator
        self.weights = translator.weights
        self.decoder = Decoder(read_grammar(translator.grammar_path, translator.restriction), None, translator.weights,
                               translator.pop_limit, translator.max_span)
        self._cache: dict[tuple[str, ...], Hypergraph] = {}

    def sentences(self, text: str, split: bool = True, query: bool = False) -> list[list[str]]:
        return self.translator.sentences(text, split, query)

    def forest(self, tokens: Sequence[str]) -> Hypergraph:
        key = tuple(tokens)
        if key not in self._cache:
            self._cache[key] = self.decoder.forest(tokens)
        return self._cache[key]


# ============================================================================ a run reranked


def bowfd_reranker(translator, index, config: BowfdConfig = BowfdConfig(), weights=None, v: float | None = None,
                   lm: bool = True, progress: bool = False, topics=None) -> BowFD:
    """The :class:`BowFD` of a loaded :class:`~clirplug.mt.translator.Translator` and ``index`` (a
    :class:`~clirplug.lucene.reader.LuceneIndex`, or a path opened after the weights are read);
    ``weights``, ``v`` and ``lm`` as in :func:`rerank_run` (loaded weights are copied, not changed).

    With ``topics``, the queries to be reranked, the translator is first restricted to their
    ``config.field`` sentences: without ``lm``, the -LM forests are decoded with the rules of the
    translator's restriction at this call.
    """
    from clirplug.lucene.reader import LuceneIndex

    if topics is not None:
        translator.restrict_topics(topics, config.field)
    if weights is None:
        loaded = BowfdWeights(smt=dict(translator.weights))
    else:
        if not isinstance(weights, BowfdWeights):
            weights = BowfdWeights.load(weights, translator.feature_names)
        loaded = replace(weights, smt={**translator.weights, **weights.smt})
    if v is not None:
        loaded.v = v
    forests = translator if lm else NoLMForests(translator)
    if not isinstance(index, LuceneIndex):
        index = LuceneIndex(index, progress=progress)
    return BowFD(forests, index, loaded, config)


def rerank_run(topics, candidates, *, model, index, config: BowfdConfig = BowfdConfig(), weights=None,
               v: float | None = None, kind: str = "hiero", src_lang: str = "de", lm: bool = True,
               depth: int = DEFAULT_DEPTH, explain=None, progress: bool = True, latencies: dict[str, float] | None = None):
    """BOW-FD over each topic's ``candidates`` (a run frame; ``clirplug rerank --method bowfd``).

    Parameters
    ----------
    topics : list of Topic
        Queried by their ``config.field``, in the language ``src_lang``.
    candidates : DataFrame
        The first-stage run whose top ``depth`` documents of each topic are rescored.
    model : path or Translator
        Translation model folder (``docs/models.md``), decoded with its ``kind`` grammar, or a loaded
        :class:`~clirplug.mt.translator.Translator` (restricted to the topics here, ``kind`` and
        ``src_lang`` its own); without ``lm``, its -LM forests (:class:`NoLMForests`, the paper's ablation).
    index : path or LuceneIndex
        Lucene index of the candidates (statistics and analyzer).
    config : BowfdConfig
    weights : path or BowfdWeights, optional
        Weights from ``clirplug train bowfd``: their file, or the file loaded (:meth:`BowfdWeights.load`,
        given the model's ``feature_names``); default: the model's decoder weights and ``v`` on every term.
    v : float, optional
        Overrides the IR default weight of ``weights``.
    explain : path, optional
        Also write each (query, document)'s winning derivation per sentence as JSON lines.
    latencies : dict, optional
        Each reranked topic's seconds are added to its entry (0 when absent).

    Returns
    -------
    DataFrame
        The reranked run (qid, docid, rank, score).
    """
    from clirplug.mt.translator import Translator

    translator = model if isinstance(model, Translator) else Translator(model, kind=kind, src_lang=src_lang)
    reranker = bowfd_reranker(translator, index, config, weights, v, lm, progress, topics)
    if explain is not None:
        with atomic_open(explain) as handle:
            return reranker.rerank(topics, candidates, depth, progress=progress, explain=handle, latencies=latencies)
    return reranker.rerank(topics, candidates, depth, progress=progress, latencies=latencies)
