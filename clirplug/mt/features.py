"""Decoder feature names, default weights and weights files.

A derivation's model score is the linear ``w·f = Σ_k w_k f_k`` (Chiang 2007, eq. 2) over

=============== ========================================================================
LanguageModel   ``log10 p(e)`` of the target words with ``<s>``/``</s>`` (kenlm, log10)
WordPenalty     ``-1`` per target word (cdec's sign: a positive weight favours short output)
Glue            ``1`` per application of the glue rule ``S -> S X``
PassThrough     ``1`` per source word copied untranslated (no grammar rule covers it)
EgivenF ...     the grammar's own features (``clirplug.mt.extract.FEATURES``: ``-log10``
                costs and ``log10`` counts), or cdec's positional features ``0``, ``1``...
=============== ========================================================================

Scores are thus in the LM's log10 units. The default weights below are a starting point for
tuning (:mod:`clirplug.mt.tune`), not tuned values: costs weigh ``-0.5`` (the grammar helper's
``-log10`` probabilities), counts ``0``, the LM ``1`` and each untranslated word ``-1`` (a
tenth of a typical LM ``<unk>`` cost). A weights file has one ``name value`` pair a line, as
cdec's; ``#`` starts a comment. A model's weights file may name the features above and those
of the model's grammar (:func:`model_features`); another name is an error.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Collection, Mapping
from pathlib import Path

from clirplug.atomic import atomic_open
from clirplug.errors import ClirplugError, where

LANGUAGE_MODEL = "LanguageModel"
WORD_PENALTY = "WordPenalty"
GLUE = "Glue"
PASS_THROUGH = "PassThrough"
DECODER_FEATURES = (LANGUAGE_MODEL, WORD_PENALTY, GLUE, PASS_THROUGH)

DEFAULT_WEIGHTS: dict[str, float] = {
    LANGUAGE_MODEL: 1.0,
    WORD_PENALTY: 0.0,
    GLUE: 0.0,
    PASS_THROUGH: -1.0,
    "EgivenF": -0.5,
    "FgivenE": -0.5,
    "LexEgivenF": -0.5,
    "LexFgivenE": -0.5,
    "CountEF": 0.0,
    "CountF": 0.0,
}


def weight_lines(path, missing: str = "no such weights file"):
    """Yield ``(line number, name, value)`` of a ``name value`` file; ``#`` starts a comment.

    Raises
    ------
    ClirplugError
        ``missing`` when the file cannot be read; file and line of a malformed or non-finite entry.
    """
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise ClirplugError(f"{path}: {missing} ({error.strerror})") from None
    for lineno, line in enumerate(lines, 1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        if len(fields) != 2:
            raise ClirplugError(f"{where(path, lineno)}: expected 'name value', got {line.strip()!r}")
        try:
            value = float(fields[1])
        except ValueError:
            raise ClirplugError(f"{where(path, lineno)}: weight {fields[1]!r} is not a number") from None
        if not math.isfinite(value):
            raise ClirplugError(f"{where(path, lineno)}: weight {fields[1]!r} is not finite")
        yield lineno, fields[0], value


def model_features(grammar_path) -> set[str]:
    """The names a weight of a model may have: the decoder's, the defaults' and its grammar's features."""
    from clirplug.mt.grammar import grammar_features

    return {*DECODER_FEATURES, *DEFAULT_WEIGHTS, *grammar_features(grammar_path)}


def check_feature(name: str, known: Collection[str], location: str) -> None:
    """Raise ``ClirplugError`` at ``location`` (file:line) when ``name`` is not ``known``; suggest the closest."""
    if name not in known:
        close = difflib.get_close_matches(name, sorted(known), n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(sorted(known))}"
        raise ClirplugError(f"{location}: unknown feature {name!r} ({hint})")


def read_weights(path, known: Collection[str] | None = None) -> dict[str, float]:
    """Read a weights file (``name value`` a line).

    Parameters
    ----------
    known : collection of str, optional
        The feature names a weight may have (:func:`model_features`); any other is an error.

    Raises
    ------
    ClirplugError
        Naming the file and line of a malformed, non-finite, repeated or unknown entry.
    """
    weights: dict[str, float] = {}
    for lineno, name, value in weight_lines(path):
        if known is not None:
            check_feature(name, known, where(path, lineno))
        if name in weights:
            raise ClirplugError(f"{where(path, lineno)}: feature {name!r} appears twice")
        weights[name] = value
    return weights


def write_weights(weights: Mapping[str, float], path, comment: str = "") -> None:
    """Write ``weights`` sorted by name, atomically; ``comment`` becomes ``#`` header lines."""
    with atomic_open(path) as out:
        for line in comment.splitlines():
            out.write(f"# {line}\n")
        for name in sorted(weights):
            out.write(f"{name} {float(weights[name])!r}\n")
