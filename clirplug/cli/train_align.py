"""``clirplug train align``: preprocess a bitext, align it both ways, symmetrize, write lexical tables.

The stages and the files they write are described in ``docs/models.md``. Each stage records
the SHA-256 of its inputs and its settings in ``DIR/stages/<stage>.json``; a rerun skips a
stage whose outputs exist and whose record matches, so an interrupted run resumes.
"""

import argparse
import json
import sys
from pathlib import Path

from clirplug.cli import non_negative_int, positive_int
from clirplug.digest import file_digest
from clirplug.errors import ClirplugError

HELP = "word-align a bitext (IBM Model 1 + fast_align IBM2, both directions, symmetrized)"
STAGE_FORMAT = 1  # bump when a stage's output changes for the same inputs and settings
COMPOUND_LANGUAGES = ("de",)  # languages whose side is compound-split by default


def add_arguments(parser):
    from clirplug.mt.symmetrize import SYMMETRIZERS

    data = parser.add_argument_group("data")
    data.add_argument("--src", required=True, type=Path, help="source side (e.g. German), one segment a line")
    data.add_argument("--tgt", required=True, type=Path, help="target side (e.g. English), line-aligned")
    data.add_argument("--out", required=True, type=Path, help="model folder (created; see docs/models.md)")
    data.add_argument("--src-lang", default="de", help="source language code (default: de)")
    data.add_argument("--tgt-lang", default="en", help="target language code (default: en)")
    data.add_argument("--dictionary", type=Path,
                      help="TSV 'source<TAB>target' entries added to EM as extra sentence pairs")
    data.add_argument("--dictionary-max", type=positive_int, default=3, metavar="N",
                      help="at most N entries per dictionary source term, in file order (default: 3)")

    prep = parser.add_argument_group("preprocessing")
    prep.add_argument("--compound-split", action=argparse.BooleanOptionalAction, default=None,
                      help="Koehn & Knight compound splitting of the source side (default: on for German)")
    prep.add_argument("--compound-min-length", type=positive_int, default=4,
                      help="shortest compound part, in letters (default: 4)")

    em = parser.add_argument_group("alignment (defaults: fast_align -d -o -v)")
    em.add_argument("--model1-iterations", type=non_negative_int, default=5)
    em.add_argument("--iterations", type=non_negative_int, default=5, help="fast_align IBM2 EM iterations")
    em.add_argument("--p0", type=float, default=0.08, help="NULL alignment probability")
    em.add_argument("--tension", type=float, default=4.0, help="initial diagonal tension lambda")
    em.add_argument("--optimize-tension", action=argparse.BooleanOptionalAction, default=True)
    em.add_argument("--variational-bayes", action=argparse.BooleanOptionalAction, default=True)
    em.add_argument("--alpha", type=float, default=0.01, help="Dirichlet concentration for variational Bayes")
    em.add_argument("--symmetrize", choices=list(SYMMETRIZERS), default="grow-diag-final-and")
    em.add_argument("--lex-min-prob", type=float, default=1e-4,
                    help="lexical table entries below this probability are not written (default: 1e-4)")
    parser.add_argument("--force", action="store_true", help="rerun every stage even when up to date")


class Stages:
    """Skip-or-run bookkeeping of the stages of one model folder."""

    def __init__(self, out: Path, force: bool):
        self.out, self.force = out, force

    def _name(self, path: Path) -> str:
        """Files inside the model folder by relative name (so the folder can move), others in full."""
        path = path.resolve()
        return str(path.relative_to(self.out.resolve())) if path.is_relative_to(self.out.resolve()) else str(path)

    def run(self, name, inputs, settings, outputs, body):
        """Run ``body()`` unless ``outputs`` exist and ``stages/<name>.json`` matches inputs and settings."""
        from clirplug.atomic import atomic_open

        record = {
            "format": STAGE_FORMAT,
            "inputs": {self._name(path): file_digest(path) for path in inputs},
            "settings": settings,
            "outputs": [str(path.name) for path in outputs],
        }
        record_path = self.out / "stages" / f"{name}.json"
        if not self.force and record_path.is_file() and all(path.is_file() for path in outputs):
            try:
                if json.loads(record_path.read_text(encoding="utf-8")) == record:
                    print(f"clirplug: {name}: up to date, skipped", file=sys.stderr)
                    return False
            except json.JSONDecodeError:
                pass
        record_path.unlink(missing_ok=True)
        body()
        with atomic_open(record_path) as handle:
            json.dump(record, handle, indent=1, sort_keys=True)
        return True


def read_lines(path: Path) -> list[str]:
    """A text file's lines (UTF-8), with a user error naming the file when it cannot be read."""
    try:
        lines = path.read_text(encoding="utf-8").split("\n")  # not splitlines(): U+2028 is not a break
    except (OSError, UnicodeDecodeError) as error:
        raise ClirplugError(f"{path}: cannot read ({error})") from error
    return lines[:-1] if lines[-1] == "" else lines


def write_tokens(path: Path, sentences) -> None:
    from clirplug.atomic import atomic_open

    with atomic_open(path) as out:
        out.writelines(" ".join(tokens) + "\n" for tokens in sentences)


def read_tokens(path: Path) -> list[list[str]]:
    return [line.split(" ") if line else [] for line in read_lines(path)]


def dictionary_pairs(path: Path, src_lang, tgt_lang, splitter, src_vocab, tgt_vocab, per_term: int):
    """Dictionary entries as token pairs: both sides' tokens must occur in the bitext, ``per_term`` per term."""
    from clirplug.mt.preprocess import preprocess

    pairs, kept_for, last_term = [], 0, None
    for lineno, line in enumerate(read_lines(path), start=1):
        fields = line.split("\t")
        if len(fields) != 2:
            raise ClirplugError(f"{path}:{lineno}: expected 'source<TAB>target'")
        if fields[0] != last_term:
            last_term, kept_for = fields[0], 0
        if kept_for >= per_term:
            continue
        src = preprocess(fields[0], src_lang, splitter)
        if not src or not all(token in src_vocab for token in src):
            continue
        tgt = preprocess(fields[1], tgt_lang)
        if tgt and all(token in tgt_vocab for token in tgt):
            pairs.append((src, tgt))
            kept_for += 1
    return pairs


def run(args):
    from tqdm import tqdm

    from clirplug.atomic import atomic_open
    from clirplug.mt.align import AlignConfig, train
    from clirplug.mt.compound import CompoundSplitter
    from clirplug.mt.preprocess import COMPOUND_FILE, preprocess
    from clirplug.mt.symmetrize import format_pharaoh, read_pharaoh, symmetrize
    from clirplug.stopwords import load_stopwords

    for path in (args.src, args.tgt, args.dictionary):
        if path is not None and not path.is_file():
            raise ClirplugError(f"{path}: no such file")
    config = AlignConfig(args.model1_iterations, args.iterations, args.p0, args.tension,
                         args.optimize_tension, args.variational_bayes, args.alpha)
    src_lang, tgt_lang, out = args.src_lang, args.tgt_lang, args.out
    out.mkdir(parents=True, exist_ok=True)
    stages = Stages(out, args.force)
    split = args.compound_split if args.compound_split is not None else src_lang in COMPOUND_LANGUAGES
    compound_file = out / COMPOUND_FILE.format(lang=src_lang)
    corpus_src, corpus_tgt = out / f"corpus.{src_lang}", out / f"corpus.{tgt_lang}"
    dict_src, dict_tgt = out / f"dict.{src_lang}", out / f"dict.{tgt_lang}"

    # 1. compound splitter, from the source side's own frequencies
    if split:
        def build_splitter():
            excluded = load_stopwords(src_lang) if src_lang in COMPOUND_LANGUAGES else frozenset()
            sentences = (preprocess(line, src_lang) for line in read_lines(args.src))
            CompoundSplitter.train(sentences, args.compound_min_length, excluded=excluded).save(compound_file)

        stages.run("compound", [args.src], {"min_length": args.compound_min_length, "fillers": ["s", "es"]},
                   [compound_file], build_splitter)
    elif compound_file.exists():
        compound_file.unlink()

    # 2. MT tokens of the bitext and of the dictionary pairs
    def prepare():
        splitter = CompoundSplitter.load(compound_file) if split else None
        src_lines, tgt_lines = read_lines(args.src), read_lines(args.tgt)
        if len(src_lines) != len(tgt_lines):
            raise ClirplugError(f"{args.src}: {len(src_lines)} lines but {args.tgt} has {len(tgt_lines)}")
        src = [preprocess(line, src_lang, splitter) for line in tqdm(src_lines, desc="preprocess", leave=False)]
        tgt = [preprocess(line, tgt_lang) for line in tgt_lines]
        pairs = []
        if args.dictionary is not None:
            src_vocab = {token for tokens in src for token in tokens}
            tgt_vocab = {token for tokens in tgt for token in tokens}
            pairs = dictionary_pairs(args.dictionary, src_lang, tgt_lang, splitter, src_vocab, tgt_vocab,
                                     args.dictionary_max)
            print(f"clirplug: {len(pairs)} dictionary entries added as sentence pairs", file=sys.stderr)
        write_tokens(corpus_src, src)
        write_tokens(corpus_tgt, tgt)
        write_tokens(dict_src, [p[0] for p in pairs])
        write_tokens(dict_tgt, [p[1] for p in pairs])

    inputs = [args.src, args.tgt] + ([args.dictionary] if args.dictionary else []) + ([compound_file] if split else [])
    stages.run("preprocess", inputs, {"src_lang": src_lang, "tgt_lang": tgt_lang, "compound_split": split,
                                      "dictionary_max": args.dictionary_max if args.dictionary else None},
               [corpus_src, corpus_tgt, dict_src, dict_tgt], prepare)

    # 3-4. both directions
    settings = {**vars(config), "lex_min_prob": args.lex_min_prob}
    corpus_files = [corpus_src, corpus_tgt, dict_src, dict_tgt]
    for name, given, predicted, table_name in (
        ("fwd", (corpus_src, dict_src), (corpus_tgt, dict_tgt), "lex.e_given_f"),
        ("rev", (corpus_tgt, dict_tgt), (corpus_src, dict_src), "lex.f_given_e"),
    ):
        align_file = out / f"align.{name}"

        def align(name=name, given=given, predicted=predicted, table_name=table_name, align_file=align_file):
            conditioning = read_tokens(given[0])
            generated = read_tokens(predicted[0])
            lines = len(conditioning)
            conditioning += read_tokens(given[1])
            generated += read_tokens(predicted[1])
            bar = tqdm(total=config.model1_iterations + config.ibm2_iterations, desc=f"align {name}")

            def progress(stats):
                bar.set_postfix(model=stats.model, loglik=f"{stats.log_likelihood:.4g}", tension=f"{stats.tension:.3g}")
                bar.update()

            result = train(conditioning, generated, config, progress)
            bar.close()
            table = result.model.table(args.lex_min_prob)
            table.save_text(out / f"{table_name}.txt")
            table.save(out / f"{table_name}.npz")
            with atomic_open(align_file) as handle:  # always source-target (f-e) orientation
                for links in result.alignments[:lines]:
                    if name == "rev":
                        links = sorted((i, j) for j, i in links)
                    handle.write(format_pharaoh(links) + "\n")

        stages.run(f"align-{name}", corpus_files, settings,
                   [align_file, out / f"{table_name}.txt", out / f"{table_name}.npz"], align)

    # 5. symmetrization
    symmetrized = out / f"align.{src_lang}-{tgt_lang}"

    def combine():
        links = symmetrize(read_pharaoh(out / "align.fwd"), read_pharaoh(out / "align.rev"), args.symmetrize)
        with atomic_open(symmetrized) as handle:
            handle.writelines(format_pharaoh(sentence) + "\n" for sentence in links)

    stages.run("symmetrize", [out / "align.fwd", out / "align.rev"], {"method": args.symmetrize},
               [symmetrized], combine)
    print(f"clirplug: model folder {out} is ready", file=sys.stderr)
    return 0
