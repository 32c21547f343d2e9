"""PSQ settings chosen by a coordinate search on tuning topics.

A grid names, for some ``--psq`` options, the values to try, in the order the axes are
searched: starting from the default settings, each axis in turn is set to each of its
values with the others at their best so far, and the best value (by the measure on the
tuning topics, the current one on ties) is kept. The tuning topics may be split into parts,
each translated by its own model (cross-fitting, :mod:`clirplug.crossfit`); a setting is
scored on the union of the parts' runs.
"""

from __future__ import annotations

from pathlib import Path

from clirplug.errors import ClirplugError
from clirplug.qt.psq_tables import COMPONENTS, PSQ_KEYS, PsqBuilder, PsqSettings


class Builders:
    """PsqBuilders for any settings, sharing the loaded model parts and the per-sentence tables.

    The grammar and decoder are read once per field, restricted to the words of ``topics``.
    """

    def __init__(self, model, kind: str, topics, src_lang: str = "de"):
        self.model, self.kind, self.topics, self.src_lang = Path(model), kind, topics, src_lang
        self.loaded: dict = {}
        self.memo: dict = {}

    def source(self, field: str):
        """The :class:`clirplug.qt.psq.PsqSource` of ``field``."""
        from clirplug.qt.psq import PsqSource

        return PsqSource(str(self.model), field, self.kind, self.src_lang)

    def __call__(self, settings: PsqSettings, field: str):
        from clirplug.qt.psq import psq_builder

        every = PsqSettings(lambdas=(1.0,) * len(COMPONENTS))  # load all parts once
        key = field if settings.orphans > 0 or any(settings.weights[c] > 0 for c in ("grammar", "nbest")) else "token"
        if key not in self.loaded:
            needed = every if key == field else PsqSettings()
            self.loaded[key] = psq_builder(self.source(field), needed, self.topics)
        builder, tokenize = self.loaded[key]
        return (PsqBuilder(settings, builder.token, builder.grammar, builder.translate, self.memo, builder.src_lang),
                tokenize)


def run_settings(scorer, builders: Builders, field: str, settings: PsqSettings, topics=None, hits: int = 1000,
                 progress: bool = False, latencies: dict[str, float] | None = None):
    """The PSQ run frame of ``topics`` (default: ``builders.topics``) under ``settings``; with ``latencies``,
    each topic's seconds (its query built, then searched) are added to its entry."""
    from clirplug.qt.psq import psq_queries, psq_search

    builder, tokenize = builders(settings, field)
    queries = psq_queries(builders.source(field), builders.topics if topics is None else topics, builder, tokenize,
                          latencies)
    return psq_search(scorer, queries, hits=hits, progress=progress, latencies=latencies)


def grid_axes(grid: dict, where: str = "grid") -> list[tuple[str, list[str]]]:
    """The axes of a grid mapping (``--psq`` key -> values), each value checked by :meth:`PsqSettings.parse`."""
    if not isinstance(grid, dict):
        raise ClirplugError(f"{where}: expected a mapping of --psq option -> list of values")
    axes = []
    for key, values in grid.items():
        if key not in PSQ_KEYS:  # every --psq option can be a grid axis
            raise ClirplugError(f"{where}.{key}: unknown --psq option (known: {', '.join(PSQ_KEYS)})")
        if not isinstance(values, list) or not values:
            raise ClirplugError(f"{where}.{key}: expected a non-empty list of values, got {values!r}")
        texts = []
        for value in values:
            text = ":".join(f"{v:g}" for v in value) if isinstance(value, list) else str(value)
            try:
                PsqSettings.parse(f"{key}={text}")
            except ClirplugError as error:
                raise ClirplugError(f"{where}.{key}: {error}") from None
            texts.append(text)
        axes.append((key, texts))
    return axes


def with_value(settings: PsqSettings, key: str, value: str) -> PsqSettings:
    """``settings`` with one ``--psq`` option changed."""
    others = [item for item in settings.spec().split(",") if item.partition("=")[0] != key]
    return PsqSettings.parse(",".join([*others, f"{key}={value}"]))


def coordinate_search(measure, start: PsqSettings, axes) -> tuple[PsqSettings, dict[str, float]]:
    """The best settings found by searching ``axes`` one after the other from ``start``.

    ``measure(settings) -> float`` is called once per distinct setting (by ``--psq`` string);
    returns the best settings and every evaluated ``--psq`` string with its value.
    """
    results: dict[str, float] = {}

    def value(settings):
        spec = settings.spec()
        if spec not in results:
            results[spec] = float(measure(settings))
        return results[spec]

    best = start
    for key, values in axes:  # max keeps the first of tied settings: the current point
        best = max([best] + [with_value(best, key, v) for v in values], key=value)
    return best, results


def may_decode(start: PsqSettings, axes) -> bool:
    """True when ``start`` or a setting on the axes needs Pr_grammar, Pr_nbest or orphans (the decoder's model)."""
    def decodes(settings):
        return settings.orphans > 0 or settings.weights["grammar"] > 0 or settings.weights["nbest"] > 0

    return decodes(start) or any(decodes(with_value(start, key, v)) for key, values in axes for v in values)
