"""Cross-fitting: tuning topics translated by models that never saw their pages.

A collection's bitext is built from the same pages as its tune split's topics, so a model
trained on all of it has memorised most tuning titles and descs. Parameters tuned on such
translations (PSQ settings, BOW-FD weights, fusion weights) are tuned on near-perfect input
and do not carry to new topics. Cross-fitting splits the tune topics into ``K`` folds and
trains one model per fold on the bitext without that fold's pages (``bitext.<split>.ids``
names the page of every line); each fold's topics are translated by its own model, and the
union of the folds is what tuning sees. The final model, used on every other split, is still
trained on all of the bitext.

Topics are grouped by page name (the id without its section suffix, so ``printf.1`` and
``printf.3`` fall together, as in the collection's split rule) and the groups dealt to the
folds in the order of the MD5 of their name: deterministic, balanced, and independent of the
file order.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from clirplug.errors import ClirplugError


def page_name(page_id: str) -> str:
    """The page name of an id: ``printf.3`` -> ``printf``, ``garden01`` -> ``garden01``."""
    return page_id.rsplit(".", 1)[0] if "." in page_id else page_id


def fold_of(topic_ids, folds: int) -> dict[str, int]:
    """Topic id -> fold in ``range(folds)`` (see the module docstring)."""
    if folds < 2:
        raise ClirplugError(f"cross-fitting needs at least 2 folds, got {folds}")
    names = sorted({page_name(t) for t in topic_ids}, key=lambda n: (hashlib.md5(n.encode()).hexdigest(), n))
    fold_by_name = {name: i % folds for i, name in enumerate(names)}
    return {t: fold_by_name[page_name(t)] for t in topic_ids}


def read_ids(path: Path, lines: int) -> list[str]:
    """The page id of each bitext line (``bitext.<split>.ids``); its length must match the bitext."""
    try:
        ids = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise ClirplugError(f"{path}: cannot read the bitext page ids ({error.strerror})") from None
    if len(ids) != lines:
        raise ClirplugError(f"{path}: {len(ids)} lines, but the bitext has {lines}")
    for number, page in enumerate(ids, 1):
        if not page or page != page.strip():
            raise ClirplugError(f"{path}:{number}: expected a page id (or '-'), got {page!r}")
    return ids


def held_out_lines(ids: list[str], names: set[str]) -> list[bool]:
    """For each bitext line: True when its page is one of ``names`` (kept out of the fold's model)."""
    return [page != "-" and page_name(page) in names for page in ids]
