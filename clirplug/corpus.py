"""Reading document collections: JSONL (``{"id", "contents"[, "title"]}``), ``.jsonl.gz``, a folder of them,
or ``irds:<id>``, the documents of an ir_datasets dataset (:mod:`clirplug.irds`)."""

import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from clirplug.errors import ClirplugError, where
from clirplug.io.jsonl import json_records

CORPUS_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz")


class Document(NamedTuple):
    id: str
    title: str
    contents: str

    @property
    def text(self) -> str:
        """The indexed text: the title folded in front of the contents."""
        return f"{self.title}\n{self.contents}" if self.title else self.contents


LINK_FILE_BYTES = 1024  # a link file is one short line: the path of the file it stands for


def followed_link(path) -> Path:
    """``path``, or the file it names when it is a link file: a symbolic link stored as text (one line holding a
    path relative to the file's folder, as git writes a link where the file system has none), such as a
    collection's ``corpus.jsonl`` that stands for another collection's documents."""
    path = Path(path)
    if not path.is_file() or path.stat().st_size > LINK_FILE_BYTES:
        return path
    text = path.read_bytes().strip()
    if not text or b"\n" in text or text.startswith((b"{", b"[")):
        return path
    try:
        target = path.parent / text.decode("utf-8")
    except UnicodeDecodeError:
        return path
    if not target.is_file():
        raise ClirplugError(f"{path}: names {target}, which does not exist (a link file holds the path of a file)")
    return followed_link(target.resolve())


def corpus_files(path) -> list[Path]:
    """The JSONL files of ``path`` (a file, or a folder searched in sorted order); a link file is followed."""
    path = followed_link(path)
    if path.is_file():
        return [path]
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(CORPUS_SUFFIXES))
        if not files:
            raise ClirplugError(f"{path}: no corpus files ({', '.join(CORPUS_SUFFIXES)}) in this folder")
        return files
    raise ClirplugError(f"{path}: no such corpus file or folder")


def _open_text(path: Path):
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path, encoding="utf-8")


def _field(record: dict, name: str, path: Path, line_number: int, required: bool) -> str:
    value = record.get(name, None)
    if value is None:
        if required:
            raise ClirplugError(f"{where(path, line_number)}: missing field {name!r}")
        return ""
    if not isinstance(value, str):
        raise ClirplugError(f"{where(path, line_number)}: field {name!r} must be a string, got {type(value).__name__}")
    return value


def corpus_size(path) -> int | None:
    """The number of documents of a corpus as cheaply known: the lines of plain JSONL files, or the
    count ir_datasets states; None for compressed files (a progress bar's total)."""
    from clirplug.irds import irds_document_count, irds_id

    dataset_id = irds_id(path)
    if dataset_id is not None:
        return irds_document_count(dataset_id)
    lines = 0
    for file in corpus_files(path):
        if file.suffix == ".gz":
            return None
        with open(file, "rb") as handle:
            lines += sum(block.count(b"\n") for block in iter(lambda: handle.read(1 << 20), b""))
    return lines


def _check_id(doc_id: str, seen: set, place: str) -> str:
    doc_id = doc_id.strip()
    if not doc_id or any(c.isspace() for c in doc_id):
        raise ClirplugError(f"{place}: field 'id' must be non-empty without spaces: {doc_id!r}")
    if doc_id in seen:
        raise ClirplugError(f"{place}: duplicate document id {doc_id!r}")
    seen.add(doc_id)
    return doc_id


def read_corpus(path) -> Iterator[Document]:
    """Yield the documents of a corpus file or folder (or ``irds:<id>``), validating every line.

    A line that is not a JSON object, lacks ``id`` or ``contents``, has a non-string
    field, or repeats an earlier id raises :class:`ClirplugError` naming file and line.
    """
    from clirplug.irds import irds_documents, irds_id

    seen = set()
    dataset_id = irds_id(path)
    if dataset_id is not None:
        for number, (doc_id, title, contents) in enumerate(irds_documents(dataset_id), 1):
            yield Document(_check_id(doc_id, seen, f"{path} document {number}"), title, contents)
        return
    for file in corpus_files(path):
        try:
            with _open_text(file) as handle:
                for line_number, record in json_records(handle, file):
                    doc_id = _check_id(_field(record, "id", file, line_number, required=True), seen,
                                       where(file, line_number))
                    yield Document(
                        doc_id,
                        _field(record, "title", file, line_number, required=False),
                        _field(record, "contents", file, line_number, required=True),
                    )
        except (OSError, EOFError, UnicodeDecodeError) as error:
            raise ClirplugError(f"{file}: cannot read corpus ({error})") from error
