"""Settings: the options of a method or training step, declared once.

A settings class is a frozen dataclass deriving from :class:`Settings` whose fields are declared
with :func:`option`: type (the annotation), default, a one-line help and the range check. The
command line builds its flags from it (:func:`clirplug.cli.options.add_settings`), the experiment
reads its YAML mappings into it (:meth:`Settings.from_mapping`) and Python code constructs it::

    settings = AlignSettings(iterations=8)          # Python
    settings = AlignSettings.from_mapping({"iterations": 8}, "models.align")   # YAML
    # clirplug train align ... --iterations 8        # CLI

Values are checked when an object is made: a bad one raises :class:`ClirplugError` naming the
setting as the caller spells it (``--iterations``, ``models.align.iterations``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from collections.abc import Callable, Mapping

from clirplug.errors import ClirplugError


def option(default, help: str, *, choices=None, low=None, high=None, above=None, below=None,
           metavar: str | None = None):
    """A settings field: ``default``, one line of ``help``, allowed ``choices`` or a range.

    ``low``/``high`` are inclusive bounds, ``above``/``below`` exclusive ones; they apply to each
    element of a tuple-valued setting.
    """
    return dataclasses.field(default=default, metadata={
        "help": help, "choices": tuple(choices) if choices is not None else None,
        "low": low, "high": high, "above": above, "below": below, "metavar": metavar})


@functools.cache
def field_type(cls, name: str):
    """``(base type, optional, is_tuple)`` of a settings field: ``int | None`` -> ``(int, True, False)``."""
    hint = typing.get_type_hints(cls)[name]
    optional = False
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        optional, hint = True, args[0]
    if typing.get_origin(hint) is tuple:
        return typing.get_args(hint)[0], optional, True
    return hint, optional, False


def _convert(value, base, where: str):
    if base is bool:
        if isinstance(value, bool):
            return value
    elif base is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif base is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif isinstance(value, base):
        return value
    raise ClirplugError(f"{where}: expected {base.__name__}, got {value!r}")


def _check_range(value, meta: Mapping, where: str) -> None:
    if meta["choices"] is not None and value not in meta["choices"]:
        raise ClirplugError(f"{where}: expected one of {', '.join(map(str, meta['choices']))}, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ClirplugError(f"{where}: expected a finite number, got {value!r}")
    if meta["low"] is not None and value < meta["low"]:
        raise ClirplugError(f"{where}: must be at least {meta['low']}, got {value!r}")
    if meta["high"] is not None and value > meta["high"]:
        raise ClirplugError(f"{where}: must be at most {meta['high']}, got {value!r}")
    if meta["above"] is not None and value <= meta["above"]:
        raise ClirplugError(f"{where}: must be above {meta['above']}, got {value!r}")
    if meta["below"] is not None and value >= meta["below"]:
        raise ClirplugError(f"{where}: must be below {meta['below']}, got {value!r}")


@dataclasses.dataclass(frozen=True)
class Settings:
    """Base of the settings classes: typed, frozen, checked on construction."""

    def __post_init__(self):
        self.check()

    def check(self, name_of: Callable[[str], str] = str):
        """Convert and check every field; ``name_of(field)`` names a bad one in the error."""
        cls: type = type(self)
        for f in dataclasses.fields(self):
            value, where = getattr(self, f.name), name_of(f.name)
            base, optional, is_tuple = field_type(cls, f.name)
            if value is None:
                if not optional:
                    raise ClirplugError(f"{where}: a value is required")
                continue
            if is_tuple:
                if not isinstance(value, (list, tuple)) or not value:
                    raise ClirplugError(f"{where}: expected a non-empty list, got {value!r}")
                value = tuple(_convert(v, base, where) for v in value)
                for v in value:
                    _check_range(v, f.metadata, where)
            else:
                value = _convert(value, base, where)
                _check_range(value, f.metadata, where)
            object.__setattr__(self, f.name, value)
        self.validate(name_of)
        return self

    def validate(self, name_of: Callable[[str], str] = str) -> None:
        """Rules across fields, or shared with other code (e.g. BM25's); raise :class:`ClirplugError`
        naming a setting by ``name_of(field)``."""

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def from_values(cls, values: Mapping, name_of: Callable[[str], str] = str):
        """An object from ``values`` (a subset of the fields); errors name settings by ``name_of``."""
        known = cls.names()
        for key in values:
            if key not in known:
                raise ClirplugError(f"{name_of(key)}: unknown setting (known: {', '.join(known)})")
        defaults = {f.name: f.default for f in dataclasses.fields(cls)}
        obj = object.__new__(cls)
        for key, value in {**defaults, **values}.items():
            object.__setattr__(obj, key, value)
        return obj.check(name_of)

    @classmethod
    def from_mapping(cls, mapping, where: str):
        """An object from a YAML mapping at ``where`` (e.g. ``models.align``)."""
        if mapping is None:
            mapping = {}
        if not isinstance(mapping, Mapping):
            raise ClirplugError(f"{where}: expected a mapping of setting -> value")
        return cls.from_values(mapping, lambda key: f"{where}.{key}")

    def replace(self, **changes):
        """A copy with ``changes`` (checked)."""
        return dataclasses.replace(self, **changes)
