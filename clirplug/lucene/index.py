"""Building Lucene indexes with Anserini's ``IndexCollection``."""

import contextlib
import fcntl
import json
import os
import re
import shutil
import sys
from pathlib import Path

from clirplug.atomic import atomic_open, no_space_error
from clirplug.corpus import corpus_size, read_corpus
from clirplug.errors import ClirplugError, warn
from clirplug.lucene._jvm import (
    java_error_text,
    java_exception,
    java_output_to,
    java_trace_text,
    jclass,
    wait_for_java,
)
from clirplug.lucene.languages import ANALYZERS, LANGUAGES, check_language

METADATA = "clirplug.json"
FIELD, ID_FIELD = "contents", "id"  # the fields Anserini indexes a JsonCollection document's text and id in
# Anserini reads the staged corpus with Jackson, whose StreamReadConstraints refuse a string longer than
# 20,000,000 Java (UTF-16) characters; such a document made Anserini drop every document of its file.
MAX_DOCUMENT_CHARS = 20_000_000
# Lucene's longest term (IndexWriter.MAX_TERM_LENGTH, UTF-8 bytes), which bounds the id Anserini indexes.
MAX_ID_BYTES = 32766
JAVA_BLANK = "".join(map(chr, range(33)))  # what Java's String.trim() removes: Anserini skips a document of only these
NO_SPACE_TEXT = re.compile(r"No space left on device|Disk quota exceeded|File too large")
JAVA_EXCEPTION = re.compile(r"[\w.$]+(Exception|Error): ")  # the first line of a Java stack trace


def analyzer_for(language: str):
    """The Lucene analyzer Anserini indexes ``language`` with (:data:`~clirplug.lucene.languages.ANALYZERS`)."""
    if language == "en":
        return jclass("io.anserini.analysis.DefaultEnglishAnalyzer").newDefaultInstance()
    return jclass(ANALYZERS[check_language(language)])()


def _work_folder(index: Path) -> Path:
    """Where the build of ``index`` stages its corpus and Lucene writes: ``.NAME.building`` beside it."""
    return index.parent / f".{index.name}.building"


def _clear(work: Path) -> bool:
    """Remove what a build puts in ``work``; True when something was there."""
    parts = [work / name for name in ("corpus", "index", "lucene.log") if (work / name).exists()]
    for part in parts:
        shutil.rmtree(part) if part.is_dir() else part.unlink()
    return bool(parts)


@contextlib.contextmanager
def _building(index: Path):
    """Yield the locked work folder of ``index``; the leftovers of a killed build are removed first.

    The folder is emptied and removed afterwards, except after Ctrl-C while Lucene was still writing
    in it: the next build of the same index removes it then.
    """
    work = _work_folder(index)
    try:
        work.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ClirplugError(f"{index}: cannot create {work} ({error.strerror})") from error
    lock = os.open(work, os.O_RDONLY)
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ClirplugError(f"{index}: another process is building it ({work} is locked)") from None
        if os.path.lexists(index):  # built while we waited for the lock
            raise ClirplugError(f"{index}: already exists; remove it or choose another --index")
        if _clear(work):
            warn(f"{work}: removed the files of an interrupted build")
        java_running = False
        try:
            yield work
        except KeyboardInterrupt as interrupt:
            java_running = getattr(interrupt, "java_running", False)
            interrupt.add_note(f"{index} was not built; " + (f"the next build removes Lucene's partial files in {work}"
                                                             if java_running else "nothing of it is left"))
            raise
        finally:
            if not java_running:
                _clear(work)
                with contextlib.suppress(OSError):
                    work.rmdir()
    finally:
        os.close(lock)


def _unindexable(doc) -> str | None:
    """Why Anserini would not index ``doc`` (and, for a size, drop the rest of its batch); None when it would."""
    text = doc.text
    chars = len(text) if len(text) <= MAX_DOCUMENT_CHARS // 2 else len(text.encode("utf-16-le")) // 2
    if chars > MAX_DOCUMENT_CHARS:
        return f"has {chars:,} characters, more than Lucene's indexer reads ({MAX_DOCUMENT_CHARS:,})"
    if len(doc.id.encode("utf-8")) > MAX_ID_BYTES:
        return f"has an id of more than {MAX_ID_BYTES:,} bytes, Lucene's longest term"
    if not text.strip(JAVA_BLANK):
        return "has no text"
    return None


def _indexable_documents(corpus):
    """The documents of ``corpus`` that Anserini indexes; any other is named in a warning and skipped."""
    for doc in read_corpus(corpus):
        reason = _unindexable(doc)
        if reason is None:
            yield doc
        else:
            shown = doc.id if len(doc.id) <= 40 else doc.id[:40] + "..."
            warn(f"{corpus}: document {shown!r} {reason}; it is not indexed")


def _stage_corpus(corpus, folder: Path, index: Path, progress: bool) -> int:
    """Write the documents as Anserini JsonCollection lines (title folded into contents); return their number."""
    from tqdm import tqdm

    folder.mkdir()
    count = 0
    total = corpus_size(corpus) if progress and sys.stderr.isatty() else None  # counted only for a bar shown
    with no_space_error(index), open(folder / "docs.jsonl", "w", encoding="utf-8") as out:
        docs = tqdm(_indexable_documents(corpus), desc="reading corpus", unit=" docs", total=total,
                    disable=None if progress else True, file=sys.stderr)
        for doc in docs:
            out.write(json.dumps({ID_FIELD: doc.id, FIELD: doc.text}, ensure_ascii=False) + "\n")
            count += 1
    if count == 0:
        raise ClirplugError(f"{corpus}: the corpus holds no documents to index")
    return count


def _read_offset(path: Path) -> int | None:
    """How far this process (Lucene's reader) has read ``path``: the offset in ``/proc/self/fdinfo``, None if unknown."""
    try:
        for fd in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/self/fd/{fd}") == str(path):
                    with open(f"/proc/self/fdinfo/{fd}", encoding="ascii") as info:
                        return next(int(line.split()[1]) for line in info if line.startswith("pos:"))
    except (OSError, StopIteration, ValueError):
        pass
    return None


@contextlib.contextmanager
def _lucene_progress(staged: Path, progress: bool):
    """Poll Lucene's reading of the staged corpus into a bar (bytes, with an ETA) on the terminal's stderr.

    Anserini counts the documents of a file only when the file is done, so the bar follows the
    reader's offset in the file instead (Linux; elsewhere it fills at the end). Java's output goes
    to a log meanwhile, so the bar writes to a copy of the original stderr.
    """
    from tqdm import tqdm

    path, size = staged.resolve(), staged.stat().st_size
    with os.fdopen(os.dup(2), "w") as stderr, tqdm(total=size, desc="indexing", unit="B", unit_scale=True, file=stderr,
                                                  disable=None if progress else True) as bar:
        def poll(done=False):
            offset = size if done else _read_offset(path)
            if offset is not None and offset > bar.n:
                bar.update(offset - bar.n)

        yield poll


def _run_lucene(corpus, work: Path, index: Path, language: str, threads: int, count: int, progress: bool) -> None:
    """Index ``work/corpus`` into ``work/index`` with Anserini; a failure is one ClirplugError."""
    args = jclass("io.anserini.index.IndexCollection$Args")()
    args.collectionClass = "JsonCollection"
    args.generatorClass = "DefaultLuceneDocumentGenerator"
    args.input = str(work / "corpus")
    args.index = str(work / "index")
    args.threads = threads
    args.language = language
    args.storePositions = args.storeDocvectors = args.storeRaw = True
    args.optimize = True
    args.quiet = True
    failure = trace = ""
    # Anserini's log and stack traces go to lucene.log, read below
    with _lucene_progress(work / "corpus" / "docs.jsonl", progress) as poll, java_output_to(work / "lucene.log") as log:
        try:
            indexer = jclass("io.anserini.index.IndexCollection")(args)
            wait_for_java(indexer.run, poll=poll)
            poll(done=True)
        except java_exception() as error:
            failure, trace = java_error_text(error), java_trace_text(error)
    text = log.read_text(encoding="utf-8", errors="replace")
    # a full disk can surface as a later error (AlreadyClosedException: this IndexWriter is closed) caused by it
    if NO_SPACE_TEXT.search(f"{failure}\n{trace}\n{text}"):
        raise ClirplugError(f"no space left writing {index}")
    if failure:
        raise ClirplugError(f"{corpus}: Lucene failed ({failure})")
    lines = text.splitlines()
    errors = [line for line in lines if JAVA_EXCEPTION.match(line)] + [line.partition(" - ")[2] for line in lines
                                                                        if " ERROR " in line]
    indexed = indexer.getCounters().indexed.get()
    if errors or indexed != count:
        cause = errors[0] if errors else "no message from Lucene"
        raise ClirplugError(f"{corpus}: Lucene indexed {indexed} of {count} documents ({cause})")


def build_index(corpus, index, language: str = "en", threads: int | None = None, progress: bool = True) -> dict:
    """Index ``corpus`` into the Lucene index folder ``index`` and return its statistics.

    Positions, document vectors and the raw text are stored; terms are analyzed with
    Anserini's analyzer for ``language``. The corpus is staged and the index built in
    ``.NAME.building`` beside the target (:func:`_work_folder`), and the index is renamed into
    place only when complete, so a failed build leaves nothing behind, and a killed one
    leaves that folder, which the next build of the same index removes. A document Anserini
    would not index (empty, longer than :data:`MAX_DOCUMENT_CHARS`, an id longer than
    :data:`MAX_ID_BYTES`) is named in a warning and skipped.
    """
    check_language(language)
    index = Path(index)
    if os.path.lexists(index):  # a dangling symbolic link too: nothing named is replaced
        raise ClirplugError(f"{index}: already exists; remove it or choose another --index")
    threads = threads or min(4, os.cpu_count() or 1)
    with _building(index) as work:
        count = _stage_corpus(corpus, work / "corpus", index, progress)
        print(f"indexing {count} documents with Lucene ({language} analyzer, {threads} threads)", file=sys.stderr)
        _run_lucene(corpus, work, index, language, threads, count, progress)
        with no_space_error(index):
            (work / "index" / METADATA).write_text(json.dumps({"language": language, "corpus": str(corpus)}, indent=1) + "\n")
        stats = index_statistics(work / "index")
        if stats["documents"] != count:
            raise ClirplugError(f"{corpus}: the index holds {stats['documents']} of {count} documents")
        if os.path.lexists(index):  # made meanwhile by someone else
            raise ClirplugError(f"{index}: already exists; refusing to replace it")
        os.rename(work / "index", index)
    return stats


def index_metadata(index) -> dict:
    """clirplug's metadata of an index, ``clirplug.json``: the language of its analyzer (and the corpus it was built from).

    An index built without clirplug (by Pyserini or Anserini) has none. Its analyzer is then unknown, and
    queries analyzed by another language's analyzer would silently miss its terms, so such an index is
    refused until :func:`record_language` (``clirplug index --existing``) states its language.
    """
    index = Path(index)
    path = index / METADATA
    if not path.is_file():
        raise ClirplugError(f"{index}: no {METADATA}, so its analyzer is unknown (an index built by Pyserini?); state its "
                            f"language once with `clirplug index --existing --index {index} --language LANG`")
    try:
        metadata = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ClirplugError(f"{path}: cannot read the index's metadata ({error})") from error
    if not isinstance(metadata, dict) or metadata.get("language") not in LANGUAGES:
        raise ClirplugError(f"{path}: 'language' must be one of {', '.join(sorted(LANGUAGES))}")
    return metadata


def record_language(index, language: str) -> dict:
    """State the analyzer ``language`` of a Lucene index built without clirplug (e.g. by Pyserini) in its
    ``clirplug.json``, so that clirplug analyzes queries as the index's terms were; return its statistics.

    An index that already records a language keeps it: another ``language`` is refused.
    """
    check_language(language)
    index = check_index(index)
    if (index / METADATA).is_file():
        recorded = index_metadata(index)["language"]
        if recorded != language:
            raise ClirplugError(f"{index}: its {METADATA} records the {recorded} analyzer, not {language}")
    else:
        with atomic_open(index / METADATA) as handle:
            handle.write(json.dumps({"language": language}, indent=1) + "\n")
    return index_statistics(index)


def check_index(index) -> Path:
    """Return ``index`` as a Path, or raise a clear error when it is not a Lucene index."""
    index = Path(index)
    if not index.is_dir() or not any(index.glob("segments_*")):
        raise ClirplugError(f"{index}: not a Lucene index (build one with `clirplug index`)")
    return index


def open_reader(index):
    """A Lucene ``IndexReader`` of ``index``; a damaged index (a segment file missing or corrupt) is one ClirplugError."""
    index = check_index(index)
    try:
        return jclass("io.anserini.index.IndexReaderUtils").getReader(str(index))
    except java_exception() as error:
        raise ClirplugError(f"{index}: cannot open the Lucene index ({java_error_text(error)}); "
                            "rebuild it with `clirplug index`") from error


def index_statistics(index) -> dict:
    """Collection statistics of an index: documents, unique and total terms, average length."""
    utils = jclass("io.anserini.index.IndexReaderUtils")
    reader = open_reader(index)
    try:
        stats = utils.getIndexStats(reader)
        result = {key: int(stats.get(key)) for key in ("documents", "non_empty_documents", "unique_terms", "total_terms")}
    finally:
        reader.close()
    result["average_length"] = result["total_terms"] / max(result["non_empty_documents"], 1)
    result["language"] = index_metadata(index)["language"]
    return result
