"""Building Lucene indexes with Anserini's ``IndexCollection``."""

import json
import os
import sys
import tempfile
from pathlib import Path

from clirplug.atomic import atomic_path
from clirplug.corpus import read_corpus
from clirplug.errors import ClirplugError
from clirplug.lucene._jvm import jclass

LANGUAGES = ("en", "de", "fr", "es")
METADATA = "clirplug.json"


def _stage_corpus(corpus, folder: Path, progress: bool) -> int:
    """Write the validated corpus as Anserini JsonCollection lines (title folded into contents)."""
    from tqdm import tqdm

    count = 0
    with open(folder / "docs.jsonl", "w", encoding="utf-8") as out:
        for doc in tqdm(read_corpus(corpus), desc="reading corpus", unit=" docs", disable=not progress, file=sys.stderr):
            out.write(json.dumps({"id": doc.id, "contents": doc.text}, ensure_ascii=False) + "\n")
            count += 1
    if count == 0:
        raise ClirplugError(f"{corpus}: the corpus holds no documents")
    return count


def build_index(corpus, index, language: str = "en", threads: int | None = None, progress: bool = True) -> dict:
    """Index ``corpus`` into the Lucene index folder ``index`` and return its statistics.

    Positions, document vectors and the raw text are stored; terms are analyzed with
    Anserini's analyzer for ``language``. The index is built beside the target and
    renamed into place only when complete, so a failed build leaves nothing behind.
    """
    if language not in LANGUAGES:
        raise ClirplugError(f"--language {language!r}: choose one of {', '.join(LANGUAGES)}")
    index = Path(index)
    if index.exists():
        raise ClirplugError(f"{index}: already exists; remove it or choose another --index")
    threads = threads or min(4, os.cpu_count() or 1)
    index.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".corpus-", dir=index.parent) as staging, atomic_path(index) as building:
        count = _stage_corpus(corpus, Path(staging), progress)
        print(f"indexing {count} documents with Lucene ({language} analyzer, {threads} threads)", file=sys.stderr)
        args = jclass("io.anserini.index.IndexCollection$Args")()
        args.collectionClass = "JsonCollection"
        args.generatorClass = "DefaultLuceneDocumentGenerator"
        args.input = staging
        args.index = str(building)
        args.threads = threads
        args.language = language
        args.storePositions = args.storeDocvectors = args.storeRaw = True
        args.optimize = True
        args.quiet = True
        indexer = jclass("io.anserini.index.IndexCollection")(args)
        indexer.run()
        indexed = indexer.getCounters().indexed.get()
        if indexed != count:
            raise ClirplugError(f"{corpus}: Lucene indexed {indexed} of {count} documents (see the log above)")
        (building / METADATA).write_text(json.dumps({"language": language, "corpus": str(corpus)}, indent=1) + "\n")
    return index_statistics(index)


def index_metadata(index) -> dict:
    """clirplug's metadata of an index (its analyzer language); defaults for indexes built elsewhere."""
    path = Path(index) / METADATA
    if path.is_file():
        return json.loads(path.read_text())
    return {"language": "en"}


def check_index(index) -> Path:
    """Return ``index`` as a Path, or raise a clear error when it is not a Lucene index."""
    index = Path(index)
    if not index.is_dir() or not any(index.glob("segments_*")):
        raise ClirplugError(f"{index}: not a Lucene index (build one with `clirplug index`)")
    return index


def index_statistics(index) -> dict:
    """Collection statistics of an index: documents, unique and total terms, average length."""
    utils = jclass("io.anserini.index.IndexReaderUtils")
    reader = utils.getReader(str(check_index(index)))
    try:
        stats = utils.getIndexStats(reader)
        result = {key: int(stats.get(key)) for key in ("documents", "non_empty_documents", "unique_terms", "total_terms")}
    finally:
        reader.close()
    result["average_length"] = result["total_terms"] / max(result["non_empty_documents"], 1)
    result["language"] = index_metadata(index)["language"]
    return result
