"""The one thread that runs every search of ``clirplug serve``, with a time budget per request.

The searchers are not thread-safe, and a thread that calls Java stays attached to the JVM, so one
long-lived thread runs every call into them, in arrival order; it is attached once and detached
(``on_exit``) when the worker closes. A job over its time budget is answered at once, taken from
the queue if it has not started, and interrupted if it has: an exception is raised in the
worker thread (``PyThreadState_SetAsyncExc``), which unwinds the search at its next Python step (a
call into Java or a compiled kernel finishes first) and frees the thread for the next job. The
exception is raised only while the thread runs clirplug's own code, never while it imports a module
or compiles a kernel (a frame of ``importlib``, ``numba`` or ``llvmlite`` on its stack): a module
cut off half-imported would stay broken. :meth:`SearchWorker.stop` ends the queued and running jobs
the same way, with :class:`Stopping`.
"""

from __future__ import annotations

import ctypes
import queue
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future

UNSAFE = ("importlib", "numba", "llvmlite")  # packages whose frames an interruption waits for
POLL_SECONDS = 0.005


class _Interrupted(BaseException):
    """Raised in the worker thread to end the running job: a BaseException, as KeyboardInterrupt, which no
    ``except Exception`` of the search path catches."""


class OverBudget(Exception):
    """A job that ran out of time."""


class Stopping(Exception):
    """A job ended, or refused, because the server is stopping."""


class _Job:
    def __init__(self, call: Callable, arguments: tuple):
        self.call, self.arguments = call, arguments
        self.future: Future = Future()


class SearchWorker:
    """A daemon thread running submitted calls one at a time; ``on_exit`` runs in it before it ends; ``own``: the
    packages whose code it may be interrupted in (:func:`interruptible`)."""

    def __init__(self, on_exit: Callable[[], None] = lambda: None, own: tuple[str, ...] = ("clirplug",)):
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._running: _Job | None = None
        self._stopping = False
        self._on_exit, self._own = on_exit, own
        self._thread = threading.Thread(target=self._loop, name="clirplug-search", daemon=True)
        self._thread.start()

    def submit(self, call: Callable, *args) -> Future:
        """Queue ``call(*args)``; its future holds the result or the exception (:class:`Stopping` once stopped)."""
        job = _Job(call, args)
        with self._lock:
            if self._stopping:
                job.future.set_exception(Stopping("the server is stopping"))
                return job.future
            self._jobs.put(job)
        return job.future

    def cancel(self, future: Future, error: Exception) -> None:
        """End the job of ``future`` with ``error``: dropped if still queued, interrupted if running."""
        with self._lock:
            if future.done():
                return
            if self._running is not None and self._running.future is future:
                self._interrupt()
            if not future.done():
                future.set_exception(error)

    def stop(self) -> None:
        """Refuse new jobs, end the queued ones and interrupt the running one, all with :class:`Stopping`."""
        with self._lock:
            self._stopping = True
            if self._running is not None:
                if not self._running.future.done():
                    self._running.future.set_exception(Stopping("the server is stopping"))
                self._interrupt()
            self._drain()
        self._jobs.put(None)

    def close(self, timeout: float) -> bool:
        """:meth:`stop`, then wait up to ``timeout`` seconds for the thread to end; whether it ended."""
        self.stop()
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def thread_id(self) -> int | None:
        return self._thread.ident

    def _interrupt(self) -> None:
        """Raise :class:`_Interrupted` in the worker thread once it runs its own packages' code
        (:func:`interruptible`), unless it has moved on to another job by then."""
        job = self._running

        def deliver():
            while True:
                with self._lock:
                    if self._running is not job:
                        return
                    if interruptible(sys._current_frames().get(self._thread.ident), self._own):
                        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._thread.ident),
                                                                   ctypes.py_object(_Interrupted))
                        return
                time.sleep(POLL_SECONDS)

        threading.Thread(target=deliver, name="clirplug-interrupt", daemon=True).start()

    def _loop(self) -> None:
        try:
            while True:
                try:
                    job = self._jobs.get()
                    if job is None:
                        break
                    self._run(job)
                except _Interrupted:  # an interruption that came late: its job has its answer already
                    continue
        finally:
            with self._lock:
                self._drain()
            self._on_exit()

    def _run(self, job: _Job) -> None:
        with self._lock:
            if job.future.done():  # cancelled while queued
                return
            if self._stopping:
                job.future.set_exception(Stopping("the server is stopping"))
                return
            self._running = job
        try:
            try:
                result = job.call(*job.arguments)
            finally:
                with self._lock:
                    self._running = None
        except BaseException as error:  # noqa: BLE001 - handed to the waiting request
            if not job.future.done():
                job.future.set_exception(error)
            return
        if not job.future.done():
            job.future.set_result(result)

    def _drain(self) -> None:
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                return
            if job is not None and not job.future.done():
                job.future.set_exception(Stopping("the server is stopping"))


def interruptible(frame, own: tuple[str, ...]) -> bool:
    """Whether a thread whose innermost frame is ``frame`` may be interrupted: it runs a module of the packages
    ``own``, and no frame of its stack imports a module or compiles a kernel (:data:`UNSAFE`)."""
    if frame is None or frame.f_globals.get("__name__", "").split(".")[0] not in own:
        return False
    while frame is not None:
        if frame.f_globals.get("__name__", "").split(".")[0] in UNSAFE:
            return False
        frame = frame.f_back
    return True
