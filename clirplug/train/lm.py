"""The n-gram language model step: interpolated modified Kneser-Ney, written as ARPA.

Text is turned into MT tokens with :func:`clirplug.mt.preprocess.preprocess` (so the LM's words
are the decoder's target words). The step records its inputs and settings in ``stages/lm.json``
beside the output and is skipped when they have not changed.
"""

import sys
from dataclasses import dataclass
from pathlib import Path

from clirplug.errors import ClirplugError
from clirplug.settings import Settings, option


@dataclass(frozen=True)
class LmSettings(Settings):
    """Options of ``clirplug train lm``."""

    order: int = option(4, "n-gram order", low=1, high=9)
    discount_fallback: bool = option(False, "use discounts 0.5 1 1.5 where the counts-of-counts cannot give them "
                                            "(tiny text)")


def _jsonl_sentences(path: Path, lang: str):
    from clirplug.io.jsonl import json_records
    from clirplug.io.text import read_lines
    from clirplug.mt.preprocess import preprocess, split_sentences

    for _, document in json_records(read_lines(path), path):
        for field in ("title", "contents"):
            for sentence in split_sentences(str(document.get(field) or ""), lang):
                yield preprocess(sentence, lang)


def train_lm(output: Path, settings: LmSettings = LmSettings(), *, texts=(), jsonl=(), lang: str = "en",
             force: bool = False, progress: bool = True) -> Path:
    """Estimate an ARPA model at ``output`` from raw ``texts`` and documents in ``jsonl`` files (``progress``: a bar
    per file read)."""
    from clirplug.train.cache import Stages

    output, texts, jsonl = Path(output), [Path(p) for p in texts], [Path(p) for p in jsonl]
    if not texts and not jsonl:
        raise ClirplugError("give at least one --text or --jsonl file")
    for path in texts + jsonl:
        if not path.is_file():
            raise ClirplugError(f"{path}: no such file")

    def estimate():
        import time

        from tqdm import tqdm

        from clirplug.io.text import read_lines
        from clirplug.mt.lm import FALLBACK_DISCOUNTS, estimate, write_arpa
        from clirplug.mt.preprocess import preprocess

        started = time.perf_counter()
        sentences = []
        for path in texts:
            sentences.extend(preprocess(line, lang) for line in tqdm(read_lines(path), desc=path.name, leave=False,
                                                                             disable=not progress))
        for path in jsonl:
            sentences.extend(tqdm(_jsonl_sentences(path, lang), desc=path.name, leave=False, disable=not progress))
        model = estimate(sentences, settings.order, FALLBACK_DISCOUNTS if settings.discount_fallback else None)
        write_arpa(model, output)
        counts = " ".join(f"{n}-grams={len(words)}" for n, words in enumerate(model.word, 1))
        print(f"clirplug: {output}: {counts} from {sum(map(len, sentences))} tokens "
              f"in {time.perf_counter() - started:.0f} s", file=sys.stderr)

    record = {"order": settings.order, "lang": lang, "discount_fallback": settings.discount_fallback}
    Stages(output.parent, force).run("lm", texts + jsonl, record, [output], estimate)
    return output
