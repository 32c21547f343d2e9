"""Atomic file and folder writes: nothing half-written is ever left at the target path.

An existing folder is never replaced: writing to a path that names one is an error, so an
``--output`` that points at a folder (``.`` included) cannot delete anything.
"""

import contextlib
import errno
import os
import re
import shutil
import tempfile
from pathlib import Path

from clirplug.errors import ClirplugError

NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)  # a full disk, a full quota, a file-size limit
TEMPORARY = re.compile(r"\..+\.[a-z0-9_]{8}(\.\w+)?\.tmp")  # the names atomic_path gives: .NAME.XXXXXXXX[SUFFIX].tmp


def is_path_part(name: str) -> bool:
    """True when ``name`` is one plain file or folder name: not empty, not ``.`` or ``..``, no separator or NUL."""
    return bool(name) and name not in (".", "..") and not any(c in name for c in "/\\\0")


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
def no_space_error(path):
    """Turn a full disk (or quota, or file-size limit) met while writing ``path`` into one clear ClirplugError."""
    try:
        yield
    except OSError as error:
        if error.errno not in NO_SPACE:
            raise
        raise ClirplugError(f"no space left writing {path}") from error


@contextlib.contextmanager
def atomic_path(target, suffix=""):
    """Yield a temporary path beside ``target``; rename it onto ``target`` only on success.

    Whatever the body creates at the yielded path (a file, or a folder when ``target`` does
    not exist yet) replaces ``target`` when the body returns, and is removed when it raises.
    A ``target`` that is an existing folder is refused (``ClirplugError``), never replaced, and a
    full disk is one ``ClirplugError`` naming ``target``.
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
        with no_space_error(target):
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


def remove_temporaries(folder) -> int:
    """Remove the temporaries of :func:`atomic_path` under ``folder`` that a killed process left; return how many.

    Only for folders no other process writes in (an experiment's, under its root lock).
    """
    found = [path for path in Path(folder).rglob(".*.tmp") if TEMPORARY.fullmatch(path.name)] if Path(folder).is_dir() else []
    for path in found:
        shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)  # missing: inside one removed
    return len(found)


@contextlib.contextmanager
def atomic_open(target, mode="w", encoding="utf-8"):
    """Open a temporary file beside ``target`` for writing; rename it onto ``target`` on success."""
    with atomic_path(target) as tmp:
        kwargs = {} if "b" in mode else {"encoding": encoding, "newline": "\n"}
        with open(tmp, mode, **kwargs) as handle:
            yield handle
