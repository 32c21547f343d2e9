"""The boosting step: a bagged RankBoost table of bilingual n-gram pairs (Sokolov et al. 2013)."""

import json
from dataclasses import dataclass, fields
from pathlib import Path

from clirplug.errors import ClirplugError
from clirplug.executor import ExecutorSettings
from clirplug.rerank.config import BETA_GRID, BoostConfig
from clirplug.settings import option


@dataclass(frozen=True)
class BoostSettings(BoostConfig):
    """Options of ``clirplug train boost``: the model's (:class:`BoostConfig`) and its beta tuning."""

    beta: float | None = option(None, "fixed identity-feature weight (no tuning, all topics train)")
    beta_grid: tuple[float, ...] = option(BETA_GRID, "beta values tried on held-out train topics", metavar="B")
    holdout: float = option(0.2, "share of train topics held out to tune beta", above=0.0, high=0.99)

    def model_config(self) -> BoostConfig:
        """The options stored in the model."""
        return BoostConfig(**{f.name: getattr(self, f.name) for f in fields(BoostConfig)})


def train_boost(topics: Path, qrels: Path, corpus, output: Path, settings: BoostSettings = BoostSettings(), *,
                jobs: int | ExecutorSettings = 2, progress: bool = True, show: int = 0):
    """Train on the judged ``topics`` against ``corpus``, tune beta unless fixed, save to ``output``.

    ``jobs``: the workers training the bags (an int: local processes; :mod:`clirplug.executor`).
    """
    import numpy as np

    from clirplug.boost import Collection, train, tune_beta
    from clirplug.corpus import read_corpus
    from clirplug.io.qrels import read_qrels
    from clirplug.io.topics import read_topics

    config = settings.model_config()
    if isinstance(jobs, int) and jobs < 1:
        raise ClirplugError(f"--jobs must be at least 1, got {jobs}")
    tuning = settings.beta is None
    topics, judgements = read_topics(topics), read_qrels(qrels)
    judged = set(judgements["qid"])
    topics = [topic for topic in topics if topic.id in judged]
    held = []
    if tuning:
        order = np.random.default_rng([config.seed, 2]).permutation(len(topics))
        held = [topics[i] for i in sorted(order[: max(1, int(round(settings.holdout * len(topics))))])]
    collection = Collection.from_corpus(read_corpus(corpus), config.order, config.doc_tokens, config.hash_seed,
                                        progress=progress)
    model = train(topics, judgements, collection, config, jobs=jobs, progress=progress, holdout=[t.id for t in held])
    if tuning:
        table = tune_beta(model, held, judgements, collection, list(settings.beta_grid), progress=progress)
        model.stats["beta_tuning"] = {"held_out_topics": len(held), "map": table}
        print("beta on held-out train topics: " + ", ".join(f"{b:g}: MAP {m:.4f}" for b, m in table))
    else:
        model.beta = settings.beta
    model.save(output)
    stats = model.stats
    print(f"wrote {output}: {len(model.features)} features, beta = {model.beta:g}; "
          f"{stats['distinct_pairs']} distinct training pairs in {stats['occupied_buckets']} buckets "
          f"({stats['colliding_pairs']} pairs share a bucket)")
    for bag in stats["bags"]:
        print("bag " + json.dumps(bag))
    if show:
        print("\n".join(model.table(show)))
    return model
