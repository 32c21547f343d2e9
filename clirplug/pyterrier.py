"""PyTerrier transformers of the clirplug searchers (``pip install clirplug[pyterrier]``).

``ClirplugTransformer(searcher)`` wraps any :class:`clirplug.api.Searcher`, :func:`transformer` builds
one by method name through the registry (:func:`clirplug.api.searcher`), for every method, and :func:`from_system`
one from a system file (an experiment's system: :func:`clirplug.api.load_system`). Given queries
(``qid, query``) it retrieves; given results (``qid, query, docno, score``, e.g. from an earlier stage), a
reranker (BOW-FD, boosting) rescores their top ``depth`` documents, so pipelines compose as in PyTerrier::

    dt = transformer("dt", index="indexes/demo", model=model)
    bowfd = transformer("bowfd", index="indexes/demo", model=model, depth=50)
    pipeline = dt >> pt.text.get_text(dt, "text") >> pt.apply.doc_score(lambda row: len(row["text"]))
    results = (dt >> bowfd)(pt.io.read_topics("topics.tsv", format="singleline"))

The output keeps the input's columns and adds PyTerrier's ``docno, score, rank`` (ranks from
:data:`pyterrier.model.FIRST_RANK`, 0). A searcher that translates the query (DT, DT-MIRA, PSQ) rewrites it as
PyTerrier's rewriters do (:func:`pyterrier.model.push_queries`): ``query`` is the translation searched (DT's
1-best, PSQ's weighted query), ``query_0`` the original; the others (BM25, dense, boosting, BOW-FD, fusion) keep
``query`` and add clirplug's ``translation`` column (BOW-FD: each document's winning derivation). A reranker
given results reads the source-language query from ``query_0`` when there is one (the query an earlier clirplug
stage translated), from ``query`` otherwise. Every transformer declares its output columns
(``transform_outputs``), so ``pt.Experiment`` validates its pipelines without a warning.

``pt.text.get_text(indexlike, "text")`` loads each document's stored text, with ``indexlike`` a transformer
(its searcher's index) or :class:`LuceneText` (``LuceneText("indexes/demo")``); :func:`text_loader` is the same
loader directly. Only this module imports PyTerrier, so clirplug works without it.
"""

import pandas as pd
import pyterrier as pt

from clirplug.api import Reranker, Searcher, _Documents, load_system, searcher
from clirplug.errors import ClirplugError

RESULT = ["docno", "score", "rank"]
FIELDS = ("text", "raw")  # what a text loader reads: the stored text (title and contents), the stored JSON


class ClirplugTransformer(pt.Transformer):
    """A :class:`~clirplug.api.Searcher` as a PyTerrier transformer, ``k`` documents per query.

    ``threads`` is :meth:`~clirplug.api.Searcher.batch_search_frame`'s.
    """

    def __init__(self, searcher: Searcher, k: int = 1000, threads: int = 1):
        self.searcher, self.k, self.threads = searcher, k, threads

    def __repr__(self) -> str:
        return f"ClirplugTransformer({type(self.searcher).__name__}, k={self.k})"

    @property
    def rewrites(self) -> bool:
        """Whether the searcher translates the query itself (its output's ``query`` is the translation)."""
        return self.searcher.translates_query

    def _mode(self, columns) -> str:
        with pt.validate.any(columns, context=self) as v:
            v.query_frame(extra_columns=["query"], mode="retrieve")
            if isinstance(self.searcher, Reranker):
                v.result_frame(extra_columns=["query", "score"], mode="rerank")
        return v.mode

    def transform_inputs(self):
        return [["qid", "query"], ["qid", "query", "docno", "score"]] if isinstance(self.searcher, Reranker) \
            else ["qid", "query"]

    def transform_outputs(self, input_columns):
        """The columns :meth:`transform` gives for ``input_columns`` (an ``InputValidationError`` if refused)."""
        columns = list(input_columns)
        if self._mode(columns) == "rerank":
            return [c for c in columns if c not in ("score", "rank", "translation")] + ["score", "rank", "translation"]
        if self.rewrites:
            return list(pt.model.push_queries(pd.DataFrame(columns=columns)).columns) + ["query"] + RESULT
        return [c for c in columns if c != "translation"] + RESULT + ["translation"]

    def transform(self, inp):
        """Retrieve for a query frame, or (a reranker) rescore a result frame."""
        mode = self._mode(inp)
        if len(inp) == 0:
            return pd.DataFrame(columns=self.transform_outputs(list(inp.columns)))
        inp = inp.assign(qid=inp["qid"].astype(str))
        source = "query_0" if mode == "rerank" and "query_0" in inp.columns else "query"
        queries = inp.drop_duplicates("qid")
        qids, texts = queries["qid"].tolist(), queries[source].tolist()
        if mode == "rerank":
            frame = self.searcher.rerank(texts, qids, inp, self.k)
            kept = inp.drop(columns=[c for c in ("score", "rank", "translation") if c in inp.columns])
            out = kept.merge(frame.rename(columns={"docid": "docno"})[["qid", "docno", "score", "rank", "translation"]],
                             on=["qid", "docno"])
        else:
            frame = self.searcher.batch_search_frame(texts, qids, self.k, self.threads)
            queries = queries.drop(columns=[c for c in ("translation",) if c in queries.columns])
            results = frame.rename(columns={"docid": "docno"})
            if self.rewrites:
                translations = dict(zip(results["qid"], results["translation"]))
                queries = pt.model.push_queries(queries)
                queries["query"] = [translations.get(qid, text) for qid, text in zip(qids, texts)]
                results = results.drop(columns="translation")
            out = queries.merge(results, on="qid")
        out = out.sort_values(["qid", "rank"], key=lambda c: c.map({q: i for i, q in enumerate(qids)})
                              if c.name == "qid" else c, kind="stable").reset_index(drop=True)
        out["rank"] = out["rank"] - 1 + pt.model.FIRST_RANK  # clirplug's ranks count from 1
        return out[self.transform_outputs(list(inp.columns))]

    def text_loader(self, fields="*", *, verbose: bool = False) -> pt.Transformer:
        """PyTerrier's ``HasTextLoader``: ``pt.text.get_text(transformer, "text")`` reads the stored documents of
        the searcher's index (:meth:`clirplug.api.Searcher.document_index`)."""
        index = self.searcher.document_index()
        if index is None:
            raise ClirplugError(f"{type(self.searcher).__name__} has no Lucene index to read documents from")
        return TextLoader(index, fields)


class TextLoader(pt.Transformer):
    """Adds each result's stored document to its row: ``text`` (the title and contents ``clirplug index`` indexed,
    joined by a newline) and/or ``raw`` (the stored JSON); None for a document the index does not hold."""

    def __init__(self, index, fields="text"):
        fields = list(FIELDS[:1]) if fields == "*" else [fields] if isinstance(fields, str) else list(fields)
        for field in fields:
            if field not in FIELDS:
                raise ClirplugError(f"unknown document field {field!r}: choose among {', '.join(FIELDS)}")
        self.index, self.fields = index, fields
        self._documents = _Documents(index)

    def __repr__(self) -> str:
        return f"TextLoader({str(self.index)!r}, {self.fields!r})"

    def transform_outputs(self, input_columns):
        pt.validate.columns(list(input_columns), includes=["docno"], context=self)
        return list(input_columns) + [f for f in self.fields if f not in input_columns]

    def _read(self, docno: str, field: str):
        reader = self._documents.reader
        try:
            return reader.document_text(docno) if field == "text" else reader.document_raw(docno)
        except ClirplugError:  # not in the index
            return None

    def transform(self, inp):
        pt.validate.columns(inp, includes=["docno"], context=self)
        out = inp.copy()
        docnos = out["docno"].astype(str).tolist()
        for field in self.fields:
            out[field] = pd.Series([self._read(d, field) for d in docnos], index=out.index, dtype=object)
        return out[self.transform_outputs(list(inp.columns))]


class LuceneText:
    """A Lucene index as PyTerrier's ``HasTextLoader``: ``pt.text.get_text(LuceneText("indexes/demo"), "text")``."""

    def __init__(self, index):
        self.index = index

    def text_loader(self, fields="*", *, verbose: bool = False) -> TextLoader:
        return TextLoader(self.index, fields)


def text_loader(index, fields="text") -> TextLoader:
    """The transformer adding each result's stored ``fields`` (``text``, ``raw``) from the Lucene ``index``."""
    return TextLoader(index, fields)


def transformer(method: str, /, k: int = 1000, **arguments) -> ClirplugTransformer:
    """The transformer, ``k`` documents per query, of ``method``'s searcher built by :func:`clirplug.api.searcher`
    with ``arguments`` (``transformer("dense", index=..., corpus=..., threads=2)``: the searcher's own threads)."""
    return ClirplugTransformer(searcher(method, **arguments), k)


def from_system(file, k: int | None = None, threads: int = 1) -> ClirplugTransformer:
    """The transformer of a system file's searcher (:func:`clirplug.api.load_system`), ``k`` documents per query
    (default: the system's hits)."""
    system = load_system(file)
    return ClirplugTransformer(system, system.system.hits if k is None else k, threads)
