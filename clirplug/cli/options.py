"""Command-line flags built from settings classes (:mod:`clirplug.settings`).

Each field ``name`` becomes ``--name`` (underscores as dashes) with the field's type, default,
help and choices; booleans get ``--name/--no-name``, tuples take one or more values.
"""

import argparse
import dataclasses
from collections.abc import Mapping

from clirplug.settings import Settings, field_type


def flag(name: str) -> str:
    """The flag of setting ``name``: ``v_grid`` -> ``--v-grid``."""
    return "--" + name.replace("_", "-")


def _shown(value) -> str:
    if isinstance(value, tuple):
        return " ".join(map(_shown, value))
    return f"{value:g}" if isinstance(value, float) else str(value)


def add_settings(parser, cls: type[Settings], skip: tuple = (), only: tuple | None = None) -> None:
    """Add a flag for every field of ``cls`` (but ``skip``; or the fields ``only``) to ``parser`` (or an argument group)."""
    for f in dataclasses.fields(cls):
        if f.name in skip or (only is not None and f.name not in only):
            continue
        base, _, is_tuple = field_type(cls, f.name)
        meta = f.metadata
        default = f" (default: {_shown(f.default)})" if f.default is not None and base is not bool else ""
        kwargs = {"dest": f.name, "default": f.default, "help": meta["help"] + default}
        if base is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
        else:
            kwargs["type"] = base
            if is_tuple:
                kwargs["nargs"] = "+"
            if meta["choices"] is not None:
                kwargs["choices"] = meta["choices"]
            if meta["metavar"]:
                kwargs["metavar"] = meta["metavar"]
        parser.add_argument(flag(f.name), **kwargs)


def settings_from_args(cls: type[Settings], args: argparse.Namespace, **fixed):
    """The ``cls`` object of parsed ``args`` (plus ``fixed`` values); errors name the flag."""
    values = {name: getattr(args, name) for name in cls.names() if hasattr(args, name)}
    return cls.from_values({**values, **fixed}, flag)


def _stopwords(path) -> list[str]:
    from clirplug.stopwords import read_stopwords

    return sorted(read_stopwords(path))


# Flags naming a file whose contents a searcher takes: destination -> reader.
READERS = {"stopwords": _stopwords}


def searcher_arguments(method: str, values: Mapping) -> dict:
    """The keyword arguments of ``method``'s searcher from a command's option values (``vars(args)``): each of its
    registry entry's ``flags`` whose value is given (not None), a file read by :data:`READERS`. A method that
    needs a first stage and is given none reranks its settings' default ``candidates`` (BOW-FD: DT)."""
    from clirplug.methods import get_method

    entry = get_method(method)
    arguments = {}
    for argument, dest in entry.flags.items():
        value = values.get(dest)
        if value is not None:
            arguments[argument] = READERS[dest](value) if dest in READERS else value
    if "first_stage" in entry.needs and "first_stage" not in arguments:
        arguments["first_stage"] = entry.settings().candidates
    return arguments
