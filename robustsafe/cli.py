"""The ``robustsafe`` command."""

from __future__ import annotations

import argparse
import math
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from robustsafe.config import PRESETS, resolve


class CLIError(Exception):
    """A user error: printed as one line, exit status 2."""


# ----------------------------------------------------------------------------- train


def cmd_train(args: argparse.Namespace) -> int:
    from robustsafe.train import load_run_config, train

    out = (
        Path(args.out)
        if args.out
        else Path("runs") / args.env / f"{args.mode.replace(':', '')}-{args.preset}-seed{args.seed}"
    )
    try:
        if args.resume:  # continue with the saved settings; only the length may change
            if not (out / "state.pt").exists():
                raise FileNotFoundError(f"cannot resume: {out} holds no training state (state.pt)")
            cfg = load_run_config(out)
            if args.epochs is not None:
                cfg = replace(cfg, epochs=args.epochs)
            elif args.total_steps is not None:
                cfg = replace(cfg, epochs=max(1, math.ceil(args.total_steps / cfg.steps_per_epoch)))
        else:
            cfg = resolve(
                args.env,
                args.preset,
                mode=args.mode,
                seed=args.seed,
                workers=args.workers,
                num_envs=args.num_envs,
                obs_norm=args.obs_norm,
                sets=args.set or [],
                epochs=args.epochs,
                total_steps=args.total_steps,
            )
    except (ValueError, FileNotFoundError) as err:
        raise CLIError(str(err)) from None
    if not args.resume:
        from robustsafe.envs import make

        try:  # fail fast, with the list of valid ids, on a bad --env
            make(cfg.env_id).close()
        except ValueError as err:
            raise CLIError(str(err)) from None
    try:
        train(cfg, out, resume=args.resume, progress=not args.no_progress)
    except (FileExistsError, FileNotFoundError) as err:
        raise CLIError(str(err)) from None
    print(f"run saved in {out}")
    return 0


# ----------------------------------------------------------------------------- evaluate


def cmd_evaluate(args: argparse.Namespace) -> int:
    import torch

    from robustsafe.agent import load_agent
    from robustsafe.envs import VectorEnv
    from robustsafe.evaluate import (
        evaluate_agent,
        format_table,
        parse_epsilons,
        write_json_atomic,
        write_sweep,
    )

    torch.set_num_threads(1)  # small-batch inference beside busy env workers
    try:
        agent = load_agent(args.run)
    except (FileNotFoundError, ValueError) as err:
        raise CLIError(str(err)) from None
    env_id = args.env or agent.config.env_id
    if args.episodes < 1:
        raise CLIError(f"--episodes must be >= 1, got {args.episodes}")
    attacks = [a.strip() for a in args.attacks.split(",") if a.strip()]
    try:
        epsilons = parse_epsilons(args.eps)
        from robustsafe.attacks import make_attacker

        for name in attacks:  # check every name before any episode runs
            if name != "amad":
                make_attacker(name)
    except ValueError as err:
        raise CLIError(str(err)) from None
    num_envs = min(args.num_envs, args.episodes)
    try:
        vec = VectorEnv(env_id, num_envs, seed=args.seed, workers=args.workers)
    except ValueError as err:
        raise CLIError(str(err)) from None
    n_runs = 1 + sum(len([e for e in epsilons if e > 0]) for a in attacks if a != "none")
    bar = None
    if not args.no_progress:
        from tqdm import tqdm

        per_run = args.episodes * (vec.max_episode_steps or 1000)
        bar = tqdm(total=n_runs * per_run, unit="step", desc="evaluate", dynamic_ncols=True)
    try:
        results = evaluate_agent(
            agent,
            vec,
            episodes=args.episodes,
            seed=args.seed,
            attacks=attacks,
            epsilons=epsilons,
            attack_seed=args.attack_seed,
            attack_space=args.attack_space,
            xi=args.xi,
            on_step=None if bar is None else bar.update,
        )
    except ValueError as err:
        raise CLIError(str(err)) from None
    finally:
        vec.close()
        if bar is not None:
            bar.close()
    run = Path(args.run)
    out = Path(args.out) if args.out else (run if run.is_dir() else run.parent) / "eval.json"
    payload = {
        "agent": str(args.run),
        "env_id": env_id,
        "agent_epoch": agent.epoch,
        "train_mode": agent.config.robust.mode,
        "train_seed": agent.config.seed,
        "train_preset": agent.config.preset,
        "episodes": args.episodes,
        "seed": args.seed,
        "attack_seed": args.attack_seed,
        "actions": "deterministic (mean)",
        "epsilon_space": args.attack_space,
        "xi": args.xi,
        "results": [r.to_dict() for r in results],
    }
    write_json_atomic(out, payload)
    print(
        f"{env_id}: {args.episodes} paired episodes, seed {args.seed}, agent epoch "
        f"{agent.epoch}, epsilon in {args.attack_space} observation units"
    )
    print(format_table(results))
    print(f"written to {out}")
    if len(epsilons) > 1 and any(a != "none" for a in attacks):
        files = write_sweep(results, out.with_name(out.stem + "_sweep"), f"{env_id}")
        print("sweep written to " + ", ".join(str(f) for f in files))
    return 0


# ----------------------------------------------------------------------------- fit-critics


def cmd_fit_critics(args: argparse.Namespace) -> int:
    import torch

    from robustsafe.agent import load_agent, save_agent
    from robustsafe.envs import VectorEnv
    from robustsafe.fit_critics import fit_critics

    torch.set_num_threads(1)
    try:
        agent = load_agent(args.run)
    except (FileNotFoundError, ValueError) as err:
        raise CLIError(str(err)) from None
    if args.steps < 1:
        raise CLIError(f"--steps must be >= 1, got {args.steps}")
    run = Path(args.run)
    src = run / "agent.pt" if run.is_dir() else run
    out = Path(args.out) if args.out else src
    env_id = args.env or agent.config.env_id
    try:
        vec = VectorEnv(env_id, args.num_envs, seed=args.seed, workers=args.workers)
    except ValueError as err:
        raise CLIError(str(err)) from None
    try:
        history = fit_critics(
            agent,
            vec,
            steps=args.steps,
            seed=args.seed,
            on_epoch=lambda m: print(
                f"steps {m['env_steps']:>8.0f}  TD loss Q_r {m['loss_q_reward']:.4f}  "
                f"Q_c {m['loss_q_cost']:.4f}",
                flush=True,
            ),
        )
    except ValueError as err:
        raise CLIError(str(err)) from None
    finally:
        vec.close()
    save_agent(
        out, agent.config, agent.actor, agent.v_reward, agent.v_cost, agent.critics, agent.epoch
    )
    print(f"fitted Q_r and Q_c on {history[-1]['env_steps']:.0f} steps; agent written to {out}")
    return 0


# ----------------------------------------------------------------------------- grid, table


def cmd_grid(args: argparse.Namespace) -> int:
    from robustsafe.experiments.grid import (
        GridSpec,
        format_plan,
        format_results,
        plan_grid,
        run_grid,
    )

    train_args: list[str] = []
    if args.epochs is not None:
        train_args += ["--epochs", str(args.epochs)]
    if args.total_steps is not None:
        train_args += ["--total-steps", str(args.total_steps)]
    for item in args.set or []:
        train_args += ["--set", item]
    try:
        spec = GridSpec(
            envs=args.envs,
            modes=args.modes,
            seeds=args.seeds,
            preset=args.preset,
            out=Path(args.out),
            workers=args.workers,
            attacks=args.attacks,
            episodes=args.episodes,
            eval_seed=args.eval_seed,
            train_args=tuple(train_args),
            eval_workers=args.eval_workers,
            eval_num_envs=args.eval_num_envs,
            evaluate=not args.no_eval,
            backend=args.backend,
        )
        if args.dry_run:
            print(format_plan(plan_grid(spec)))
            return 0
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
    from robustsafe.experiments.table import collect_table, format_markdown, write_tables

    runs = Path(args.runs_dir)
    try:
        table = collect_table(runs)
        print(format_markdown(table))
        paths = write_tables(runs, Path(args.out) if args.out else runs / "table", table=table)
    except (FileNotFoundError, ValueError) as err:
        raise CLIError(str(err)) from None
    print("written: " + ", ".join(str(p) for p in paths))
    return 0


# ----------------------------------------------------------------------------- tabular


def cmd_tabular_demo(args: argparse.Namespace) -> int:
    from robustsafe.tabular.demo import run_demo

    print(run_demo(Path(args.out)))
    return 0


# ----------------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="robustsafe",
        description="Safe RL under observational attacks: train, attack, evaluate.",
    )
    sub = p.add_subparsers(dest="command", required=True)

    t = sub.add_parser("train", help="train a PPO-Lagrangian agent")
    t.add_argument("--env", default="SafetyCarRun-v0", help="environment id")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--preset", default="paper", choices=PRESETS, help="settings preset")
    t.add_argument(
        "--mode",
        default="vanilla",
        help="training mode: vanilla, random, adv-mc, adv-mr, adv-mix:W, sa-mad, sa-mc, sa-mr",
    )
    t.add_argument("--total-steps", type=int, help="environment steps (rounded up to epochs)")
    t.add_argument("--epochs", type=int, help="number of epochs (instead of --total-steps)")
    t.add_argument("--out", help="run directory (default runs/ENV/MODE-PRESET-seedSEED)")
    t.add_argument("--resume", action="store_true", help="continue the run in --out")
    t.add_argument("--workers", type=int, help="env subprocesses (0: in-process)")
    t.add_argument("--num-envs", type=int, help="parallel environments")
    t.add_argument("--obs-norm", action="store_true", help="observation normaliser (off: paper)")
    t.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a setting, e.g. ppo.actor_lr=1e-3",
    )
    t.add_argument("--no-progress", action="store_true", help="no progress bar")
    t.set_defaults(func=cmd_train)

    e = sub.add_parser("evaluate", help="evaluate an agent with deterministic actions")
    e.add_argument("--run", required=True, help="run directory or agent .pt file")
    e.add_argument("--episodes", type=int, default=50)
    e.add_argument("--seed", type=int, default=0, help="seed of the evaluation episodes")
    e.add_argument("--env", help="environment id (default: the agent's)")
    e.add_argument("--out", help="JSON file (default RUN/eval.json)")
    e.add_argument(
        "--attacks",
        default="none",
        help="comma-separated attackers: none,random,mad,amad,mc,mr,minr,mix:W",
    )
    e.add_argument(
        "--eps", default="0.05", help="epsilon: 0.05, a list 0.02,0.05 or a sweep 0:0.1:11"
    )
    e.add_argument(
        "--attack-space",
        default="raw",
        choices=("raw", "normalized"),
        help="units of epsilon: raw observations (paper) or normaliser std",
    )
    e.add_argument("--xi", type=float, default=0.1, help="AMAD: fraction of states attacked")
    e.add_argument(
        "--attack-seed",
        type=int,
        default=0,
        help="seed of the attackers' random numbers (each episode gets its own stream from it)",
    )
    e.add_argument("--num-envs", type=int, default=10)
    e.add_argument("--workers", type=int, default=2)
    e.add_argument("--no-progress", action="store_true")
    e.set_defaults(func=cmd_evaluate)

    f = sub.add_parser("fit-critics", help="fit the attackers' Q critics for an agent")
    f.add_argument("--run", required=True, help="run directory or agent .pt file")
    f.add_argument("--steps", type=int, default=200_000, help="on-policy env steps to collect")
    f.add_argument("--out", help="agent file to write (default: overwrite the input agent)")
    f.add_argument("--env", help="environment id (default: the agent's)")
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--num-envs", type=int, default=20)
    f.add_argument("--workers", type=int, default=2)
    f.set_defaults(func=cmd_fit_critics)

    g = sub.add_parser(
        "grid", help="train and evaluate every (env, mode, seed) combination, resumably"
    )
    g.add_argument("--envs", required=True, help="comma-separated env ids")
    g.add_argument("--modes", default="vanilla", help="comma-separated training modes")
    g.add_argument("--seeds", default="0", help="comma-separated seeds, e.g. 0,1,2")
    g.add_argument("--preset", default="paper", choices=PRESETS)
    g.add_argument("--out", default="runs/grid", help="root of the run directories")
    g.add_argument("--workers", type=int, default=1, help="trainings at a time (1 on 2 cores)")
    g.add_argument("--attacks", default="none,random,mad,amad,mc,mr")
    g.add_argument("--episodes", type=int, default=50)
    g.add_argument("--eval-seed", type=int, default=0)
    g.add_argument("--eval-workers", type=int, default=2)
    g.add_argument("--eval-num-envs", type=int, default=10)
    g.add_argument("--no-eval", action="store_true", help="train only")
    g.add_argument("--backend", default="local", choices=("local", "ray"))
    g.add_argument("--dry-run", action="store_true", help="print the plan and stop")
    g.add_argument("--epochs", type=int, help="epochs per run (default: the preset's)")
    g.add_argument("--total-steps", type=int, help="env steps per run")
    g.add_argument("--set", action="append", metavar="KEY=VALUE", help="setting override")
    g.set_defaults(func=cmd_grid)

    tb = sub.add_parser("table", help="the paper's Table 1 from a directory of evaluations")
    tb.add_argument("runs_dir", help="directory searched for eval.json files")
    tb.add_argument("--out", help="output prefix (default RUNS_DIR/table): .md, .csv, .tex")
    tb.set_defaults(func=cmd_table)

    tab = sub.add_parser("tabular", help="the exact finite-CMDP toolkit")
    tab_sub = tab.add_subparsers(dest="tabular_command", required=True)
    demo = tab_sub.add_parser("demo", help="the worked grid-world example")
    demo.add_argument("--out", default="runs/tabular", help="folder for the figure")
    demo.set_defaults(func=cmd_tabular_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except CLIError as err:
        print(f"robustsafe {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
