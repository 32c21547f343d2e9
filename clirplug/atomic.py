"""Atomic file and folder writes: nothing half-written is ever left at the target path.

Only a regular file is ever replaced: writing to a path that names a folder, a symbolic link, a
FIFO or a device is an error, so an ``--output`` that points at one (``.``, ``/dev/stdout``)
cannot delete or replace anything. Missing folders above an output are created.
"""

import contextlib
import errno
import os
import re
import shutil
import stat
import sys
import tempfile
from pathlib import Path

from clirplug.errors import ClirplugError

NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)  # a full disk, a full quota, a file-size limit
TEMPORARY = re.compile(r"\..+\.[a-z0-9_]{8}(\.\w+)?\.tmp")  # the names atomic_path gives: .NAME.XXXXXXXX[SUFFIX].tmp
STDOUT = "-"  # the output name of standard output, where one output file makes sense (run files, translations)
# file type -> how messages name it (stat.S_IFMT of lstat)
KINDS = {stat.S_IFDIR: "a folder", stat.S_IFLNK: "a symbolic link", stat.S_IFIFO: "a FIFO (named pipe)",
         stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket"}


def is_path_part(name: str) -> bool:
    """True when ``name`` is one plain file or folder name: not empty, not ``.`` or ``..``, no separator or NUL."""
    return bool(name) and name not in (".", "..") and not any(c in name for c in "/\\\0")


def not_regular(path) -> str | None:
    """What ``path`` is when it exists and is not a regular file (``"a symbolic link"``, ...); None otherwise.

    The name itself is looked at (``lstat``): a symbolic link is one, whatever it points to.
    """
    try:
        mode = os.lstat(path).st_mode
    except OSError:  # missing, or a folder above it missing or not a folder
        return None
    return None if stat.S_ISREG(mode) else KINDS.get(stat.S_IFMT(mode), "not a regular file")


def check_output(path, option: str = "--output", *, folder: bool = False, stdout: bool = False,
                 suffixes: tuple = ("",)) -> None:
    """Refuse, before any work, an output ``path`` that clirplug would not write as the user meant.

    A file output must be missing or a regular file (replaced whole); with ``folder``, the output is
    a folder, missing or existing (written in). Missing folders above it are created when it is
    written, so the nearest existing one must be a folder. ``-`` is standard output where
    ``stdout`` allows it. With ``suffixes``, ``path`` is a prefix and the files are ``path + suffix``.
    Errors name ``option`` and ``path``.
    """
    text = os.fspath(path)
    if text == STDOUT:
        if stdout and not folder:
            return
        raise ClirplugError(f"{option} -: this option cannot write to standard output; name a "
                            f"{'folder' if folder else 'file'}")
    if folder:
        if os.path.lexists(text) and not Path(text).is_dir():
            raise ClirplugError(f"{option} {text}: is {not_regular(text) or 'a file'}, not a folder")
        names = [text]
    else:
        if text.endswith(("/", os.sep)) or Path(text).is_dir():
            raise ClirplugError(f"{option} {text}: is a folder; name the file to write")
        names = [text + suffix for suffix in suffixes]
        for name in names:
            kind = not_regular(name)
            if kind is not None:
                hint = " or - (standard output)" if stdout else ""
                raise ClirplugError(f"{option} {name}: is {kind}, which writing would replace; name a regular "
                                    f"file{hint}")
    parent = Path(names[0]).parent
    while not os.path.lexists(parent) and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ClirplugError(f"{option} {text}: {parent} is not a folder")


@contextlib.contextmanager
def no_space_error(path):
    """Turn a full disk (or quota, or file-size limit) met while writing ``path`` into one clear ClirplugError."""
    try:
        yield
    except OSError as error:
        if error.errno not in NO_SPACE:
            raise
        raise ClirplugError(f"no space left writing {path}") from error


def _refuse_to_replace(target: Path) -> None:
    kind = not_regular(target)
    if kind is not None:
        raise ClirplugError(f"{target}: is {kind}; refusing to replace it")


@contextlib.contextmanager
def atomic_path(target, suffix=""):
    """Yield a temporary path beside ``target``; rename it onto ``target`` only on success.

    Whatever the body creates at the yielded path (a file, or a folder when ``target`` does
    not exist yet) replaces ``target`` when the body returns, and is removed when it raises.
    Missing folders above ``target`` are created. A ``target`` that is not a regular file (a
    folder, a symbolic link, a FIFO, a device: :func:`not_regular`) is refused (``ClirplugError``),
    never replaced, before and after the body; a full disk is one ``ClirplugError`` naming ``target``.
    """
    target = Path(target)
    _refuse_to_replace(target)
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
        _refuse_to_replace(target)  # made while the body ran
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


@contextlib.contextmanager
def open_output(target):
    """Standard output for ``-`` (:data:`STDOUT`), else :func:`atomic_open` of ``target``, for writing text."""
    if os.fspath(target) != STDOUT:
        with atomic_open(target) as handle:
            yield handle
        return
    yield sys.stdout
    sys.stdout.flush()
