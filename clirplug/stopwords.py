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
    """The shipped list ``clirplug/data/stopwords/<name>.txt`` (``de``, ``en-small``, ``en-large``)."""
    path = SHIPPED / f"{name}.txt"
    if not path.is_file():
        raise ClirplugError(f"{path}: no stopword list {name!r}")
    return read_stopwords(path)
