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

import contextlib
import fcntl
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from clirplug.atomic import check_output, not_regular, remove_temporaries
from clirplug.errors import ClirplugError
from clirplug.executor import ExecutorSettings, WorkerLost, connected, make_executor
from clirplug.experiment.kinds import STAGE_KINDS, Context
from clirplug.experiment.plan import Stage, build_plan
from clirplug.experiment.records import is_current, record_path, stage_key
from clirplug.methods import METHODS
from clirplug.stage_record import output_states, write_record

LOCK = ".clirplug.lock"


@contextlib.contextmanager
def root_lock(root: Path):
    """Hold ``ROOT/.clirplug.lock`` (``fcntl.flock``) while an experiment writes under ``root``.

    The experiments of one root share its indexes and models, so a second one started meanwhile
    refuses at once, naming the lock and the process holding it, instead of rebuilding files the
    first one reads. The lock ends with the process, however it ends; the file stays.
    """
    path = root / LOCK
    kind = not_regular(path)
    if kind is not None:
        raise ClirplugError(f"{path}: is {kind}, not the root's lock file; remove it")
    try:
        root.mkdir(parents=True, exist_ok=True)
        path.touch()
        handle = open(path, "r+", encoding="ascii")  # e.g. a file this user may not write, or made a folder meanwhile
    except OSError as error:
        raise ClirplugError(f"root: cannot open {path} ({error.strerror})") from error
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = handle.read().strip() or "?"
            raise ClirplugError(f"{path}: another experiment (process {holder}) is running on this root; "
                                "wait for it to end or choose another --root") from None
        handle.truncate(0)
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        yield


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


def chain_lengths(stages: list[Stage]) -> dict[str, int]:
    """For each of ``stages`` (in dependency order), how many stages the longest chain of them that starts
    with it holds: 1 for a stage none of the others depends on."""
    names = {stage.name for stage in stages}
    chains: dict[str, int] = {}
    for stage in reversed(stages):  # every stage after those depending on it
        length = chains.setdefault(stage.name, 1)
        for dep in names.intersection(stage.deps):
            chains[dep] = max(chains.get(dep, 1), length + 1)
    return chains


@dataclass
class Outcome:
    """What happened to one stage in one invocation."""

    stage: Stage
    key: str
    status: str  # "up to date", "would run", "ran"
    seconds: float = 0.0


def execute(stage: Stage, key: str, described: dict, ctx: Context) -> float:
    """Run one stage, then write its record; return its wall seconds."""
    from clirplug.resources import cpu_seconds, peak_rss_mb, reset_peak_rss

    config = ctx.config
    path = record_path(config, stage)
    path.unlink(missing_ok=True)
    for output in stage.outputs:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
    function, _ = STAGE_KINDS[stage.kind]
    reset_peak_rss()  # CPU: the stage's and its ended workers' (not a pool kept between stages, nor Ray's)
    start, cpu = time.perf_counter(), cpu_seconds()
    metrics = function(stage, ctx) or {}
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    peak = max(peak_rss_mb(), metrics.get("worker_peak_rss_mb") or 0.0)
    record = {**described, "key": key, "stage": stage.name, "run": stage.run,
              "outputs": [str(p) for p in stage.outputs], "inputs_from": [str(p) for p in stage.inputs_from],
              "wall_seconds": round(seconds, 3), "cpu_seconds": round(cpu, 3), "peak_rss_mb": round(peak, 1),
              "jobs": ctx.jobs, "metrics": metrics, "output_states": output_states(stage.outputs)}
    write_record(path, record)
    _stay_within_memory_share(ctx)
    return seconds


def _stay_within_memory_share(ctx: Context) -> None:
    """After a stage: a process holding more than its share of the machine's memory (a half shared by the
    ``jobs`` stages that run at once) drops the models and searchers it keeps loaded between stages and hands
    the memory back, so that the stages run next have the memory they need (a long-lived stage worker
    otherwise keeps every model it ever loaded)."""
    from clirplug.resources import physical_memory_mb, return_freed_memory, rss_mb

    if rss_mb() > physical_memory_mb() / (2 * ctx.jobs):
        ctx.forget("")
        return_freed_memory()


def _start_worker(config, workers: ExecutorSettings, progress: bool, plan_stages: dict, modules: list[str],
                  methods: dict) -> None:
    """Give a stage worker process its own context (loaded models and searchers stay per process), with the
    stage kinds of the plan registered (``modules`` define them: :func:`kind_modules`) and the registry entries
    of the config's methods (``methods``: those registered at run time are not in a new process's registry)."""
    global _WORKER_CONTEXT
    import importlib

    for module in modules:
        importlib.import_module(module)
    METHODS.update(methods)
    _WORKER_CONTEXT = Context(config, workers, progress, plan_stages)


def kind_modules(stages) -> list[str]:
    """The modules defining the kinds of ``stages`` (the generic kinds', the planners', the report's...)."""
    return sorted({STAGE_KINDS[stage.kind][0].__module__ for stage in stages})


_WORKER_CONTEXT: Context | None = None


def _execute_in_worker(stage: Stage, key: str, described: dict) -> float:
    if _WORKER_CONTEXT is None:
        raise RuntimeError("a stage worker runs only after its initializer set the context")
    return execute(stage, key, described, _WORKER_CONTEXT)


def run_experiment(config, jobs: int | None = None, dry_run: bool = False, force: bool = False,
                   progress: bool = True, log=None, executor: str | None = None,
                   ray_address: str | None = None) -> list[Outcome]:
    """Run (or with ``dry_run`` list) every stage of ``config`` and write the report.

    Parameters
    ----------
    config : ExperimentConfig
    jobs : int, optional
        Processes for query-parallel stages, and stages run at once when they do not depend on
        each other (default: the config's ``jobs``).
    dry_run : bool
        Only say which stages would run.
    force : bool
        Run every stage even when up to date.
    executor, ray_address : str, optional
        Where the stages and their parallel work run: ``local`` processes or ``ray`` tasks on the
        Ray cluster at ``ray_address`` (:mod:`clirplug.executor`; default: the config's keys).

    Unless ``dry_run``, the stages run holding the root's lock (:func:`root_lock`), after removing
    the temporary files a killed run left in the experiment's folders; with the ray executor, on
    one Ray instance for the whole run (started here, or the cluster's).
    """
    log = log or sys.stderr
    jobs = config.jobs if jobs is None else jobs  # ExecutorSettings refuses fewer than 1
    executor = executor or config.executor
    workers = ExecutorSettings(executor, jobs, ray_address or (config.ray_address if executor == "ray" else None))
    check_output(config.root, "root", folder=True)
    if dry_run:
        return _run_stages(config, workers, dry_run, force, progress, log)
    with root_lock(config.root):
        removed = sum(remove_temporaries(folder) for folder in (config.run_dir, config.model_dir, config.root / "indexes"))
        if removed:
            print(f"removed {removed} temporary files left by an interrupted run", file=log)
        try:
            with connected(workers):
                return _run_stages(config, workers, dry_run, force, progress, log)
        except KeyboardInterrupt as interrupt:
            interrupt.add_note("finished stages are kept; the same command resumes with the others")
            raise


def _run_stages(config, workers, dry_run, force, progress, log) -> list[Outcome]:
    """The body of :func:`run_experiment`."""
    from clirplug.experiment.config import prepare_collection
    from clirplug.experiment.report import add_report_stage
    from clirplug.experiment.systems import add_systems_stage

    prepare_collection(config, progress)
    plan = build_plan(config)
    add_systems_stage(plan)
    add_report_stage(plan)
    keys: dict[str, str] = {}
    outcomes: dict[str, Outcome] = {}
    todo: list[tuple[Stage, str, dict]] = []
    stages = ordered(plan.stages)
    numbers = {stage.name: number for number, stage in enumerate(stages, 1)}
    for stage in stages:
        key, described = stage_key(stage, keys)
        keys[stage.name] = key
        if not force and is_current(config, stage, key):
            outcomes[stage.name] = Outcome(stage, key, "up to date")
            _announce(log, numbers, len(stages), stage, "up to date")
        elif dry_run:
            outcomes[stage.name] = Outcome(stage, key, "would run")
            _announce(log, numbers, len(stages), stage, "would run")
        else:
            todo.append((stage, key, described))
    if todo:
        run = _run_in_workers if workers.jobs > 1 and len(todo) > 1 else _run_here
        for stage, key, seconds in run(config, workers, progress, plan.stages, todo, numbers, log):
            outcomes[stage.name] = Outcome(stage, key, "ran", seconds)
    return [outcomes[stage.name] for stage in stages]


def _announce(log, numbers, total, stage, what) -> None:
    print(f"[{numbers[stage.name]}/{total}] {stage.name}: {what}", file=log, flush=True)


def _run_here(config, workers, progress, plan_stages, todo, numbers, log):
    """The stages one after another in this process."""
    ctx = Context(config, workers, progress, plan_stages)
    try:
        for stage, key, described in todo:
            _announce(log, numbers, len(plan_stages), stage, "running")
            seconds = execute(stage, key, described, ctx)
            _announce(log, numbers, len(plan_stages), stage, f"done in {seconds:.1f} s")
            yield stage, key, seconds
    finally:
        ctx.forget("")


def _run_in_workers(config, workers, progress, plan_stages, todo, numbers, log):
    """Up to ``jobs`` stages at once, each in a worker of the executor (a spawned process, never forked:
    a worker may run a JVM; or a Ray task), a stage as soon as all it depends on is done. Among the ready ones
    the stage heading the longest chain of stages still to run goes first (:func:`chain_lengths`; plan order on
    ties), so that long chains do not end alone on one worker. After a failure no stage starts; those running
    finish, then the first error is raised."""
    import signal
    from concurrent.futures import FIRST_COMPLETED, wait

    # a worker killed leaves a broken pipe to it: an error for the executor to report, not a signal ending this process
    previous = signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    try:
        chains = chain_lengths([stage for stage, _, _ in todo])
        waiting = sorted(todo, key=lambda item: -chains[item[0].name])  # stable: plan order on ties
        pending = {stage.name for stage, _, _ in todo}
        running = {}
        error = None
        with make_executor(workers, initializer=_start_worker,
                           initargs=(config, workers, progress, plan_stages, kind_modules(plan_stages.values()),
                                     {spec.method: METHODS[spec.method] for spec in config.runs})) as executor:
            while running or (waiting and error is None):
                while error is None and len(running) < workers.jobs:
                    ready = next((item for item in waiting if not pending.intersection(item[0].deps)), None)
                    if ready is None:
                        break
                    waiting.remove(ready)
                    stage, key, described = ready
                    _announce(log, numbers, len(plan_stages), stage, "running")
                    running[executor.submit(_execute_in_worker, stage, key, described)] = ready
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    stage, key, _ = running.pop(future)
                    try:
                        seconds = future.result()
                    except WorkerLost:  # killed by a signal or by the kernel (out of memory)
                        error = error or ClirplugError(
                            f"{stage.name}: its worker process died (killed, e.g. by the system when memory ran out; "
                            "try --threads 1); finished stages are kept: rerun to resume")
                        continue
                    except BaseException as failure:  # noqa: BLE001 - re-raised once the running stages are done
                        error = error or failure
                        continue
                    pending.discard(stage.name)
                    _announce(log, numbers, len(plan_stages), stage, f"done in {seconds:.1f} s")
                    yield stage, key, seconds
    finally:
        signal.signal(signal.SIGPIPE, previous)
    if error is not None:
        raise error
