"""The ``clirplug`` command line.

Each command lives in its own light module ``clirplug.cli.<name>`` that defines
``HELP`` (one line), ``add_arguments(parser)`` and ``run(args)``. Heavy imports
(numpy, pandas, the JVM) happen inside ``run``, so ``clirplug --help`` stays fast.
"""

import argparse
import importlib
import signal
import sys

from clirplug.errors import ClirplugError

# command name -> module; the order is the order of ``clirplug --help``.
COMMANDS = {
    "demo": "clirplug.cli.demo",
    "index": "clirplug.cli.index",
    "search": "clirplug.cli.search",
    "eval": "clirplug.cli.eval",
    "train": "clirplug.cli.train",
    "translate": "clirplug.cli.translate",
    "fuse": "clirplug.cli.fuse",
    "rerank": "clirplug.cli.rerank",
    "experiment": "clirplug.cli.experiment",
}


def positive_int(text: str) -> int:
    """An argparse ``type=``: an integer of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def non_negative_int(text: str) -> int:
    """An argparse ``type=``: an integer of at least 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text}")
    return value


def add_commands(subparsers, commands):
    """Register each ``name -> module`` of ``commands`` as a subcommand."""
    for name, module_name in commands.items():
        module = importlib.import_module(module_name)
        parser = subparsers.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(parser)
        parser.set_defaults(run=module.run)


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every command registered."""
    parser = argparse.ArgumentParser(prog="clirplug", description=__doc__.splitlines()[0])
    from clirplug import __version__

    parser.add_argument("--version", action="version", version=f"clirplug {__version__}")
    add_commands(parser.add_subparsers(title="commands", metavar="COMMAND", required=True), COMMANDS)
    return parser


def main(argv=None) -> int:
    """Parse ``argv``, run the command, print user errors without a traceback."""
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    args = build_parser().parse_args(argv)
    try:
        result = args.run(args)
    except ClirplugError as error:
        print(f"clirplug: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as interrupt:  # the notes say what is left: outputs are written whole or not at all
        notes = getattr(interrupt, "__notes__", None) or ["no output was half-written"]
        print(f"clirplug: interrupted; {'; '.join(notes)}", file=sys.stderr)
        return 130
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
