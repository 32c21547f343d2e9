"""``clirplug train``: learn translation models and rerankers."""

from clirplug.cli import add_commands

HELP = "train translation models and rerankers (align, grammar, lm, ...)"

# subcommand -> module, each with HELP, add_arguments(parser) and run(args).
TRAIN_COMMANDS: dict[str, str] = {
    "align": "clirplug.cli.train_align",
    "grammar": "clirplug.cli.train_grammar",
    "lm": "clirplug.cli.train_lm",
    "weights": "clirplug.cli.train_weights",
    "boost": "clirplug.cli.train_boost",
    "bowfd": "clirplug.cli.train_bowfd",
    "mira": "clirplug.cli.train_mira",
}


def add_arguments(parser):
    add_commands(parser.add_subparsers(title="what to train", metavar="WHAT", required=True), TRAIN_COMMANDS)


def run(args):  # never called: each subcommand sets its own run
    raise AssertionError("unreachable")
