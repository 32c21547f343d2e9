"""Shared fixtures: paths to the conformance data and to the manclir-de collection."""

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def _shared_folder(*parts):
    path = SHARED.joinpath(*parts)
    if not path.is_dir():
        pytest.skip(f"{path} is absent: this test needs the shared data beside the repository")
    return path


@pytest.fixture(scope="session")
def manclir_de() -> Path:
    """The manclir-de collection folder (skips with a message where it is absent)."""
    return _shared_folder("data", "manclir-de")


@pytest.fixture(scope="session")
def trec_eval_fixtures() -> Path:
    """trec_eval's own test fixtures with its expected outputs."""
    return _shared_folder("conformance", "trec_eval")


@pytest.fixture(scope="session")
def cdec_clef06() -> Path:
    """Real cdec per-query grammars and n-best lists (CLEF 2006 en-fr)."""
    return _shared_folder("conformance", "cdec-clef06-en-fr")
