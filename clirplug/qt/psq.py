"""Probabilistic structured queries: BM25 over translation-weighted tf and df (paper 001, eq. 3).

For a query ``F`` with one distribution ``p(e|f)`` per source token ``f``
(:mod:`clirplug.qt.psq_tables`),

    score(E|F) = Σ_f BM25(tf(f, E), df(f)),   tf(f, E) = Σ_e p(e|f) tf(e, E),   df(f) = Σ_e p(e|f) df(e),

summed over the sentences of a multi-sentence query (Darwish & Oard 2003; Ture & Lin).
BM25 is Lucene's (``BM25Similarity``, as :mod:`clirplug.bm25` computes it):
``idf(df) · tf / (tf + k1 (1 - b + b dl/avgdl))`` with the index's N, average length and
decoded length norms, so that PSQ with the identity table ``p(t|t) = 1`` *is* Lucene's BM25 of
the same analyzed query (a repeated source token counts once per occurrence, as Anserini's
bag-of-words query boosts it by its count).

Targets are mapped to index terms by the index's own analyzer
(:meth:`clirplug.lucene.reader.LuceneIndex.analyze_phrase`): a target that analyzes to no
term is dropped, one that analyzes to several terms (a one-to-many expression, or a token
such as ``/etc/passwd``) is an exact phrase, matched through Lucene positions, whose df is
the number of documents containing it. Targets mapping to the same index expression have
their probabilities added.

Scoring is sparse linear algebra: the term columns ``T`` (documents × expressions) of the
index's cached tf matrix, ``tf = T P`` and ``df = df_e P`` for the expressions × sources
probability matrix ``P``, then BM25 over the non-zeros. Candidates are the documents with
at least one translation term.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from clirplug import bm25
from clirplug.errors import ClirplugError
from clirplug.io.runs import add_latency, search_each
from clirplug.lucene.reader import LuceneIndex
from clirplug.qt.psq_tables import PsqSettings

Expression = tuple[tuple[str, int], ...]  # ((index term, relative position), ...)


def source_projection(query: Sequence[Mapping[Expression, float]]):
    """A query's projection: the ``expressions × sources`` matrix of ``p(expression | source)``, each
    source's count in the query, and the expressions (rows) in order of first appearance.

    Identical source distributions (a repeated token) are one column counted as often as they occur.
    """
    keyed: dict[tuple, int] = {}
    for dist in query:
        key = tuple(sorted(dist.items()))
        keyed[key] = keyed.get(key, 0) + 1
    sources = list(keyed)
    counts = np.array([keyed[key] for key in sources], dtype=np.float64)
    vocabulary: dict[Expression, int] = {}
    rows, cols, probs = [], [], []
    for s, key in enumerate(sources):
        for expression, p in key:
            rows.append(vocabulary.setdefault(expression, len(vocabulary)))
            cols.append(s)
            probs.append(p)
    projection = sp.csr_matrix((probs, (rows, cols)), shape=(len(vocabulary), len(sources)))
    return projection, counts, list(vocabulary)


class PsqScorer:
    """PSQ retrieval over one Lucene index.

    Parameters
    ----------
    index : LuceneIndex or path
    k1, b : float
        BM25 parameters (default: Anserini's, :data:`clirplug.bm25.ANSERINI_K1` and ``ANSERINI_B``;
        the papers used 1.2 and 0.75).
    progress : bool
        Whether a path's document vectors, read from Lucene on first use, show a progress bar.
    """

    def __init__(self, index, k1: float = bm25.ANSERINI_K1, b: float = bm25.ANSERINI_B, progress: bool = True):
        bm25.check_bm25(k1, b)
        self.index = index if isinstance(index, LuceneIndex) else LuceneIndex(index, progress=progress)
        self.k1, self.b = k1, b
        self._norms = self.index.length_norms(k1, b)
        self._docid_rank = np.argsort(np.argsort(self.index.docids, kind="stable"), kind="stable")
        self._docids = [str(docid) for docid in self.index.docids.tolist()]
        self._analyzed: dict[str, Expression] = {}

    def analyze(self, target: str) -> Expression:
        """The index expression of a target (:meth:`LuceneIndex.analyze_phrase`), memoized."""
        expression = self._analyzed.get(target)
        if expression is None:
            expression = self._analyzed[target] = self.index.analyze_phrase(target)
        return expression

    def expressions(self, distributions: Sequence[Mapping[str, float]]) -> list[dict[Expression, float]]:
        """Map each source token's ``{target: p}`` onto index expressions (see the module docstring).

        The mass of targets that analyze to no term goes to the others in proportion, so each
        distribution keeps its total (a token translated only into dropped words is dropped).
        """
        query = []
        for dist in distributions:
            mapped: dict[Expression, float] = {}
            total = kept = 0.0
            for target, p in dist.items():
                if p <= 0:
                    continue
                total += p
                expression = self.analyze(target)
                if expression:
                    mapped[expression] = mapped.get(expression, 0.0) + p
                    kept += p
            if mapped:
                query.append({expression: p * total / kept for expression, p in mapped.items()})
        return query

    def _columns(self, expressions: Sequence[Expression]) -> tuple[sp.csc_matrix, np.ndarray]:
        """The documents × expressions tf matrix and the expressions' document frequencies."""
        index = self.index
        indptr, indices, data = [0], [], []
        for expression in expressions:
            docs, tfs = index.postings(expression[0][0]) if len(expression) == 1 else index.phrase_postings(expression)
            indices.append(docs)
            data.append(tfs)
            indptr.append(indptr[-1] + len(docs))
        tf = sp.csc_matrix((np.concatenate(data).astype(np.float64), np.concatenate(indices), np.array(indptr)),
                           shape=(index.matrix.shape[0], len(expressions)))
        return tf, np.diff(tf.indptr).astype(np.float64)

    def score(self, query: Sequence[Mapping[Expression, float]]) -> tuple[np.ndarray, np.ndarray]:
        """Internal numbers and PSQ scores of the candidate documents of ``query`` (unordered)."""
        if not query:
            return np.zeros(0, np.int64), np.zeros(0)
        projection, counts, expressions = source_projection(query)
        tf_e, df_e = self._columns(expressions)
        tf = (tf_e @ projection).tocoo()  # documents × sources: tf(f, E)
        df = projection.T @ df_e  # df(f)
        idf = self.index.idf(df)
        values = bm25.score(tf.data, self._norms[tf.row], counts[tf.col] * idf[tf.col])
        docs = np.flatnonzero(np.bincount(tf.row, minlength=tf.shape[0]))  # each document's values summed in order
        return docs, np.bincount(tf.row, weights=values, minlength=tf.shape[0])[docs]

    def ranking(self, docs: np.ndarray, scores: np.ndarray, hits: int) -> tuple[np.ndarray, np.ndarray]:
        """Internal numbers and scores of the ``hits`` best of ``docs``, score descending, ties by docid ascending."""
        if len(docs) > hits:
            keep = np.argpartition(-scores, hits - 1)[:hits]
            threshold = scores[keep].min()  # keep every document tied with the last one, then cut
            keep = np.flatnonzero(scores >= threshold)
            docs, scores = docs[keep], scores[keep]
        order = np.lexsort((self._docid_rank[docs], -scores))[:hits]
        return docs[order], scores[order]

    def trec_eval_order(self, docs: np.ndarray, scores: np.ndarray) -> np.ndarray:
        """The permutation of a :meth:`ranking` that puts it in trec_eval's reading order (ties by docid descending)."""
        return np.lexsort((-self._docid_rank[docs], -scores))

    def top(self, docs: np.ndarray, scores: np.ndarray, hits: int) -> list[tuple[str, float]]:
        """The ``hits`` best ``(docid, score)``, score descending, ties by docid ascending."""
        docs, scores = self.ranking(docs, scores, hits)
        return list(zip(map(self._docids.__getitem__, docs.tolist()), scores.tolist()))

    def search(self, distributions: Sequence[Mapping[str, float]], hits: int = 1000) -> list[tuple[str, float]]:
        """Top ``hits`` ``(docid, score)`` for a query given as per-token ``{target: p}`` distributions."""
        return self.top(*self.score(self.expressions(distributions)), hits)


@dataclass(frozen=True)
class PsqSource:
    """Where the PSQ tables of a query come from, and how its text is read.

    Parameters
    ----------
    model : path, optional
        Model folder (``docs/models.md``): ``lex.e_given_f.npz`` for Pr_token, ``grammar.<kind>.gz``
        for Pr_grammar, the decoder of ``kind`` for Pr_nbest.
    field : {"title", "desc", "narr"}
        The topic field turned into the query (sentence by sentence but for a title).
    kind : {"hiero", "flat"}
    src_lang : str
        The query language (tokenization, sentence splitting).
    table : path, optional
        A precomputed table ``p(e|f)`` (:meth:`clirplug.qt.psq_tables.PsqTable.load`) used instead of ``model``.
    """

    model: str | None = None
    field: str = "title"
    kind: str = "hiero"
    src_lang: str = "de"
    table: str | None = None


def check_psq_files(source: PsqSource, settings: PsqSettings) -> None:
    """Read the files of ``source`` that ``settings`` use and are quick to read (a PSQ table, the lexical table), so
    that a searcher kept loaded refuses a bad one at once rather than at each query."""
    from clirplug.mt.lexicon import LexicalTable
    from clirplug.mt.translator import check_source_language
    from clirplug.qt.psq_tables import PsqTable

    if source.table:
        PsqTable.load(source.table)
        return
    model = Path(source.model)
    if not model.is_dir():
        raise ClirplugError(f"{model}: no such model folder (see docs/models.md)")
    check_source_language(model, source.src_lang)
    if settings.weights["token"] > 0 and (model / "lex.e_given_f.npz").is_file():
        LexicalTable.load(model / "lex.e_given_f.npz")


class PsqQueries:
    """The PSQ tables of ``source`` under ``settings``, loaded once for many calls: the tokenizer, the lexical table
    (Pr_token), a table file and the translator (Pr_nbest, orphans) are read on first use and kept, so that a
    searcher answering one query at a time reads none of them again.

    Parameters
    ----------
    source : PsqSource
    settings : PsqSettings
    translator : Translator, optional
        The decoder of Pr_nbest (e.g. a :class:`~clirplug.api.TranslationModel`'s, which DT searches with: the
        same n-best lists, from the same cache); by default one of ``source.model`` and ``source.kind`` with
        the folder's weights and translation cache.

    Each :meth:`builder` has a memo of its own: an n-best list is read from the translator (its cache, or
    decoded) once per call, never from an earlier call. Pr_grammar's rules are read per call, only those usable
    on that call's topics.
    """

    def __init__(self, source: PsqSource, settings: PsqSettings, translator=None):
        if bool(source.table) == bool(source.model):
            raise ClirplugError("PSQ needs exactly one of a table and a model folder")
        if source.model:
            from clirplug.mt.translator import check_source_language

            if not Path(source.model).is_dir():
                raise ClirplugError(f"{source.model}: no such model folder (see docs/models.md)")
            check_source_language(source.model, source.src_lang)
        self.source, self.settings = source, settings
        if translator is not None:
            self.translator = translator

    @cached_property
    def tokenize(self):
        """The source text's tokenizer (the model's preprocessing, its compound splitter)."""
        from clirplug.mt.preprocess import preprocessor

        if "translator" in self.__dict__:
            return self.translator.tokenize
        return preprocessor(self.source.src_lang, self.source.model)

    @cached_property
    def _table(self):
        from clirplug.qt.psq_tables import PsqTable

        return PsqTable.load(self.source.table)

    @cached_property
    def _lexical(self):
        from clirplug.mt.lexicon import LexicalTable

        path = Path(self.source.model) / "lex.e_given_f.npz"
        if not path.is_file():
            raise ClirplugError(f"{path}: missing; run `clirplug train align` first")
        return LexicalTable.load(path)

    @cached_property
    def translator(self):
        """The decoder of Pr_nbest (loaded on first use)."""
        from clirplug.mt.translator import Translator

        return Translator(self.source.model, kind=self.source.kind, src_lang=self.source.src_lang)

    def sentences(self, topics) -> list[list[str]]:
        """The token lists of the topics' ``source.field`` (:func:`clirplug.mt.preprocess.topic_sentences`)."""
        from clirplug.mt.preprocess import topic_sentences

        source = self.source
        return [tokens for topic in topics for tokens in topic_sentences(topic, source.field, source.src_lang,
                                                                         self.tokenize)]

    def builder(self, topics=None):
        """A :class:`~clirplug.qt.psq_tables.PsqBuilder` for the queries of ``topics`` (``None``: any query).

        With ``topics``, only the grammar rules usable on their ``source.field`` are read (for Pr_grammar) and
        the translator is restricted to their sentences: build queries of those topics only, since Pr_grammar
        of other words would miss their rules (the decoder reloads by itself).
        """
        from clirplug.qt.psq_tables import PsqBuilder

        settings, source = self.settings, self.source
        if source.table:
            return PsqBuilder(settings, token=self._table, src_lang=source.src_lang)
        sentences = None if topics is None else self.sentences(topics)
        token = self._lexical if settings.weights["token"] > 0 else None
        grammar = translate = rules = None
        if settings.weights["grammar"] > 0:
            from clirplug.mt.grammar import SourcePhrases, read_grammar
            from clirplug.qt.psq_tables import GrammarIndex

            path = Path(source.model) / f"grammar.{source.kind}.gz"
            if not path.is_file():
                raise ClirplugError(f"{path}: missing; train the grammar first (see docs/models.md)")
            rules = read_grammar(path, None if sentences is None else SourcePhrases(sentences))
            grammar = GrammarIndex(rules)
        if settings.weights["nbest"] > 0 or settings.orphans > 0:
            translator = self.translator
            if sentences is not None:  # a decoder not loaded yet reuses the rules just read from the same file
                translator.restrict(sentences, rules)
            translate = translator.translate
        return PsqBuilder(settings, token, grammar, translate, src_lang=source.src_lang)

    def queries(self, topics, latencies: dict[str, float] | None = None) -> dict[str, list[dict[str, float]]]:
        """``qid -> per-token distributions`` of every topic (:func:`psq_queries` with :meth:`builder`)."""
        return psq_queries(self.source, topics, self.builder(topics), self.tokenize, latencies)


def psq_builder(source: PsqSource, settings: PsqSettings, topics=None):
    """The :class:`~clirplug.qt.psq_tables.PsqBuilder` and the source tokenizer of ``source`` for ``settings``
    (:meth:`PsqQueries.builder`, its files read for this call only)."""
    queries = PsqQueries(source, settings)
    return queries.builder(topics), queries.tokenize


def psq_queries(source: PsqSource, topics, builder, tokenize,
                latencies: dict[str, float] | None = None) -> dict[str, list[dict[str, float]]]:
    """``qid -> per-token distributions`` of each topic's ``source.field`` (sentence-wise, see
    :func:`clirplug.mt.preprocess.topic_sentences`); with ``latencies``, each topic's seconds are added
    to its entry (0 when absent).

    The cyclic garbage collector is paused meanwhile: the first queries index the grammar and read the
    n-best lists, and a tuning grid adds each heuristic's prepared rules, millions of objects in no
    reference cycle that each collection would walk again.
    """
    from clirplug.mt.hypergraph import gc_paused
    from clirplug.mt.preprocess import topic_sentences

    queries = {}
    with gc_paused():
        for topic in topics:
            start = time.perf_counter()
            queries[topic.id] = builder.query(topic_sentences(topic, source.field, source.src_lang, tokenize))
            add_latency(latencies, topic.id, start)
    return queries


def psq_topic_queries(topics, source: PsqSource, settings: PsqSettings | None = None) -> dict[str, list[dict[str, float]]]:
    """``qid -> per-token distributions`` of every topic under ``settings`` (default: Pr_token only), from
    :meth:`PsqQueries.builder` restricted to the topics (the files read for this call only)."""
    return PsqQueries(source, PsqSettings() if settings is None else settings).queries(topics)


def psq_search(scorer: PsqScorer, queries: Mapping[str, Sequence[Mapping[str, float]]], hits: int = 1000,
               progress: bool = True, latencies: dict[str, float] | None = None):
    """A run frame (:func:`clirplug.io.runs.run_frame`) of PSQ for ``qid -> distributions``; with
    ``latencies``, each query's search seconds are added to its entry (0 when absent)."""
    return search_each(queries, lambda qid, dists: scorer.search(dists, hits), desc="PSQ", progress=progress,
                       latencies=latencies)


def psq_run(topics, *, index, source: PsqSource, settings: PsqSettings | None = None, hits: int = 1000,
            k1: float = bm25.ANSERINI_K1, b: float = bm25.ANSERINI_B, progress: bool = True):
    """PSQ over the Lucene ``index`` for every topic (``clirplug search --method psq``).

    ``source`` names the tables (a model folder or a table file), the field and the query
    language; ``settings`` are the ``--psq`` options (docs/psq.md; default: Pr_token only, no
    thresholds). Returns the run frame of the top ``hits`` documents.
    """
    queries = psq_topic_queries(topics, source, settings)
    return psq_search(PsqScorer(index, k1, b, progress=progress), queries, hits, progress=progress)
