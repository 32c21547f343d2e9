"""``clirplug train``: learn translation models and rerankers."""

from clirplug.cli import add_commands
from clirplug.methods import TRAINING

HELP = "train translation models and rerankers (align, grammar, lm, ...)"

# subcommand -> module, each with HELP, add_arguments(parser) and run(args): one per training step of the registry.
TRAIN_COMMANDS: dict[str, str] = {name: f"clirplug.cli.train_{name}" for name in TRAINING}


def add_arguments(parser):
    add_commands(parser.add_subparsers(title="what to train", metavar="WHAT", required=True), TRAIN_COMMANDS)


def run(args):  # never called: each subcommand sets its own run
    raise AssertionError("unreachable")
