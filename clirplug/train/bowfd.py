"""The BOW-FD step: the IR default weight v by grid search, then pairwise learning to rank (Hieber & Riezler 2015)."""

import sys
from dataclasses import dataclass
from pathlib import Path

from clirplug.bm25 import BOWFD_B, BOWFD_K1
from clirplug.errors import ClirplugError
from clirplug.executor import ExecutorSettings
from clirplug.rerank.config import DEFAULT_DEPTH, BowfdConfig, LtrSettings
from clirplug.settings import option

V_GRID = (0.025, 0.05, 0.1, 0.2, 0.3, 0.4, 0.6, 0.8, 1.2, 1.6, 2.4, 3.2)


@dataclass(frozen=True)
class BowfdSettings(LtrSettings):
    """Options of ``clirplug train bowfd``: v, then learning to rank (:class:`LtrSettings`)."""

    v: float | None = option(None, "fixed IR default weight (no grid search)", low=0.0)
    v_grid: tuple[float, ...] = option(V_GRID, "v values tried on the held-out topics (the paper's range is [0, 3]; "
                                               "tuned decoder weights with small norms call for small v; a best v at "
                                               "an edge is halved or doubled up to 4 times while it improves)",
                                       low=0.0, metavar="V")
    ltr: bool = option(True, "pairwise learning to rank after choosing v (--no-ltr: BOW-FD with v only)")
    lex: bool = option(False, "add the LEX sparse alignment/insertion/deletion features")
    depth: int = option(DEFAULT_DEPTH, "candidates BOW-FD reranks per topic: held-out topics are scored on them, and judged "
                             "documents below them are not trained on (an experiment's bowfd entry keeps this default; "
                             "its depth is the reranking's)", low=1)
    holdout: float = option(0.2, "share of training topics held out", low=0.0, high=0.99)
    max_topics: int | None = option(None, "train on at most this many topics (a seeded sample)", low=1)
    seed: int = option(0, "seed of the held-out split and topic sample")
    k1: float | None = option(None, f"BM25 k1 of the IR features (default: {BOWFD_K1})")
    b: float | None = option(None, f"BM25 b of the IR features (default: {BOWFD_B})")
    beam: int | None = option(None, "incoming edges considered per node (default: all)", low=1)

    def validate(self, name_of=str) -> None:
        self.scoring(name_of=name_of)

    def scoring(self, field: str = "title", name_of=str) -> BowfdConfig:
        """The BOW-FD scoring options: the given k1, b and beam, :class:`BowfdConfig`'s defaults for the others."""
        given = {name: value for name in ("k1", "b", "beam") if (value := getattr(self, name)) is not None}
        return BowfdConfig.from_values({**given, "field": field}, name_of)


def train_bowfd(model_dirs, kind: str, index: Path, topic_files, qrels: Path, candidates: Path, field: str, output: Path,
                settings: BowfdSettings = BowfdSettings(), *, jobs: int | ExecutorSettings = 2, progress: bool = True):
    """Learn BOW-FD weights on the topics of ``topic_files`` (one file per folder of ``model_dirs``, or one model).

    ``jobs``: the workers training the shards (an int: local processes; :mod:`clirplug.executor`).

    ``candidates`` is a first-stage run on those topics: negatives and held-out reranking come from it.
    """
    import numpy as np
    from tqdm import tqdm

    from clirplug.io.qrels import read_qrels
    from clirplug.io.runs import read_run, sort_run
    from clirplug.io.topics import read_topics, topic_field
    from clirplug.lucene.reader import LuceneIndex
    from clirplug.mt.translator import Translator
    from clirplug.rerank.bowfd import DEFAULT_V, BowFD, BowfdWeights
    from clirplug.rerank.bowfd_train import (
        FeatureSpace,
        HeldOut,
        build_query,
        choose_v,
        config_comment,
        train,
        training_documents,
    )

    model_dirs, topic_files = list(model_dirs), list(topic_files)
    if len(model_dirs) not in (1, len(topic_files)):
        raise ClirplugError(f"--model names {len(model_dirs)} folders but --topics {len(topic_files)} files: "
                            "give one model, or one per topics file")
    translators = [Translator(model, kind=kind) for model in model_dirs]
    start = BowfdWeights(smt=dict(translators[0].weights), v=settings.v if settings.v is not None else DEFAULT_V,
                         lex_enabled=settings.lex)
    scoring = settings.scoring(field)
    reader = LuceneIndex(index, progress=progress)
    judged = {qid: dict(zip(group["docid"], group["relevance"].astype(int)))
              for qid, group in read_qrels(qrels).groupby("qid")}
    first_stage = {qid: group["docid"].tolist() for qid, group in sort_run(read_run(candidates)).groupby("qid")}
    part_of, topics = {}, []
    for part, path in enumerate(topic_files):
        for topic in read_topics(path):
            if topic.id in judged and topic.id in first_stage and topic.id not in part_of:
                part_of[topic.id] = part if len(translators) > 1 else 0
                topics.append(topic)
    if not topics:
        raise ClirplugError(f"{' '.join(map(str, topic_files))}: no topic has both judgements in {qrels} "
                            f"and candidates in {candidates}")
    rng = np.random.default_rng(settings.seed)
    if settings.max_topics and settings.max_topics < len(topics):
        topics = [topics[i] for i in sorted(rng.choice(len(topics), settings.max_topics, replace=False))]
    models = []
    for part, translator in enumerate(translators):
        translator.restrict_topics([t for t in topics if part_of[t.id] == part], field)
        models.append(BowFD(translator, reader, start, scoring))
    held_ids = set()
    if settings.holdout > 0:
        count = max(1, round(settings.holdout * len(topics)))
        held_ids = {topics[i].id for i in rng.permutation(len(topics))[:count]}
    space = FeatureSpace()
    train_queries, held_out = [], []
    for topic in tqdm(topics, desc="forests and BM25", unit=" topics", disable=not progress, file=sys.stderr):
        grades = judged[topic.id]
        text = topic_field(topic, field)
        if topic.id in held_ids:
            docids = first_stage[topic.id][:settings.depth]
            query = build_query(models[part_of[topic.id]], topic.id, text, docids,
                                np.array([grades.get(d, 0) for d in docids], float), space)
            if query is not None:
                held_out.append(HeldOut(query, sum(1 for g in grades.values() if g > 0)))
        else:
            docids, relevance = training_documents(first_stage[topic.id], grades, settings.negatives,
                                                   depth=settings.depth)
            query = build_query(models[part_of[topic.id]], topic.id, text, docids, relevance, space)
            if query is not None and query.pairs:
                train_queries.append(query)
    comment = {"field": field, "k1": scoring.k1, "b": scoring.b, "beam": scoring.beam, "lex": settings.lex,
               "train_topics": len(train_queries), "held_out_topics": len(held_out), "depth": settings.depth,
               "seed": settings.seed}
    if settings.v is None:
        if not held_out:
            raise ClirplugError("choosing v needs held-out topics: give --holdout > 0 or a fixed --v")
        table = choose_v(held_out, space, start, list(settings.v_grid), scoring.sentence_depth)
        start.v = max(table, key=lambda row: row[1])[0]  # the first best on ties
        print("v on held-out train topics: " + ", ".join(f"{v:g}: MAP {m:.4f}" for v, m in table))
        comment["v_grid"] = " ".join(f"{v:g}:{m:.4f}" for v, m in table)
    weights = start
    if settings.ltr:
        if not train_queries:
            raise ClirplugError("no training topic has a preference pair (relevant documents found in the index)")
        weights, history = train(train_queries, held_out, space, start, settings, scoring.sentence_depth,
                                 jobs=jobs, progress=progress)
        comment["history"] = " | ".join(" ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}"
                                                 for k, v in record.items()) for record in history)
    weights.save(output, comment=config_comment(settings, comment))
    print(f"wrote {output}: v = {weights.v:g}, {len(weights.ir)} term weights, {len(weights.lex)} LEX weights")
    return weights
