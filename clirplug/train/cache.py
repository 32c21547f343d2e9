"""Skip-or-run bookkeeping of the steps writing into one model folder.

Each step records the SHA-256 of its inputs and its settings in ``DIR/stages/<step>.json``
(:mod:`clirplug.stage_record`); a rerun skips a step whose record matches and whose outputs are
as it wrote them, so an interrupted run resumes.
"""

import sys
from pathlib import Path

from clirplug.digest import file_digest
from clirplug.stage_record import is_current, output_states, record_key, write_record

STAGE_FORMAT = 2  # bump when a stage's output changes for the same inputs and settings


class Stages:
    """Skip-or-run bookkeeping of the stages of one model folder."""

    def __init__(self, out: Path, force: bool):
        self.out, self.force = Path(out), force

    def _name(self, path: Path) -> str:
        """Files inside the model folder by relative name (so the folder can move), others in full."""
        path = Path(path).resolve()
        return str(path.relative_to(self.out.resolve())) if path.is_relative_to(self.out.resolve()) else str(path)

    def run(self, name, inputs, settings, outputs, body):
        """Run ``body()`` unless ``outputs`` are as ``stages/<name>.json`` records them for these inputs and settings."""
        described = {
            "format": STAGE_FORMAT,
            "inputs": {self._name(path): file_digest(path) for path in inputs},
            "settings": settings,
            "outputs": [self._name(path) for path in outputs],
        }
        key = record_key(described)
        path = self.out / "stages" / f"{name}.json"
        if not self.force and is_current(path, key, outputs, self._name):
            print(f"clirplug: {name}: up to date, skipped", file=sys.stderr)
            return False
        path.unlink(missing_ok=True)
        body()
        write_record(path, {**described, "key": key, "output_states": output_states(outputs, self._name)})
        return True
