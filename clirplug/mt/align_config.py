"""The options of word alignment (:mod:`clirplug.mt.align`), importable without numpy (for fast CLI start-up)."""

from dataclasses import dataclass

from clirplug.errors import ClirplugError
from clirplug.settings import Settings, option


@dataclass(frozen=True)
class AlignConfig(Settings):
    """Settings of one alignment direction; defaults are fast_align's (``-d -o -v``)."""

    model1_iterations: int = option(5, "IBM Model 1 EM iterations", low=0)
    iterations: int = option(5, "fast_align IBM2 EM iterations", low=0)
    p0: float = option(0.08, "NULL alignment probability", above=0.0, below=1.0)
    tension: float = option(4.0, "initial diagonal tension lambda", above=0.0)
    optimize_tension: bool = option(True, "re-estimate the tension during EM")
    variational_bayes: bool = option(True, "variational Bayes (a Dirichlet prior on the translation table)")
    alpha: float = option(0.01, "Dirichlet concentration for variational Bayes", above=0.0)

    def validate(self, name_of=str) -> None:
        if self.model1_iterations + self.iterations == 0:
            raise ClirplugError(f"{name_of('iterations')}: at least one EM iteration is needed")
