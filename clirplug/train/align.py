"""The alignment step: preprocess a bitext, align it both ways, symmetrize, write lexical tables.

The stages and the files they write are described in ``docs/models.md``; each is recorded in
``DIR/stages/`` (:mod:`clirplug.train.cache`), so an interrupted run resumes.
"""

import sys
from dataclasses import dataclass
from pathlib import Path

from clirplug.errors import ClirplugError
from clirplug.io.text import read_lines
from clirplug.mt.align_config import AlignConfig
from clirplug.mt.symmetrize import SYMMETRIZERS
from clirplug.settings import option

COMPOUND_LANGUAGES = ("de",)  # languages whose side is compound-split by default


@dataclass(frozen=True)
class AlignSettings(AlignConfig):
    """Options of ``clirplug train align``: both directions' EM (:class:`AlignConfig`, fast_align -d -o -v),
    then preprocessing, symmetrization and the lexical tables."""

    dictionary_max: int = option(3, "at most N dictionary entries per source term, in file order", low=1, metavar="N")
    compound_split: bool | None = option(None, "Koehn & Knight compound splitting of the source side "
                                               "(default: on for German)")
    compound_min_length: int = option(4, "shortest compound part, in letters", low=1)
    symmetrize: str = option("grow-diag-final-and", "symmetrization heuristic", choices=tuple(SYMMETRIZERS))
    lex_min_prob: float = option(1e-4, "lexical table entries below this probability are not written", low=0.0)


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


def train_align(src: Path, tgt: Path, out: Path, settings: AlignSettings = AlignSettings(), *,
                src_lang: str = "de", tgt_lang: str = "en", dictionary: Path | None = None,
                force: bool = False, progress: bool = True) -> Path:
    """Align the bitext ``src``/``tgt`` into the model folder ``out`` (see ``docs/models.md``).

    ``dictionary`` (TSV ``source<TAB>target``) adds entries to EM as extra sentence pairs;
    ``progress`` shows progress bars.
    """
    from tqdm import tqdm

    from clirplug.atomic import atomic_open
    from clirplug.mt.align import train
    from clirplug.mt.compound import CompoundSplitter
    from clirplug.mt.preprocess import COMPOUND_FILE, preprocess
    from clirplug.mt.symmetrize import format_pharaoh, read_pharaoh, symmetrize
    from clirplug.stopwords import load_stopwords
    from clirplug.train.cache import Stages

    src, tgt, out = Path(src), Path(tgt), Path(out)
    dictionary = Path(dictionary) if dictionary is not None else None
    for path in (src, tgt, dictionary):
        if path is not None and not path.is_file():
            raise ClirplugError(f"{path}: no such file")
    out.mkdir(parents=True, exist_ok=True)
    stages = Stages(out, force)
    split = settings.compound_split if settings.compound_split is not None else src_lang in COMPOUND_LANGUAGES
    compound_file = out / COMPOUND_FILE.format(lang=src_lang)
    corpus_src, corpus_tgt = out / f"corpus.{src_lang}", out / f"corpus.{tgt_lang}"
    dict_src, dict_tgt = out / f"dict.{src_lang}", out / f"dict.{tgt_lang}"

    # 1. compound splitter, from the source side's own frequencies
    if split:
        def build_splitter():
            excluded = load_stopwords(src_lang) if src_lang in COMPOUND_LANGUAGES else frozenset()
            sentences = (preprocess(line, src_lang) for line in read_lines(src))
            CompoundSplitter.train(sentences, settings.compound_min_length, excluded=excluded).save(compound_file)

        stages.run("compound", [src], {"min_length": settings.compound_min_length, "fillers": ["s", "es"]},
                   [compound_file], build_splitter)
    elif compound_file.exists():
        compound_file.unlink()

    # 2. MT tokens of the bitext and of the dictionary pairs
    def prepare():
        splitter = CompoundSplitter.load(compound_file) if split else None
        src_lines, tgt_lines = read_lines(src), read_lines(tgt)
        if len(src_lines) != len(tgt_lines):
            raise ClirplugError(f"{src}: {len(src_lines)} lines but {tgt} has {len(tgt_lines)}")
        src_tokens = [preprocess(line, src_lang, splitter) for line in tqdm(src_lines, desc="preprocess", leave=False,
                                                                              disable=not progress)]
        tgt_tokens = [preprocess(line, tgt_lang) for line in tgt_lines]
        pairs = []
        if dictionary is not None:
            src_vocab = {token for tokens in src_tokens for token in tokens}
            tgt_vocab = {token for tokens in tgt_tokens for token in tokens}
            pairs = dictionary_pairs(dictionary, src_lang, tgt_lang, splitter, src_vocab, tgt_vocab,
                                     settings.dictionary_max)
            print(f"clirplug: {len(pairs)} dictionary entries added as sentence pairs", file=sys.stderr)
        write_tokens(corpus_src, src_tokens)
        write_tokens(corpus_tgt, tgt_tokens)
        write_tokens(dict_src, [p[0] for p in pairs])
        write_tokens(dict_tgt, [p[1] for p in pairs])

    inputs = [src, tgt] + ([dictionary] if dictionary else []) + ([compound_file] if split else [])
    stages.run("preprocess", inputs, {"src_lang": src_lang, "tgt_lang": tgt_lang, "compound_split": split,
                                      "dictionary_max": settings.dictionary_max if dictionary else None},
               [corpus_src, corpus_tgt, dict_src, dict_tgt], prepare)

    # 3-4. both directions
    record = {**{name: getattr(settings, name) for name in AlignConfig.names()}, "lex_min_prob": settings.lex_min_prob}
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
            bar = tqdm(total=settings.model1_iterations + settings.iterations, desc=f"align {name}",
                       disable=not progress)

            def report(stats):
                bar.set_postfix(model=stats.model, loglik=f"{stats.log_likelihood:.4g}", tension=f"{stats.tension:.3g}")
                bar.update()

            result = train(conditioning, generated, settings, report)
            bar.close()
            table = result.model.table(settings.lex_min_prob)
            table.save_text(out / f"{table_name}.txt")
            table.save(out / f"{table_name}.npz")
            with atomic_open(align_file) as handle:  # always source-target (f-e) orientation
                for links in result.alignments[:lines]:
                    if name == "rev":
                        links = sorted((i, j) for j, i in links)
                    handle.write(format_pharaoh(links) + "\n")

        stages.run(f"align-{name}", corpus_files, record,
                   [align_file, out / f"{table_name}.txt", out / f"{table_name}.npz"], align)

    # 5. symmetrization
    symmetrized = out / f"align.{src_lang}-{tgt_lang}"

    def combine():
        links = symmetrize(read_pharaoh(out / "align.fwd"), read_pharaoh(out / "align.rev"), settings.symmetrize)
        with atomic_open(symmetrized) as handle:
            handle.writelines(format_pharaoh(sentence) + "\n" for sentence in links)

    stages.run("symmetrize", [out / "align.fwd", out / "align.rev"], {"method": settings.symmetrize},
               [symmetrized], combine)
    print(f"clirplug: model folder {out} is ready", file=sys.stderr)
    return out
