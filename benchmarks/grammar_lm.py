"""Grammar extraction and language model benchmark on manclir-de; prints a markdown block.

Usage: ``nice .venv/bin/python benchmarks/grammar_lm.py --model DIR [--data ../shared/data/manclir-de]``

``DIR`` is a model folder made by ``clirplug train align --src bitext.train.de --tgt
bitext.train.en`` (it needs ``corpus.de``, ``corpus.en``, ``align.de-en``). Each stage runs as
its own ``clirplug`` process (with ``--force``), so its wall time, CPU time and peak resident
memory are its own:

1. ``clirplug train lm --text bitext.train.en --jsonl corpus.jsonl --order 4`` (``DIR/lm.arpa``),
   then, through kenlm: the perplexity of ``bitext.dev.en`` (MT tokens, ``<s>``/``</s>``
included, OOVs scored as ``<unk>``), and ``Σ_w p(w | h)`` over the whole vocabulary (with
``</s>`` and ``<unk>``) for 20 contexts ``h`` sampled from the dev text (seed 0);
2. ``clirplug train grammar --kind flat``  (``DIR/grammar.flat.gz``, top 30 targets per source);
3. ``clirplug train grammar --kind hiero`` (``DIR/grammar.hiero.gz``, top 30 targets per source).
"""

import argparse
import gzip
import os
import random
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from clirplug.mt.lm import LanguageModel  # noqa: E402
from clirplug.mt.preprocess import preprocess  # noqa: E402


def measured(command: list[str]) -> dict:
    """Run ``command``; its wall and CPU seconds and peak RSS (GB), from ``wait4``."""
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=REPO)
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed ({status}): {' '.join(command)}")
    return {
        "wall": time.perf_counter() - started,
        "cpu": usage.ru_utime + usage.ru_stime,
        "rss": usage.ru_maxrss / 1024**2,
    }


def clirplug(*args: str) -> list[str]:
    return [sys.executable, "-m", "clirplug", *args]


def grammar_row(kind: str, model: Path) -> str:
    figures = measured(clirplug("train", "grammar", "--kind", kind, "--model", str(model), "--force"))
    path = model / f"grammar.{kind}.gz"
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        rules = sources = 0
        arities = [0, 0, 0]
        last = None
        for line in lines:
            rules += 1
            src = line.split(" ||| ", 2)[1]
            sources += src != last
            last = src
            arities[src.count("[X,")] += 1
    return (
        f"| {kind} | {figures['wall']:.0f} | {figures['cpu']:.0f} | {figures['rss']:.2f} | {rules:,} | {sources:,} "
        f"| {arities[0]:,} / {arities[1]:,} / {arities[2]:,} | {path.stat().st_size / 1e6:.1f} |"
    )


def model_and_data(description: str, argv=None) -> tuple[Path, Path]:
    """The ``--model`` folder and the ``--data`` collection folder (default manclir-de), resolved."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "manclir-de")
    args = parser.parse_args(argv)
    return args.model.resolve(), args.data.resolve()


def main(argv=None):
    model, data = model_and_data(__doc__.splitlines()[0], argv)

    arpa = model / "lm.arpa"
    lm_figures = measured(clirplug("train", "lm", "--text", str(data / "bitext.train.en"),
                                   "--jsonl", str(data / "corpus.jsonl"), "--order", "4", "--out", str(arpa), "--force"))
    with open(arpa, encoding="utf-8") as handle:
        counts = [line.strip() for line in handle if line.startswith("ngram ")]
    lm = LanguageModel(arpa)
    dev = [preprocess(line, "en") for line in (data / "bitext.dev.en").read_text(encoding="utf-8").splitlines()]
    dev = [tokens for tokens in dev if tokens]
    perplexity = lm.perplexity(dev)
    tokens = sum(len(sentence) for sentence in dev)
    oov = sum(1 for sentence in dev for word in sentence if word not in lm)

    vocabulary = ["</s>", "<unk>"]
    with open(arpa, encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("\\1-grams:"):
                break
        for line in handle:
            if not line.strip():
                break
            word = line.split("\t")[1]
            if word not in ("<s>", "</s>", "<unk>"):
                vocabulary.append(word)
    rng = random.Random(0)
    worst, started = 0.0, time.perf_counter()
    for sentence in rng.sample([s for s in dev if len(s) > 3], 20):
        cut = rng.randint(0, len(sentence) - 1)
        state = lm.begin_state() if cut < 3 else lm.null_state()
        for word in sentence[max(0, cut - 3) : cut]:
            _, state = lm.advance(state, word)
        total = sum(10 ** lm.advance(state, word)[0] for word in vocabulary)
        worst = max(worst, abs(total - 1.0))
    check_seconds = time.perf_counter() - started

    print("| LM | wall s | CPU s | peak RSS GB | n-grams | dev perplexity | dev OOV rate | max abs(Σ_w p(w|h) - 1), 20 contexts |")
    print("|---|---|---|---|---|---|---|---|")
    print(
        f"| order 4, modified KN | {lm_figures['wall']:.0f} | {lm_figures['cpu']:.0f} | {lm_figures['rss']:.2f} "
        f"| {', '.join(c.replace('ngram ', '') for c in counts)} | {perplexity:.1f} "
        f"| {oov / tokens:.2%} of {tokens:,} | {worst:.1e} ({len(vocabulary):,} words, {check_seconds:.0f} s) |",
        flush=True,
    )
    print()
    print("| grammar | wall s | CPU s | peak RSS GB | rules (top 30) | source sides | arity 0 / 1 / 2 | file MB (gz) |")
    print("|---|---|---|---|---|---|---|---|", flush=True)
    for kind in ("flat", "hiero"):
        print(grammar_row(kind, model), flush=True)


if __name__ == "__main__":
    main()
