"""``clirplug train mira``: rerank the decoder's n-best query translations for retrieval (Nikoulina et al. 2012)."""

HELP = "MIRA weights that rerank the decoder's n-best query translations by retrieval AP (for --method dt-mira)"


def add_arguments(parser):
    from clirplug.cli import Output, add_output
    from clirplug.cli.options import add_settings
    from clirplug.io.topics import FIELDS
    from clirplug.mt import KINDS
    from clirplug.train.mira import MiraSettings

    parser.add_argument("--model", required=True, metavar="DIR", help="translation model folder (see docs/models.md)")
    parser.add_argument("--kind", default="flat", choices=KINDS, help="grammar of the model (default: flat)")
    parser.add_argument("--index", required=True, metavar="DIR", help="Lucene index of the target collection")
    parser.add_argument("--topics", required=True, metavar="FILE", help="training topics (the train split)")
    parser.add_argument("--qrels", required=True, metavar="FILE", help="their relevance judgements")
    parser.add_argument("--field", default="title", choices=FIELDS,
                        help="query field; not title: sentence by sentence, as DT (default: title)")
    add_output(parser, "model file to write (JSON)")
    add_settings(parser, MiraSettings)
    parser.add_argument("--stopwords", metavar="FILE", help="target stopwords removed before search (as DT's --stopwords)")
    parser.add_argument("--searches", action=Output, metavar="FILE",
                        help="keep the AP of every candidate query searched here (gzipped JSON) and reuse it when the "
                             "qrels, index and search settings match: retraining then runs no search (features are "
                             "always recomputed)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args):
    from clirplug.cli.options import settings_from_args
    from clirplug.train.mira import MiraSettings, train_mira

    train_mira(args.model, args.kind, args.index, args.topics, args.qrels, args.field, args.output,
               settings_from_args(MiraSettings, args), stopwords=args.stopwords, searches=args.searches,
               progress=not args.quiet)
    return 0
