"""Options of the boosting, MIRA and BOW-FD rerankers, importable without numpy (for fast CLI start-up)."""

from dataclasses import dataclass

from clirplug.bm25 import BOWFD_B, BOWFD_K1, check_bm25
from clirplug.io.topics import FIELDS
from clirplug.lucene.languages import LANGUAGES
from clirplug.settings import Settings, option

DEFAULT_SENTENCE_DEPTH = 1000  # top-k of each sentence ranking (the paper scores the top 1,000)
DEFAULT_DEPTH = 100  # candidates BOW-FD reranks per topic: every front end's default and the training's


@dataclass(frozen=True)
class BoostConfig(Settings):
    """Every option that changes a boosting model (stored in the model file).

    Defaults: T = 5000 features per bag, 10 triples per query, epsilon = 1e-5 and
    b = 30 hash bits as in Sokolov et al. (2013, Section 6.1 and Algorithm 1); training
    keeps only the buckets that occur in the sample, so b costs no memory. Our own choices:
    ``doc_tokens`` keeps the head of each man page (the counterpart of their abstracts),
    and ``min_triples`` = 2 drops, per bag, candidate features occurring in a single
    triple's P or M row (they cannot generalize; this halves training time).
    """

    order: int = option(2, "n-gram order: 1 = Boost-1g, 2 = Boost-2g", choices=(1, 2))
    bits: int = option(30, "hash size b: 2**b buckets", low=1, high=32)
    iterations: int = option(5000, "T: features selected per bag", low=1)
    bags: int = option(8, "S: bootstrap samples averaged", low=1)
    triples_per_query: int = option(10, "training triples drawn: this many times the number of training topics",
                                    low=1)
    epsilon: float = option(1e-5, "weight smoothing", above=0.0)
    doc_tokens: int = option(300, "document tokens used, from the start of the page", low=1)
    field: str = option("title", "query field", choices=("title", "desc", "narr"))
    min_triples: int = option(2, "candidate features must occur in this many triples of a bag", low=1)
    seed: int = option(0, "seed of triple and bootstrap sampling")
    hash_seed: int = option(0, "seed of the n-gram pair hash")
    src_lang: str = option("de", "query language, for its tokenization (clirplug.mt.preprocess)",
                           choices=sorted(LANGUAGES), metavar="LANG")


# beta values tried on held-out train topics: learned weights reach several units (the
# epsilon of 1e-5 allows ln(W+/eps Z)/2 ~ 5), so the grid reaches beyond the paper's 0.2-0.3.
BETA_GRID = (0.0, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0)


# MIRA n-best reranking (clirplug.qt.mira): candidates per sentence, passes over the
# training queries, cross-validation folds and the clip values C tried (the paper chooses
# C by 5-fold cross-validation). C = 0 makes no update: the decoder's own 1-best, kept when
# no C beats it in cross-validation by more than one standard error.
MIRA_NBEST = 10
MIRA_EPOCHS = 10
MIRA_FOLDS = 5
MIRA_C_GRID = (0.0, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1)


@dataclass(frozen=True)
class LtrSettings(Settings):
    """Options of BOW-FD's pairwise learning to rank."""

    epochs: int = option(10, "maximum epochs", low=1)
    patience: int = option(3, "stop after this many epochs without a better held-out MAP", low=1)
    negatives: int = option(5, "unjudged top candidates paired with each relevant document", low=0)
    train_smt: bool = option(False, "also train the SMT weights (the paper freezes them)")
    shards: int = option(2, "shards of the training topics for iterative parameter mixing", low=1)
    unit_v: bool = option(True, "train in the units of v: start weights divided by v, learned weights multiplied back "
                                "(--no-unit-v: in the tuner's units)")


@dataclass(frozen=True)
class BowfdConfig(Settings):
    """Every option of BOW-FD scoring besides the weights (defaults: the paper's)."""

    k1: float = option(BOWFD_K1, "BM25 k1 of the IR features, the paper's by default")
    b: float = option(BOWFD_B, "BM25 b of the IR features, the paper's by default")
    beam: int | None = option(None, "incoming edges considered per node (default: all)", low=1)
    sentence_depth: int = option(DEFAULT_SENTENCE_DEPTH, "top-k of each sentence ranking; others take its minimum",
                                 low=1)
    field: str = option("title", "topic field of the queries (title: one sentence; else split into sentences)",
                        choices=FIELDS)

    def validate(self, name_of=str) -> None:
        check_bm25(self.k1, self.b, name_of)
