"""The grammar step: a flat phrase table or a Hiero grammar from an aligned model folder.

Reads ``DIR/corpus.<f>``, ``DIR/corpus.<e>`` and ``DIR/align.<f>-<e>`` (written by the align step,
see ``docs/models.md``) and writes ``DIR/grammar.<kind>.gz``; recorded in
``DIR/stages/grammar-<kind>.json`` and skipped when its inputs and settings have not changed.
"""

import sys
from dataclasses import dataclass
from pathlib import Path

from clirplug.errors import ClirplugError
from clirplug.mt import KINDS
from clirplug.settings import Settings, option


@dataclass(frozen=True)
class GrammarSettings(Settings):
    """Options of ``clirplug train grammar`` (extraction limits and pruning)."""

    max_phrase: int = option(5, "flat: longest phrase, both sides", low=1)
    max_initial: int = option(10, "hiero: longest initial phrase, both sides (Chiang 2007)", low=1)
    max_terminals: int = option(5, "hiero: most source terminals per rule", low=1)
    max_symbols: int = option(5, "hiero: most source terminals plus nonterminals per rule (Chiang 2007)", low=1)
    max_nonterminals: int = option(2, "hiero: most nonterminals per rule", choices=(0, 1, 2))
    top_n: int = option(30, "keep the N targets of highest p(e|f) per source side", low=1)


def train_grammar(model: Path, kind: str, settings: GrammarSettings = GrammarSettings(), *, src_lang: str = "de",
                  tgt_lang: str = "en", output: Path | None = None, filter: Path | None = None,
                  force: bool = False, progress: bool = True) -> Path:
    """Extract the ``kind`` grammar of ``model`` (to ``output``, default ``DIR/grammar.<kind>.gz``).

    ``filter`` keeps only the rules usable on some line of that raw source-language text. With
    ``progress``, scoring the rule instances and writing the rules show bars with an ETA on a terminal.
    """
    from clirplug.train.cache import Stages

    if kind not in KINDS:
        raise ClirplugError(f"--kind: expected one of {', '.join(KINDS)}, got {kind!r}")
    model = Path(model)
    src, tgt = model / f"corpus.{src_lang}", model / f"corpus.{tgt_lang}"
    links = model / f"align.{src_lang}-{tgt_lang}"
    for path in (src, tgt, links, filter):
        if path is not None and not Path(path).is_file():
            raise ClirplugError(f"{path}: no such file (run `clirplug train align --output {model}` first)")
    out = Path(output) if output is not None else model / f"grammar.{kind}.gz"
    if kind == "flat":
        record = {"max_phrase": settings.max_phrase}
    else:
        record = {"max_initial": settings.max_initial, "max_terminals": settings.max_terminals,
                  "max_nonterminals": settings.max_nonterminals, "max_symbols": settings.max_symbols}
    record.update(kind=kind, top_n=settings.top_n)

    def extract():
        import time

        from clirplug.mt.extract import extract_flat, extract_hiero, read_parallel

        started = time.perf_counter()
        text = read_parallel(src, tgt, links)
        print(f"clirplug: extracting {kind} rules from {len(text.src)} sentence pairs", file=sys.stderr)
        if kind == "flat":
            rules = extract_flat(text, settings.max_phrase, progress=progress)
        else:
            rules = extract_hiero(text, settings.max_initial, settings.max_terminals, settings.max_nonterminals,
                                  settings.max_symbols, progress=progress)
        extracted = len(rules)
        rules = rules.top_n(settings.top_n)
        if filter is not None:
            from clirplug.io.text import read_lines
            from clirplug.mt.preprocess import preprocessor

            to_tokens = preprocessor(src_lang, model)
            rules = rules.for_sentences([to_tokens(line) for line in read_lines(filter)])
        rules.write(out, progress=progress)
        print(f"clirplug: {extracted} rules extracted, {len(rules)} written to {out} "
              f"in {time.perf_counter() - started:.0f} s", file=sys.stderr)

    inputs = [src, tgt, links] + ([Path(filter)] if filter else [])
    Stages(model, force).run(f"grammar-{kind}", inputs, record, [out], extract)
    return out
