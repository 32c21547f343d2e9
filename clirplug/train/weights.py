"""The weights step: a model folder's decoder weights tuned for BLEU with PRO (Hopkins & May 2011).

The tuning pairs are lines of a bitext (:func:`bitext_pairs`) or parallel queries, topics paired
with their English mates (:func:`query_pairs`; query-genre tuning, Nikoulina et al. 2012).
"""

import itertools
import sys
from dataclasses import dataclass
from pathlib import Path

from clirplug.errors import ClirplugError
from clirplug.settings import Settings, option

# topic field -> why a topic can yield no parallel query
SKIPPED = {"title": "no English mate in the corpus", "desc": "no opening line of the page in the bitext"}


@dataclass(frozen=True)
class WeightsSettings(Settings):
    """Options of ``clirplug train weights``."""

    lines: int = option(300, "read the first N pairs; tune on those within the word limit", low=1)
    max_words: int = option(40, "skip longer source sentences", low=1)
    nbest: int = option(100, "distinct translations per sentence", low=1)
    iterations: int = option(8, "PRO iterations", low=1)
    pop_limit: int = option(200, "cube pruning pops per cell", low=1)
    seed: int = option(0, "pair sampling seed")


def bitext_pairs(src_path: Path, tgt_path: Path) -> list[tuple[str, str]]:
    """The line pairs of two line-aligned files."""
    try:
        src = Path(src_path).read_text(encoding="utf-8").splitlines()
        tgt = Path(tgt_path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise ClirplugError(f"cannot read the tuning bitext: {error}") from error
    if len(src) != len(tgt):
        raise ClirplugError(f"{src_path} has {len(src)} lines but {tgt_path} has {len(tgt)}")
    return list(zip(src, tgt))


def query_pairs(queries: Path, field: str, *, corpus=None, bitext=None, topic_ids: Path | None = None):
    """``(pairs, origin)``: the ``field`` of the topics in ``queries`` with their English mates.

    title: paired with the mate's title (needs ``corpus``); desc: with the mate's opening bitext
    line (needs ``bitext`` = (source side, target side, page ids)). ``topic_ids`` (a file, an id a
    line) keeps only those topics (e.g. one fold).
    """
    from clirplug.io.text import read_lines
    from clirplug.io.topics import read_topics
    from clirplug.mt.queries import parallel_queries

    topics = read_topics(queries)
    ids = [line.strip() for line in read_lines(Path(topic_ids)) if line.strip()] if topic_ids else None
    pairs = parallel_queries(topics, field, corpus=corpus, bitext=bitext, topic_ids=ids)
    used = len(set(ids)) if ids is not None else len(topics)
    print(f"clirplug: {len(pairs)} parallel {field} queries from {queries}, {used - len(pairs)} of {used} "
          f"topics skipped ({SKIPPED[field]})", file=sys.stderr)
    return list(pairs.values()), f"the {field} queries of {queries}"


def tuning_set(pairs, tokenize_src, tokenize_tgt, lines: int, max_words: int):
    """The pairs among the first ``lines`` with 1..``max_words`` source tokens and a reference, tokenized.

    No pair past the first ``lines`` is read, so a grammar filtered to those lines (the experiment's
    source text) holds every rule tuning can use, whatever else the filter text holds.
    """
    sources, references = [], []
    for f, e in itertools.islice(pairs, lines):
        tokens = tokenize_src(f)
        if 0 < len(tokens) <= max_words and e.strip():
            sources.append(tokens)
            references.append(tokenize_tgt(e))
    return sources, references


def train_weights(model: Path, kind: str, pairs, origin: str, settings: WeightsSettings = WeightsSettings(), *,
                  src_lang: str = "de", tgt_lang: str = "en", output: Path | None = None, progress: bool = True) -> Path:
    """PRO on the ``(source, reference)`` ``pairs``; writes ``output`` (default ``DIR/weights.KIND``); ``progress``
    shows a bar per decoding pass."""
    from tqdm import tqdm

    from clirplug.mt.features import DEFAULT_WEIGHTS, write_weights
    from clirplug.mt.preprocess import preprocess
    from clirplug.mt.translator import Translator
    from clirplug.mt.tune import pro

    translator = Translator(model, kind, DEFAULT_WEIGHTS, pop_limit=settings.pop_limit, src_lang=src_lang, cache=False)
    sources, references = tuning_set(pairs, translator.tokenize, lambda text: preprocess(text, tgt_lang),
                                     settings.lines, settings.max_words)
    if not sources:
        raise ClirplugError(f"{origin}: no usable tuning sentences")
    translator.restrict(sources)
    decoder = translator.decoder

    def decode(weights):
        decoder.set_weights(weights)
        return [decoder.translate(tokens, settings.nbest, unique=True)
                for tokens in tqdm(sources, desc="decode", unit="sentence", file=sys.stderr, leave=False,
                                     disable=not progress)]

    output = Path(output) if output else Path(model) / f"weights.{kind}"

    def save(best, history):
        bleu = max(h["bleu"] for h in history)
        write_weights(best, output, f"PRO (Hopkins & May 2011) on {len(sources)} sentences of {origin}: "
                                    f"tuning BLEU {bleu:.2f} after {len(history)} decoding passes, seed {settings.seed}, "
                                    f"pop limit {settings.pop_limit}, unique {settings.nbest}-best")

    _, history = pro(decode, references, DEFAULT_WEIGHTS, iterations=settings.iterations, seed=settings.seed,
                     log=lambda message: print(message, file=sys.stderr), checkpoint=save)
    print(f"wrote {output} (tuning BLEU {max(h['bleu'] for h in history):.2f})", file=sys.stderr)
    return output


def train_weights_on_bitext(model: Path, kind: str, src: Path, tgt: Path, settings: WeightsSettings = WeightsSettings(),
                            *, src_lang: str = "de", tgt_lang: str = "en", output: Path | None = None,
                            progress: bool = True) -> Path:
    """:func:`train_weights` on the line pairs of ``src`` and ``tgt`` (``clirplug train weights --src --tgt``; the
    step of a model folder and of an experiment's ``models:``)."""
    return train_weights(model, kind, bitext_pairs(src, tgt), str(src), settings, src_lang=src_lang, tgt_lang=tgt_lang,
                         output=output, progress=progress)
