"""Options of the boosting and MIRA rerankers, importable without numpy (for fast CLI start-up)."""

import math
from dataclasses import dataclass

from clirplug.errors import ClirplugError


@dataclass(frozen=True)
class BoostConfig:
    """Every option that changes a boosting model (stored in the model file).

    Defaults: T = 5000 features per bag, 10 triples per query, epsilon = 1e-5 and
    b = 30 hash bits as in Sokolov et al. (2013, Section 6.1 and Algorithm 1); training
    keeps only the buckets that occur in the sample, so b costs no memory. Our own choices:
    ``doc_tokens`` keeps the head of each man page (the counterpart of their abstracts),
    and ``min_triples`` = 2 drops, per bag, candidate features occurring in a single
    triple's P or M row (they cannot generalize; this halves training time).
    """

    order: int = 2
    bits: int = 30
    iterations: int = 5000
    bags: int = 8
    triples_per_query: int = 10
    epsilon: float = 1e-5
    doc_tokens: int = 300
    field: str = "title"
    min_triples: int = 2
    seed: int = 0
    hash_seed: int = 0

    def check(self):
        """Raise ``ClirplugError`` naming the first out-of-range option."""
        rules = [
            ("order", self.order in (1, 2), "1 or 2"),
            ("bits", 1 <= self.bits <= 32, "between 1 and 32"),
            ("iterations", self.iterations >= 1, "at least 1"),
            ("bags", self.bags >= 1, "at least 1"),
            ("triples_per_query", self.triples_per_query >= 1, "at least 1"),
            ("epsilon", self.epsilon > 0 and math.isfinite(self.epsilon), "positive"),
            ("doc_tokens", self.doc_tokens >= 1, "at least 1"),
            ("min_triples", self.min_triples >= 1, "at least 1"),
        ]
        for name, ok, expected in rules:
            if not ok:
                raise ClirplugError(f"boosting option {name} must be {expected}, got {getattr(self, name)!r}")
        return self


# beta values tried on held-out train topics: learned weights reach several units (the
# epsilon of 1e-5 allows ln(W+/eps Z)/2 ~ 5), so the grid reaches beyond the paper's 0.2-0.3.
BETA_GRID = (0.0, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0)


# MIRA n-best reranking (clirplug.rerank.mira): candidates per sentence, passes over the
# training queries, cross-validation folds and the clip values C tried (the paper chooses
# C by 5-fold cross-validation). C = 0 makes no update: the decoder's own 1-best, kept when
# no C beats it in cross-validation by more than one standard error.
MIRA_NBEST = 10
MIRA_EPOCHS = 10
MIRA_FOLDS = 5
MIRA_C_GRID = (0.0, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1)
