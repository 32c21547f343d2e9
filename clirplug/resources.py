"""What a process has used: its resident memory (now and at its peak) and its CPU seconds (Linux ``/proc``, else
``getrusage``), and handing freed memory back to the system."""

import ctypes
import gc
import os
import resource
import sys


def _status_mb(field: str) -> float | None:
    """A memory field of ``/proc/self/status`` (``VmHWM``, ``VmRSS``) in MB, or None without ``/proc``."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM) in MB.

    ``ru_maxrss`` is the fallback only: a spawned worker inherits its parent's figure, so it would report
    the experiment's peak, not its own.
    """
    peak = _status_mb("VmHWM")
    return peak if peak is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mb() -> float:
    """This process's resident memory now (VmRSS) in MB (its peak where ``/proc`` is absent)."""
    now = _status_mb("VmRSS")
    return now if now is not None else peak_rss_mb()


def physical_memory_mb() -> float:
    """The machine's memory in MB."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20


def return_freed_memory() -> None:
    """Hand the memory this process no longer uses back to the system: Python's garbage collection, the JVM's
    (a full collection, after which it shrinks its heap) when one runs in this process, and glibc's
    ``malloc_trim``."""
    gc.collect()
    if "jnius" in sys.modules:  # imported only by clirplug.lucene._jvm, when it starts the JVM
        from clirplug.lucene import collect_garbage

        collect_garbage()
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None).malloc_trim(0)
        except AttributeError:  # a C library without malloc_trim (musl)
            pass


def reset_peak_rss() -> None:
    """Reset this process's VmHWM (Linux ``clear_refs`` 5), so that the next peak is measured from now."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
            handle.write("5")
    except OSError:
        pass


def cpu_seconds() -> float:
    """User and system CPU seconds of this process and of its children that have ended."""
    return sum(usage.ru_utime + usage.ru_stime
               for usage in (resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)))
