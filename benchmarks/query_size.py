"""The query path of one very long query: seconds of the 1-best translation (DT's path) and of the PSQ table
(PSQ's), each from the raw text, for 1 MB queries of three shapes.

Usage::

    .venv/bin/python benchmarks/query_size.py --model MODEL_DIR [--kind flat] [--megabytes 1]

MODEL_DIR is a translation model folder, e.g. the demo's (``clirplug demo``: ``demo-output/models/demo``). The
model is loaded and its kernels compiled by a short query first; each shape is then timed once. The tokens
beyond clirplug.mt.preprocess.MAX_QUERY_TOKENS are dropped with a warning (not printed here).
"""

import argparse
import contextlib
import io
import time

from clirplug.api import TranslationModel


def shapes(size: int) -> dict[str, str]:
    """German running text, one word made of known compound parts, and distinct unknown words, ``size`` bytes each."""
    return {"German text": "Dateien kopieren in Verzeichnis verschieben. " * (size // 45),
            "one word": "dateienkopieren" * (size // 15),
            "distinct words": " ".join(f"wort{i}datei" for i in range(size // 12))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="translation model folder")
    parser.add_argument("--kind", default="flat", choices=("flat", "hiero"))
    parser.add_argument("--megabytes", type=float, default=1.0)
    args = parser.parse_args()
    model = TranslationModel(args.model, kind=args.kind, cache=False)
    model.translate("Dateien kopieren")
    model.psq_table("Dateien kopieren")
    print("shape\ttranslate_s\tpsq_table_s")
    for name, query in shapes(int(args.megabytes * 1_000_000)).items():
        seconds = []
        for step in (model.translate, model.psq_table):
            with contextlib.redirect_stderr(io.StringIO()):  # the warning that tokens were dropped
                start = time.perf_counter()
                step(query)
                seconds.append(time.perf_counter() - start)
        print(f"{name}\t{seconds[0]:.2f}\t{seconds[1]:.2f}")


if __name__ == "__main__":
    main()
