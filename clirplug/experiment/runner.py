"""Run an experiment's stages in dependency order, skipping those already done.

A stage's cache key is the SHA-256 of its kind, the kind's code version, the clirplug
version, its settings, the SHA-256 of each external input file and the keys of the stages
it depends on (so a change anywhere upstream reaches every stage downstream). After a
stage succeeds its record ``runs/<experiment>/stages/<stage>.json`` is written (key,
settings, inputs, outputs, wall seconds, peak memory, metrics); outputs are written
atomically before it. A stage is skipped when its record holds the current key and all
its outputs exist, so a re-run redoes only what changed and an interrupted run resumes at
the stage that was cut off.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from clirplug.atomic import atomic_open
from clirplug.digest import file_digest
from clirplug.errors import ClirplugError
from clirplug.experiment.stages import STAGE_KINDS, Context, Stage, build_plan

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


def ordered(stages: dict[str, Stage]) -> list[Stage]:
    """The stages in dependency order (plan order among independent ones); a cycle is an error."""
    done, order, visiting = set(), [], set()

    def visit(name):
        if name in done:
            return
        if name in visiting:
            raise ClirplugError(f"the stages depend on each other in a cycle through {name}")
        visiting.add(name)
        for dep in stages[name].deps:
            visit(dep)
        visiting.discard(name)
        done.add(name)
        order.append(stages[name])

    for name in stages:
        visit(name)
    return order


@dataclass
class Outcome:
    """What happened to one stage in one invocation."""

    stage: Stage
    key: str
    status: str  # "up to date", "would run", "ran"
    seconds: float = 0.0


def _reset_peak_rss() -> None:
    """Reset this process's VmHWM (Linux ``clear_refs`` 5), so each stage's peak is its own."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")
    except OSError:
        pass


def execute(stage: Stage, key: str, described: dict, ctx: Context) -> float:
    """Run one stage, then write its record; return its wall seconds."""
    from clirplug.experiment.stages import peak_rss_mb

    config = ctx.config
    path = record_path(config, stage)
    path.unlink(missing_ok=True)
    for output in stage.outputs:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
    function, _ = STAGE_KINDS[stage.kind]
    _reset_peak_rss()
    start = time.perf_counter()
    metrics = function(stage, ctx) or {}
    seconds = time.perf_counter() - start
    peak = max(peak_rss_mb(), metrics.get("worker_peak_rss_mb") or 0.0)
    record = {**described, "key": key, "stage": stage.name, "run": stage.run,
              "outputs": [str(p) for p in stage.outputs], "inputs_from": [str(p) for p in stage.inputs_from],
              "wall_seconds": round(seconds, 3), "peak_rss_mb": round(peak, 1), "jobs": ctx.jobs,
              "metrics": metrics, "output_states": output_states(stage)}
    with atomic_open(path) as handle:
        json.dump(record, handle, indent=1, sort_keys=True, default=str)
        handle.write("\n")
    return seconds


def run_experiment(config, jobs: int | None = None, dry_run: bool = False, force: bool = False,
                   progress: bool = True, log=None) -> list[Outcome]:
    """Run (or with ``dry_run`` list) every stage of ``config`` and write the report.

    Parameters
    ----------
    config : ExperimentConfig
    jobs : int, optional
        Processes for query-parallel stages (default: the config's ``jobs``).
    dry_run : bool
        Only say which stages would run.
    force : bool
        Run every stage even when up to date.
    """
    from clirplug.experiment.report import add_report_stage

    log = log or sys.stderr
    jobs = jobs or config.jobs
    if jobs < 1:
        raise ClirplugError(f"--jobs must be at least 1, got {jobs}")
    plan = build_plan(config)
    add_report_stage(plan)
    ctx = Context(config, jobs, progress)
    ctx.plan_stages = plan.stages
    keys, outcomes = {}, []
    stages = ordered(plan.stages)
    for number, stage in enumerate(stages, 1):
        key, described = stage_key(stage, keys)
        keys[stage.name] = key
        if not force and is_current(config, stage, key):
            outcomes.append(Outcome(stage, key, "up to date"))
            print(f"[{number}/{len(stages)}] {stage.name}: up to date", file=log)
            continue
        if dry_run:
            outcomes.append(Outcome(stage, key, "would run"))
            print(f"[{number}/{len(stages)}] {stage.name}: would run", file=log)
            continue
        print(f"[{number}/{len(stages)}] {stage.name}: running", file=log, flush=True)
        seconds = execute(stage, key, described, ctx)
        outcomes.append(Outcome(stage, key, "ran", seconds))
        print(f"[{number}/{len(stages)}] {stage.name}: done in {seconds:.1f} s", file=log, flush=True)
    ctx.forget("")
    return outcomes
