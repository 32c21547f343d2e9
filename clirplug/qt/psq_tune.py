"""PSQ settings chosen by a coordinate search on tuning topics.

A grid names, for some ``--psq`` options, the values to try, in the order the axes are
searched: starting from the default settings, each axis in turn is set to each of its
values with the others at their best so far, and the best value (by the measure on the
tuning topics, the current one on ties) is kept. The tuning topics may be split into parts,
each translated by its own model (cross-fitting, :mod:`clirplug.crossfit`); a setting is
scored on the union of the parts' runs.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from clirplug.errors import ClirplugError
from clirplug.qt.psq_tables import COMPONENTS, PSQ_KEYS, PsqBuilder, PsqSettings


class Builders:
    """PsqBuilders for any settings, sharing the loaded model parts and the per-sentence tables.

    The grammar and decoder are read once per field, restricted to the words of ``topics``.
    """

    def __init__(self, model, kind: str, topics, src_lang: str = "de"):
        self.model, self.kind, self.topics, self.src_lang = Path(model), kind, topics, src_lang
        self.loaded: dict = {}
        self.memo: dict = {}

    def source(self, field: str):
        """The :class:`clirplug.qt.psq.PsqSource` of ``field``."""
        from clirplug.qt.psq import PsqSource

        return PsqSource(str(self.model), field, self.kind, self.src_lang)

    def __call__(self, settings: PsqSettings, field: str):
        from clirplug.qt.psq import psq_builder

        every = PsqSettings(lambdas=(1.0,) * len(COMPONENTS))  # load all parts once
        key = field if settings.orphans > 0 or any(settings.weights[c] > 0 for c in ("grammar", "nbest")) else "token"
        if key not in self.loaded:
            needed = every if key == field else PsqSettings()
            self.loaded[key] = psq_builder(self.source(field), needed, self.topics)
        builder, tokenize = self.loaded[key]
        return (PsqBuilder(settings, builder.token, builder.grammar, builder.translate, self.memo, builder.src_lang),
                tokenize)


def settings_queries(builders: Builders, field: str, settings: PsqSettings, topics=None,
                     latencies: dict[str, float] | None = None) -> dict[str, list[dict[str, float]]]:
    """``qid -> per-token distributions`` of ``topics`` (default: ``builders.topics``) under ``settings``
    (:func:`clirplug.qt.psq.psq_queries`)."""
    from clirplug.qt.psq import psq_queries

    builder, tokenize = builders(settings, field)
    return psq_queries(builders.source(field), builders.topics if topics is None else topics, builder, tokenize,
                       latencies)


def run_settings(scorer, builders: Builders, field: str, settings: PsqSettings, topics=None, hits: int = 1000,
                 progress: bool = False, latencies: dict[str, float] | None = None):
    """The PSQ run frame of ``topics`` (default: ``builders.topics``) under ``settings``; with ``latencies``,
    each topic's seconds (its query built, then searched) are added to its entry."""
    from clirplug.qt.psq import psq_search

    queries = settings_queries(builders, field, settings, topics, latencies)
    return psq_search(scorer, queries, hits=hits, progress=progress, latencies=latencies)


class TuningAP:
    """trec_eval's AP of PSQ queries on tuning topics (:func:`clirplug.eval.measures.evaluate`'s ``MAP``, bit for
    bit), with no run frame: each distinct query of a topic is searched and evaluated once, however many settings
    of a grid give it (an axis often leaves most topics' distributions as they were).

    Parameters
    ----------
    scorer : PsqScorer
    qrels : pandas.DataFrame
        As from :func:`clirplug.io.qrels.read_qrels`; its queries are those averaged.
    hits : int
        The depth of a run.
    max_passage_hits : int, optional
        For an index of passages judged as pages: the ``hits`` passages of a query are scored as the pages of
        :func:`clirplug.passages.max_passage` (each by its best passage, at most ``max_passage_hits`` of them),
        the pages are evaluated.
    """

    def __init__(self, scorer, qrels, hits: int, max_passage_hits: int | None = None):
        import numpy as np
        import pandas as pd

        from clirplug.eval.measures import parse_measures
        from clirplug.passages import page_id

        self.scorer, self.hits, self.max_passage_hits = scorer, hits, max_passage_hits
        self.qids = sorted(set(qrels["qid"]))
        judged = qrels[qrels["relevance"] >= 1]
        self.num_relevant = judged.groupby("qid").size().to_dict()
        if max_passage_hits is None:
            numbers = functools.partial(_indexed, scorer.index)
        else:  # each passage's page, numbered; the pages' docid order, as scorer.trec_eval_order's
            codes, pages = pd.factorize(np.array([page_id(p) for p in scorer.index.docids.tolist()], dtype=object))
            self._page, self._page_rank = codes, np.argsort(np.argsort(pages.astype(str), kind="stable"))
            page_numbers = {page: number for number, page in enumerate(pages.tolist())}

            def numbers(docids):  # a judged page without passages is never retrieved
                return [page_numbers[docid] for docid in docids if docid in page_numbers]
        self.relevant = {qid: np.array(sorted(numbers(docids)), dtype=np.int64)
                         for qid, docids in judged.groupby("qid")["docid"]}
        self.measure = parse_measures(["MAP"])[0]
        self._memo: dict[tuple[str, bytes], float] = {}

    def average_precision(self, qid: str, query) -> float:
        """The AP of topic ``qid`` searched by ``query`` (per-token distributions); 0 for a topic without relevant
        documents."""
        key = (qid, hashlib.sha256(repr(query).encode()).digest())  # exact reprs of the floats, in order; small
        value = self._memo.get(key)
        if value is None:
            value = self._memo[key] = self._average_precision(qid, query)
        return value

    def _average_precision(self, qid: str, query) -> float:
        import numpy as np

        from clirplug.eval.measures import trec_average_precision

        relevant = self.relevant.get(qid)
        if relevant is None or not len(relevant):
            return 0.0
        scorer = self.scorer
        docs, scores = scorer.ranking(*scorer.score(scorer.expressions(query)), self.hits)
        if self.max_passage_hits is None:
            order = scorer.trec_eval_order(docs, scores)
        else:  # a page's first passage in the ranking is its best; the pages ranked as max_passage ranks them
            docs, first = np.unique(self._page[docs], return_index=True)
            scores = scores[first]
            kept = np.lexsort((self._page_rank[docs], -scores))[:self.max_passage_hits]
            docs, scores = docs[kept], scores[kept]
            order = np.lexsort((-self._page_rank[docs], -scores))
        found = np.isin(docs, relevant)[order]
        return trec_average_precision(np.zeros(len(docs), np.int64), found, {0: self.num_relevant[qid]}).get(0, 0.0)

    def mean(self, queries: dict[str, list[dict[str, float]]]) -> float:
        """MAP of ``qid -> per-token distributions`` over the qrels' queries (0 for one not given), as ``evaluate``
        averages it."""
        from clirplug.eval.measures import aggregate

        return aggregate(self.measure, [self.average_precision(qid, queries[qid]) if qid in queries else 0.0
                                        for qid in self.qids])


def _indexed(index, docids) -> list[int]:
    """Internal numbers of those ``docids`` the index holds (a judged document it lacks is never retrieved)."""
    numbers = []
    for docid in docids:
        try:
            numbers.append(index.doc_index(docid))
        except ClirplugError:
            pass
    return numbers


def grid_axes(grid: dict, where: str = "grid") -> list[tuple[str, list[str]]]:
    """The axes of a grid mapping (``--psq`` key -> values), each value checked by :meth:`PsqSettings.parse`."""
    if not isinstance(grid, dict):
        raise ClirplugError(f"{where}: expected a mapping of --psq option -> list of values")
    axes = []
    for key, values in grid.items():
        if key not in PSQ_KEYS:  # every --psq option can be a grid axis
            raise ClirplugError(f"{where}.{key}: unknown --psq option (known: {', '.join(PSQ_KEYS)})")
        if not isinstance(values, list) or not values:
            raise ClirplugError(f"{where}.{key}: expected a non-empty list of values, got {values!r}")
        texts = []
        for value in values:
            text = ":".join(f"{v:g}" for v in value) if isinstance(value, list) else str(value)
            try:
                PsqSettings.parse(f"{key}={text}")
            except ClirplugError as error:
                raise ClirplugError(f"{where}.{key}: {error}") from None
            texts.append(text)
        axes.append((key, texts))
    return axes


def with_value(settings: PsqSettings, key: str, value: str) -> PsqSettings:
    """``settings`` with one ``--psq`` option changed."""
    others = [item for item in settings.spec().split(",") if item.partition("=")[0] != key]
    return PsqSettings.parse(",".join([*others, f"{key}={value}"]))


def coordinate_search(measure, start: PsqSettings, axes) -> tuple[PsqSettings, dict[str, float]]:
    """The best settings found by searching ``axes`` one after the other from ``start``.

    ``measure(settings) -> float`` is called once per distinct setting (by ``--psq`` string);
    returns the best settings and every evaluated ``--psq`` string with its value.
    """
    results: dict[str, float] = {}

    def value(settings):
        spec = settings.spec()
        if spec not in results:
            results[spec] = float(measure(settings))
        return results[spec]

    best = start
    for key, values in axes:  # max keeps the first of tied settings: the current point
        best = max([best] + [with_value(best, key, v) for v in values], key=value)
    return best, results


def may_decode(start: PsqSettings, axes) -> bool:
    """True when ``start`` or a setting on the axes needs Pr_grammar, Pr_nbest or orphans (the decoder's model)."""
    def decodes(settings):
        return settings.orphans > 0 or settings.weights["grammar"] > 0 or settings.weights["nbest"] > 0

    return decodes(start) or any(decodes(with_value(start, key, v)) for key, values in axes for v in values)
