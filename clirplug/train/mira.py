"""The MIRA step: weights reranking the decoder's n-best query translations by retrieval AP (Nikoulina et al. 2012)."""

from dataclasses import dataclass
from pathlib import Path

from clirplug.bm25 import ANSERINI_B, ANSERINI_K1, check_bm25
from clirplug.rerank.config import MIRA_C_GRID, MIRA_EPOCHS, MIRA_FOLDS, MIRA_NBEST
from clirplug.settings import Settings, option


@dataclass(frozen=True)
class MiraSettings(Settings):
    """Options of ``clirplug train mira``."""

    nbest: int = option(MIRA_NBEST, "candidates per sentence", low=2)
    C: tuple[float, ...] = option(MIRA_C_GRID, "clip values tried by cross-validation; 0 = the decoder's 1-best",
                                  low=0.0, metavar="C")
    epochs: int = option(MIRA_EPOCHS, "passes over the queries", low=1)
    folds: int = option(MIRA_FOLDS, "cross-validation folds", low=2)
    seed: int = option(0, "seed of the query orders and folds")
    hits: int = option(1000, "search depth AP is computed over", low=1)
    k1: float = option(ANSERINI_K1, "BM25 k1")
    b: float = option(ANSERINI_B, "BM25 b")

    def validate(self, name_of=str) -> None:
        check_bm25(self.k1, self.b, name_of)


def train_mira(model, kind: str, index: Path, topics, qrels: Path, field: str, output: Path,
               settings: MiraSettings = MiraSettings(), *, stopwords: Path | None = None,
               searches: Path | None = None, held_out=None, src_lang: str = "de", progress: bool = True):
    """Train on ``topics`` with their ``qrels``; save to ``output``.

    ``model`` and ``topics`` are a model folder and a topics file, or lists of them, a folder per file (cross-fitting:
    each fold's topics decoded by the model trained without their pages); ``held_out``, a file per topics file, gets
    the weights trained without that file's topics (:func:`clirplug.qt.mira.train_parts`). ``searches`` keeps the
    AP of every candidate query searched (gzipped JSON) and reuses it when the qrels, index and search settings
    match. ``stopwords`` are removed before search (as DT's); ``src_lang`` is the topics' language.
    """
    from clirplug.errors import ClirplugError
    from clirplug.io.qrels import read_qrels
    from clirplug.io.topics import read_topics
    from clirplug.lucene.reader import LuceneIndex
    from clirplug.lucene.search import Bm25Searcher
    from clirplug.mt.translator import Translator
    from clirplug.qt.mira import train_parts
    from clirplug.stopwords import read_stopwords

    models = list(model) if isinstance(model, (list, tuple)) else [model]
    topic_files = list(topics) if isinstance(topics, (list, tuple)) else [topics]
    if len(models) != len(topic_files) or (held_out is not None and len(held_out) != len(topic_files)):
        raise ClirplugError(f"{len(models)} model folders, {len(topic_files)} topics files"
                            + ("" if held_out is None else f" and {len(held_out)} held-out outputs")
                            + ": give one of each per part")
    judgements = read_qrels(qrels)
    words = read_stopwords(stopwords) if stopwords else ()
    parts = [(read_topics(path), Translator(folder, kind=kind, src_lang=src_lang)) for folder, path in zip(models, topic_files)]
    searcher = Bm25Searcher(index, settings.k1, settings.b)
    reader = LuceneIndex(index, progress=progress)
    try:
        trained, others = train_parts(parts, judgements, searcher, reader, field, settings.nbest, list(settings.C),
                                      settings.epochs, settings.folds, settings.seed, words, settings.hits,
                                      progress=progress, searches_path=searches, held_out=held_out is not None)
    finally:
        searcher.close()
        reader.close()
    for path, other in zip(held_out or (), others):
        other.save(path)
    trained.save(output)
    s = trained.stats
    print(f"{s['topics']} topics, {s['instances']} instances ({s['informative_instances']} with differing APs), "
          f"{s['distinct_queries']} distinct queries, {s['searches']} searched now")
    print("cross-validation (C: mean held-out AP ± paired SE to the best): " + ", ".join(
        f"{c:g}: {v:.4f} ± {e:.4f}" for (c, v), e in zip(s["cross_validation"], s["cross_validation_se"])))
    print(f"C = {s['C']:g} (one-standard-error rule; the argmax is C = {s['C_argmax']:g}, {s['cv_ap_argmax']:.4f}); "
          f"train mean AP: decoder 1-best {s['train_ap_decoder_1best']:.4f}, reranked {s['train_ap_reranked']:.4f}, "
          f"oracle {s['train_ap_oracle']:.4f}")
    for path, other in zip(held_out or (), others):
        print(f"without part {other.stats['held_out_part']}: C = {other.stats['C']:g}; wrote {path}")
    print(f"wrote {output}")
    return trained
