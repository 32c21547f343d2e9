"""The experiment's stage records: a stage's cache key, its record file, and whether it is up to date.

A stage is up to date when its record (``runs/<experiment>/stages/<stage>.json``) holds the key
of its kind's code version, settings, input contents and dependencies' keys, and its outputs
are still the files it wrote (the rule of :mod:`clirplug.stage_record`).
"""

from __future__ import annotations

from pathlib import Path

from clirplug import stage_record
from clirplug.digest import file_digest
from clirplug.experiment.kinds import STAGE_KINDS
from clirplug.experiment.plan import Stage

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
    return stage_record.record_key(described), described


def record_path(config, stage: Stage) -> Path:
    return config.run_dir / "stages" / f"{stage.name}.json"


def read_record(config, stage: Stage) -> dict | None:
    """The stage's record, or None when absent or unreadable (a stage cut off before its record)."""
    return stage_record.read_record(record_path(config, stage))


def is_current(config, stage: Stage, key: str) -> bool:
    """True when the stage's record holds ``key``, all its outputs exist and its files are as it wrote them."""
    return stage_record.is_current(record_path(config, stage), key, stage.outputs)
