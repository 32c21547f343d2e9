"""Where parallel work runs: spawned processes on this machine (``local``) or a Ray cluster (``ray``).

Every parallel step of clirplug (topic-parallel translation, the experiment's stage scheduler, BOW-FD's
shards, boosting's bags, ``batch_search``) goes through one :class:`Executor`::

    with make_executor(ExecutorSettings("ray", jobs=4), initializer=load, initargs=(tables,)) as executor:
        results = executor.map(work, tasks)        # in the order of the tasks

An executor runs ``initializer(*initargs)`` once in each worker before its first task (the big
read-only state of a step: shards, tables, the experiment's config). The local executor passes it
to its process pool's initializer; the Ray executor puts it into the object store once and each
worker process reads it from there once. Results never depend on the executor nor on ``jobs``.
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
import sys
from concurrent.futures import Future
from dataclasses import dataclass

from clirplug import interrupts
from clirplug.errors import ClirplugError

EXECUTORS = ("local", "ray")
RAY_RETRIES = 3  # a task whose worker died (killed, out of memory, node lost) runs again this many times
ABORT_SECONDS = 5  # an aborted local worker gets this long to end after SIGTERM, then SIGKILL


# The faults a running JVM raises on purpose and handles itself (safepoint polls, implicit null
# checks). ray.init puts Ray's crash reporter in their place and ray.shutdown resets them to the
# default, after which the next such fault of the JVM kills the process.
JVM_SIGNALS = (signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL)
_SIGACTION_BYTES = 256  # more than any platform's struct sigaction (152 bytes on Linux x86-64)


@contextlib.contextmanager
def native_signal_handlers_kept():
    """Run the body (``ray.init``, ``ray.shutdown``) and then give the :data:`JVM_SIGNALS` back the native
    handlers they had before it, so that a JVM in this process (:mod:`clirplug.lucene`) keeps working."""
    libc = ctypes.CDLL(None)
    saved = []
    for number in JVM_SIGNALS:
        action = ctypes.create_string_buffer(_SIGACTION_BYTES)
        if libc.sigaction(int(number), None, action) == 0:
            saved.append((number, action))
    try:
        yield
    finally:
        for number, action in saved:
            libc.sigaction(int(number), action, None)


class WorkerLost(ClirplugError):
    """A worker process died while it ran a task (killed by a signal or by the system when memory ran out)."""


@dataclass(frozen=True)
class ExecutorSettings:
    """Which executor runs parallel work, and how many tasks run at once.

    Parameters
    ----------
    executor : {"local", "ray"}
        ``local``: processes spawned on this machine; ``ray``: Ray tasks.
    jobs : int
        Tasks at once (local processes; with Ray, also the CPUs of the Ray instance started here).
    ray_address : str, optional
        The Ray cluster to join (``HOST:6379``); none starts Ray on this machine (or joins the one
        this process already runs in).
    """

    executor: str = "local"
    jobs: int = 1
    ray_address: str | None = None

    def __post_init__(self):
        if self.executor not in EXECUTORS:
            raise ClirplugError(f"executor: expected one of {', '.join(EXECUTORS)}, got {self.executor!r}")
        if isinstance(self.jobs, bool) or not isinstance(self.jobs, int) or self.jobs < 1:
            raise ClirplugError(f"jobs must be a whole number of at least 1, got {self.jobs!r}")
        if self.ray_address is not None and self.executor != "ray":
            raise ClirplugError("a Ray address needs the ray executor (--executor ray)")


def make_executor(workers: int | ExecutorSettings, initializer=None, initargs: tuple = (),
                  fresh_workers: bool = False) -> Executor:
    """The executor of ``workers`` (an int: that many local processes).

    ``fresh_workers`` gives each task a new worker process (its memory returned after the task).
    """
    settings = workers if isinstance(workers, ExecutorSettings) else ExecutorSettings(jobs=workers)
    kind = RayExecutor if settings.executor == "ray" else LocalExecutor
    return kind(settings, initializer, initargs, fresh_workers)


@contextlib.contextmanager
def connected(workers: ExecutorSettings):
    """Keep the executor's cluster up while the steps inside run (Ray started once, not once per step)."""
    if workers.executor != "ray":
        yield
        return
    with RayExecutor(workers, None, (), False):
        yield


class Executor:
    """Runs ``function(*args)`` calls in workers: :meth:`submit` one, :meth:`map` a list in order.

    Use it as a context manager (or call :meth:`close`) so its workers stop.
    """

    def __init__(self, settings: ExecutorSettings, initializer, initargs: tuple, fresh_workers: bool):
        self.settings, self.jobs = settings, settings.jobs
        self._initializer, self._initargs, self._fresh = initializer, initargs, fresh_workers

    def submit(self, function, *args) -> Future:
        """Start ``function(*args)``; its future raises :class:`WorkerLost` if the worker died."""
        raise NotImplementedError

    def map(self, function, tasks) -> list:
        """``[function(task) for task in tasks]``, computed by the workers, in the order of ``tasks``."""
        return list(self.imap(function, tasks))

    def imap(self, function, tasks):
        """The results of :meth:`map` one by one, as soon as each and those before it are done."""
        futures = [self.submit(function, task) for task in tasks]
        return (future.result() for future in futures)

    def close(self) -> None:
        """Stop the workers this executor started, once their tasks are done."""

    def abort(self) -> None:
        """Stop the workers this executor started now, their tasks unfinished (after an interrupt or an error)."""
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc_info):
        if exc_type is None:
            self.close()
        else:
            self.abort()


class LocalExecutor(Executor):
    """Spawned (never forked: a process may run a JVM) worker processes of this machine; with one job,
    or a single task before any worker started, the work runs in this process."""

    def __init__(self, settings: ExecutorSettings, initializer, initargs: tuple, fresh_workers: bool):
        super().__init__(settings, initializer, initargs, fresh_workers)
        self._pool = None
        self._initialized = False

    def _here(self, function, arguments):
        if self._initializer is not None and not self._initialized:
            self._initializer(*self._initargs)
            self._initialized = True
        future = Future()
        try:
            future.set_result(function(*arguments))
        except Exception as error:  # noqa: BLE001 - delivered through the future, as a worker's would be
            future.set_exception(error)
        return future

    def _start(self, workers: int) -> None:
        import multiprocessing
        import os
        from concurrent.futures import ProcessPoolExecutor

        self._pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                         initializer=_local_worker, initargs=(os.getpid(), self._initializer,
                                                                              self._initargs),
                                         max_tasks_per_child=1 if self._fresh else None)

    def submit(self, function, *args) -> Future:
        if self.jobs == 1:
            return self._here(function, args)
        with interrupts.deferred():  # a worker being spawned gets its whole start-up data
            if self._pool is None:
                self._start(self.jobs)
            return _relayed(self._pool.submit(_local_task, function, args))

    def imap(self, function, tasks):
        tasks = list(tasks)
        if self._pool is None and self.jobs > 1 and len(tasks) > 1:
            with interrupts.deferred():
                self._start(min(self.jobs, len(tasks)))
        if self._pool is None:
            return (self._here(function, (task,)).result() for task in tasks)
        return super().imap(function, tasks)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def abort(self) -> None:
        if self._pool is not None:
            workers = list(self._pool._processes.values())  # ProcessPoolExecutor has no public handle on them
            for worker in workers:
                worker.terminate()  # SIGTERM: a busy worker is interrupted as by Ctrl-C (_local_worker)
            for worker in workers:
                worker.join(ABORT_SECONDS)
                if worker.is_alive():
                    worker.kill()
                    worker.join()
            self._pool.shutdown(cancel_futures=True)  # its threads end too: none writes to a worker's pipe later
            self._pool = None


PR_SET_PDEATHSIG = 1  # prctl(2): the signal this process receives when its parent dies


def _local_worker(parent: int, initializer, initargs: tuple) -> None:
    """A local worker's start. It dies with its parent (SIGKILL once the parent is gone, however the parent
    ended, even by SIGKILL: no worker lives on with parent 1). SIGTERM (the parent's :meth:`LocalExecutor.abort`)
    interrupts its task as Ctrl-C does, so that the task cleans up (and aborts its own workers); an idle worker
    just ends. Then the executor's initializer runs."""
    import os

    signal.signal(signal.SIGTERM, _worker_terminated)
    sys.unraisablehook = _unraisable_but_interrupts
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(1)
    if initializer is not None:
        initializer(*initargs)


_BUSY = [False]  # whether this local worker runs a task


def _local_task(function, arguments):
    """A task in a local worker, marked busy while it runs."""
    _BUSY[0] = True
    try:
        return function(*arguments)
    finally:
        _BUSY[0] = False


def _unraisable_but_interrupts(unraisable) -> None:
    """A local worker's ``sys.unraisablehook``: an interrupt (Ctrl-C, or the SIGTERM of :meth:`LocalExecutor.abort`)
    that lands in a finalizer (``__del__``, e.g. a progress bar's) is the expected end of the task, not a traceback
    to print; any other unraisable exception is printed as Python prints it."""
    if not isinstance(unraisable.exc_value, KeyboardInterrupt):
        sys.__unraisablehook__(unraisable)


def _worker_terminated(signum, frame):
    import os

    if _BUSY[0]:
        raise KeyboardInterrupt
    os._exit(0)


class RayExecutor(Executor):
    """Ray tasks (``ray.remote``), retried when their worker dies; the initializer's arguments go into
    the object store once (``ray.put``). Starts Ray (and shuts it down on :meth:`close`) unless this
    process is already connected."""

    def __init__(self, settings: ExecutorSettings, initializer, initargs: tuple, fresh_workers: bool):
        super().__init__(settings, initializer, initargs, fresh_workers)
        try:
            import ray
        except ImportError:
            raise ClirplugError("the ray executor needs Ray: pip install 'clirplug[ray]'") from None
        self._ray, self._started = ray, False
        if not ray.is_initialized():
            local = self.settings.ray_address is None
            if not local:
                _check_reachable(self.settings.ray_address)
            try:
                with native_signal_handlers_kept():
                    ray.init(address=self.settings.ray_address, num_cpus=self.jobs if local else None,
                             include_dashboard=False, log_to_driver=False)
            except (ConnectionError, ValueError, RuntimeError) as error:
                raise ClirplugError(f"Ray at {self.settings.ray_address or 'this machine'}: {error}") from None
            self._started = True
        self._state = ray.put((self._initializer, self._initargs)) if self._initializer is not None else None
        options = {"max_retries": RAY_RETRIES, **({"max_calls": 1} if self._fresh else {})}
        self._task = ray.remote(**options)(_ray_task)

    def _remote(self, function, arguments):
        # the state's reference travels inside a list so that Ray hands the task the reference, not the value
        return self._task.remote([self._state], function, arguments)

    def submit(self, function, *args) -> Future:
        return _relayed(self._remote(function, args).future())

    def imap(self, function, tasks):
        # ray.get, not a future's result: a task waiting in ray.get lends its CPU to the tasks it
        # waits for, so that tasks submitting tasks (a stage translating its topics) cannot deadlock
        references = [self._remote(function, (task,)) for task in tasks]
        for reference in references:
            try:
                yield self._ray.get(reference)
            except Exception as error:  # noqa: BLE001 - re-raised as the caller should see it
                raise _user_error(error) from None

    def close(self) -> None:
        if self._started:
            with native_signal_handlers_kept():
                self._ray.shutdown()
            self._started = False


def _check_reachable(address: str, seconds: float = 10.0) -> None:
    """Refuse a ``HOST:PORT`` nothing answers on (``ray.init`` would wait minutes before failing)."""
    import socket

    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return  # "auto" and other forms Ray resolves itself
    try:
        socket.create_connection((host, int(port)), timeout=seconds).close()
    except OSError as error:
        raise ClirplugError(f"Ray at {address}: cannot connect ({error}); is `ray start --head` running there?") from None


_RAY_WORKER_STATE: list = [None]  # the object id of the state this Ray worker process was initialized with


def _ray_task(state, function, arguments):
    """A task in a Ray worker: the initializer first when this worker has not run it with this state."""
    reference = state[0]
    if reference is not None and _RAY_WORKER_STATE[0] != reference.hex():
        import ray

        initializer, initargs = ray.get(reference)
        initializer(*initargs)
        _RAY_WORKER_STATE[0] = reference.hex()
    return function(*arguments)


def _user_error(error: BaseException) -> BaseException:
    """A worker's error as the caller should see it: the task's own exception, or :class:`WorkerLost`."""
    from concurrent.futures.process import BrokenProcessPool

    lost = WorkerLost("a worker process died (killed, e.g. by the system when memory ran out)")
    if isinstance(error, BrokenProcessPool):
        return lost
    module = type(error).__module__
    if module.startswith("ray"):
        from ray import exceptions

        if isinstance(error, exceptions.RayTaskError):
            return error.cause if isinstance(error.cause, BaseException) else error
        if isinstance(error, (exceptions.WorkerCrashedError, exceptions.OutOfMemoryError, exceptions.NodeDiedError,
                              exceptions.ObjectLostError)):
            return lost
    return error


def _relayed(source: Future) -> Future:
    """A future with the result of ``source``, its error passed through :func:`_user_error`."""
    target = Future()

    def relay(done: Future) -> None:
        error = done.exception()
        if error is None:
            target.set_result(done.result())
        else:
            target.set_exception(_user_error(error))

    source.add_done_callback(relay)
    return target
