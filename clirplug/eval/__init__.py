"""Evaluation: trec_eval-compatible measures (via ir_measures), PRES and significance tests."""

from clirplug.eval.measures import ALIASES, CUSTOM_MEASURES, DEFAULT_MEASURES, evaluate, parse_measures
from clirplug.eval.pres import pres
from clirplug.eval.significance import randomization_test

__all__ = [
    "ALIASES",
    "CUSTOM_MEASURES",
    "DEFAULT_MEASURES",
    "evaluate",
    "parse_measures",
    "pres",
    "randomization_test",
]
