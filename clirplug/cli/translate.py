"""``clirplug translate``: decode sentences or topic files with a trained model folder.

Input is plain text (one sentence a line; a line of more than 100 tokens is translated in
chunks, see docs/reliability.md) or, for ``.jsonl``/``.json``/``.trec``/``.sgml``/
``.tsv`` files and ``irds:ID`` (ir_datasets topics), topics whose ``--field`` is translated (``desc`` sentence by sentence, as in
Hieber & Riezler 2015 and Sokolov et al. 2013). Output (``--output``, default or ``-``: stdout), by
``--format``:

* ``text``: the 1-best of each line or topic, one a line (the default for plain text with
  ``--nbest 1``);
* ``tsv`` (the default otherwise): with ``--nbest 1``, ``id<TAB>1-best`` a line, a topic file that
  ``clirplug search --topics``, Pyserini (``--topics FILE.tsv``) and PyTerrier
  (``pt.io.read_topics(FILE, format="singleline")``) read (a topic whose translation is empty is
  left out, with a warning, since Anserini's TSV reader fails on a line without text); with
  ``--nbest N``, ``id<TAB>sentence<TAB>rank<TAB>score<TAB>translation`` a line: each sentence's
  n-best list (a title is sentence 1; a desc is translated sentence by sentence), ranks from 1,
  scores the model's (log10);
* ``jsonl``: one object per input line or topic, ``{"id", "sentences": [{"source": [...],
  "nbest": [{"words", "score", "features", "alignment", "rules"}]}]}``.

An n-best list holds distinct strings, the best-scoring derivation of each: derivations are
enumerated best first (lazy k-best) until ``--nbest`` distinct strings are found, the forest has
no more, or ``20 * --nbest`` derivations were read (as cdec's unique k-best), so a list can be
shorter than ``--nbest``. ``--derivations`` lists the best derivations instead, whose strings may
repeat. ``--forest OUT`` also writes each sentence's +LM forest to ``OUT/<id>.<k>.json.gz``.
"""

from clirplug.cli import Output, add_output, add_src_lang, add_topic_lang

HELP = "translate sentences or topics with a model folder (1-best, n-best, TSV topics, forests)"

TOPIC_SUFFIXES = (".jsonl", ".json", ".trec", ".sgml", ".tsv")
FORMATS = ("text", "tsv", "jsonl")


def add_arguments(parser):
    from clirplug.io.topics import FIELDS
    from clirplug.mt import KINDS

    parser.add_argument("--model", required=True, metavar="DIR", help="model folder (see docs/models.md)")
    parser.add_argument("--input", required=True, metavar="FILE",
                        help="plain text (a sentence a line), a topic file (JSONL, HC4/NeuCLIR JSONL, TREC SGML, TSV) "
                             "or irds:ID (the topics of an ir_datasets id)")
    add_topic_lang(parser)
    parser.add_argument("--kind", choices=KINDS, default="hiero", help="grammar (default: hiero)")
    parser.add_argument("--field", choices=FIELDS, default="title", help="topic field (default: title)")
    parser.add_argument("--nbest", type=int, default=1, metavar="N", help="translations per sentence (default: 1)")
    parser.add_argument("--derivations", action="store_true",
                        help="n-best lists of the best derivations, whose strings may repeat (default: distinct "
                             "strings, the best derivation of each)")
    parser.add_argument("--format", choices=FORMATS, default=None,
                        help="text: the 1-best a line; tsv: id<TAB>1-best topics (for clirplug search, Pyserini, "
                             "PyTerrier), or with --nbest N id<TAB>sentence<TAB>rank<TAB>score<TAB>translation; "
                             "jsonl: n-best lists with scores, features and alignments (default: text for plain "
                             "text with --nbest 1, else tsv)")
    add_output(parser, "file to write (default or -: standard output)", required=False, stdout=True)
    parser.add_argument("--forest", action=Output, folder=True, metavar="DIR", help="folder for the +LM forests (JSON)")
    parser.add_argument("--weights", metavar="FILE", help="weights file (default: DIR/weights.KIND, else defaults)")
    parser.add_argument("--pop-limit", type=int, default=200, help="cube pruning pops per cell (default: 200)")
    add_src_lang(parser, "source language for preprocessing (default: de)")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write DIR/cache/")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def _tsv_lines(records, path):
    """``id<TAB>1-best`` lines; topics whose 1-best is empty are left out with a warning."""
    from clirplug.errors import warn

    lines, empty = [], []
    for record in records:
        text = _one_best(record)
        if not text:
            empty.append(record["id"])
        else:
            lines.append(f"{record['id']}\t{text}\n")
    if empty:
        shown = ", ".join(empty[:5]) + (", ..." if len(empty) > 5 else "")
        warn(f"{path}: {len(empty)} of {len(records)} translations are empty and left out of the TSV ({shown})")
    return lines


def _nbest_lines(records):
    """``id<TAB>sentence<TAB>rank<TAB>score<TAB>translation`` lines, sentences and ranks from 1."""
    return [f"{record['id']}\t{k}\t{rank}\t{entry['score']:.4f}\t{' '.join(entry['words'])}\n"
            for record in records for k, sentence in enumerate(record["sentences"], 1)
            for rank, entry in enumerate(sentence["nbest"], 1)]


def _one_best(record) -> str:
    """The 1-best words of every sentence of a record, joined by spaces (tabs and newlines never occur:
    the words are whitespace-split tokens)."""
    return " ".join(word for sentence in record["sentences"] if sentence["nbest"] for word in sentence["nbest"][0]["words"])


def run(args):
    import json
    import sys
    from pathlib import Path

    from tqdm import tqdm

    from clirplug.atomic import STDOUT, is_path_part, open_output
    from clirplug.errors import ClirplugError
    from clirplug.io.topics import read_topics, require_field
    from clirplug.irds import irds_id
    from clirplug.mt.grammar import format_rule
    from clirplug.mt.preprocess import chunks
    from clirplug.mt.translator import Translator, translation_json

    if args.nbest < 1:
        raise ClirplugError(f"--nbest must be at least 1, got {args.nbest}")
    if args.format == "text" and args.nbest > 1:
        raise ClirplugError(f"--format text writes the 1-best only; use --format tsv or jsonl with --nbest {args.nbest}")
    path = args.input if irds_id(args.input) is not None else Path(args.input)
    translator = Translator(args.model, args.kind, args.weights, pop_limit=args.pop_limit, src_lang=args.src_lang,
                            cache=not args.no_cache)
    if isinstance(path, str) or path.suffix.lower() in TOPIC_SUFFIXES:
        topics = read_topics(path, lang=args.topic_lang)
        require_field(topics, args.field, path)
        unsafe = [t.id for t in topics if not is_path_part(t.id)] if args.forest else []
        if unsafe:
            raise ClirplugError(f"{path}: topic id {unsafe[0]!r} cannot name a file in --forest {args.forest} "
                                "(/, .. and . are not allowed)")
        items = [(t.id, translator.topic_sentences(t, args.field)) for t in topics]
        output_format = args.format or "tsv"
    else:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as error:
            raise ClirplugError(f"{path}: cannot read the input ({error})") from error
        items = [(str(number), chunks(translator.tokenize(line))) for number, line in enumerate(lines, 1)]
        output_format = args.format or ("text" if args.nbest == 1 else "tsv")
    translator.restrict([tokens for _, sentences in items for tokens in sentences])
    output = args.output or STDOUT
    records = []
    with tqdm(total=sum(len(s) for _, s in items), desc="translate", unit="sentence", file=sys.stderr,
              disable=args.quiet) as bar:
        for item_id, sentences in items:
            record = {"id": item_id, "sentences": []}
            for k, tokens in enumerate(sentences):
                forest = translator.forest(tokens) if args.forest else None
                nbest = translator.translate(tokens, args.nbest, forest, unique=not args.derivations)
                if args.forest:
                    forest.save(Path(args.forest) / f"{item_id}.{k}.json.gz", format_rule)
                record["sentences"].append({"source": tokens, "nbest": [translation_json(t) for t in nbest]})
                bar.update()
            records.append(record)
    if output_format == "text":
        text = "".join(_one_best(r) + "\n" for r in records)
    elif output_format == "tsv":
        text = "".join(_tsv_lines(records, "standard output" if output == STDOUT else output) if args.nbest == 1
                       else _nbest_lines(records))
    else:
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    with open_output(output) as out:
        out.write(text)
