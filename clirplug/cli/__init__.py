"""The ``clirplug`` command line.

Each command lives in its own light module ``clirplug.cli.<name>`` that defines
``HELP`` (one line of plain text), ``add_arguments(parser)`` and ``run(args)``. Heavy imports
(numpy, pandas, the JVM) happen inside ``run``, so ``clirplug --help`` stays fast. ``run``
only checks and unpacks the options and calls library functions with explicit parameters:
no function outside ``clirplug.cli`` takes an ``argparse.Namespace``.

Options shared by several commands are added by the ``add_*`` helpers below, so that they
have one name everywhere (``--output``, ``--src-lang``, ``--threads``); older names stay
accepted as hidden aliases (:func:`add_aliases`). An option naming what a command writes is an
:class:`Output` (and ``--run-tag`` a :class:`RunTag`): :func:`main` checks them all before the
command runs, so a bad output costs an error line, never the work.
"""

import argparse
import importlib
import signal
import sys
import textwrap

from clirplug import interrupts
from clirplug.errors import ClirplugError

# command name -> module; the order is the order of ``clirplug --help``.
COMMANDS = {
    "demo": "clirplug.cli.demo",
    "index": "clirplug.cli.index",
    "search": "clirplug.cli.search",
    "eval": "clirplug.cli.eval",
    "train": "clirplug.cli.train",
    "translate": "clirplug.cli.translate",
    "passages": "clirplug.cli.passages",
    "fuse": "clirplug.cli.fuse",
    "rerank": "clirplug.cli.rerank",
    "experiment": "clirplug.cli.experiment",
    "serve": "clirplug.cli.serve",
}


def add_aliases(container, action, *aliases):
    """Let the option names ``aliases`` (old names) set ``action`` too, hidden from help and usage.

    ``container`` is the parser or argument group that added ``action``. argparse prints every
    option string of an action, so an alias is entered in the parser's table of option strings
    only: it parses as the option itself (same type, same ``required``), but ``--help`` shows
    the one current name.
    """
    table = container._option_string_actions  # shared by a parser and its argument groups
    for alias in aliases:
        if alias in table:
            raise ValueError(f"option {alias} is already defined")
        table[alias] = action
    return action


class Checked(argparse.Action):
    """An option stored as given and checked by :func:`main` before the command runs (``check(args)``)."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)

    def check(self, args) -> None:
        raise NotImplementedError


class Output(Checked):
    """An option naming a file (with ``folder=True``, a folder) the command writes; ``stdout=True``: ``-``
    is standard output. Checked by :func:`clirplug.atomic.check_output`."""

    def __init__(self, option_strings, dest, folder: bool = False, stdout: bool = False, **options):
        super().__init__(option_strings, dest, **options)
        self.folder, self.stdout = folder, stdout

    def check(self, args) -> None:
        from clirplug.atomic import check_output

        value = getattr(args, self.dest)
        if value is not None:
            check_output(value, self.option_strings[0], folder=self.folder, stdout=self.stdout)


def add_output(container, help: str, required: bool = True, metavar: str = "FILE", **options):
    """``--output FILE`` (old name ``--out``): the file or folder a command writes (``options``: :class:`Output`'s)."""
    return add_aliases(container, container.add_argument("--output", action=Output, required=required,
                                                         metavar=metavar, help=help, **options), "--out")


def add_src_lang(container, help: str = "query (source) language, for tokenization (default: de)"):
    """``--src-lang`` (alias ``--lang``): the language of the queries or source sentences."""
    from clirplug.lucene.languages import LANGUAGES

    return add_aliases(container, container.add_argument("--src-lang", default="de", metavar="LANG", choices=sorted(LANGUAGES),
                                                         help=help),
                       "--lang")


class RunTag(Checked):
    """``--run-tag``: the run's last column, given or taken from ``--output`` (:func:`run_tag`)."""

    def check(self, args) -> None:
        run_tag(args)


def run_tag(args) -> str:
    """The run tag of :func:`add_run_file`'s options: ``--run-tag``, else the ``--output`` file's name without
    ``.trec``/``.txt`` (``clirplug`` for standard output); one line naming the option when it cannot be written."""
    from pathlib import Path

    from clirplug.atomic import STDOUT
    from clirplug.io.runs import DEFAULT_TAG, is_token

    if args.run_tag is not None:
        if not is_token(args.run_tag):
            raise ClirplugError(f"--run-tag {args.run_tag!r}: a run tag cannot be empty or hold white space")
        return args.run_tag
    if args.output == STDOUT:
        return DEFAULT_TAG
    tag = Path(args.output).name.removesuffix(".trec").removesuffix(".txt")
    if not is_token(tag):
        raise ClirplugError(f"--output {args.output}: the run tag taken from its name, {tag!r}, is empty or holds "
                            "white space; give --run-tag TAG")
    return tag


def add_run_file(container):
    """``--run-tag`` and ``--score-format``: the last column and the score digits of the run a command writes."""
    from clirplug.io.runs import SCORE_FORMATS

    container.add_argument("--run-tag", action=RunTag, default=None, metavar="TAG",
                           help="run tag, the last column (default: the output file's name without .trec/.txt; "
                                "clirplug with --output -)")
    container.add_argument("--score-format", choices=list(SCORE_FORMATS), default="exact",
                           help="exact: every digit of the score (default); pyserini: six decimals, as Pyserini "
                                "writes them, so that runs diff cleanly (close scores may then tie: docs/cli.md)")


def notes_stream(output):
    """Where a command prints what it did: stdout, or stderr when ``output`` (``-``) is stdout."""
    from clirplug.atomic import STDOUT

    return sys.stderr if output == STDOUT else sys.stdout


def write_run_file(frame, args, depth: int, summary: str) -> None:
    """Write ``frame`` to ``--output`` (at most ``depth`` documents per query) as :func:`add_run_file`'s options say,
    then print ``wrote OUTPUT: summary`` (:func:`notes_stream`)."""
    from clirplug.io.runs import write_run

    write_run(frame, args.output, tag=run_tag(args), depth=depth, score_format=args.score_format)
    print(f"wrote {args.output}: {summary}", file=notes_stream(args.output))


TOPICS_HELP = "topics: JSONL, HC4/NeuCLIR JSONL, TREC SGML, TSV (qid<TAB>text), or irds:ID (an ir_datasets id)"


def add_max_passage(container, hits_default: str):
    """Pyserini's ``--max-passage``, ``--max-passage-hits`` and ``--max-passage-delimiter``: a run over passages
    (ids ``<page id>#<k>``) taken as a run over pages, each scored by its best passage (MaxP)."""
    from clirplug.passages import DELIMITER

    group = container.add_argument_group("passages (MaxP: a page scored by its best passage)")
    group.add_argument("--max-passage", action="store_true",
                       help="the documents are passages: rank pages by their best passage")
    group.add_argument("--max-passage-hits", type=int, default=None, metavar="N",
                       help=f"pages per query with --max-passage (default: {hits_default})")
    group.add_argument("--max-passage-delimiter", default=DELIMITER, metavar="STR",
                       help=f"between a page id and a passage number in a passage id (default: {DELIMITER})")


def max_passage_run(frame, args, hits: int):
    """``frame`` as :func:`add_max_passage`'s options say: unchanged, or its pages by MaxP (``hits`` pages per
    query unless ``--max-passage-hits``); a one-line error for a MaxP option without ``--max-passage``."""
    from clirplug.passages import DELIMITER, max_passage

    if not args.max_passage:
        if args.max_passage_hits is not None or args.max_passage_delimiter != DELIMITER:
            raise ClirplugError("--max-passage-hits and --max-passage-delimiter need --max-passage")
        return frame
    return max_passage(frame, args.max_passage_hits or hits, args.max_passage_delimiter)


def add_topic_lang(container):
    """``--topic-lang LANG``: the language taken from multilingual topics (HC4/NeuCLIR JSONL, ``irds:`` ids)."""
    return container.add_argument(
        "--topic-lang", default=None, metavar="LANG",
        help="language of multilingual topics (HC4/NeuCLIR JSONL, irds:ID): en, or a translation's code (fa, fas); "
             "LANG:mt for the machine translation (default: English for HC4/NeuCLIR files, the dataset's own queries "
             "for irds:ID)")


def add_threads(container, help: str, default: int | None = None, aliases=()):
    """``--threads N``: parallel workers of a command (Pyserini's name); default None lets the command decide.

    ``aliases`` are older names of the option (``--jobs``), hidden (:func:`add_aliases`). The command
    checks N >= 1 itself (:func:`check_threads`), so a bad value is one error line.
    """
    return add_aliases(container, container.add_argument("--threads", type=int, default=default, metavar="N", help=help),
                       *aliases)


def add_executor(container, default: str | None = "local"):
    """``--executor local|ray`` and ``--ray-address ADDR``: where a command's parallel workers run
    (:mod:`clirplug.executor`); a ``default`` of None leaves the choice to the command (a config's key)."""
    from clirplug.executor import EXECUTORS

    shown = f" (default: {default})" if default else " (default: the config's executor, else local)"
    container.add_argument("--executor", choices=EXECUTORS, default=default,
                           help="local: worker processes on this machine; ray: Ray tasks" + shown)
    container.add_argument("--ray-address", metavar="HOST:PORT", default=None,
                           help="the Ray cluster to run on (ray start --head prints it; default: Ray started on "
                                "this machine); the index and models must be at the same paths on every node")


def executor_settings(args, jobs: int):
    """The :class:`clirplug.executor.ExecutorSettings` of :func:`add_executor`'s options and ``jobs`` workers."""
    from clirplug.executor import ExecutorSettings

    check_threads(jobs)
    if args.ray_address and args.executor != "ray":
        raise ClirplugError("--ray-address needs --executor ray")
    return ExecutorSettings(args.executor, jobs, args.ray_address)


def check_threads(threads):
    """Refuse a ``--threads`` below 1 (None, the default, passes)."""
    if threads is not None and threads < 1:
        raise ClirplugError(f"--threads must be at least 1, got {threads}")


def method_list(title: str, methods: dict) -> str:
    """An epilog listing ``name -> one-line description`` (one line each)."""
    width = max(map(len, methods))
    return f"{title}:\n" + "".join(f"  {name.ljust(width)}  {text}\n" for name, text in methods.items())


def add_commands(subparsers, commands):
    """Register each ``name -> module`` of ``commands`` as a subcommand."""
    for name, module_name in commands.items():
        module = importlib.import_module(module_name)
        parser = subparsers.add_parser(name, help=module.HELP, description=textwrap.fill(module.HELP, 79),
                                       formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(parser)
        parser.set_defaults(run=module.run, checked=[action for action in parser._actions if isinstance(action, Checked)])


DESCRIPTION = """\
Cross-language information retrieval on top of Pyserini/Anserini: index a
collection, translate queries (direct translation, probabilistic structured
queries), search, rerank (BOW-FD, boosting), fuse and evaluate TREC runs."""

EPILOG = "Run 'clirplug COMMAND --help' for the options of a command."


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every command registered."""
    parser = argparse.ArgumentParser(prog="clirplug", description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    from clirplug import __version__

    parser.add_argument("--version", action="version", version=f"clirplug {__version__}")
    add_commands(parser.add_subparsers(title="commands", metavar="COMMAND", required=True), COMMANDS)
    return parser


def main(argv=None) -> int:
    """Parse ``argv``, run the command, print user errors without a traceback.

    Ctrl-C and SIGTERM (``kill``, a job scheduler) stop a command alike, once
    (:func:`clirplug.interrupts.stop_once`): the command cleans up and says in one line what is left, and
    a further signal is ignored. Without ``argv`` (the program's own command line) they stay ignored after
    an interrupt, so that none cuts the process's exit short; an in-process call gets its handlers back.
    """
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    args = build_parser().parse_args(argv)
    previous = {number: signal.getsignal(number) for number in interrupts.SIGNALS}
    for number, handler in previous.items():
        if handler is not signal.SIG_IGN:  # a command started in the background keeps ignoring Ctrl-C
            signal.signal(number, interrupts.stop_once)
    interrupted = False
    try:
        for action in args.checked:
            action.check(args)
        result = args.run(args)
    except ClirplugError as error:
        print(f"clirplug: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as interrupt:  # the notes say what is left: outputs are written whole or not at all
        interrupted = True
        for number in interrupts.SIGNALS:  # also when the interrupt came another way than stop_once
            signal.signal(number, signal.SIG_IGN)
        notes = getattr(interrupt, "__notes__", None) or ["no output was half-written"]
        print(f"clirplug: interrupted; {'; '.join(notes)}", file=sys.stderr)
        return 130
    finally:
        if not (interrupted and argv is None):
            for number, handler in previous.items():
                signal.signal(number, handler)
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
