"""The experiment's stage records: a stage's cache key, its record file, and whether it is up to date.

A stage is up to date when its record (``runs/<experiment>/stages/<stage>.json``) holds the key
of its kind's code version, settings, input contents and dependencies' keys, and its outputs
are still the files it wrote.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from clirplug.digest import file_digest
from clirplug.experiment.stages import STAGE_KINDS, Stage

RECORD_FORMAT = 1


def stage_key(stage: Stage, dep_keys: dict[str, str]) -> tuple[str, dict]:
    """The cache key of ``stage`` and the JSON-able description it hashes."""
    from clirplug import __version__

    _, version = STAGE_KINDS[stage.kind]
    described = {
        "format": RECORD_FORMAT,
        "kind": stage.kind,
        "code_version": version,
        "clirplug": __version__,
        "settings": stage.settings,
        "inputs": [file_digest(path) for path in stage.inputs],  # by content: the files may move
        "deps": {name: dep_keys[name] for name in stage.deps},
    }
    text = json.dumps(described, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest(), described


def record_path(config, stage: Stage) -> Path:
    return config.run_dir / "stages" / f"{stage.name}.json"


def read_record(config, stage: Stage) -> dict | None:
    """The stage's record, or None when absent or unreadable (a stage cut off before its record)."""
    path = record_path(config, stage)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def output_states(stage: Stage) -> dict[str, dict]:
    """Size, modification time and SHA-256 of each file output (folders: none), kept in the record."""
    states = {}
    for path in map(Path, stage.outputs):
        if path.is_file():
            stat = path.stat()
            states[str(path)] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": file_digest(path)}
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


def is_current(config, stage: Stage, key: str) -> bool:
    """True when the stage's record holds ``key``, all its outputs exist and its files are as it wrote them."""
    record = read_record(config, stage)
    if record is None or record.get("key") != key or not all(Path(p).exists() for p in stage.outputs):
        return False
    states = record.get("output_states", {})
    return all(_unchanged(Path(path), state) for path, state in states.items())
