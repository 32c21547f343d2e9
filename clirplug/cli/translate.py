"""``clirplug translate``: decode sentences or topic files with a trained model folder.

Input is plain text (one sentence a line; a line of more than 100 tokens is translated in
chunks, see docs/reliability.md) or, for ``.jsonl``/``.json``/``.trec``/``.sgml``/
``.tsv`` files, topics whose ``--field`` is translated (``desc`` sentence by sentence, as in
Hieber & Riezler 2015 and Sokolov et al. 2013). Output (``--output``, default stdout):

* plain text with ``--nbest 1``: one translation a line;
* otherwise JSON Lines, one object per input line or topic:
  ``{"id", "sentences": [{"source": [...], "nbest": [{"words", "score", "features",
  "alignment", "rules"}]}]}``.

``--forest OUT`` also writes each sentence's +LM forest to ``OUT/<id>.<k>.json.gz``.
"""

HELP = "translate sentences or topics with a model folder (1-best, n-best, forests)"

TOPIC_SUFFIXES = (".jsonl", ".json", ".trec", ".sgml", ".tsv")


def add_arguments(parser):
    parser.add_argument("--model", required=True, metavar="DIR", help="model folder (see docs/models.md)")
    parser.add_argument("--input", required=True, metavar="F", help="plain text (a sentence a line) or a topic file")
    parser.add_argument("--kind", choices=("hiero", "flat"), default="hiero", help="grammar (default: hiero)")
    parser.add_argument("--field", choices=("title", "desc", "narr"), default="title", help="topic field (default: title)")
    parser.add_argument("--nbest", type=int, default=1, metavar="N", help="translations per sentence (default: 1)")
    parser.add_argument("--forest", metavar="OUT", help="folder for the +LM forests (JSON)")
    parser.add_argument("--output", metavar="OUT", help="output file (default: stdout)")
    parser.add_argument("--weights", metavar="FILE", help="weights file (default: DIR/weights.KIND, else defaults)")
    parser.add_argument("--pop-limit", type=int, default=200, help="cube pruning pops per cell (default: 200)")
    parser.add_argument("--src-lang", default="de", help="source language for preprocessing (default: de)")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write DIR/cache/")


def run(args):
    import json
    import sys
    from pathlib import Path

    from tqdm import tqdm

    from clirplug.atomic import atomic_open, check_output, is_path_part
    from clirplug.errors import ClirplugError
    from clirplug.io.topics import read_topics, require_field
    from clirplug.mt.grammar import format_rule
    from clirplug.mt.preprocess import chunks
    from clirplug.mt.translator import Translator, translation_json

    if args.nbest < 1:
        raise ClirplugError(f"--nbest must be at least 1, got {args.nbest}")
    if args.output:
        check_output(args.output)
    path = Path(args.input)
    translator = Translator(args.model, args.kind, args.weights, pop_limit=args.pop_limit, src_lang=args.src_lang,
                            cache=not args.no_cache)
    if path.suffix.lower() in TOPIC_SUFFIXES:
        topics = read_topics(path)
        require_field(topics, args.field, path)
        unsafe = [t.id for t in topics if not is_path_part(t.id)] if args.forest else []
        if unsafe:
            raise ClirplugError(f"{path}: topic id {unsafe[0]!r} cannot name a file in --forest {args.forest} "
                                "(/, .. and . are not allowed)")
        items = [(t.id, translator.topic_sentences(t, args.field)) for t in topics]
        plain = False
    else:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as error:
            raise ClirplugError(f"{path}: cannot read the input ({error})") from error
        items = [(str(number), chunks(translator.tokenize(line))) for number, line in enumerate(lines, 1)]
        plain = args.nbest == 1
    translator.restrict([tokens for _, sentences in items for tokens in sentences])
    records = []
    with tqdm(total=sum(len(s) for _, s in items), desc="translate", unit="sentence", file=sys.stderr) as bar:
        for item_id, sentences in items:
            record = {"id": item_id, "sentences": []}
            for k, tokens in enumerate(sentences):
                forest = translator.forest(tokens) if args.forest else None
                nbest = translator.translate(tokens, args.nbest, forest)
                if forest is not None:
                    forest.save(Path(args.forest) / f"{item_id}.{k}.json.gz", format_rule)
                record["sentences"].append({"source": tokens, "nbest": [translation_json(t) for t in nbest]})
                bar.update()
            records.append(record)
    if plain:
        text = "".join(" ".join(word for s in r["sentences"] for word in s["nbest"][0]["words"]) + "\n"
                       for r in records)
    else:
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    if args.output:
        with atomic_open(args.output) as out:
            out.write(text)
    else:
        sys.stdout.write(text)
