"""The one user-facing error type; the CLI prints it without a traceback. Warnings go to stderr."""

import sys


class ClirplugError(Exception):
    """A user mistake or bad input, with a message naming the file, line or field.

    Example: ``ClirplugError("topics.tsv:12: expected 2 tab-separated fields, got 3")``.
    """


def where(path, line_number=None) -> str:
    """Return ``path`` or ``path:line`` for error messages."""
    return f"{path}:{line_number}" if line_number is not None else str(path)


def warn(message: str) -> None:
    """Print ``clirplug: warning: message`` on stderr: the result is written, but the user should know."""
    print(f"clirplug: warning: {message}", file=sys.stderr)
