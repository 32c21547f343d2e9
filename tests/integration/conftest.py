"""Fixtures that build small Lucene indexes and run the demo experiment (the JVM starts once per test session)."""

import pytest

from lucene_tiny import TINY_DOCS, write_jsonl


@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory):
    return write_jsonl(tmp_path_factory.mktemp("corpus") / "docs.jsonl", TINY_DOCS)


@pytest.fixture(scope="session")
def tiny_index(tiny_corpus, tmp_path_factory):
    from clirplug.lucene.index import build_index

    index = tmp_path_factory.mktemp("indexes") / "tiny"
    build_index(tiny_corpus, index, language="en", progress=False)
    return index


@pytest.fixture(scope="session")
def manclir_index(manclir_de, tmp_path_factory):
    """The manclir-de English collection indexed once for the whole session."""
    from clirplug.lucene.index import build_index

    index = tmp_path_factory.mktemp("indexes") / "manclir-de"
    build_index(manclir_de / "corpus.jsonl", index, language="en", progress=False)
    return index


@pytest.fixture(scope="session")
def demo(tmp_path_factory):
    """The demo config (clirplug/data/demo.yaml) run once for the whole session into a fresh root: (config, outcomes)."""
    from clirplug.data import demo_config
    from clirplug.experiment.config import load_config
    from clirplug.experiment.runner import run_experiment

    root = tmp_path_factory.mktemp("demo-root")
    config = load_config(demo_config(), [f"root={root}"])
    return config, run_experiment(config, progress=False)
