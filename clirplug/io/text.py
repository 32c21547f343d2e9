"""Plain text files read line by line."""

from pathlib import Path

from clirplug.errors import ClirplugError


def read_lines(path: Path) -> list[str]:
    """A text file's lines (UTF-8), with a user error naming the file when it cannot be read."""
    try:
        lines = Path(path).read_text(encoding="utf-8").split("\n")  # not splitlines(): U+2028 is not a break
    except (OSError, UnicodeDecodeError) as error:
        raise ClirplugError(f"{path}: cannot read ({error})") from error
    return lines[:-1] if lines[-1] == "" else lines
