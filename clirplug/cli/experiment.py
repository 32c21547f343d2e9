"""``clirplug experiment``: run every stage of an experiment config, then write its report."""

HELP = "run an experiment config end to end (cached, resumable stages) and write its report"


def add_arguments(parser):
    parser.add_argument("config", metavar="CONFIG.yaml", help="experiment config (see docs/experiments.md)")
    add_run_options(parser, root=None)


def add_run_options(parser, root: str | None):
    """The options of an experiment run (also ``clirplug demo``'s); ``root`` is ``--root``'s default."""
    from clirplug.cli import add_executor, add_threads

    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config key, e.g. --set collection.path=DIR --set collection.lang=fr "
                             "(repeatable; the value is read as YAML)")
    shown = f"default: {root}" if root else "default: the current folder"
    action = parser.add_argument("--root", default=root, metavar="DIR",
                                 help=f"folder for runs/, indexes/ and models/ (= --set root=DIR; {shown})")
    parser.add_argument("--dry-run", action="store_true", help="list the stages and whether each would run")
    add_threads(parser, "workers for query-parallel stages (default: the config's jobs, else 1)", aliases=["--jobs"])
    add_executor(parser, default=None)
    parser.add_argument("--force", action="store_true", help="rerun every stage even when up to date")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    return action


def run_config(path, args) -> int:
    """Run the experiment config at ``path`` with the options of :func:`add_run_options`."""
    import sys

    from clirplug.cli import check_threads
    from clirplug.experiment.config import load_config
    from clirplug.experiment.runner import run_experiment

    check_threads(args.threads)
    overrides = list(args.overrides) + ([f"root={args.root}"] if args.root else [])
    config = load_config(path, overrides)
    outcomes = run_experiment(config, jobs=args.threads, dry_run=args.dry_run, force=args.force,
                              progress=not args.quiet, log=sys.stdout if args.dry_run else sys.stderr,
                              executor=args.executor, ray_address=args.ray_address)
    ran = sum(o.status == "ran" for o in outcomes)
    would = sum(o.status == "would run" for o in outcomes)
    if args.dry_run:
        print(f"{would} of {len(outcomes)} stages would run")
    else:
        print(f"{ran} of {len(outcomes)} stages ran; report in {config.run_dir / 'report.md'}", file=sys.stderr)
        print(config.run_dir / "report.md")
    return 0


def run(args):
    return run_config(args.config, args)
