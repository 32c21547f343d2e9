"""The search service's worker thread: one job at a time in arrival order, a job over budget interrupted or taken
from the queue, and the thread free for the next job; stopping ends every job."""

import threading
import time

import pytest

from clirplug.serve.worker import OverBudget, SearchWorker, Stopping

pytestmark = pytest.mark.unit


def spin(seconds: float) -> str:
    """A long search in Python steps (what an interruption can stop)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
    return "done"


def swallowing(seconds: float) -> str:
    """A search whose steps catch every Exception (an interruption is not one)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            spin(0.01)
        except Exception:  # noqa: BLE001, S112
            continue
    return "done"


@pytest.fixture
def worker():
    exited = threading.Event()
    worker = SearchWorker(on_exit=exited.set, own=("clirplug", __name__))
    yield worker
    assert worker.close(5) and exited.is_set()


def test_jobs_run_in_order_on_one_thread(worker):
    threads, order = set(), []

    def job(i):
        threads.add(threading.get_ident())
        order.append(i)
        return i * i

    futures = [worker.submit(job, i) for i in range(20)]
    assert [f.result(5) for f in futures] == [i * i for i in range(20)]
    assert order == list(range(20)) and threads == {worker.thread_id}


def test_an_error_is_the_jobs_answer(worker):
    def fail():
        raise ValueError("bad query")

    with pytest.raises(ValueError, match="bad query"):
        worker.submit(fail).result(5)
    assert worker.submit(lambda: "next").result(5) == "next"


def test_a_running_job_over_budget_is_interrupted_and_the_thread_freed(worker):
    long = worker.submit(spin, 60)
    time.sleep(0.2)
    start = time.monotonic()
    worker.cancel(long, OverBudget("over budget"))
    with pytest.raises(OverBudget, match="over budget"):
        long.result(0)
    assert worker.submit(lambda: "next").result(5) == "next"
    assert time.monotonic() - start < 2


def test_an_except_exception_of_the_search_does_not_catch_the_interruption(worker):
    long = worker.submit(swallowing, 60)
    time.sleep(0.2)
    worker.cancel(long, OverBudget("over budget"))
    assert worker.submit(lambda: "next").result(5) == "next"


def test_a_queued_job_over_budget_never_runs(worker):
    ran = []
    long = worker.submit(spin, 0.5)
    queued = worker.submit(ran.append, "queued")
    worker.cancel(queued, OverBudget("waited too long"))
    assert long.result(5) == "done"
    with pytest.raises(OverBudget, match="waited too long"):
        queued.result(0)
    assert worker.submit(lambda: "next").result(5) == "next" and ran == []


def test_cancelling_a_finished_job_changes_nothing(worker):
    done = worker.submit(lambda: 3)
    assert done.result(5) == 3
    worker.cancel(done, OverBudget("late"))
    assert done.result(0) == 3 and worker.submit(lambda: 4).result(5) == 4


def test_stopping_ends_the_running_and_queued_jobs_and_refuses_new_ones():
    worker = SearchWorker(own=(__name__,))
    running, queued = worker.submit(spin, 60), worker.submit(spin, 60)
    time.sleep(0.2)
    start = time.monotonic()
    assert worker.close(5)
    assert time.monotonic() - start < 2
    for future in (running, queued, worker.submit(lambda: 1)):
        with pytest.raises(Stopping, match="the server is stopping"):
            future.result(0)


def test_a_job_is_not_interrupted_while_it_imports_a_module(tmp_path, monkeypatch):
    """A module cut off half-imported would stay broken: the interruption waits for the import to end (even of a
    module of the worker's own packages)."""
    worker = SearchWorker(own=(__name__, "slow_module_for_the_worker"))
    (tmp_path / "slow_module_for_the_worker.py").write_text(
        "import time\nend = time.monotonic() + 0.6\nwhile time.monotonic() < end:\n    pass\nDONE = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    outcome = []

    def job():
        try:
            import slow_module_for_the_worker  # noqa: F401
        except BaseException:
            outcome.append("import interrupted")
            raise
        outcome.append("imported")
        return spin(60)

    running = worker.submit(job)
    time.sleep(0.2)
    worker.cancel(running, OverBudget("over budget"))
    assert worker.submit(lambda: "next").result(5) == "next"
    assert outcome == ["imported"]
    assert worker.close(5)
