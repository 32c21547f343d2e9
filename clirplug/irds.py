"""Documents, topics and qrels named by ir_datasets ids: ``irds:hc4/fa/dev``, ``irds:neuclir/1/zh/trec-2022``.

Wherever clirplug reads a corpus, topics or qrels, ``irds:<id>`` names the dataset ``<id>`` of
`ir_datasets <https://ir-datasets.com>`_ (the ``irds`` extra: ``pip install clirplug[irds]``),
which finds its files under ``$IR_DATASETS_HOME`` (default ``~/.ir_datasets``), downloading
those it may download. Records become clirplug's:

* a document ``(doc_id, title, text, ...)`` becomes ``{"id", "title", "contents"}``; a document
  type without ``text`` gives its ``default_text()`` as the contents;
* a query becomes a topic (:class:`~clirplug.io.topics.Topic`): ``title`` (or ``text``),
  ``description`` and ``narrative`` (HC4: the texts of ``narrative_by_relevance`` joined) as
  title, desc and narr. HC4 and NeuCLIR queries also hold
  the human (``ht_``) and machine (``mt_``) translations into the documents' language, chosen by
  a topic language (:func:`clirplug.languages.topic_language`);
* a qrel ``(query_id, doc_id, relevance, iteration)`` becomes a qrels row.
"""

from collections.abc import Iterator

from clirplug.errors import ClirplugError
from clirplug.languages import iso639_3, topic_language

PREFIX = "irds:"
# the errors ir_datasets raises when a file is absent and cannot be downloaded
_LOAD_ERRORS = (OSError, RuntimeError)


def irds_id(spec) -> str | None:
    """The dataset id of an ``irds:<id>`` string; None for anything else (a path)."""
    text = str(spec)
    return text[len(PREFIX):] if text.startswith(PREFIX) else None


def load_dataset(dataset_id: str, has: str):
    """The ir_datasets dataset ``dataset_id``, which must provide ``has`` (docs, queries or qrels)."""
    try:
        import ir_datasets
    except ImportError:
        raise ClirplugError(f"{PREFIX}{dataset_id}: ir_datasets is not installed (pip install 'clirplug[irds]')") from None
    try:
        dataset = ir_datasets.load(dataset_id)
    except KeyError:
        raise ClirplugError(f"{PREFIX}{dataset_id}: unknown ir_datasets id (see https://ir-datasets.com)") from None
    if not getattr(dataset, f"has_{has}")():
        raise ClirplugError(f"{PREFIX}{dataset_id}: this ir_datasets id has no {has}")
    return dataset


def _load_error(dataset_id: str, what: str, error: Exception) -> ClirplugError:
    return ClirplugError(f"{PREFIX}{dataset_id}: ir_datasets cannot read its {what} ({type(error).__name__}: {error})")


def irds_documents(dataset_id: str) -> Iterator[tuple[str, str, str]]:
    """Yield ``(id, title, contents)`` of each document of ``dataset_id``."""
    dataset = load_dataset(dataset_id, "docs")
    try:
        for doc in dataset.docs_iter():
            text = getattr(doc, "text", None)
            contents = text if isinstance(text, str) else doc.default_text()
            yield str(doc.doc_id), getattr(doc, "title", None) or "", contents
    except _LOAD_ERRORS as error:
        raise _load_error(dataset_id, "documents", error) from error


def irds_document_count(dataset_id: str) -> int | None:
    """The number of documents ir_datasets states for ``dataset_id`` (None when unknown)."""
    return load_dataset(dataset_id, "docs").docs_count()


def irds_document_language(dataset_id: str) -> str | None:
    """The language code ir_datasets states for the documents of ``dataset_id`` (e.g. ``fa``), or None."""
    return load_dataset(dataset_id, "docs").docs_lang()


def _query_fields(query, lang: str | None, machine: bool, original: str | None, dataset_id: str):
    """``(title, desc, narr)`` of an ir_datasets query in the topic language ``lang`` (ISO 639-3, None: as given).

    ``original`` is the language of the queries' own fields (None when ir_datasets does not say).
    """
    translated = getattr(query, "translation_lang", None)
    if lang is None or (lang == original and not machine) or (original is None and translated is None and not machine):
        prefix = ""
    elif translated is not None and iso639_3(translated) == lang:
        prefix = "mt_" if machine else "ht_"
    else:
        have = ", ".join(filter(None, [original, translated and iso639_3(translated)])) or "one unstated language"
        raise ClirplugError(f"{PREFIX}{dataset_id}: no {'machine-translated ' if machine else ''}topics in {lang} "
                            f"(its topics: {have})")
    fields = query._fields
    title = prefix + ("title" if "title" in fields or prefix else "text")
    if title not in fields:
        raise ClirplugError(f"{PREFIX}{dataset_id}: its queries have no {title!r} field (fields: {', '.join(fields)})")
    desc = getattr(query, prefix + "description", None)
    narr = getattr(query, prefix + "narrative", None)
    by_relevance = getattr(query, "narrative_by_relevance", None)  # HC4: one English narrative per relevance label
    if narr is None and isinstance(by_relevance, dict):
        narr = " ".join(text for text in by_relevance.values() if isinstance(text, str))
    values = (getattr(query, title), desc if desc is not None else getattr(query, title), narr or "")
    return tuple(value if isinstance(value, str) else "" for value in values)


def irds_topics(dataset_id: str, lang: str | None = None) -> list[tuple[str, str, str, str]]:
    """``(id, title, desc, narr)`` of each topic of ``dataset_id``, in the topic language ``lang`` when given."""
    code, machine = topic_language(lang) if lang else (None, False)
    dataset = load_dataset(dataset_id, "queries")
    try:
        queries = list(dataset.queries_iter())
    except _LOAD_ERRORS as error:
        raise _load_error(dataset_id, "queries", error) from error
    stated = dataset.queries_lang()
    # HC4 and NeuCLIR queries (with a translation_lang) are English topics and their translations
    original = iso639_3(stated) if stated else "eng" if queries and hasattr(queries[0], "translation_lang") else None
    return [(str(query.query_id), *_query_fields(query, code, machine, original, dataset_id)) for query in queries]


def irds_qrels(dataset_id: str) -> Iterator[tuple[str, str, int]]:
    """Yield ``(query id, document id, relevance)`` of each judgement of ``dataset_id``."""
    dataset = load_dataset(dataset_id, "qrels")
    try:
        for qrel in dataset.qrels_iter():
            yield str(qrel.query_id), str(qrel.doc_id), int(qrel.relevance)
    except _LOAD_ERRORS as error:
        raise _load_error(dataset_id, "qrels", error) from error
