"""The demo experiment's MAP per run, pinned in tests/data/demo_map.tsv.

The table holds one row per scored run of clirplug/data/demo.yaml (run, split, field, MAP to 4 decimals),
copied from the report of the session's demo run (the ``demo`` fixture of conftest.py). A change that
moves a number fails with the rows that changed, appeared or disappeared. When the change is meant,
rewrite the table and commit it with the change (docs/testing.md):

    CLIRPLUG_UPDATE_DEMO_MAP=1 .venv/bin/python -m pytest tests/integration/test_demo_map.py
"""

import json
import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.jvm

TABLE = Path(__file__).resolve().parents[1] / "data" / "demo_map.tsv"
UPDATE = "CLIRPLUG_UPDATE_DEMO_MAP"
COLUMNS = ("run", "split", "field", "MAP")
PROVENANCE = f"# MAP of the runs of clirplug/data/demo.yaml (report.json); rewritten by {UPDATE}=1 (docs/testing.md)"


def report_map(report: dict) -> dict:
    """``(run, split, field) -> MAP`` written with 4 decimals, from the rows of ``report.json``'s scores."""
    return {(r["run"], r["split"], r["field"]): f"{r['value']:.4f}" for r in report["scores"] if r["measure"] == "MAP"}


def read_table(path: Path) -> dict:
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    assert tuple(lines[0].split("\t")) == COLUMNS, f"{path}: expected the header {COLUMNS}"
    return {tuple(fields[:3]): fields[3] for fields in (line.split("\t") for line in lines[1:])}


def write_table(path: Path, rows: dict) -> None:
    lines = [PROVENANCE, "\t".join(COLUMNS)] + ["\t".join((*key, value)) for key, value in rows.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def table_diff(expected: dict, got: dict) -> list[str]:
    """One line per row that differs: ``~`` changed (old -> new), ``+`` added, ``-`` removed."""
    lines = []
    for key in [*expected, *(key for key in got if key not in expected)]:
        old, new, row = expected.get(key), got.get(key), "\t".join(key)
        if new is None:
            lines.append(f"- {row}\t{old}  (removed)")
        elif old is None:
            lines.append(f"+ {row}\t{new}  (added)")
        elif old != new:
            lines.append(f"~ {row}\t{old} -> {new}  ({float(new) - float(old):+.4f})")
    return lines


def test_demo_map_equals_the_table(demo):
    config, _ = demo
    got = report_map(json.loads((config.run_dir / "report.json").read_text(encoding="utf-8")))
    assert got, "the demo report has no MAP row"
    if os.environ.get(UPDATE) == "1":
        write_table(TABLE, got)
        pytest.skip(f"{UPDATE}=1: rewrote {TABLE} ({len(got)} rows); review `git diff` and commit it")
    diff = table_diff(read_table(TABLE), got)
    assert not diff, (f"the demo's MAP moved ({len(diff)} rows; {TABLE.name} -> now):\n  " + "\n  ".join(diff)
                      + f"\nIf the change is meant: {UPDATE}=1 pytest {Path(__file__).name}, then commit the table")


def test_table_diff_shows_changed_added_and_removed_rows(tmp_path):
    before = {("dt", "dev", "title"): "0.3000", ("psq", "dev", "title"): "0.2500", ("old", "dev", "desc"): "0.1000"}
    after = {("dt", "dev", "title"): "0.3000", ("psq", "dev", "title"): "0.2612", ("new", "dev", "desc"): "0.4000"}
    assert table_diff(before, after) == ["~ psq\tdev\ttitle\t0.2500 -> 0.2612  (+0.0112)",
                                         "- old\tdev\tdesc\t0.1000  (removed)",
                                         "+ new\tdev\tdesc\t0.4000  (added)"]
    write_table(tmp_path / "map.tsv", before)
    assert read_table(tmp_path / "map.tsv") == before
