"""Data files shipped inside the package (the embedded demo collection and its experiment, stopword lists)."""

import importlib.resources
from pathlib import Path


def demo_path() -> Path:
    """Return the folder of the embedded German-English demo collection.

    The folder has the layout and formats of manclir-de (``corpus.jsonl``,
    ``topics.{train,dev}.{jsonl,trec}``, ``qrels.{train,dev}.txt``,
    ``bitext.{train,dev}.{de,en}``, ``dictionary.tsv``, ``manifest.json``); see its
    ``README.md``. It is a demo for running pipelines end to end, not a benchmark.

    Returns
    -------
    pathlib.Path
        The ``demo`` folder inside the installed ``clirplug.data`` package.
    """
    return Path(str(importlib.resources.files(__name__) / "demo"))


def demo_config() -> Path:
    """Return the experiment config of the demo (``demo.yaml`` beside the collection), which ``clirplug demo`` runs."""
    return Path(str(importlib.resources.files(__name__) / "demo.yaml"))
