"""The search service without HTTP: a searcher of :mod:`clirplug.api` kept loaded, its answers as JSON-ready dicts.

The searcher is any method of the registry (:data:`clirplug.methods.METHODS`), composed by name with the
searchers it is built on (a reranker's first stage, the inputs of a fusion: :func:`clirplug.api.compose`).
A query is read as a title (translated whole). Each answer holds the query's translation (the model's
1-best; for PSQ also the weighted alternatives of each source token; none when no method of the searcher
translates) and the ranked documents with their title and a query-biased snippet, their matched words
highlighted (:mod:`clirplug.serve.snippets`); a searcher whose documents have translations of their own
(BOW-FD's winning derivations) adds each one's, and a searcher that explains its scores
(:meth:`clirplug.api.Searcher.explanations`) each document's explanation.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping

from clirplug.errors import ClirplugError

WARM_UP_QUERY = "test"


def split_document(text: str | None) -> tuple[str, str]:
    """``(title, contents)`` of an indexed text: the title is its first line when it has several (``clirplug
    index`` folds a document's title in front of its contents), the contents the rest."""
    if not text:
        return "", ""
    title, _, rest = text.partition("\n") if "\n" in text else ("", "", text)
    return title.strip(), rest


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
        from clirplug.serve.snippets import Matcher

        self.method, self.searcher = method, searcher
        self.documents = None if index is None else LuceneIndex(index, progress=False)
        self.matcher = None if self.documents is None else Matcher(self.documents.analyze)

    def translation(self, query: str) -> dict | None:
        """The translation shown with ``query``'s hits (:meth:`clirplug.api.Searcher.query_translation`): ``{"best":
        1-best}``, for PSQ with ``"psq": [{"source", "targets": [{"term", "p"}, ...]}, ...]``; None when the query
        is searched as it is."""
        return self.searcher.query_translation(query) or None

    def search(self, queries: list[tuple[str, str]], k: int) -> list[dict]:
        """The answer to each ``(qid, query)``: ``{"qid", "query", "translation", "hits": [{"rank", "docid",
        "score", "title", "title_highlights", "snippet", "highlights"[, "derivation"][, "explanation"]}, ...]}``,
        the ``k`` best documents first (highlights: ``[start, end)`` character spans of matched words)."""
        from clirplug.serve.snippets import highlights, query_terms, snippet

        frame = self.searcher.batch_search_frame([text for _, text in queries], [qid for qid, _ in queries], k)
        hits: dict[str, list] = {qid: [] for qid, _ in queries}
        for qid, docid, rank, score, translation in frame.itertuples(index=False):
            hit = {"rank": int(rank), "docid": docid, "score": float(score), "title": "", "title_highlights": [],
                   "snippet": "", "highlights": []}
            if self.documents is not None and self.matcher is not None:  # a system without an index shows none
                title, contents = split_document(self.documents.document_text(docid))
                terms = query_terms(translation)
                shown, spans = snippet(contents, self.matcher, terms)
                hit.update(title=title, title_highlights=highlights(title, self.matcher, terms), snippet=shown,
                           highlights=spans)
            if self.searcher.derives:
                hit["derivation"] = translation
            hits[qid].append(hit)
        for qid, text in queries:
            explained = self.searcher.explanations(text, [hit["docid"] for hit in hits[qid]])
            for hit in hits[qid]:
                if hit["docid"] in explained:
                    hit["explanation"] = explained[hit["docid"]]
        return [{"qid": qid, "query": text, "translation": self.translation(text), "hits": hits[qid]}
                for qid, text in queries]

    def warm_up(self) -> None:
        """Search once, so that what a first search loads or compiles (the decoder's grammar and kernels, Lucene's
        readers) is ready before the service answers, within its time budget."""
        self.search([("warm-up", WARM_UP_QUERY)], 1)

    def document(self, docid: str) -> dict:
        """The stored document ``docid``: ``{"docid", "title", "contents", "fields"}`` (``fields``: the stored
        record's, e.g. ``id`` and ``contents``); a ClirplugError if the index has no such document."""
        import json

        if self.documents is None:
            raise ClirplugError(f"{self.method} has no Lucene index to read documents from")
        raw = self.documents.document_raw(docid)
        try:
            fields = json.loads(raw) if raw is not None else {}
        except json.JSONDecodeError:  # a raw document of another Anserini collection type
            fields = {"raw": raw}
        title, contents = split_document(self.documents.document_text(docid))
        return {"docid": docid, "title": title, "contents": contents,
                "fields": fields if isinstance(fields, dict) else {"raw": raw}}

    def settings(self) -> dict:
        """The settings in effect (:meth:`clirplug.api.Searcher.settings_in_effect`), JSON-ready."""
        return self.searcher.settings_in_effect()
