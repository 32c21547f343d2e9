"""PyTerrier transformers of the clirplug searchers (``pip install clirplug[pyterrier]``).

``ClirplugTransformer(searcher)`` wraps any :class:`clirplug.api.Searcher`, :func:`transformer` builds
one by method name through the registry (:func:`clirplug.api.searcher`), for every method, and :func:`from_system`
one from a system file (an experiment's system: :func:`clirplug.api.load_system`). Given queries
(``qid, query``) it retrieves; given results (``qid, query, docno, score``, e.g. from an earlier stage), a
reranker (BOW-FD, boosting) rescores their top ``depth`` documents, so pipelines compose as in PyTerrier::

    dt = transformer("dt", index="indexes/demo", model=model)
    bowfd = transformer("bowfd", index="indexes/demo", model=model, depth=50)
    dense = transformer("dense", index="indexes/demo", corpus="corpus.jsonl")
    results = (dt >> bowfd)(pt.io.read_topics("topics.tsv", format="singleline"))

The output has PyTerrier's columns ``qid, query, docno, score, rank`` (ranks from
:data:`pyterrier.model.FIRST_RANK`, 0) and clirplug's ``translation``. Only this module imports
PyTerrier, so clirplug works without it.
"""

import pyterrier as pt

from clirplug.api import Reranker, Searcher, load_system, searcher


class ClirplugTransformer(pt.Transformer):
    """A :class:`~clirplug.api.Searcher` as a PyTerrier transformer, ``k`` documents per query.

    ``threads`` is :meth:`~clirplug.api.Searcher.batch_search_frame`'s.
    """

    def __init__(self, searcher: Searcher, k: int = 1000, threads: int = 1):
        self.searcher, self.k, self.threads = searcher, k, threads

    def __repr__(self) -> str:
        return f"ClirplugTransformer({type(self.searcher).__name__}, k={self.k})"

    def transform(self, inp):
        """Retrieve for a query frame, or (a reranker) rescore a result frame."""
        with pt.validate.any(inp) as v:
            v.query_frame(extra_columns=["query"], mode="retrieve")
            if isinstance(self.searcher, Reranker):
                v.result_frame(extra_columns=["query", "score"], mode="rerank")
        queries = inp[["qid", "query"]].drop_duplicates("qid")
        qids, texts = queries["qid"].astype(str).tolist(), queries["query"].tolist()
        if v.mode == "rerank":
            frame = self.searcher.rerank(texts, qids, inp.assign(qid=inp["qid"].astype(str)), self.k)
        else:
            frame = self.searcher.batch_search_frame(texts, qids, self.k, self.threads)
        frame = frame.rename(columns={"docid": "docno"}).merge(queries.assign(qid=qids), on="qid")
        frame["rank"] = frame["rank"] - 1 + pt.model.FIRST_RANK  # clirplug's ranks count from 1
        return frame[["qid", "query", "docno", "score", "rank", "translation"]]


def transformer(method: str, /, k: int = 1000, **arguments) -> ClirplugTransformer:
    """The transformer, ``k`` documents per query, of ``method``'s searcher built by :func:`clirplug.api.searcher`
    with ``arguments`` (``transformer("dense", index=..., corpus=..., threads=2)``: the searcher's own threads)."""
    return ClirplugTransformer(searcher(method, **arguments), k)


def from_system(file, k: int | None = None, threads: int = 1) -> ClirplugTransformer:
    """The transformer of a system file's searcher (:func:`clirplug.api.load_system`), ``k`` documents per query
    (default: the system's hits)."""
    system = load_system(file)
    return ClirplugTransformer(system, system.system.hits if k is None else k, threads)
