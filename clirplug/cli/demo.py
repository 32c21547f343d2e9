"""``clirplug demo``: the demo experiment on the embedded German-English collection (what ``make demo`` runs)."""

from clirplug.cli import add_aliases
from clirplug.cli.experiment import add_run_options, run_config

HELP = ("run every method on the embedded German-English demo collection and write the report under "
        "demo-output/ (the experiment clirplug/data/demo.yaml; make demo)")


def add_arguments(parser):
    parser.add_argument("--path", action="store_true",
                        help="print the folder of the embedded demo collection (corpus, topics, qrels, bitext) and exit")
    add_aliases(parser, add_run_options(parser, root="demo-output"), "--workdir")


def run(args):
    from clirplug.data import demo_config, demo_path

    if args.path:
        print(demo_path())
        return 0
    return run_config(demo_config(), args)
