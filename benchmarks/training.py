"""Full translation-model training on manclir-de, timed stage by stage; prints a markdown block.

Usage: ``nice .venv/bin/python benchmarks/training.py --model DIR [--data ../shared/data/manclir-de]``

``DIR`` should not exist yet (or be empty): every stage then runs from scratch, each as its own
``clirplug train`` process, so its wall time, CPU time and peak resident memory are its own:

1. ``train align`` on ``bitext.train`` plus the dictionary (both directions, symmetrized);
2. ``train grammar --kind flat`` and ``train grammar --kind hiero`` (the whole grammar, top 30);
3. ``train lm --order 4`` on ``bitext.train.en`` plus the English collection.

Then the same four commands run a second time: each finds its stage record current and is
skipped (resumability from the output files), which the second table shows.
"""

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from grammar_lm import clirplug, measured, model_and_data  # noqa: E402


def stages(model: Path, data: Path) -> list[tuple[str, list[str]]]:
    """The four training commands, in order, as ``(name, argv)``."""
    return [
        ("align (both directions, grow-diag-final-and)",
         clirplug("train", "align", "--src", str(data / "bitext.train.de"), "--tgt", str(data / "bitext.train.en"),
                  "--dictionary", str(data / "dictionary.tsv"), "--out", str(model))),
        ("grammar flat", clirplug("train", "grammar", "--kind", "flat", "--model", str(model))),
        ("grammar hiero", clirplug("train", "grammar", "--kind", "hiero", "--model", str(model))),
        ("lm order 4", clirplug("train", "lm", "--text", str(data / "bitext.train.en"),
                                "--jsonl", str(data / "corpus.jsonl"), "--order", "4",
                                "--out", str(model / "lm.arpa"))),
    ]


def main(argv=None):
    model, data = model_and_data(__doc__.splitlines()[0], argv)
    if model.exists() and any(model.iterdir()):
        raise SystemExit(f"{model}: not empty; the benchmark times training from scratch")

    for label in ("first run (from scratch)", "second run (every stage up to date)"):
        print(f"\n{label}\n")
        print("| stage | wall s | CPU s | peak RSS GB |")
        print("|---|---|---|---|", flush=True)
        total_wall = total_cpu = 0.0
        for name, command in stages(model, data):
            figures = measured(command)
            total_wall += figures["wall"]
            total_cpu += figures["cpu"]
            print(f"| {name} | {figures['wall']:.0f} | {figures['cpu']:.0f} | {figures['rss']:.2f} |", flush=True)
        print(f"| **total** | **{total_wall:.0f}** ({total_wall / 60:.1f} min) | {total_cpu:.0f} | |", flush=True)


if __name__ == "__main__":
    main()
