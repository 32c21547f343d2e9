"""Atomic file and folder writes: nothing half-written is ever left at the target path.

An existing folder is never replaced: writing to a path that names one is an error, so an
``--output`` that points at a folder (``.`` included) cannot delete anything.
"""

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from clirplug.errors import ClirplugError


def check_output(path, option: str = "--output") -> Path:
    """Refuse, before any work, an output file ``path`` that names a folder or lies in a missing one.

    Commands call this on the files the user names, so a mistake costs an error message
    instead of a finished computation (or a folder).
    """
    text = os.fspath(path)
    path = Path(path)
    if path.is_dir() or text.endswith(("/", os.sep)):
        raise ClirplugError(f"{option} {text}: is a folder; name the file to write")
    if not path.parent.is_dir():
        raise ClirplugError(f"{option} {text}: folder {path.parent} does not exist")
    return path


@contextlib.contextmanager
def atomic_path(target, suffix=""):
    """Yield a temporary path beside ``target``; rename it onto ``target`` only on success.

    Whatever the body creates at the yielded path (a file, or a folder when ``target`` does
    not exist yet) replaces ``target`` when the body returns, and is removed when it raises.
    A ``target`` that is an existing folder is refused (``ClirplugError``), never replaced.
    """
    target = Path(target)
    if target.is_dir():
        raise ClirplugError(f"{target}: is a folder; refusing to replace it")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix + ".tmp", dir=target.parent)
    except OSError as error:
        raise ClirplugError(f"{target}: cannot write ({error.strerror})") from error
    os.close(fd)
    os.unlink(tmp_name)
    tmp = Path(tmp_name)
    try:
        yield tmp
        if target.is_dir():  # made while the body ran
            raise ClirplugError(f"{target}: is a folder; refusing to replace it")
        if tmp.is_dir() and target.exists():
            raise ClirplugError(f"{target}: already exists; refusing to replace it")
        try:
            os.replace(tmp, target)
        except OSError as error:
            raise ClirplugError(f"{target}: cannot write ({error.strerror})") from error
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
