"""The demo experiment on Ray (``executor: ray``, 2 workers) writes the local executor's bytes, even
when a Ray worker is killed in the middle of a task (Ray runs the task again).

Ray runs a part of the demo (its titles; the models, DT, BOW-FD and boosting), which holds every kind of parallel
work the executor spreads (models and folds, translation, BOW-FD shards, boosting bags)."""

import hashlib
import os
import signal
import threading
from pathlib import Path

import pytest
import yaml

from clirplug.data import demo_config
from clirplug.experiment.config import load_config
from clirplug.experiment.runner import run_experiment

pytestmark = pytest.mark.jvm

RAY_RUNS = ("dt", "bowfd+ltr", "boost")  # of the demo's, run on Ray
BUSY = b"ray::_ray_task"  # the process title of a Ray worker running one of clirplug's tasks


def _digests(folder: Path, pattern: str) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob(pattern))}


def _parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


def _busy_ray_workers() -> list[int]:
    """The Ray workers of this process's Ray instance (its descendants) running a task."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if not entry.name.isdigit() or not (entry / "cmdline").read_bytes().startswith(BUSY):
                continue
            pid = int(entry.name)
            while pid > 1 and pid != os.getpid():
                pid = _parent(pid)
            if pid == os.getpid():
                found.append(int(entry.name))
        except OSError:  # the process ended meanwhile
            continue
    return found


def _kill_one_busy_worker(after: float, stop: threading.Event, killed: list) -> None:
    """Once ``after`` seconds have passed, SIGKILL the first Ray worker found running a task."""
    if stop.wait(after):
        return
    while not stop.is_set():
        for pid in _busy_ray_workers():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
            killed.append(pid)
            return
        stop.wait(0.2)


def test_demo_on_ray_with_a_killed_worker_writes_the_local_bytes(demo, ray_cluster, tmp_path):
    local, _ = demo  # the demo run by the local executor, one process (conftest.py)
    raw = yaml.safe_load(demo_config().read_text(encoding="utf-8"))
    raw["collection"]["path"] = str(demo_config().parent / raw["collection"]["path"])
    raw["fields"], raw["runs"] = ["title"], {name: raw["runs"][name] for name in RAY_RUNS}
    (tmp_path / "ray.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    config = load_config(tmp_path / "ray.yaml", [f"root={tmp_path}", "executor=ray"])
    stop, killed = threading.Event(), []
    killer = threading.Thread(target=_kill_one_busy_worker, args=(8.0, stop, killed), daemon=True)
    killer.start()
    try:
        outcomes = run_experiment(config, jobs=2, progress=False)
    finally:
        stop.set()
        killer.join()
    assert killed, "no Ray worker was running a task after 8 s: nothing was killed"
    assert {o.status for o in outcomes} == {"ran"}
    runs = _digests(config.run_dir, "*.trec")
    assert {f"dev.title.{name}.trec" for name in RAY_RUNS} <= runs.keys() and len(runs) >= 9
    assert runs.items() <= _digests(local.run_dir, "*.trec").items()
    models = _digests(config.model_dir, "*.weights")
    assert models and models.items() <= _digests(local.model_dir, "*.weights").items()


def _native_handler(number) -> int:
    """The address of the native handler of signal ``number`` (0: the default)."""
    import ctypes

    action = ctypes.create_string_buffer(256)
    assert ctypes.CDLL(None).sigaction(int(number), None, action) == 0
    return ctypes.c_void_p.from_buffer(action).value or 0


def test_starting_and_stopping_ray_leaves_the_jvm_its_signal_handlers():
    """ray.init installs Ray's crash handlers and ray.shutdown resets them to the default; either kills a
    JVM in the same process at its next safepoint. The Ray executor gives the JVM its handlers back."""
    from clirplug.executor import JVM_SIGNALS, ExecutorSettings, make_executor
    from clirplug.lucene import collect_garbage

    collect_garbage()  # the JVM runs in this process
    before = {number: _native_handler(number) for number in JVM_SIGNALS}
    assert before[signal.SIGSEGV] != 0
    with make_executor(ExecutorSettings("ray", jobs=1)) as executor:
        assert {number: _native_handler(number) for number in JVM_SIGNALS} == before
        assert list(executor.map(abs, [-2, 3])) == [2, 3]
        collect_garbage()  # a safepoint with Ray running
    assert {number: _native_handler(number) for number in JVM_SIGNALS} == before
    collect_garbage()  # and after Ray stopped
