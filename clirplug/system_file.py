"""System files: a searcher of :mod:`clirplug.api` as JSON, such as each system an experiment runs or recommends.

A system file (``docs/experiments.md``, "System files") holds:

* ``format`` (:data:`FORMAT`), ``name`` (the run), ``method`` (of :data:`clirplug.methods.METHODS`), ``field``
  (how its queries are read), ``tag`` (the run tag) and ``hits`` (documents per query);
* ``root``: the experiment root, relative to the file's folder; the paths below are relative to the root (absolute
  when outside it, e.g. a collection elsewhere), so that the root can be moved whole;
* ``index``, ``corpus``: the resources its searcher needs (paths, or null);
* ``model``: the translation model, ``{"folder", "kind", "src_lang", "weights"}`` (``weights``: a decoder weights
  file replacing the folder's, or null), or null;
* ``files``: the searcher's options that are files (BOW-FD's weights, boosting's model);
* ``options``: the searcher's other keyword arguments, as JSON;
* ``first_stage``, ``searchers``: the systems it is built on, as the names of their system files beside it.

:func:`read_system` checks a file and resolves its paths; :func:`clirplug.api.load_system` builds its searcher.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from clirplug.errors import ClirplugError

FORMAT = 1
SUFFIX = ".system.json"
MODEL_KEYS = ("folder", "kind", "src_lang", "weights")


def system_path(run_file) -> Path:
    """The system file beside a run file: ``dev.title.psq.trec`` -> ``dev.title.psq.system.json``."""
    return Path(run_file).with_suffix(SUFFIX)


def relative(path, root: Path) -> str:
    """``path`` relative to ``root`` when inside it, else absolute: as a system file writes it."""
    path, root = Path(path).resolve(), Path(root).resolve()
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def root_of(file: Path, root: Path) -> str:
    """The ``root`` entry of the system file ``file`` of the experiment root ``root``."""
    return os.path.relpath(Path(root).resolve(), Path(file).resolve().parent)


def write_system(file: Path, system: dict) -> None:
    """Write ``system`` (the keys of the module docstring) to ``file``, atomically."""
    from clirplug.atomic import atomic_open

    with atomic_open(file) as handle:
        json.dump({"format": FORMAT, **system}, handle, indent=1, sort_keys=True)
        handle.write("\n")


def _get(system: dict, file: Path, key: str, kind, optional: bool = False):
    value = system.get(key)
    if (value is None and not optional) or (value is not None and not isinstance(value, kind)) or isinstance(value, bool):
        raise ClirplugError(f"{file}: {key}: expected {getattr(kind, '__name__', 'a value')}"
                            f"{' or null' if optional else ''}, got {value!r}")
    return value


def read_system(file) -> dict:
    """The system of ``file``, checked, its paths resolved (absolute strings; the systems it is built on as
    :class:`~pathlib.Path`); a :class:`ClirplugError` naming the file and the key otherwise."""
    file = Path(file)
    try:
        system = json.loads(file.read_text(encoding="utf-8"))
    except OSError as error:
        raise ClirplugError(f"{file}: cannot read ({error.strerror})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ClirplugError(f"{file}: not a JSON system file ({error})") from None
    if not isinstance(system, dict) or system.get("format") != FORMAT:
        raise ClirplugError(f"{file}: format: expected a clirplug system file of format {FORMAT}")
    root = file.parent / _get(system, file, "root", str)

    def place(value: str) -> str:
        return str(root / value)

    for key in ("name", "method", "field", "tag"):
        _get(system, file, key, str)
    result = {"file": file, "name": system["name"], "method": system["method"], "field": system["field"],
              "tag": system["tag"], "hits": _get(system, file, "hits", int), "options": _get(system, file, "options", dict)}
    for key in ("index", "corpus"):
        value = _get(system, file, key, str, optional=True)
        result[key] = None if value is None else place(value)
    files = _get(system, file, "files", dict, optional=True) or {}
    for key, value in files.items():
        if not isinstance(value, str):
            raise ClirplugError(f"{file}: files.{key}: expected a path, got {value!r}")
    result["files"] = {key: place(value) for key, value in files.items()}
    model = _get(system, file, "model", dict, optional=True)
    if model is not None:
        if set(model) != set(MODEL_KEYS) or not isinstance(model["folder"], str):
            raise ClirplugError(f"{file}: model: expected {{{', '.join(MODEL_KEYS)}}}, got {model!r}")
        model = {**model, "folder": place(model["folder"]), "weights": model["weights"] and place(model["weights"])}
    result["model"] = model
    first = _get(system, file, "first_stage", str, optional=True)
    result["first_stage"] = None if first is None else file.parent / first
    searchers = _get(system, file, "searchers", list, optional=True)
    if searchers is not None and not all(isinstance(name, str) for name in searchers):
        raise ClirplugError(f"{file}: searchers: expected the names of system files, got {searchers!r}")
    result["searchers"] = None if searchers is None else [file.parent / name for name in searchers]
    return result
