"""SHA-256 of files: the one digest behind cache keys, stage records and model signatures."""

from __future__ import annotations

import hashlib
from pathlib import Path

from clirplug.errors import ClirplugError

_MEMO: dict = {}  # (path, size, mtime) -> SHA-256, within one process


def update_digest(digest, path) -> None:
    """Feed a file's bytes to the hashlib object ``digest``."""
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)


def file_digest(path) -> str:
    """SHA-256 of a file's bytes (memoized by path, size and modification time)."""
    path = Path(path)
    try:
        stat = path.stat()
    except OSError as error:
        raise ClirplugError(f"{path}: cannot read ({error.strerror})") from None
    memo_key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if memo_key not in _MEMO:
        digest = hashlib.sha256()
        update_digest(digest, path)
        _MEMO[memo_key] = digest.hexdigest()
    return _MEMO[memo_key]
