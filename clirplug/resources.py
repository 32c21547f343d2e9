"""What a process has used: its peak resident memory and its CPU seconds (Linux ``/proc``, else ``getrusage``)."""

import resource


def peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM) in MB.

    ``ru_maxrss`` is the fallback only: a spawned worker inherits its parent's figure, so it would report
    the experiment's peak, not its own.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


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
