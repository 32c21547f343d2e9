"""Skip-or-run bookkeeping of the steps writing into one model folder.

Each step records the SHA-256 of its inputs and its settings in ``DIR/stages/<step>.json``; a
rerun skips a step whose outputs exist and whose record matches, so an interrupted run resumes.
"""

import json
import sys
from pathlib import Path

from clirplug.digest import file_digest

STAGE_FORMAT = 1  # bump when a stage's output changes for the same inputs and settings


class Stages:
    """Skip-or-run bookkeeping of the stages of one model folder."""

    def __init__(self, out: Path, force: bool):
        self.out, self.force = Path(out), force

    def _name(self, path: Path) -> str:
        """Files inside the model folder by relative name (so the folder can move), others in full."""
        path = Path(path).resolve()
        return str(path.relative_to(self.out.resolve())) if path.is_relative_to(self.out.resolve()) else str(path)

    def run(self, name, inputs, settings, outputs, body):
        """Run ``body()`` unless ``outputs`` exist and ``stages/<name>.json`` matches inputs and settings."""
        from clirplug.atomic import atomic_open

        record = {
            "format": STAGE_FORMAT,
            "inputs": {self._name(path): file_digest(path) for path in inputs},
            "settings": settings,
            "outputs": [str(Path(path).name) for path in outputs],
        }
        record_path = self.out / "stages" / f"{name}.json"
        if not self.force and record_path.is_file() and all(Path(path).is_file() for path in outputs):
            try:
                if json.loads(record_path.read_text(encoding="utf-8")) == record:
                    print(f"clirplug: {name}: up to date, skipped", file=sys.stderr)
                    return False
            except json.JSONDecodeError:
                pass
        record_path.unlink(missing_ok=True)
        body()
        with atomic_open(record_path) as handle:
            json.dump(record, handle, indent=1, sort_keys=True)
        return True
