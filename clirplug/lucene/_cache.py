"""Per-index caches beside a Lucene index (``<index>/clirplug/``): docids, length norms, vectors."""

import shutil
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


def save_mapped(path: Path, arrays: dict) -> None:
    """Save a dict of arrays as a folder of ``.npy`` files (atomically) for :func:`load_mapped`; a read-only
    index is simply not cached."""
    try:
        path.parent.mkdir(exist_ok=True)
        with atomic_path(path) as tmp:
            tmp.mkdir()
            for name, array in arrays.items():
                np.save(tmp / f"{name}.npy", array, allow_pickle=False)
    except (OSError, ClirplugError) as error:
        if not path.is_dir():  # else another process wrote the same cache first
            print(f"clirplug: cannot cache index data in {path.parent} ({error})", file=sys.stderr)


def load_mapped(path: Path, names) -> dict | None:
    """The arrays ``names`` of a :func:`save_mapped` folder, memory-mapped read-only (a page is read when it is
    first used, so memory follows what is looked up, not the collection); ``None`` when absent or damaged
    (a damaged folder is removed, to be written again)."""
    if not path.is_dir():
        return None
    try:
        return {name: np.load(path / f"{name}.npy", mmap_mode="r", allow_pickle=False) for name in names}
    except (OSError, ValueError) as error:
        warn(f"{path}: cannot read the index cache ({' '.join(str(error).split())}): recomputed")
        shutil.rmtree(path, ignore_errors=True)
        return None


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
