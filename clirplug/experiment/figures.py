"""The report's figures, each as PNG and PDF: per-topic differences, recall at depth, kappa curves, PSQ grids.

Drawn with matplotlib's Agg backend under fixed rc parameters, saved without timestamps, so the
same numbers give the same bytes. matplotlib is imported on first use; :func:`available` says
whether it is installed (without it the report has no figures).
"""

from __future__ import annotations

import functools
import textwrap
from pathlib import Path

FORMATS = ("png", "pdf")
DEPTHS = (10, 20, 50, 100, 200, 500, 1000)  # recall at these depths (up to the runs' hits)
RC = {"figure.dpi": 100, "savefig.dpi": 150, "font.size": 8, "axes.titlesize": 8, "axes.grid": True,
      "grid.alpha": 0.3, "pdf.fonttype": 42, "svg.hashsalt": "clirplug", "path.simplify": False}


def available() -> bool:
    """Whether matplotlib (the ``plots`` extra) is installed."""
    from clirplug import plots

    return plots.available()


@functools.cache
def _pyplot():
    from clirplug.plots import pyplot

    plt = pyplot()
    plt.rcdefaults()
    plt.rcParams.update(RC)
    return plt


def paths(stem: Path) -> tuple[Path, ...]:
    """The files of the figure ``stem``: ``stem.png`` and ``stem.pdf``."""
    return tuple(stem.with_name(f"{stem.name}.{ext}") for ext in FORMATS)


def title(text: str, width: int = 60) -> str:
    """``text`` wrapped to lines of ``width`` characters, so that no title is cut at the figure's edge
    (``name = value`` kept on one line)."""
    return "\n".join(textwrap.wrap(text.replace(" = ", "\xa0=\xa0"), width)).replace("\xa0", " ")


def save(figure, stem: Path) -> None:
    """Write ``figure`` to :func:`paths` (``stem``) atomically, without creation dates, and close it."""
    from clirplug.atomic import atomic_path

    figure.tight_layout()
    metadata = {"png": {"Software": None}, "pdf": {"CreationDate": None, "Creator": None, "Producer": None}}
    for path, ext in zip(paths(stem), FORMATS):
        with atomic_path(path, suffix=f".{ext}") as tmp:
            figure.savefig(tmp, format=ext, metadata=metadata[ext])
    _pyplot().close(figure)


def topic_differences(stem: Path, differences: dict, label: str) -> None:
    """Per run, the per-topic differences ``run - baseline`` sorted descending, one bar per topic.

    ``differences``: run name -> (array of differences, panel title); ``label`` names the y axis.
    """
    plt = _pyplot()
    figure, axes = plt.subplots(1, len(differences), figsize=(3 * len(differences), 2.8), sharey=True,
                                squeeze=False)
    for ax, (run, (values, heading)) in zip(axes[0], differences.items()):
        ordered = sorted(values, reverse=True)
        ax.bar(range(len(ordered)), ordered, width=1.0, color=["tab:blue" if v >= 0 else "tab:red" for v in ordered])
        ax.axhline(0, color="black", linewidth=0.5)
        ax.set_title(title(heading, 40))
        ax.set_xlabel("topics, sorted")
    axes[0][0].set_ylabel(label)
    save(figure, stem)


def recall_curves(stem: Path, panels: dict, depths: list[int]) -> None:
    """Recall at ``depths`` per run, one panel per heading: ``panels`` maps heading -> {run: recalls}."""
    plt = _pyplot()
    figure, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3), sharey=True, squeeze=False)
    for ax, (heading, curves) in zip(axes[0], panels.items()):
        for run, values in curves.items():
            ax.plot(depths, values, marker="o", markersize=3, label=run)
        ax.set_xscale("log")
        ax.set_xticks(depths, [str(d) for d in depths])
        ax.set_xlabel("depth")
        ax.set_title(title(heading, 50))
        ax.legend(fontsize=6)
    axes[0][0].set_ylabel("recall")
    save(figure, stem)


def kappa_curves(stem: Path, curve, chosen: dict, labels: tuple[str, str], heading: str) -> None:
    """The measure against kappa for each fusion method of ``curve`` (``kappa``, measure, ``method``);
    the chosen ``{"method", "kappa"}`` is marked. kappa = 1 is the first run alone."""
    plt = _pyplot()
    measure = curve.columns[1]
    figure, ax = plt.subplots(figsize=(5, 3.5))
    for method, part in curve.groupby("method", sort=False):
        ax.plot(part["kappa"], part[measure], marker="o", markersize=3, label=method)
    ax.axvline(chosen["kappa"], linestyle=":", color="grey")
    ax.set_xlabel(f"kappa  (0 = {labels[1]}, 1 = {labels[0]})")
    ax.set_ylabel(measure)
    ax.set_title(title(heading))
    ax.legend()
    save(figure, stem)


def psq_grid(stem: Path, evaluated: list[tuple[str, float]], chosen: str, measure: str, heading: str) -> None:
    """The settings of a PSQ coordinate search in the order evaluated, each labelled by what it changed."""
    plt = _pyplot()
    figure, ax = plt.subplots(figsize=(max(5, 0.3 * len(evaluated)), 3.5))
    labels: list[str] = []
    previous: dict[str, str] = {}
    for spec, _ in evaluated:
        options = dict(part.split("=", 1) for part in spec.split(","))
        labels.append(", ".join(f"{k}={v}" for k, v in options.items() if previous.get(k) != v) if previous
                      else "start")
        previous = options
    values = [value for _, value in evaluated]
    ax.plot(range(len(values)), values, marker="o", markersize=3)
    best = [spec for spec, _ in evaluated].index(chosen)
    ax.plot([best], [values[best]], marker="*", markersize=10, color="tab:red", linestyle="none", label="chosen")
    ax.set_xticks(range(len(values)), labels, rotation=90, fontsize=6)
    ax.set_ylabel(measure)
    ax.set_title(title(heading))
    ax.legend()
    save(figure, stem)
