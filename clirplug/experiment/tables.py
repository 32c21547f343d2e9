"""The report's tables: one model (:class:`Table`), two renderers (:func:`markdown`, :func:`latex`).

A table is built once, its numbers formatted once; the renderers only lay it out. A result table
(:func:`result_table`) puts the query fields side by side, each with the config's measures, the
win/tie/loss count of each run against the baseline on the first measure's per-topic values and
the share of the ceiling; the baseline comes once, between the floor and the table's own runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

HOLM_MARKER = "†"  # after '*': significant also after Holm's adjustment (a dagger)


class Cell(NamedTuple):
    """A formatted value and its significance mark: ``""``, ``"*"`` or ``"*†"``."""

    text: str
    mark: str = ""


@dataclass(frozen=True)
class Table:
    """A titled grid of cells; ``groups`` are headers spanning the columns after the stub: (label, width)."""

    name: str  # unique in the report: "Table 3"
    caption: str
    stub: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]  # each: the stub's cell, then one per column
    groups: tuple[tuple[str, int], ...] = ()


def mark(row: dict) -> str:
    """The significance mark of a score row (``*`` at p < alpha, ``*†`` also after Holm's adjustment)."""
    from clirplug.eval.significance import marker

    return marker(row["p_value"]) + (HOLM_MARKER if marker(row["p_holm"]) else "") if marker(row["p_value"]) else ""


def win_tie_loss(row: dict) -> str:
    """``wins/ties/losses`` of a score row against the baseline, ``""`` when it was not compared."""
    return "" if row.get("wins") is None else f"{row['wins']}/{row['ties']}/{row['losses']}"


def result_table(name: str, title: str, scores: list[dict], split: str, runs: list[str], fields: list[str],
                 measures: list[str], baseline: str | None) -> Table:
    """The runs ``runs`` of ``split`` (floor, baseline, the others in order, ceiling), fields side by side.

    ``scores`` are rows of :func:`clirplug.experiment.report.score_runs`; a run missing in a field
    leaves its cells empty.
    """
    cells = {(r["field"], r["run"], r["measure"]): r for r in scores if r["split"] == split}
    order = ["floor", *([baseline] if baseline in runs else []), *runs, "ceiling"]
    names = [n for n in dict.fromkeys(order) if any((f, n, measures[0]) in cells for f in fields)]
    topics = sorted({r["topics"] for r in cells.values()})
    columns = (*measures, "W/T/L", "share")
    rows = []
    for run in names:
        row = [Cell(f"{run} (baseline)" if run == baseline else run)]
        for fld in fields:
            first = cells.get((fld, run, measures[0]))
            if first is None:
                row += [Cell("")] * len(columns)
                continue
            row += [Cell(f"{cells[(fld, run, m)]['value']:.4f}", mark(cells[(fld, run, m)])) for m in measures]
            share = first["share_of_ceiling"]
            row += [Cell(win_tie_loss(first)), Cell("" if share is None else f"{share:.1%}")]
        rows.append(tuple(row))
    against = f"against `{baseline}`" if baseline else "without a baseline"
    caption = (f"{title}: split `{split}`, {' or '.join(map(str, topics))} topics; {', '.join(fields)} queries; "
               f"marks and W/T/L {against}")
    return Table(name, caption, "run", columns * len(fields), tuple(rows), tuple((f, len(columns)) for f in fields))


def markdown(table: Table) -> list[str]:
    """The table as Markdown lines: a heading with its name and caption, then a pipe table
    (a group's label heads each of its columns: ``title MAP``)."""
    labels = list(table.columns)
    if table.groups:
        labels, start = [], 0
        for group, width in table.groups:
            labels += [f"{group} {column}" for column in table.columns[start:start + width]]
            start += width
    lines = [f"### {table.name}: {table.caption}", "", f"| {table.stub} | " + " | ".join(labels) + " |",
             "|---|" + "---:|" * len(labels)]
    lines += ["| " + " | ".join(cell.text + cell.mark for cell in row) + " |" for row in table.rows]
    return lines + [""]


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "`": "",
                  HOLM_MARKER: r"\dag{}"}


def escape(text: str) -> str:
    """``text`` safe in LaTeX: its special characters escaped (backquotes, Markdown's code marks, dropped)."""
    return "".join(_LATEX_SPECIAL.get(char, char) for char in text)


def _latex_cell(cell: Cell) -> str:
    sup = cell.mark.replace(HOLM_MARKER, r"\dag")
    return escape(cell.text) + (rf"\textsuperscript{{{sup}}}" if sup else "")


def latex(table: Table) -> str:
    """The table as a LaTeX ``table`` float with booktabs rules (``\\usepackage{booktabs}``)."""
    label = table.name.lower().replace(" ", "-")
    lines = [f"% {table.name}", r"\begin{table}[htbp]", r"\centering", r"\small",
             rf"\caption{{{escape(table.caption)}}}", rf"\label{{tab:{label}}}",
             rf"\begin{{tabular}}{{l{'r' * len(table.columns)}}}", r"\toprule"]
    if table.groups:
        spans, rules, start = [], [], 2
        for group, width in table.groups:
            spans.append(rf"\multicolumn{{{width}}}{{c}}{{{escape(group)}}}")
            rules.append(rf"\cmidrule(lr){{{start}-{start + width - 1}}}")
            start += width
        lines += [" & " + " & ".join(spans) + r" \\", "".join(rules)]
    lines += [" & ".join(escape(c) for c in (table.stub, *table.columns)) + r" \\", r"\midrule"]
    lines += [" & ".join(_latex_cell(cell) for cell in row) + r" \\" for row in table.rows]
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}", ""]
    return "\n".join(lines)


def latex_document(tables: list[Table], preamble: str = "") -> str:
    """A standalone LaTeX document of ``tables`` (each float also pastes alone into a paper with booktabs)."""
    body = "\n".join(latex(t) for t in tables)
    return "\n".join([r"\documentclass{article}", r"\usepackage[T1]{fontenc}", r"\usepackage{booktabs}",
                      r"\usepackage[margin=2cm,landscape]{geometry}", r"\begin{document}",
                      *([escape(preamble), ""] if preamble else []), body, r"\end{document}", ""])
