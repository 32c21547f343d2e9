"""A restricted read of a grammar through its index: the rules usable on some topics' sentences.

Usage::

    .venv/bin/python benchmarks/grammar_read.py --grammar DIR/grammar.hiero.gz [--topics 30] [--field desc]
        [--repeat 3]

Restricts to the sentences of the first ``--topics`` dev topics (preprocessed as the grammar's model folder says:
a copy of a grammar keeps its folder's ``compound.*.tsv`` beside it), reads the grammar once to build or open its index (untimed), then
``--repeat`` times more; prints the CPU seconds of each timed read, their median, the rules read and a digest
of them (equal digests: the same rules in the same order). Run it on copies of one grammar to compare versions
of the code (each version keeps its own index beside its copy).
"""

import argparse
import hashlib
import statistics
import time
from pathlib import Path

from clirplug.io.topics import read_topics
from clirplug.mt.grammar import SourcePhrases, format_rule, read_grammar
from clirplug.mt.preprocess import preprocessor, topic_sentences

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grammar", required=True)
    parser.add_argument("--topics", type=int, default=30)
    parser.add_argument("--field", default="desc", choices=("title", "desc"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--lang", default="de")
    parser.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "manclir-de"))
    args = parser.parse_args()
    grammar = Path(args.grammar)
    topics = read_topics(Path(args.data) / "topics.dev.jsonl")[: args.topics]
    tokenize = preprocessor(args.lang, grammar.parent)
    sentences = [s for topic in topics for s in topic_sentences(topic, args.field, args.lang, tokenize)]
    read_grammar(grammar, SourcePhrases(sentences))
    seconds, rules = [], []
    for _ in range(args.repeat):
        start = time.process_time()
        rules = read_grammar(grammar, SourcePhrases(sentences))
        seconds.append(time.process_time() - start)
    digest = hashlib.sha256("\n".join(map(format_rule, rules)).encode()).hexdigest()[:16]
    print(f"{len(sentences)} sentences, {len(rules):,} rules (sha256 {digest}); CPU s "
          f"{' '.join(f'{s:.2f}' for s in seconds)}, median {statistics.median(seconds):.2f}")


if __name__ == "__main__":
    main()
