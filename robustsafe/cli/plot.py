"""``robustsafe plot`` (training curves, Figure 2) and ``robustsafe xi-sweep`` (AMAD over xi)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from robustsafe.cli._common import (
    CLIError,
    _agent_eval_fields,
    _check_output,
    _csv_columns_match,
    _file_head,
    _load_run_agent,
    _open_vec_env,
    _write_or_keep,
    add_allow_large_eps_option,
    add_allow_other_env_option,
    add_attack_seed_option,
    add_derived_force_option,
    add_env_workers_option,
    check_attack_seed,
    check_derived_prefix,
    check_epsilon_budget,
    prefix_arg,
    run_agent_env,
)
from robustsafe.experiments.launchers import recorded_path


def cmd_xi_sweep(args: argparse.Namespace) -> int:
    import torch

    from robustsafe.experiments.xi_sweep import (
        XI_EVAL_NAME,
        XI_FORMAT,
        evaluate_xi_sweep,
        parse_xis,
    )
    from robustsafe.files import write_json_atomic

    torch.set_num_threads(1)
    agent = _load_run_agent(args.run)
    try:
        xis = parse_xis(args.xi)
    except ValueError as err:
        raise CLIError(str(err)) from None
    if args.episodes < 1:
        raise CLIError(f"--episodes must be >= 1, got {args.episodes}")
    check_attack_seed(args)
    eps = args.eps if args.eps is not None else agent.config.robust.epsilon
    check_epsilon_budget([eps], args.allow_large_eps)
    run = Path(args.run)
    out = Path(args.out) if args.out else (run if run.is_dir() else run.parent) / XI_EVAL_NAME
    _check_output(out, args.force, XI_EVAL_NAME)  # before any episode runs
    env_id = run_agent_env(args, agent, "its numbers there would describe")
    vec = _open_vec_env(args, env_id, min(args.num_envs, args.episodes), agent.config.env_kwargs)
    try:
        results = evaluate_xi_sweep(
            agent,
            vec,
            xis,
            eps,
            episodes=args.episodes,
            seed=args.seed,
            attack_seed=args.attack_seed,
            attack_space=args.attack_space,
        )
    except ValueError as err:
        raise CLIError(str(err)) from None
    finally:
        vec.close()
    payload = {
        "format": XI_FORMAT,
        "agent": recorded_path(str(args.run)),  # (a Ray task: the driver's)
        "env_id": env_id,
        **_agent_eval_fields(args, agent),
        "epsilon": eps,
        "xi_values": xis,
        "results": results,
    }
    for r in results:
        label = r["attack"] + (f" xi {r['xi']:g}" if "xi" in r else "")
        print(
            f"{label:<14} reward {r['reward_mean']:8.2f} ± {r['reward_std']:6.2f}   "
            f"cost {r['cost_mean']:7.2f} ± {r['cost_std']:6.2f}"
        )
    _write_or_keep(out, lambda path: write_json_atomic(path, payload))
    print(f"written to {out}")
    return 0


def _figure_prefix(out: str, force: bool, header: tuple[str, ...]) -> Path:
    """``--out fig``, ``fig.png`` or ``fig.pdf``: the prefix of fig.png, fig.pdf, fig.csv (not
    one whose CSV would replace a run's metrics.csv, nor, without ``force``, another's files:
    a fig.csv whose columns are not ``header``, the figure's own)."""
    path = prefix_arg(out)
    prefix = path.with_suffix("") if path.suffix.lower() in (".png", ".pdf", ".csv") else path
    prefix = check_derived_prefix(prefix, force, others=(".png", ".pdf"), header=header)
    table_csv = None if force else _table_beside(prefix)
    if table_csv is not None and any(
        prefix.with_name(prefix.name + ext).exists() for ext in (".png", ".pdf", ".csv")
    ):
        raise CLIError(
            f"--out would replace {prefix}.*, a figure `robustsafe table` wrote with "
            f"{table_csv.name}; choose another --out, or pass --force"
        )
    return prefix


def _table_beside(prefix: Path) -> Path | None:
    """The table CSV beside a figure ``robustsafe table`` writes that ``prefix`` names
    (``table-amad-xi`` beside a table.csv of table's), if any: the xi figure's CSV has a sweep
    figure's columns, so only its name tells it apart."""
    from robustsafe.experiments.appendix import MIX_FIGURE, XI_FIGURE
    from robustsafe.experiments.table_format import CSV_FIELDS

    for suffix in (MIX_FIGURE, XI_FIGURE):
        base = prefix.name.removesuffix(suffix)
        if base and base != prefix.name:
            csv = prefix.with_name(base + ".csv")
            if csv.is_file() and _csv_columns_match(_file_head(csv), CSV_FIELDS):
                return csv
    return None


def cmd_plot_curves(args: argparse.Namespace) -> int:
    from robustsafe.experiments.plots import (
        CURVE_CSV_FIELDS,
        load_training_run,
        write_curves_figure,
    )

    prefix = _figure_prefix(args.out, args.force, CURVE_CSV_FIELDS)
    try:
        runs = [load_training_run(r) for r in args.runs]
        paths, notes = write_curves_figure(runs, prefix, args.smooth)
    except ValueError as err:
        raise CLIError(str(err)) from None
    for note in notes:
        print(f"note: {note}")
    print("written: " + ", ".join(str(p) for p in paths))
    return 0


def cmd_plot_sweep(args: argparse.Namespace) -> int:
    from robustsafe.experiments.figures import XI_CSV_FIELDS
    from robustsafe.experiments.plots import load_sweep_file, write_sweep_figure

    prefix = _figure_prefix(args.out, args.force, XI_CSV_FIELDS)
    limit = args.cost_limit
    if limit is not None and not (math.isfinite(limit) and limit >= 0):
        raise CLIError(f"--cost-limit must be a number >= 0, got {limit}")
    attacks = None
    if args.attacks:
        attacks = [a.strip() for a in args.attacks.split(",") if a.strip()]
    try:
        runs = [load_sweep_file(f) for f in args.files]
        paths = write_sweep_figure(runs, prefix, attacks, args.cost_limit)
    except ValueError as err:
        raise CLIError(str(err)) from None
    print("written: " + ", ".join(str(p) for p in paths))
    return 0


def add_xi_sweep(sub: argparse._SubParsersAction) -> None:
    xs = sub.add_parser(
        "xi-sweep", help="AMAD at several xi against MAD (the appendix's MAD/AMAD figure)"
    )
    xs.add_argument("--run", required=True, help="run directory or agent .pt file")
    xs.add_argument("--xi", default="0.05,0.1,0.2,0.3,0.5,0.75", help="fractions attacked")
    xs.add_argument("--env", help="environment id (default: the agent's)")
    add_allow_other_env_option(xs, "sweep a --run agent")
    xs.add_argument("--eps", type=float, help="epsilon (default: the run's robust.epsilon)")
    xs.add_argument("--episodes", type=int, default=50, help="paired episodes per attacker")
    xs.add_argument("--seed", type=int, default=0, help="seed of the evaluation episodes")
    add_attack_seed_option(xs)
    xs.add_argument(
        "--attack-space",
        default="raw",
        choices=("raw", "normalized"),
        help="units of epsilon: raw observations (paper) or normaliser std",
    )
    xs.add_argument(
        "--out", help="JSON file (default: eval-xi.json in RUN, or beside RUN if it is a file)"
    )
    xs.add_argument("--force", action="store_true", help="replace an existing --out file")
    add_allow_large_eps_option(xs)
    xs.add_argument("--num-envs", type=int, default=10, help="parallel environments")
    add_env_workers_option(xs, default=2)
    xs.set_defaults(func=cmd_xi_sweep)


def add_plot(sub: argparse._SubParsersAction) -> None:
    pl = sub.add_parser("plot", help="figures: training curves, reward/cost against epsilon")
    pl_sub = pl.add_subparsers(dest="plot_command", required=True)
    pc = pl_sub.add_parser(
        "curves",
        help="training curves (reward, cost, lambda, epsilon) of run directories; the seeds "
        "of one (env, learner, mode, preset) as mean and band",
    )
    pc.add_argument("runs", nargs="+", metavar="RUN", help="run directories (metrics.csv)")
    pc.add_argument(
        "--out", required=True, help="output prefix: writes OUT.png, OUT.pdf and OUT.csv"
    )
    add_derived_force_option(pc)
    pc.add_argument(
        "--smooth",
        type=int,
        default=1,
        help="average each seed over the last N epochs before the mean and band (1: none)",
    )
    pc.set_defaults(func=cmd_plot_curves)
    ps = pl_sub.add_parser(
        "sweep",
        help="the paper's Figure 2: reward and cost against epsilon per attacker, from "
        "`robustsafe evaluate --eps START:STOP:COUNT --out X.json` files (seeds as bands)",
    )
    ps.add_argument("files", nargs="+", metavar="EVAL.json", help="evaluation sweep files")
    ps.add_argument(
        "--out", required=True, help="output prefix: writes OUT.png, OUT.pdf and OUT.csv"
    )
    add_derived_force_option(ps)
    ps.add_argument(
        "--attacks",
        help="comma-separated attackers to draw (default: all evaluated), e.g. "
        "random,mad,amad,mc,mr",
    )
    ps.add_argument(
        "--cost-limit",
        type=float,
        help="the cost limit line (default: the one the files record, else 5)",
    )
    ps.set_defaults(func=cmd_plot_sweep)
