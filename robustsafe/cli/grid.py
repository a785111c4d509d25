"""``robustsafe grid``, ``table`` and ``report``: a study, its tables and its page."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from robustsafe.cli._common import (
    CLIError,
    _check_derived_output,
    add_derived_force_option,
    add_renamed_option,
    check_derived_prefix,
    check_out_dir,
    prefix_arg,
)
from robustsafe.cli.train import DEFAULT_PRESET
from robustsafe.presets import PRESETS

# The evaluation options of grid, with their defaults.
_EVAL_DEFAULTS = {"attacks": "none,random,mad,amad,mc,mr", "episodes": 50, "eval_seed": 0}
_APPENDIX_OPTIONS = ("--appendix", "--appendix-attacks", "--xi-sweep")


def cmd_grid(args: argparse.Namespace) -> int:
    from robustsafe.experiments.grid import format_results, run_grid

    _check_launch_options(args)
    check_out_dir(args.out)
    evaluation = _evaluation_options(args)
    appendix_attacks, xi_sweep = _appendix_options(args)
    train_args = _train_args(args)
    try:
        spec = _grid_spec(args, evaluation, appendix_attacks, xi_sweep, train_args)
        if args.dry_run:
            return _print_dry_run(args, spec)
        if args.backend == "ray":  # before the plan is printed or --out made
            _check_ray()
        with _sigterm_as_interrupt():
            results = run_grid(spec)
    except (ValueError, RuntimeError) as err:
        raise CLIError(str(err)) from None
    except KeyboardInterrupt:
        print(
            "robustsafe grid: interrupted; the trainings and evaluations it started were stopped "
            "(their saved epochs are kept). Run the same command again to resume.",
            file=sys.stderr,
        )
        return 130
    print(format_results(results))
    return 0 if all(r.ok for r in results) else 1


def _check_launch_options(args: argparse.Namespace) -> None:
    """Check --parallel-runs, --backend, --calibrate and --machine-factor together."""
    if args.parallel_runs is not None and args.parallel_runs < 1:
        raise CLIError(f"--parallel-runs must be >= 1, got {args.parallel_runs}")
    if args.backend == "ray" and args.parallel_runs is not None:
        raise CLIError(
            "--parallel-runs is for the local backend only: with --backend ray the cluster's "
            "CPUs and --cpus-per-run set how many runs go at once"
        )
    if (args.calibrate or args.machine_factor is not None) and not args.dry_run:
        raise CLIError("--calibrate and --machine-factor go with --dry-run")
    if args.calibrate and args.machine_factor is not None:
        raise CLIError("give --calibrate (measure now) or --machine-factor, not both")
    if args.machine_factor is not None and not 0 < args.machine_factor < float("inf"):
        raise CLIError(f"--machine-factor must be a positive number, got {args.machine_factor}")


def _evaluation_options(args: argparse.Namespace) -> dict:
    """The evaluation options, defaults filled in; with --no-eval, none may be given."""
    given = {k: getattr(args, k) for k in _EVAL_DEFAULTS if getattr(args, k) is not None}
    if args.no_eval:
        options = [f"--{k.replace('_', '-')}" for k in given]
        appendix = (args.appendix, args.appendix_attacks, args.xi_sweep)
        options += [o for o, v in zip(_APPENDIX_OPTIONS, appendix, strict=True) if v]
        if options:
            raise CLIError(
                f"--no-eval trains only, so {', '.join(options)} would do nothing; drop them, "
                "or --no-eval"
            )
    return {**_EVAL_DEFAULTS, **given}


def _appendix_options(args: argparse.Namespace) -> tuple[str, str]:
    """The appendix's extra attackers and xi values; --appendix fills in the ones not given."""
    from robustsafe.experiments.grid import APPENDIX_ATTACKS
    from robustsafe.experiments.xi_sweep import DEFAULT_XIS

    appendix_attacks = args.appendix_attacks or ""
    xi_sweep = args.xi_sweep or ""
    if args.appendix:
        appendix_attacks = appendix_attacks or ",".join(APPENDIX_ATTACKS)
        xi_sweep = xi_sweep or ",".join(f"{x:g}" for x in DEFAULT_XIS)
    return appendix_attacks, xi_sweep


def _train_args(args: argparse.Namespace) -> list[str]:
    """The train options every run gets: --epochs, --total-steps, then --config's and --set's."""
    train_args: list[str] = []
    if args.epochs is not None:
        train_args += ["--epochs", str(args.epochs)]
    if args.total_steps is not None:
        train_args += ["--total-steps", str(args.total_steps)]
    if args.config is not None:  # the file's settings as --set items, before --set's own
        for item in _config_sets(args.config):
            train_args += ["--set", item]
    for item in args.set or []:
        train_args += ["--set", item]
    return train_args


def _config_sets(config: str) -> list[str]:
    """The --set items of a --config file, with a note on the settings the grid names itself."""
    from robustsafe.rundir import NAMING_SETTINGS, load_settings_file

    try:
        file_named, file_sets = load_settings_file(config)
    except (ValueError, FileNotFoundError) as err:
        raise CLIError(str(err)) from None
    if file_named:
        names = [k for k, v in NAMING_SETTINGS.items() if v in file_named]
        print(
            f"note: --config {config}: {', '.join(names)} not used (the grid's "
            "--envs, --seeds, --preset, --algos, --modes name every run)"
        )
    return file_sets


def _grid_spec(
    args: argparse.Namespace,
    evaluation: dict,
    appendix_attacks: str,
    xi_sweep: str,
    train_args: list[str],
):
    """The GridSpec of the command line."""
    from robustsafe.experiments.concurrency import default_parallel_runs
    from robustsafe.experiments.grid import GridSpec

    return GridSpec(
        envs=args.envs,
        modes=args.modes,
        algos=args.algos,
        seeds=args.seeds,
        preset=args.preset,
        out=Path(args.out),
        workers=default_parallel_runs() if args.parallel_runs is None else args.parallel_runs,
        attacks=evaluation["attacks"],
        episodes=evaluation["episodes"],
        eval_seed=evaluation["eval_seed"],
        train_args=tuple(train_args),
        eval_workers=args.eval_env_workers,
        eval_num_envs=args.eval_num_envs,
        evaluate=not args.no_eval,
        backend=args.backend,
        cpus_per_run=args.cpus_per_run,
        appendix_attacks=appendix_attacks,
        xi_sweep=xi_sweep,
        keep_saved_settings=args.keep_saved_settings,
    )


def _print_dry_run(args: argparse.Namespace, spec) -> int:
    """--dry-run: print the plan and its expected cost; exit status 0."""
    from robustsafe.experiments.compute import format_cost
    from robustsafe.experiments.grid import format_plan, plan_grid

    plan = plan_grid(spec)
    print(format_plan(plan))
    print(format_cost(spec, plan, machine_factor=_machine_factor(args)))
    return 0


def _check_ray() -> None:
    """--backend ray: refuse before any output if Ray or its cluster address is missing."""
    from robustsafe.experiments.ray_launcher import RAY_MISSING, check_ray_address

    try:
        import ray  # noqa: F401 (the launcher's; here to refuse before any output)
    except ImportError:
        raise CLIError(RAY_MISSING) from None
    check_ray_address(os.environ.get("RAY_ADDRESS"))


def _machine_factor(args: argparse.Namespace) -> float | None:
    """``--machine-factor``, or with ``--calibrate`` this machine's, measured now."""
    if not args.calibrate:
        return args.machine_factor
    from robustsafe.experiments.machine_speed import measure

    print("calibrating: a short training of the reference task (about a minute) ...", flush=True)
    try:
        factor, seconds = measure()
    except subprocess.CalledProcessError as err:
        raise CLIError(
            f"--calibrate: the reference training failed (exit {err.returncode}); `robustsafe "
            "train --env SafetyCarCircle-v0 --preset fast --epochs 3` shows why"
        ) from None
    print(
        f"this machine: {seconds * 1e6:.0f} us per env step of the reference training, "
        f"x{factor:.2f} the rates' machine (load average {os.getloadavg()[0]:.1f}); next time "
        f"pass --machine-factor {factor:.2f}"
    )
    return factor


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """Treat SIGTERM like Ctrl-C inside the block, so that a ``kill`` of the grid also stops the
    processes it started instead of leaving them running on their own."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def cmd_table(args: argparse.Namespace) -> int:
    from robustsafe.experiments.appendix import write_appendix
    from robustsafe.experiments.runs_table import write_runs_tables
    from robustsafe.experiments.table import collect_table
    from robustsafe.experiments.table_format import (
        CSV_FIELDS,
        format_markdown,
        write_tables,
    )
    from robustsafe.files import staged_files

    runs = Path(args.runs_dir)
    if not runs.is_dir():  # before --out, which depends on it
        raise CLIError(f"{runs} is not a directory of runs (give the folder a grid wrote)")
    prefix = check_derived_prefix(
        prefix_arg(args.out) if args.out else runs / "table",
        args.force,
        others=(".md", ".tex"),
        side_files=True,  # PREFIX-costs.md, PREFIX-runs.csv, PREFIX-appendix.tex, ...
        header=CSV_FIELDS,  # (another command's CSV is not a table to rebuild)
    )
    try:
        own = [a.strip() for a in args.attacks.split(",") if a.strip()]
        table = collect_table(runs, average=args.average, own_attacks=own)
        print(format_markdown(table))
        with staged_files(prefix) as staged:  # every file, or none if one fails
            written = write_tables(runs, staged, table=table)
            written += write_runs_tables(runs, staged, table=table)
            if not args.no_appendix:
                written += write_appendix(runs, staged, table=table)
        paths = [prefix.parent / p.name for p in written]
    except (FileNotFoundError, ValueError) as err:
        raise CLIError(str(err)) from None
    print("written: " + ", ".join(str(p) for p in paths))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from robustsafe.experiments.report import write_report

    if args.out is not None and Path(args.out).suffix.lower() not in (".html", ".htm"):
        raise CLIError(f"--out {args.out}: the report is an HTML page; name it *.html")
    if not Path(args.runs_dir).is_dir():  # before the default page, which lies in it
        raise CLIError(f"{args.runs_dir} is not a directory of runs (give the folder a grid wrote)")
    page = Path(args.out) if args.out is not None else Path(args.runs_dir) / "report.html"
    _check_derived_output(page, (".html", ".htm"), args.force)  # the default place too
    try:
        page, notes = write_report(args.runs_dir, args.out)
    except ValueError as err:
        raise CLIError(str(err)) from None
    for note in notes:
        print(f"note: {note}")
    print(f"written: {page}")
    return 0


def add_grid(sub: argparse._SubParsersAction) -> None:
    g = sub.add_parser(
        "grid",
        help="train and evaluate every (env, mode, seed) combination, resumably",
        description="Train and evaluate every (env, learner, mode, seed) combination, "
        "resumably. Each run's settings, later ones winning: the --preset, then the --config "
        "file, then --set KEY=VALUE, then --epochs / --total-steps.",
    )
    g.add_argument("--envs", required=True, help="comma-separated env ids")
    g.add_argument("--modes", default="vanilla", help="comma-separated training modes")
    g.add_argument(
        "--algos",
        default="ppol",
        help="comma-separated learners: ppol, focops, sac-lag, sac-lag:ALPHA (entropy weight), "
        "cvpo",
    )
    g.add_argument("--seeds", default="0", help="comma-separated seeds, e.g. 0,1,2")
    g.add_argument("--preset", default=DEFAULT_PRESET, choices=PRESETS, help="settings preset")
    g.add_argument("--out", default="runs/grid", help="root of the run directories")
    add_renamed_option(
        g,
        "--parallel-runs",
        "--workers",
        type=int,
        default=None,
        help="runs (trainings, evaluations) at a time, local backend only (default: enough to "
        "keep the cores busy, ceil(cores / 1.46), at most one per 3 GiB of free memory: 2 on "
        "2 cores; a run alone keeps about 1.46 busy)",
    )
    # None: not given (so that --no-eval can refuse them); the defaults are _EVAL_DEFAULTS'
    g.add_argument(
        "--attacks",
        help=f"attackers of each evaluation (default: {_EVAL_DEFAULTS['attacks']})",
    )
    g.add_argument(
        "--episodes",
        type=int,
        help=f"paired episodes per attacker (default: {_EVAL_DEFAULTS['episodes']})",
    )
    g.add_argument(
        "--eval-seed",
        type=int,
        help=f"seed of the evaluation episodes (default: {_EVAL_DEFAULTS['eval_seed']})",
    )
    add_renamed_option(
        g,
        "--eval-env-workers",
        "--eval-workers",
        type=int,
        default=2,
        help="env subprocesses of each evaluation (evaluate --env-workers)",
    )
    g.add_argument(
        "--eval-num-envs",
        type=int,
        default=10,
        help="envs of each evaluation (evaluate --num-envs)",
    )
    g.add_argument("--no-eval", action="store_true", help="train only")
    g.add_argument(
        "--keep-saved-settings",
        action="store_true",
        help="go on with runs in --out that hold other settings than the grid's (resumed and "
        "skipped as saved); without it the grid refuses them (--epochs never counts)",
    )
    g.add_argument(
        "--backend",
        default="local",
        choices=("local", "ray"),
        help="local: subprocesses here; ray: tasks on the Ray cluster of RAY_ADDRESS (no shared "
        "disk needed: results come back to --out), as many at once as its CPUs allow",
    )
    g.add_argument(
        "--cpus-per-run",
        type=int,
        default=2,
        help="CPUs a Ray task asks for; Ray runs CPUs // this at once",
    )
    g.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan, and each run's env steps and expected wall time (the compute "
        "model), and stop",
    )
    g.add_argument(
        "--calibrate",
        action="store_true",
        help="with --dry-run: first time a short training here and scale the expected times "
        "to this machine (and its load now)",
    )
    g.add_argument(
        "--machine-factor",
        type=float,
        help="with --dry-run: multiply the expected times by this, a factor --calibrate printed "
        "(default: none, the times of the rates' machine)",
    )
    g.add_argument(
        "--appendix",
        action="store_true",
        help="also the appendix's evaluations: minr and mix:0.25,0.5,0.75 for vanilla, adv-mc, "
        "adv-mr (RUN/eval-appendix.json) and AMAD over xi for vanilla (RUN/eval-xi.json)",
    )
    g.add_argument(
        "--appendix-attacks", help="the extra attackers (default with --appendix: minr,mix:...)"
    )
    g.add_argument(
        "--xi-sweep", help="AMAD's xi values (default with --appendix: 0.05,0.1,0.2,0.3,0.5,0.75)"
    )
    g.add_argument("--epochs", type=int, help="epochs per run (default: the preset's)")
    g.add_argument(
        "--total-steps", type=int, help="env steps per run (default: the preset's epochs)"
    )
    g.add_argument(
        "--config",
        metavar="FILE.yaml",
        help="settings of every run from a YAML file in the format of a run's config.yaml (any "
        "subset of its keys; its env_id, seed, preset, algo and robust.mode are the grid's own "
        "options and are not used) (default: none)",
    )
    g.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="setting override of every run; repeatable (default: none)",
    )
    g.set_defaults(func=cmd_grid)


def add_table(sub: argparse._SubParsersAction) -> None:
    from robustsafe.experiments.table import AVERAGE_POOLS

    tb = sub.add_parser("table", help="the paper's Table 1 from a directory of evaluations")
    tb.add_argument("runs_dir", help="directory searched for eval.json files")
    tb.add_argument("--out", help="output prefix (default: RUNS_DIR/table): .md, .csv, .tex")
    add_derived_force_option(tb)
    tb.add_argument(
        "--no-appendix",
        action="store_true",
        help="Table 1 only (default: also PREFIX-appendix, -minr, -mix and -amad-xi files)",
    )
    tb.add_argument(
        "--average",
        choices=tuple(AVERAGE_POOLS),
        default="paper",
        help="what the Average column pools: paper = Natural and the five attackers (the mean of "
        "the six columns, what the paper's numbers are); attackers = the five attackers only "
        "(its captions' words) (default: paper)",
    )
    tb.add_argument(
        "--attacks",
        default="",
        metavar="NAMES",
        help="your own attackers (robustsafe.attacks.register_attacker), comma-separated: a "
        "column each after MR, in no Average (default: none, the paper's columns only)",
    )
    tb.set_defaults(func=cmd_table)


def add_report(sub: argparse._SubParsersAction) -> None:
    rp = sub.add_parser(
        "report",
        help="one self-contained HTML page of a grid: tables, figures, videos, runs, settings",
    )
    rp.add_argument("runs_dir", help="directory of run directories (as robustsafe grid writes)")
    rp.add_argument("--out", help="HTML file (default: RUNS_DIR/report.html)")
    add_derived_force_option(rp)
    rp.set_defaults(func=cmd_report)
