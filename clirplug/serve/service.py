"""The search service without HTTP: one searcher of :mod:`clirplug.api` kept loaded, its answers as JSON-ready dicts.

A query is read as a title (translated whole). Each answer holds the query's translation (the
model's 1-best; for PSQ also the weighted alternatives of each source token) and the ranked
documents with their title and first words; BOW-FD adds each document's winning derivation.
"""

from __future__ import annotations

from clirplug.bm25 import ANSERINI_B, ANSERINI_K1
from clirplug.errors import ClirplugError

SNIPPET_WORDS = 30
METHODS = {
    "bm25": "BM25 of the untranslated query",
    "dt": "direct translation: BM25 of the model's 1-best",
    "psq": "probabilistic structured queries of the model's tables",
    "bowfd": "BOW-FD: the DT top --depth reranked by bag-of-words forced decoding",
}


def split_document(text: str | None) -> tuple[str, str]:
    """``(title, snippet)`` of an indexed text: the title is its first line when it has several
    (``clirplug index`` folds a document's title in front of its contents), the snippet the first
    :data:`SNIPPET_WORDS` words of the rest."""
    if not text:
        return "", ""
    title, _, rest = text.partition("\n") if "\n" in text else ("", "", text)
    words = rest.split()
    return title.strip(), " ".join(words[:SNIPPET_WORDS]) + (" ..." if len(words) > SNIPPET_WORDS else "")


class SearchService:
    """A searcher with its index and model loaded once, answering batches of queries.

    Not thread-safe: the web application calls it from one worker thread (:mod:`clirplug.serve.app`).

    Parameters
    ----------
    method : {"bm25", "dt", "psq", "bowfd"}
    index : path
        The Lucene index searched (built by ``clirplug index``, which stores the documents' text).
    model : path, optional
        The model folder (all methods but bm25).
    kind, src_lang : str
        The model's grammar and the query language.
    k1, b : float
        BM25 of the search (of BOW-FD's DT first stage).
    psq : PsqSettings, optional
        The PSQ options (``--psq``).
    stopwords : iterable of str
        Target-language words removed from the DT 1-best before search (dt, bowfd's first stage).
    weights, v, lm, depth
        BOW-FD's options (:class:`clirplug.api.BowfdSearcher`).
    """

    def __init__(self, method: str, index, model=None, *, kind: str = "hiero", src_lang: str = "de",
                 k1: float = ANSERINI_K1, b: float = ANSERINI_B, psq=None, stopwords=(), weights=None,
                 v: float | None = None, lm: bool = True, depth: int = 100):
        from clirplug import api
        from clirplug.lucene.reader import LuceneIndex
        from clirplug.methods import Bm25Run
        from clirplug.qt.psq_tables import PsqSettings

        if method not in METHODS:
            raise ClirplugError(f"unknown method {method!r}: choose one of {', '.join(METHODS)}")
        if (model is None) != (method == "bm25"):
            raise ClirplugError(f"--method {method} {'needs' if model is None else 'takes no'} --model")
        bm25 = Bm25Run(k1=k1, b=b)
        self.method, self.psq = method, PsqSettings() if psq is None else psq
        self.model = None if model is None else api.TranslationModel(model, kind=kind, src_lang=src_lang)
        if method == "bm25":
            self.searcher = api.LuceneSearcher(index, bm25=bm25)
        elif method == "psq":
            self.searcher = api.PsqSearcher(index, self.model, self.psq, bm25=bm25)
        else:
            self.searcher = api.DtSearcher(index, self.model, stopwords=stopwords, bm25=bm25)
            if method == "bowfd":
                self.searcher = api.BowfdSearcher(index, self.model, self.searcher, weights=weights, v=v, lm=lm,
                                                  depth=depth)
        self.documents = LuceneIndex(index, progress=False)

    def translation(self, query: str) -> dict | None:
        """The translation shown with ``query``'s hits: ``{"best": 1-best}``, for PSQ with ``"psq": [{"source",
        "targets": [{"term", "p"}, ...]}, ...]``; None for bm25 (the query is searched as it is)."""
        if self.model is None:
            return None
        best = self.model.translate(query)
        shown: dict = {"best": best[0][0] if best else ""}
        if self.method == "psq":
            shown["psq"] = [{"source": source, "targets": [{"term": t, "p": p} for t, p in targets.items()]}
                            for source, targets in self.model.psq_table(query, self.psq)]
        return shown

    def search(self, queries: list[tuple[str, str]], k: int) -> list[dict]:
        """The answer to each ``(qid, query)``: ``{"qid", "query", "translation", "hits": [{"rank", "docid",
        "score", "title", "snippet"[, "derivation"]}, ...]}``, the ``k`` best documents first."""
        frame = self.searcher.batch_search([text for _, text in queries], [qid for qid, _ in queries], k)
        hits: dict[str, list] = {qid: [] for qid, _ in queries}
        for qid, docid, rank, score, translation in frame.itertuples(index=False):
            title, snippet = split_document(self.documents.document_text(docid))
            hit = {"rank": int(rank), "docid": docid, "score": float(score), "title": title, "snippet": snippet}
            if self.method == "bowfd":
                hit["derivation"] = translation
            hits[qid].append(hit)
        return [{"qid": qid, "query": text, "translation": self.translation(text), "hits": hits[qid]}
                for qid, text in queries]
