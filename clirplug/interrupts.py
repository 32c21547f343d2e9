"""Ctrl-C (SIGINT) and SIGTERM: where they may interrupt the work, and that they do it once.

Python runs a signal's handler in the main thread between two bytecodes, whatever runs there, and
the handler's ``KeyboardInterrupt`` is raised at that point. Inside compiled code that calls back
into Python (numba's ``objmode``, the unboxing of a typed dict, kenlm's Cython), an exception raised
there is reported by the caller as another one (``TypeError: can't unbox ...``, ``SystemError: ...
returned a result with an exception set``), and a second signal arriving while the first one's
clean-up runs interrupts the clean-up itself. Hence:

* :func:`deferred` holds both signals back while a body that must not be cut runs (a worker's spawn,
  a compiled kernel): they take effect as soon as it ends;
* :func:`stop_once` is the command line's handler: the first signal interrupts, the next ones are
  ignored, so the clean-up and the one-line message run to their end.
"""

from __future__ import annotations

import contextlib
import signal
import threading

SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def deferred():
    """Hold Ctrl-C and SIGTERM back while the body runs, so that they interrupt the work after it: their
    Python handlers (which run in the main thread, whichever thread the signal reached) only note them
    meanwhile; then each noted signal goes to the handler it had. Another thread's body runs as it is (no
    handler runs there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted = []
    held = [number for number in SIGNALS if signal.getsignal(number) is not signal.SIG_IGN]
    previous = {number: signal.signal(number, lambda signum, frame: noted.append(signum)) for number in held}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        for number in noted:
            signal.raise_signal(number)


def stop_once(signum, frame):
    """Interrupt the main thread (``KeyboardInterrupt``) and ignore Ctrl-C and SIGTERM from now on: the
    interrupted command cleans up and says what is left, and a second Ctrl-C cannot cut that short."""
    for number in SIGNALS:
        signal.signal(number, signal.SIG_IGN)
    raise KeyboardInterrupt
