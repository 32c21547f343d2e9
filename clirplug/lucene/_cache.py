"""Per-index caches beside a Lucene index (``<index>/clirplug/``): docids, length norms, vectors."""

import sys
from pathlib import Path

import numpy as np

from clirplug.atomic import atomic_path
from clirplug.lucene._jvm import jclass

CACHE_FOLDER = "clirplug"
CACHE_VERSION = 1


def cache_file(index, name: str) -> Path:
    return Path(index) / CACHE_FOLDER / f"{name}-v{CACHE_VERSION}.npy"


def save_cached(path: Path, array: np.ndarray) -> None:
    """Save ``array`` atomically; a read-only index is simply not cached."""
    try:
        path.parent.mkdir(exist_ok=True)
        with atomic_path(path) as tmp, open(tmp, "wb") as handle:
            np.save(handle, array, allow_pickle=False)
    except OSError as error:
        print(f"clirplug: cannot cache index data in {path.parent} ({error})", file=sys.stderr)


def load_docids(index, reader) -> np.ndarray:
    """External document ids in Lucene's internal order (cached beside the index)."""
    path = cache_file(index, "docids")
    if path.is_file():
        return np.load(path, allow_pickle=False)
    utils = jclass("io.anserini.index.IndexReaderUtils")
    docids = np.array([utils.convertLuceneDocidToDocid(reader, i) for i in range(reader.maxDoc())])
    save_cached(path, docids)
    return docids
