"""Stopword lists: the ones shipped in ``clirplug/data/stopwords/`` and users' own files."""

from pathlib import Path

from clirplug.errors import ClirplugError

SHIPPED = Path(__file__).resolve().parent / "data" / "stopwords"


def read_stopwords(path) -> frozenset[str]:
    """A stopword file: one word a line, lowercased; ``#`` starts a comment, blank lines are skipped."""
    try:
        with open(path, encoding="utf-8") as handle:
            return frozenset(word for line in handle if (word := line.split("#", 1)[0].strip().lower()))
    except OSError as error:
        raise ClirplugError(f"{path}: cannot read stopword list ({error.strerror})") from error


def load_stopwords(name: str) -> frozenset[str]:
    """The shipped list ``clirplug/data/stopwords/<name>.txt`` (``de``, ``en-small``, ``en-large``, ``zh``...)."""
    path = SHIPPED / f"{name}.txt"
    if not path.is_file():
        raise ClirplugError(f"{path}: no stopword list {name!r}")
    return read_stopwords(path)


def source_stopwords(lang: str) -> frozenset[str]:
    """The shipped stopwords of the query (source) language ``lang``: ``<lang>.txt`` (``en-small`` for
    English), in the tokens :func:`clirplug.mt.preprocess.preprocess` produces; empty when none is shipped.

    The lists' sources are named in their first lines (Lucene's stop sets, stopwords-iso for the
    languages Lucene has none for; ``make_stopwords.py`` beside them).
    """
    name = "en-small" if lang == "en" else lang
    return load_stopwords(name) if (SHIPPED / f"{name}.txt").is_file() else frozenset()
