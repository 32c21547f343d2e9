"""Word-alignment benchmark on manclir-de: time, memory and dictionary agreement; prints markdown.

Usage: ``nice .venv/bin/python benchmarks/align.py [--data ../shared/data/manclir-de] [--eflomal]``

Trains on ``bitext.train`` (preprocessed and compound-split exactly as ``clirplug train align``
does), once without and once with dictionary pairs (``--dictionary-max 3``), both directions.

Dictionary agreement (the issue-3 acceptance figure): take the 500 most frequent German
*content words* of the preprocessed German side (alphabetic, at least 3 letters, not in
``clirplug/data/stopwords/de.txt``) that the dictionary *covers* (the word is a lowercased
dictionary source term); count how often the top ``p(e|f)`` translation is one of that term's
lowercased dictionary translations. "strict" compares exact strings; "plural-insensitive"
also accepts a match after folding English plural/possessive endings on both sides
(``'s``, ``-ies -> -y``, ``-(s|x|ch|sh)es -> -\\1``, ``-s`` but not ``-ss``). With dictionary
pairs in training the figure is partly circular; the acceptance uses the run without them.
"""

import argparse
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from clirplug.io.text import read_lines  # noqa: E402
from clirplug.mt.align import AlignConfig, train  # noqa: E402
from clirplug.mt.compound import CompoundSplitter  # noqa: E402
from clirplug.mt.preprocess import preprocess  # noqa: E402
from clirplug.mt.symmetrize import symmetrize  # noqa: E402
from clirplug.stopwords import load_stopwords  # noqa: E402
from clirplug.train.align import dictionary_pairs  # noqa: E402

TOP_WORDS = 500


def fold_plural(word: str) -> str:
    """Crude English plural/possessive folding, used only for the lenient agreement figure."""
    word = re.sub(r"'s?$", "", word)
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if re.search(r"(s|x|ch|sh)es$", word):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def agreement(table, words, translations):
    strict = lenient = 0
    for word in words:
        best = next(iter(table.translations(word)), None)
        if best is None:
            continue
        strict += best in translations[word]
        lenient += fold_plural(best) in {fold_plural(t) for t in translations[word]}
    return strict / len(words), lenient / len(words)


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "manclir-de")
    parser.add_argument("--eflomal", action="store_true", help="also time eflomal (pip install eflomal)")
    args = parser.parse_args()
    data = args.data
    rows = []

    start = time.process_time()
    de_lines, en_lines = read_lines(data / "bitext.train.de"), read_lines(data / "bitext.train.en")
    plain = [preprocess(line, "de") for line in de_lines]
    splitter = CompoundSplitter.train(plain, 4, excluded=load_stopwords("de"))
    de = [preprocess(line, "de", splitter) for line in de_lines]
    en = [preprocess(line, "en") for line in en_lines]
    prep_seconds = time.process_time() - start
    start = time.process_time()
    pairs = dictionary_pairs(data / "dictionary.tsv", "de", "en", splitter,
                             {t for s in de for t in s}, {t for s in en for t in s}, 3)
    dict_seconds = time.process_time() - start
    links = sum(len(e) * (len(f) + 1) for f, e in zip(de, en))

    translations = defaultdict(set)
    for line in read_lines(data / "dictionary.tsv"):
        source, _, target = line.partition("\t")
        translations[source.lower()].add(target.lower())
    stopwords = load_stopwords("de")
    frequency = Counter(t for s in de for t in s if t.isalpha() and len(t) >= 3 and t not in stopwords)
    words = [w for w, _ in sorted(frequency.items(), key=lambda x: (-x[1], x[0])) if w in translations][:TOP_WORDS]

    config = AlignConfig()
    figures, gdfa_seconds = {}, None
    for condition, extra in (("no dictionary", []), ("+ dictionary", pairs)):
        src = de + [p[0] for p in extra]
        tgt = en + [p[1] for p in extra]
        results = {}
        for direction, given, generated in (("fwd p(e|f)", src, tgt), ("rev p(f|e)", tgt, src)):
            history = []
            start, cpu_start = time.perf_counter(), time.process_time()
            result = train(given, generated, config, history.append)
            seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
            results[direction] = result
            m1 = [h.cpu_seconds for h in history if h.model == "model1"]
            m2 = [h.cpu_seconds for h in history if h.model == "ibm2"]
            setup = cpu - sum(m1) - sum(m2)
            rows.append(f"| {condition} | {direction} | {len(src)} | {seconds:.1f} | {cpu:.1f} | {setup:.1f} | "
                        f"{sum(m1) / len(m1):.2f} | {sum(m2) / len(m2):.2f} | {history[-1].tension:.2f} | {peak_mb():.0f} |")
            print(rows[-1], file=sys.stderr, flush=True)
        forward = results["fwd p(e|f)"]
        figures[condition] = (agreement(forward.model1.table(), words, translations),
                              agreement(forward.model.table(), words, translations))
        if condition == "+ dictionary":
            start = time.process_time()
            reverse = [sorted((i, j) for j, i in s) for s in results["rev p(f|e)"].alignments[: len(de)]]
            symmetrize(forward.alignments[: len(de)], reverse, "grow-diag-final-and")
            gdfa_seconds = time.process_time() - start
        del results, forward

    eflomal_line = "eflomal: not run (pass --eflomal)"
    if args.eflomal:
        eflomal_line = time_eflomal(de, en)

    print("```")
    print(f"bitext.train: {len(de)} pairs, {sum(map(len, de))} German / {sum(map(len, en))} English tokens "
          f"after preprocessing; {links / 1e6:.1f} M candidate links per direction")
    print(f"preprocessing + compound splitter: {prep_seconds:.1f} s CPU; dictionary pairs (max 3 per term, "
          f"both sides in the bitext vocabulary): {len(pairs)} in {dict_seconds:.1f} s CPU")
    print(f"grow-diag-final-and symmetrization: {gdfa_seconds:.1f} s CPU")
    print(eflomal_line)
    print("```\n")
    print("| training data | direction | pairs | wall s | CPU s | CPU s setup + Viterbi | CPU s / Model 1 iter "
          "| CPU s / IBM2 iter | final tension | peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print(f"\nDictionary agreement of the top p(e|f) translation, {len(words)} most frequent covered German content words:\n")
    print("| training data | Model 1 strict | Model 1 plural-insensitive | IBM2 strict | IBM2 plural-insensitive |")
    print("|---|---|---|---|---|")
    for condition, ((m1s, m1l), (m2s, m2l)) in figures.items():
        print(f"| {condition} | {m1s:.1%} | {m1l:.1%} | {m2s:.1%} | {m2l:.1%} |")


def time_eflomal(de, en) -> str:
    """Time eflomal's command line on the same token files (both directions, its defaults)."""
    try:
        import eflomal  # noqa: F401
    except ImportError:
        return "eflomal: not installed"
    with tempfile.TemporaryDirectory() as tmp:
        src, tgt = Path(tmp) / "src", Path(tmp) / "tgt"
        src.write_text("".join(" ".join(s) + "\n" for s in de))
        tgt.write_text("".join(" ".join(s) + "\n" for s in en))
        command = [str(Path(sys.executable).parent / "eflomal-align"), "-s", str(src), "-t", str(tgt),
                   "-f", str(Path(tmp) / "fwd"), "-r", str(Path(tmp) / "rev")]
        start, children = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(command, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
        if done.returncode != 0:
            return f"eflomal: failed ({done.stderr.strip()[-200:]})"
    return (f"eflomal {eflomal_version()} (eflomal-align, defaults, both directions, same tokens, no dictionary): "
            f"{seconds:.1f} s wall, {cpu:.1f} s CPU")


def eflomal_version() -> str:
    from importlib.metadata import version

    return version("eflomal")


if __name__ == "__main__":
    main()
