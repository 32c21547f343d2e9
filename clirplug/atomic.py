"""Atomic file and folder writes: nothing half-written is ever left at the target path."""

import contextlib
import os
import shutil
import tempfile
from pathlib import Path


@contextlib.contextmanager
def atomic_path(target, suffix=""):
    """Yield a temporary path beside ``target``; rename it onto ``target`` only on success.

    Works for files and folders alike: whatever the body creates at the yielded path
    replaces ``target`` when the body returns, and is removed when it raises.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix + ".tmp", dir=target.parent)
    os.close(fd)
    os.unlink(tmp_name)
    tmp = Path(tmp_name)
    try:
        yield tmp
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        elif tmp.exists():
            tmp.unlink()


@contextlib.contextmanager
def atomic_open(target, mode="w", encoding="utf-8"):
    """Open a temporary file beside ``target`` for writing; rename it onto ``target`` on success."""
    with atomic_path(target) as tmp:
        kwargs = {} if "b" in mode else {"encoding": encoding, "newline": "\n"}
        with open(tmp, mode, **kwargs) as handle:
            yield handle
