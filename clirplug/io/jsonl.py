"""JSON Lines: one JSON object a line, errors naming the file and line."""

import json
from collections.abc import Iterable, Iterator

from clirplug.errors import ClirplugError, where


def json_records(lines: Iterable[str], path) -> Iterator[tuple[int, dict]]:
    """Yield ``(line number, object)`` for each non-blank line of ``lines`` (read from ``path``).

    Raises
    ------
    ClirplugError
        ``path:line: ...`` for a line that is not JSON or not a JSON object.
    """
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise ClirplugError(f"{where(path, lineno)}: invalid JSON ({error.msg})") from None
        if not isinstance(record, dict):
            raise ClirplugError(f"{where(path, lineno)}: expected a JSON object, got {type(record).__name__}")
        yield lineno, record
