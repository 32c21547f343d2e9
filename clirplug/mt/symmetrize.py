"""Symmetrization of two directional word alignments (Och & Ney 2003; Koehn et al. 2003).

Inputs and outputs are lists of ``(source index, target index)`` links of one sentence pair.
``fwd`` comes from the model ``p(target | source)`` (each target word has at most one link),
``rev`` from ``p(source | target)`` (each source word has at most one link), both written in
source-target orientation, as fast_align prints them.

``grow-diag-final-and`` follows Moses' ``symal`` (``-a=g -d=yes -f=yes -b=yes``) exactly,
including its visiting order, which decides ties: alignment points are visited in increasing
(target, source) order, a point added during a sweep is visited later in the same sweep when
it sorts after the current one, the neighbours are tried in the order (-1,0), (0,-1), (1,0),
(0,1), (-1,-1), (-1,1), (1,-1), (1,1) in (target, source) offsets, and the final step adds
``fwd``-only points before ``rev``-only points.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from collections.abc import Callable, Sequence

from clirplug.errors import ClirplugError

Links = Sequence[tuple[int, int]]
SQUARE = ((-1, 0), (0, -1), (1, 0), (0, 1))
DIAGONAL = ((-1, -1), (-1, 1), (1, -1), (1, 1))


def intersection(fwd: Links, rev: Links) -> list[tuple[int, int]]:
    """Links present in both directions."""
    return sorted(set(fwd) & set(rev))


def union(fwd: Links, rev: Links) -> list[tuple[int, int]]:
    """Links present in either direction."""
    return sorted(set(fwd) | set(rev))


def grow(fwd: Links, rev: Links, diagonal: bool = True, final: bool = True,
         final_and: bool = True) -> list[tuple[int, int]]:
    """Moses ``symal`` grow heuristics; the defaults give grow-diag-final-and.

    Parameters
    ----------
    fwd, rev
        Directional links, ``(source, target)``, see the module docstring.
    diagonal
        Also grow through diagonal neighbours (``grow-diag``).
    final
        Finally add union points that cover an unaligned word (``-final``).
    final_and
        In that final step, require both words to be unaligned (``-final-and``).
    """
    # symal works on (target, source) points; convert in and out
    inverse = {(t, s) for s, t in fwd}  # symal's b: each target word -> one source word
    direct = {(t, s) for s, t in rev}  # symal's a: each source word -> one target word
    both = inverse & direct
    every = inverse | direct
    current = sorted(both)
    chosen = set(both)
    target_covered = {t for t, _ in both}
    source_covered = {s for _, s in both}
    neighbours = SQUARE + DIAGONAL if diagonal else SQUARE

    added = True
    while added:
        added = False
        index = 0
        while index < len(current):
            point = current[index]
            for dt, ds in neighbours:
                t, s = point[0] + dt, point[1] + ds
                if (t, s) in every and not (t in target_covered and s in source_covered):
                    if (t, s) not in chosen:
                        chosen.add((t, s))
                        insort(current, (t, s))
                    target_covered.add(t)
                    source_covered.add(s)
                    added = True
            index = bisect_right(current, point)

    if final:
        for only in (inverse - direct, direct - inverse):
            for t, s in sorted(only):
                if (t, s) in chosen:
                    continue
                if final_and:
                    uncovered = t not in target_covered and s not in source_covered
                else:
                    uncovered = not (t in target_covered and s in source_covered)
                if uncovered:
                    chosen.add((t, s))
                    target_covered.add(t)
                    source_covered.add(s)
    return sorted((s, t) for t, s in chosen)


def grow_diag_final_and(fwd: Links, rev: Links) -> list[tuple[int, int]]:
    """Koehn et al. (2003) grow-diag-final-and, as Moses' ``symal`` computes it."""
    return grow(fwd, rev, diagonal=True, final=True, final_and=True)


def grow_diag_final(fwd: Links, rev: Links) -> list[tuple[int, int]]:
    """grow-diag-final: the final step adds points with at least one unaligned word."""
    return grow(fwd, rev, diagonal=True, final=True, final_and=False)


def grow_diag(fwd: Links, rev: Links) -> list[tuple[int, int]]:
    """grow-diag without a final step."""
    return grow(fwd, rev, diagonal=True, final=False)


SYMMETRIZERS: dict[str, Callable[[Links, Links], list[tuple[int, int]]]] = {
    "grow-diag-final-and": grow_diag_final_and,
    "grow-diag-final": grow_diag_final,
    "grow-diag": grow_diag,
    "intersection": intersection,
    "union": union,
}


def symmetrize(fwd: Sequence[Links], rev: Sequence[Links], method: str = "grow-diag-final-and"):
    """Symmetrize whole corpora (lists of per-sentence links) with ``SYMMETRIZERS[method]``."""
    if method not in SYMMETRIZERS:
        raise ClirplugError(f"symmetrization: unknown method {method!r}; choose from {', '.join(SYMMETRIZERS)}")
    if len(fwd) != len(rev):
        raise ClirplugError(f"symmetrization: {len(fwd)} forward but {len(rev)} reverse alignment lines")
    combine = SYMMETRIZERS[method]
    return [combine(f, r) for f, r in zip(fwd, rev)]


def format_pharaoh(links: Links) -> str:
    """``"0-0 1-2 ..."``: source-target index pairs of one sentence."""
    return " ".join(f"{s}-{t}" for s, t in links)


def parse_pharaoh(line: str, where: str = "alignment", lengths: tuple[int, int] | None = None,
                  within: str = "sentence pair") -> list[tuple[int, int]]:
    """Parse one Pharaoh line ``"i-j i-j ..."`` (source word ``i``, target word ``j``), links in
    the order given; ``where`` names the file and line in errors. With ``lengths``, the source and
    target token counts of the ``within`` (a sentence pair, a rule), a link outside it is an error.
    The one reader of alignment links: alignment files, bitext alignments and grammar rules."""
    links = []
    for item in line.split():
        source, dash, target = item.partition("-")
        if not (dash and source.isdigit() and target.isdigit()):
            raise ClirplugError(f"{where}: bad alignment link {item!r}: expected I-J")
        link = (int(source), int(target))
        if lengths is not None and (link[0] >= lengths[0] or link[1] >= lengths[1]):
            raise ClirplugError(f"{where}: alignment link {item!r} is outside the {within} "
                                f"({lengths[0]} source, {lengths[1]} target tokens)")
        links.append(link)
    return links


def read_pharaoh(path) -> list[list[tuple[int, int]]]:
    """Read a Pharaoh alignment file, one sentence pair a line."""
    with open(path, encoding="utf-8") as lines:
        return [parse_pharaoh(line, f"{path}:{n}") for n, line in enumerate(lines, start=1)]
