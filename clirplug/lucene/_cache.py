"""Per-index caches beside a Lucene index (``<index>/clirplug/``): docids, length norms, vectors."""

import sys
from pathlib import Path

import numpy as np

from clirplug.atomic import atomic_path
from clirplug.errors import ClirplugError, warn
from clirplug.io.npz import read_arrays
from clirplug.lucene._jvm import jclass

CACHE_FOLDER = "clirplug"
CACHE_VERSION = 1


def cache_file(index, name: str) -> Path:
    return Path(index) / CACHE_FOLDER / f"{name}-v{CACHE_VERSION}.npy"


def save_cached(path: Path, arrays) -> None:
    """Save an array (``.npy``) or a dict of arrays (``.npz``) atomically; a read-only index is simply not cached."""
    try:
        path.parent.mkdir(exist_ok=True)
        with atomic_path(path) as tmp, open(tmp, "wb") as handle:
            if isinstance(arrays, dict):
                np.savez(handle, **arrays)
            else:
                np.save(handle, arrays, allow_pickle=False)
    except (OSError, ClirplugError) as error:
        print(f"clirplug: cannot cache index data in {path.parent} ({error})", file=sys.stderr)


def load_cached(path: Path):
    """What :func:`save_cached` saved at ``path``; ``None`` when absent or damaged (then recomputed)."""
    if not path.is_file():
        return None
    try:
        return read_arrays(path, "index cache")
    except ClirplugError as error:
        warn(f"{error}: recomputed")
        return None


def load_docids(index, reader) -> np.ndarray:
    """External document ids in Lucene's internal order (cached beside the index)."""
    path = cache_file(index, "docids")
    cached = load_cached(path)
    if cached is not None:
        return cached
    utils = jclass("io.anserini.index.IndexReaderUtils")
    docids = np.array([utils.convertLuceneDocidToDocid(reader, i) for i in range(reader.maxDoc())])
    save_cached(path, docids)
    return docids
