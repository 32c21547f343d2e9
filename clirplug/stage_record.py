"""Stage records: the one skip-or-run rule of the model folder's steps and the experiment's stages.

A stage writes ``stages/<name>.json`` after it ran: the key of what made it (a SHA-256 of its
kind, code version, settings and input contents) and the size, time and digest of each file it
wrote. It is up to date when a new key equals the recorded one and its outputs are still the
files it wrote; otherwise it reruns.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from pathlib import Path

from clirplug.atomic import atomic_open
from clirplug.digest import file_digest


def record_key(described: dict) -> str:
    """SHA-256 of a JSON-able description of everything that makes a stage's outputs."""
    text = json.dumps(described, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_record(path: Path) -> dict | None:
    """The record at ``path``, or None when absent or unreadable (a stage cut off before its record)."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def output_states(outputs: Iterable, name: Callable[[Path], str] = str) -> dict[str, dict]:
    """Size, modification time and SHA-256 of each file output (folders: none), by ``name(path)``."""
    states = {}
    for path in map(Path, outputs):
        if path.is_file():
            stat = path.stat()
            states[name(path)] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": file_digest(path)}
    return states


def _unchanged(path: Path, state: dict) -> bool:
    """True when the file still has the recorded content (size and time as a fast check, the digest decides)."""
    try:
        stat = path.stat()
    except OSError:
        return False
    if stat.st_size != state["size"]:
        return False
    return stat.st_mtime_ns == state["mtime_ns"] or file_digest(path) == state["sha256"]


def is_current(path: Path, key: str, outputs: Iterable, name: Callable[[Path], str] = str) -> bool:
    """True when the record at ``path`` holds ``key``, every output exists and each file is as it was written."""
    outputs = [Path(p) for p in outputs]
    record = read_record(path)
    if record is None or record.get("key") != key or not all(p.exists() for p in outputs):
        return False
    states = record.get("output_states", {})
    return all(name(p) not in states or _unchanged(p, states[name(p)]) for p in outputs)


def write_record(path: Path, record: dict) -> None:
    """Write a stage's record atomically (after its outputs: a stage cut off leaves no record)."""
    with atomic_open(path) as handle:
        json.dump(record, handle, indent=1, sort_keys=True, default=str)
        handle.write("\n")
