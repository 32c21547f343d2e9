"""``clirplug fuse``: combine runs by weighted Borda count, RRF, CombSUM, CombMNZ or learned weights."""

from clirplug.cli import add_output, add_run_file, notes_stream, write_run_file

HELP = "fuse TREC runs (weighted Borda count, RRF, CombSUM, CombMNZ, learned weights), optionally tuning the weights"
CURVE_SUFFIXES = (".tsv", ".png")  # the files of --curve PREFIX


def add_arguments(parser):
    from clirplug.cli.options import add_settings
    from clirplug.fusion import FUSERS
    from clirplug.methods import FusionRun

    parser.add_argument("--runs", nargs="+", required=True, metavar="RUN", help="TREC runs to fuse")
    parser.add_argument("--method", default="borda", choices=list(FUSERS), help="fusion method (default: borda)")
    weights = parser.add_mutually_exclusive_group()
    weights.add_argument("--kappa", type=float, default=None,
                         help="two runs: weights (kappa, 1 - kappa) (default: 0.5, or tuned with --tune-on)")
    weights.add_argument("--weights", type=float, nargs="+", metavar="W",
                         help="one weight per run (learned: four per run, score borda rr hit, as an experiment learns them)")
    parser.add_argument("--depth", type=int, default=1000, help="K: top documents used of each run and kept (default: 1000)")
    add_output(parser, "fused TREC run to write (- for standard output)", stdout=True)
    add_run_file(parser)
    tune = parser.add_argument_group("kappa tuning (two runs)")
    tune.add_argument("--tune-on", metavar="QRELS", help="choose kappa by a grid on these (train) qrels")
    tune.add_argument("--tune-runs", nargs=2, metavar="RUN",
                      help="the two runs on the tuning topics (default: the --runs, restricted to the qrels' topics)")
    add_settings(tune, FusionRun, only=("grid_step", "measure"))  # the others: the experiment's learned fusion
    tune.add_argument("--curve", metavar="PREFIX",
                      help="write PREFIX.tsv and PREFIX.png with the curve (default: the output path + .kappa; "
                           "needed with --output -)")


def run(args):
    from pathlib import Path

    from clirplug.atomic import STDOUT, check_output
    from clirplug.errors import ClirplugError
    from clirplug.fusion import fuse
    from clirplug.fusion._common import kappa_weights
    from clirplug.fusion.tune import best_kappa, kappa_curve, kappa_grid, plot_curve, write_curve
    from clirplug.io.qrels import read_qrels
    from clirplug.io.runs import read_run

    prefix = args.curve or f"{args.output}.kappa"
    if args.tune_on:
        from clirplug import plots

        if not plots.available():
            raise ClirplugError(f"--tune-on draws the kappa curve ({prefix}.png): {plots.MISSING}")
        if args.curve is None and args.output == STDOUT:
            raise ClirplugError("--tune-on with --output - needs --curve PREFIX (the files of the kappa curve)")
        check_output(prefix, "--curve", suffixes=CURVE_SUFFIXES)
    runs = [read_run(path, empty=False) for path in args.runs]
    if args.depth < 1:
        raise ClirplugError(f"--depth must be at least 1, got {args.depth}")
    if (args.kappa is not None or args.tune_on) and len(runs) != 2:
        raise ClirplugError(f"--kappa and --tune-on need exactly two runs, got {len(runs)}; use --weights")
    if args.tune_runs and not args.tune_on:
        raise ClirplugError("--tune-runs needs --tune-on QRELS")
    if args.tune_on and args.kappa is not None:
        raise ClirplugError("give either --kappa or --tune-on, not both")
    weights = args.weights
    if args.tune_on:
        tuning = [read_run(path, empty=False) for path in args.tune_runs] if args.tune_runs else runs
        curve = kappa_curve(tuning, read_qrels(args.tune_on), args.method, kappa_grid(args.grid_step), args.depth,
                            args.measure, names=args.tune_runs or args.runs)
        kappa = best_kappa(curve)
        tsv, png = (prefix + suffix for suffix in CURVE_SUFFIXES)
        write_curve(curve, tsv)
        plot_curve(curve, png, labels=tuple(Path(p).name for p in args.runs))
        print(f"kappa = {kappa:g} ({args.measure} {curve[args.measure].max():.4f} on {args.tune_on});"
              f" curve in {tsv} and {png}", file=notes_stream(args.output))
        weights = [kappa, 1 - kappa]
    elif args.kappa is not None:
        weights = kappa_weights(args.kappa, "--kappa")
    fused = fuse(args.method, runs, weights=weights, depth=args.depth)
    write_run_file(fused, args, depth=args.depth, summary=f"{fused['qid'].nunique()} topics, {len(fused)} lines")
