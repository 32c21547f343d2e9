"""The executors (clirplug/executor.py): order kept, the same bytes on every executor, a killed worker.

The Ray tests run on a local Ray instance of 2 CPUs that the ``ray_cluster`` fixture starts and stops.
"""

import os
import signal
from pathlib import Path

import numpy as np
import pytest

from clirplug.errors import ClirplugError
from clirplug.executor import ExecutorSettings, WorkerLost, make_executor

pytestmark = pytest.mark.unit

RAY = ExecutorSettings("ray", jobs=2)


def _noisy(task):
    """A float computation whose bytes change with any difference in arithmetic or order."""
    seed, size = task
    values = np.random.default_rng(seed).standard_normal(size)
    return np.cumsum(values * np.sin(values)).tobytes()


TASKS = [(seed, 50 + 7 * seed) for seed in (5, 3, 1, 4, 2, 8)]

_STATE = {}


def _remember(table):
    _STATE["table"] = table
    _STATE["loads"] = _STATE.get("loads", 0) + 1


def _look_up(key):
    return _STATE["table"][key], _STATE["loads"], os.getpid()


def _die_once(task):
    """Kill this worker process the first time (a marker file says whether it happened), then compute."""
    marker, value = task
    if not Path(marker).exists():
        Path(marker).write_text("killed once\n", encoding="utf-8")
        os.kill(os.getpid(), signal.SIGKILL)
    return _noisy(value)


def _nested(task):
    """A task that maps tasks of its own (as a stage run on Ray translates its topics on Ray)."""
    with make_executor(RAY) as executor:
        return executor.map(_noisy, [task, (task[0] + 100, task[1])])


def _refuse(task):
    raise ClirplugError(f"topics.jsonl:{task}: no query")


# ----------------------------------------------------------------------------- settings and local


@pytest.mark.parametrize("values, message", [
    ({"executor": "spark"}, "executor: expected one of local, ray, got 'spark'"),
    ({"jobs": 0}, "jobs must be a whole number of at least 1, got 0"),
    ({"ray_address": "head:6379"}, r"a Ray address needs the ray executor \(--executor ray\)"),
])
def test_bad_settings_are_one_line_errors(values, message):
    with pytest.raises(ClirplugError, match=message):
        ExecutorSettings(**values)


def test_a_ray_address_nothing_answers_on_is_one_line_at_once():
    from clirplug.executor import _check_reachable

    with pytest.raises(ClirplugError, match=r"Ray at 127\.0\.0\.1:1: cannot connect .*ray start --head"):
        _check_reachable("127.0.0.1:1", seconds=2)


def test_local_map_keeps_the_order_with_any_number_of_processes():
    expected = [_noisy(task) for task in TASKS]
    for jobs in (1, 2):
        with make_executor(jobs) as executor:
            assert executor.map(_noisy, TASKS) == expected


def test_local_initializer_runs_once_in_each_process():
    with make_executor(2, initializer=_remember, initargs=({k: k * k for k in range(8)},)) as executor:
        results = executor.map(_look_up, range(8))
    assert [value for value, _, _ in results] == [k * k for k in range(8)]
    assert {loads for _, loads, _ in results} == {1} and len({pid for _, _, pid in results}) <= 2


def test_local_worker_killed_is_worker_lost(tmp_path):
    with make_executor(2) as executor, pytest.raises(WorkerLost, match="a worker process died"):
        executor.map(_die_once, [(str(tmp_path / "marker"), task) for task in TASKS])


# ----------------------------------------------------------------------------- ray


def test_ray_map_keeps_the_order_and_the_bytes_of_local(ray_cluster):
    with make_executor(RAY) as executor:
        assert executor.map(_noisy, TASKS) == [_noisy(task) for task in TASKS]
        assert not executor._started  # joined the running instance: closing leaves it running
    assert ray_cluster.is_initialized()


def test_ray_initializer_state_goes_once_to_each_worker(ray_cluster):
    table = {k: k * k for k in range(12)}
    with make_executor(RAY, initializer=_remember, initargs=(table,)) as executor:
        first = executor.map(_look_up, range(12))
        second = executor.map(_look_up, range(12))
    assert [value for value, _, _ in first + second] == [k * k for k in range(12)] * 2
    assert {loads for _, loads, _ in first + second} == {1}  # not once per task
    assert os.getpid() not in {pid for _, _, pid in first}


def test_ray_tasks_waiting_for_their_own_tasks_do_not_hold_the_cpus(ray_cluster):
    """Two tasks on the 2 CPUs each wait for two more: they lend their CPUs while they wait."""
    with make_executor(RAY) as executor:
        results = executor.map(_nested, TASKS[:2])
    assert results == [[_noisy(task), _noisy((task[0] + 100, task[1]))] for task in TASKS[:2]]


def test_ray_task_error_is_the_tasks_own_one_line_error(ray_cluster):
    with make_executor(RAY) as executor, pytest.raises(ClirplugError) as caught:
        executor.map(_refuse, [12])
    assert str(caught.value) == "topics.jsonl:12: no query"


def test_ray_retries_the_task_of_a_killed_worker(ray_cluster, tmp_path):
    marker = tmp_path / "marker"
    with make_executor(RAY) as executor:
        results = executor.map(_die_once, [(str(marker), task) for task in TASKS])
    assert marker.exists() and results == [_noisy(task) for task in TASKS]


class _FinalizerRaising:
    def __init__(self, error: BaseException):
        self.error = error

    def __del__(self):
        raise self.error


def _drop_a_finalizer_raising(error: BaseException) -> int:
    _FinalizerRaising(error)  # dropped at once: its __del__ raises an exception Python can only print
    return 1


def test_an_interrupt_in_a_workers_finalizer_prints_no_traceback(capfd):
    """Ctrl-C (or the executor's SIGTERM) landing in a finalizer of a worker, e.g. a progress bar's ``__del__``, is
    the task's expected end; other exceptions of finalizers are still printed."""
    with make_executor(2) as executor:
        assert executor.map(_drop_a_finalizer_raising, [KeyboardInterrupt(), KeyboardInterrupt()]) == [1, 1]
    assert "Traceback" not in capfd.readouterr().err
    with make_executor(2) as executor:
        assert executor.map(_drop_a_finalizer_raising, [ValueError("seen"), ValueError("seen")]) == [1, 1]
    assert "ValueError: seen" in capfd.readouterr().err
