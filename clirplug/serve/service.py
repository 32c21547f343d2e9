"""The search service without HTTP: a searcher of :mod:`clirplug.api` kept loaded, its answers as JSON-ready dicts.

The searcher is any method of the registry (:data:`clirplug.methods.METHODS`), composed by name with the
searchers it is built on (a reranker's first stage, the inputs of a fusion: :func:`clirplug.api.compose`).
A query is read as a title (translated whole). Each answer holds the query's translation (the model's
1-best; for PSQ also the weighted alternatives of each source token; none when no method of the searcher
translates) and the ranked documents with their title and first words; a searcher whose documents have
translations of their own (BOW-FD's winning derivations) adds each one's.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping

from clirplug.errors import ClirplugError

SNIPPET_WORDS = 30


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
    """A searcher with its index and models loaded once, answering batches of queries.

    Not thread-safe: the web application calls it from one worker thread (:mod:`clirplug.serve.app`).

    Parameters
    ----------
    method : str
        A method of :data:`clirplug.methods.METHODS`.
    index : path
        The Lucene index whose stored texts the hits show (built by ``clirplug index``); also the index
        searched, for the methods that need one.
    options : mapping, optional
        Each method's searcher arguments, by method name (:func:`clirplug.api.compose`), with the first
        stage or fused searchers by name.
    model : path, optional
        The translation model folder, for the methods that need one; loaded once with ``kind`` and ``src_lang``.
    corpus : path, optional
        The collection's documents, for the methods that need them (dense retrieval, boosting).
    name_of : callable
        Names a missing or unneeded resource in an error (the command's flags).
    """

    def __init__(self, method: str, index, options: Mapping[str, Mapping] | None = None, *, model=None,
                 corpus=None, kind: str = "hiero", src_lang: str = "de", name_of: Callable[[str], str] = str):
        from clirplug import api

        needed = api.needs(method, options)
        for name, value in (("model", model), ("corpus", corpus)):
            if value is not None and name not in needed:
                raise ClirplugError(f"{method} takes no {name_of(name)}")
        model = None if model is None else api.TranslationModel(model, kind=kind, src_lang=src_lang)
        self._keep(method, api.compose(method, options, name_of, index=index, model=model, corpus=corpus), index)

    @classmethod
    def from_system(cls, file) -> SearchService:
        """The service of a system file (:func:`clirplug.api.load_system`), named by the system's run tag
        (``psq+dense.title``), showing the documents of its index (none for a system without one: boosting
        alone)."""
        from clirplug import api

        return cls.of_system(api.load_system(file))

    @classmethod
    def of_system(cls, searcher) -> SearchService:
        """The service of a searcher loaded from a system file (:func:`clirplug.api.load_system`), as
        :meth:`from_system`'s."""
        from clirplug import api

        system = typing.cast(api.System, searcher.system)  # load_system sets it
        service = cls.__new__(cls)
        service._keep(system.tag, searcher, system.index)
        return service

    def _keep(self, method: str, searcher, index) -> None:
        from clirplug.lucene.reader import LuceneIndex

        self.method, self.searcher = method, searcher
        self.documents = None if index is None else LuceneIndex(index, progress=False)

    def translation(self, query: str) -> dict | None:
        """The translation shown with ``query``'s hits (:meth:`clirplug.api.Searcher.query_translation`): ``{"best":
        1-best}``, for PSQ with ``"psq": [{"source", "targets": [{"term", "p"}, ...]}, ...]``; None when the query
        is searched as it is."""
        return self.searcher.query_translation(query) or None

    def search(self, queries: list[tuple[str, str]], k: int) -> list[dict]:
        """The answer to each ``(qid, query)``: ``{"qid", "query", "translation", "hits": [{"rank", "docid",
        "score", "title", "snippet"[, "derivation"]}, ...]}``, the ``k`` best documents first."""
        frame = self.searcher.batch_search_frame([text for _, text in queries], [qid for qid, _ in queries], k)
        hits: dict[str, list] = {qid: [] for qid, _ in queries}
        for qid, docid, rank, score, translation in frame.itertuples(index=False):
            title, snippet = split_document(None if self.documents is None else self.documents.document_text(docid))
            hit = {"rank": int(rank), "docid": docid, "score": float(score), "title": title, "snippet": snippet}
            if self.searcher.derives:
                hit["derivation"] = translation
            hits[qid].append(hit)
        return [{"qid": qid, "query": text, "translation": self.translation(text), "hits": hits[qid]}
                for qid, text in queries]
