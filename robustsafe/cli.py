"""The ``robustsafe`` command."""

from __future__ import annotations

import argparse
import errno
import math
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from robustsafe.config import MAX_EPSILON, PRESETS, TrainConfig, resolve


class CLIError(Exception):
    """A user error: printed as one line, exit status 2."""


# ----------------------------------------------------------------------------- train


# Defaults of the train options that name a run; None in the parser, so that a resume can
# tell an option the user gave from one left out.
_TRAIN_DEFAULTS = {
    "env": "SafetyCarRun-v0",
    "seed": 0,
    "preset": "paper",
    "mode": "vanilla",
    "algo": "ppol",
}


def cmd_train(args: argparse.Namespace) -> int:
    from robustsafe.runstate import RunLockedError
    from robustsafe.train import load_run_config, train

    given = {k: getattr(args, k) for k in _TRAIN_DEFAULTS if getattr(args, k) is not None}
    named = {**_TRAIN_DEFAULTS, **given}
    learner = "" if named["algo"] == "ppol" else f"{named['algo']}-"
    out = (
        Path(args.out)
        if args.out
        else Path("runs")
        / named["env"]
        / f"{learner}{named['mode'].replace(':', '')}-{named['preset']}-seed{named['seed']}"
    )
    try:
        if args.resume:  # continue with the saved settings; only the length may change
            if not (out / "state.pt").exists():
                raise FileNotFoundError(f"cannot resume: {out} holds no training state (state.pt)")
            cfg = load_run_config(out)
            conflicts = _resume_conflicts(cfg, args, given)
            if conflicts:
                raise ValueError(
                    f"cannot resume {out}: " + "; ".join(conflicts) + ". A resume keeps the "
                    "run's saved settings (only --epochs / --total-steps may change): drop these "
                    "options, or train a new run in another --out"
                )
            if args.epochs is not None:
                cfg = replace(cfg, epochs=args.epochs)
            elif args.total_steps is not None:
                cfg = replace(cfg, epochs=max(1, math.ceil(args.total_steps / cfg.steps_per_epoch)))
        else:
            cfg = resolve(
                named["env"],
                named["preset"],
                mode=named["mode"],
                algo=named["algo"],
                seed=named["seed"],
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
        train(cfg, out, resume=args.resume, progress=not args.no_progress, force=args.force)
    except (FileExistsError, FileNotFoundError, ValueError, RunLockedError) as err:
        raise CLIError(str(err)) from None
    print(f"run saved in {out}")
    return 0


def _resume_conflicts(saved: TrainConfig, args: argparse.Namespace, given: dict) -> list[str]:
    """The options of a resume that ask for other settings than the run's saved ones."""
    from robustsafe.config import apply_sets

    saved_values = {
        "env": saved.env_id,
        "seed": saved.seed,
        "preset": saved.preset,
        "mode": saved.robust.mode,
        "algo": saved.algo,
        "workers": saved.workers,
        "num_envs": saved.num_envs,
    }
    asked = {**given, "workers": args.workers, "num_envs": args.num_envs}
    out = [
        f"--{k.replace('_', '-')} {v} (saved: {saved_values[k]})"
        for k, v in asked.items()
        if v is not None and v != saved_values[k]
    ]
    if args.obs_norm and not saved.obs_normalization:
        out.append("--obs-norm (saved: no normaliser)")
    for item in args.set or []:
        try:
            changed = apply_sets(saved, [item]) != saved
        except ValueError as err:
            out.append(f"--set {item} ({err})")
            continue
        if changed:
            key = item.split("=", 1)[0]
            out.append(f"--set {item} (saved: {key}={_setting(saved, key)!r})")
    return out


def _setting(cfg: TrainConfig, key: str) -> object:
    node: object = cfg
    for part in key.split("."):
        node = getattr(node, part)
    return node


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
    if env_id != agent.config.env_id and not args.allow_other_env:
        raise CLIError(
            f"the agent was trained on {agent.config.env_id}, not {env_id}: its numbers there "
            "would describe a task it never saw. Pass --allow-other-env to evaluate it anyway"
        )
    if args.episodes < 1:
        raise CLIError(f"--episodes must be >= 1, got {args.episodes}")
    attacks = [a.strip() for a in args.attacks.split(",") if a.strip()]
    out = Path(args.out) if args.out else None
    if out is not None:  # before any episode runs: a bad path must not waste the work
        _check_output(out, args.force)
        if len(parse_epsilons_quietly(args.eps)) > 1:
            for sweep in _sweep_files(out):
                _check_output(sweep, args.force)
    try:
        epsilons = parse_epsilons(args.eps)
        too_large = [e for e in epsilons if e > MAX_EPSILON]
        if too_large and not args.allow_large_eps:
            raise ValueError(
                f"epsilon {max(too_large):g} is larger than {MAX_EPSILON:g}: the paper's budgets "
                "are 0.025-0.05 observation units. Pass --allow-large-eps if you mean it"
            )
        from robustsafe.attacks import make_attacker

        for name in attacks:  # check every name before any episode runs
            if name != "amad":
                make_attacker(name)
    except ValueError as err:
        raise CLIError(str(err)) from None
    num_envs = min(args.num_envs, args.episodes)
    try:
        vec = VectorEnv(
            env_id,
            num_envs,
            seed=args.seed,
            workers=args.workers,
            env_kwargs=agent.config.env_kwargs,
        )
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
    payload = {
        "agent": str(args.run),
        "env_id": env_id,
        "agent_epoch": agent.epoch,
        "train_algo": agent.config.algo,
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
    print(  # first: whatever happens to the files, the numbers are on screen
        f"{env_id}: {args.episodes} paired episodes, seed {args.seed}, agent epoch "
        f"{agent.epoch}, epsilon in {args.attack_space} observation units"
    )
    print(format_table(results))
    if out is None:
        print("not saved: pass --out FILE.json to keep every episode (and a sweep's figure)")
        return 0
    _write_or_keep(out, lambda path: write_json_atomic(path, payload))
    print(f"written to {out}")
    if len(epsilons) > 1 and any(a != "none" for a in attacks):
        files = write_sweep(results, out.with_name(out.stem + "_sweep"), f"{env_id}")
        print("sweep written to " + ", ".join(str(f) for f in files))
    return 0


def parse_epsilons_quietly(text: str) -> list[float]:
    """The epsilons of ``--eps``, or [] if it does not parse (reported later, in order)."""
    from robustsafe.evaluate import parse_epsilons

    try:
        return parse_epsilons(text)
    except ValueError:
        return []


def _sweep_files(out: Path) -> list[Path]:
    prefix = out.with_name(out.stem + "_sweep")
    return [prefix.with_suffix(".csv"), prefix.with_suffix(".png")]


def _check_output(path: Path, force: bool) -> None:
    """Refuse, before any work, an output file that cannot be written or would replace one."""
    if path.is_dir():
        raise CLIError(f"--out {path} is a directory; give a file name, e.g. {path / 'eval.json'}")
    if path.exists() and not force:
        raise CLIError(f"{path} already exists; pass --force to replace it, or another --out")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path.parent):
            pass
    except OSError as err:
        raise CLIError(f"cannot write {path}: {_os_reason(err)}") from None


def _os_reason(err: OSError) -> str:
    if err.errno == errno.ENOSPC:
        return "no space left on device"
    return err.strerror or str(err)


def _write_or_keep(path: Path, write: Callable[[Path], None]) -> None:
    """``write(path)``; if that fails, write to a fresh temporary folder and say where."""
    try:
        write(path)
    except OSError as err:
        reason = _os_reason(err)
        try:
            fallback = Path(tempfile.mkdtemp(prefix="robustsafe-")) / path.name
            write(fallback)
        except OSError:
            raise CLIError(f"cannot write {path}: {reason} (and no fallback copy)") from None
        raise CLIError(
            f"cannot write {path}: {reason}; the results were saved in {fallback} instead"
        ) from None


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
    if args.out is None and not args.force:
        raise CLIError(
            f"fit-critics writes a new agent file: pass --out FILE.pt, or --force to replace {src}"
        )
    out = Path(args.out) if args.out else src
    _check_output(out, args.force)
    env_id = args.env or agent.config.env_id
    try:
        vec = VectorEnv(
            env_id,
            args.num_envs,
            seed=args.seed,
            workers=args.workers,
            env_kwargs=agent.config.env_kwargs,
        )
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
    _write_or_keep(
        out,
        lambda path: save_agent(
            path,
            agent.config,
            agent.actor,
            agent.v_reward,
            agent.v_cost,
            agent.critics,
            agent.epoch,
        ),
    )
    print(f"fitted Q_r and Q_c on {history[-1]['env_steps']:.0f} steps; agent written to {out}")
    return 0


# ----------------------------------------------------------------------------- grid, table


def cmd_grid(args: argparse.Namespace) -> int:
    from robustsafe.experiments.appendix import APPENDIX_ATTACKS
    from robustsafe.experiments.grid import (
        GridSpec,
        format_plan,
        format_results,
        plan_grid,
        run_grid,
    )
    from robustsafe.experiments.xi_sweep import DEFAULT_XIS

    appendix_attacks = args.appendix_attacks or ""
    xi_sweep = args.xi_sweep or ""
    if args.appendix:
        appendix_attacks = appendix_attacks or ",".join(APPENDIX_ATTACKS)
        xi_sweep = xi_sweep or ",".join(f"{x:g}" for x in DEFAULT_XIS)
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
            algos=args.algos,
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
            cpus_per_run=args.cpus_per_run,
            appendix_attacks=appendix_attacks,
            xi_sweep=xi_sweep,
        )
        if args.dry_run:
            from robustsafe.experiments.compute import format_cost

            plan = plan_grid(spec)
            print(format_plan(plan))
            print(format_cost(spec, plan))
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
    from robustsafe.experiments.appendix import write_appendix
    from robustsafe.experiments.table import collect_table, format_markdown, write_tables

    runs = Path(args.runs_dir)
    prefix = Path(args.out) if args.out else runs / "table"
    try:
        table = collect_table(runs)
        print(format_markdown(table))
        paths = write_tables(runs, prefix, table=table)
        if not args.no_appendix:
            paths += write_appendix(runs, prefix, table=table)
    except (FileNotFoundError, ValueError) as err:
        raise CLIError(str(err)) from None
    print("written: " + ", ".join(str(p) for p in paths))
    return 0


def cmd_xi_sweep(args: argparse.Namespace) -> int:
    import torch

    from robustsafe.agent import load_agent
    from robustsafe.envs import VectorEnv
    from robustsafe.evaluate import write_json_atomic
    from robustsafe.experiments.xi_sweep import (
        XI_EVAL_NAME,
        XI_FORMAT,
        evaluate_xi_sweep,
        parse_xis,
    )

    torch.set_num_threads(1)
    try:
        agent = load_agent(args.run)
        xis = parse_xis(args.xi)
    except (FileNotFoundError, ValueError) as err:
        raise CLIError(str(err)) from None
    if args.episodes < 1:
        raise CLIError(f"--episodes must be >= 1, got {args.episodes}")
    eps = args.eps if args.eps is not None else agent.config.robust.epsilon
    try:
        vec = VectorEnv(
            agent.config.env_id,
            min(args.num_envs, args.episodes),
            seed=args.seed,
            workers=args.workers,
            env_kwargs=agent.config.env_kwargs,
        )
    except ValueError as err:
        raise CLIError(str(err)) from None
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
    run = Path(args.run)
    out = Path(args.out) if args.out else (run if run.is_dir() else run.parent) / XI_EVAL_NAME
    payload = {
        "format": XI_FORMAT,
        "agent": str(args.run),
        "env_id": agent.config.env_id,
        "agent_epoch": agent.epoch,
        "train_algo": agent.config.algo,
        "train_mode": agent.config.robust.mode,
        "train_seed": agent.config.seed,
        "train_preset": agent.config.preset,
        "episodes": args.episodes,
        "seed": args.seed,
        "attack_seed": args.attack_seed,
        "actions": "deterministic (mean)",
        "epsilon_space": args.attack_space,
        "epsilon": eps,
        "xi_values": xis,
        "results": results,
    }
    write_json_atomic(out, payload)
    for r in results:
        label = r["attack"] + (f" xi {r['xi']:g}" if "xi" in r else "")
        print(
            f"{label:<14} reward {r['reward_mean']:8.2f} ± {r['reward_std']:6.2f}   "
            f"cost {r['cost_mean']:7.2f} ± {r['cost_std']:6.2f}"
        )
    print(f"written to {out}")
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

    t = sub.add_parser("train", help="train a safe RL agent (PPO-Lagrangian, FOCOPS)")
    t.add_argument("--env", help="environment id (default SafetyCarRun-v0)")
    t.add_argument(
        "--algo",
        help="learner (default ppol): ppol (PPO-Lagrangian, PID multiplier), focops (FOCOPS)",
    )
    t.add_argument("--seed", type=int, help="seed (default 0)")
    t.add_argument("--preset", choices=PRESETS, help="settings preset (default paper)")
    t.add_argument(
        "--mode",
        help="training mode (default vanilla): vanilla, random, adv-mc, adv-mr, adv-mix:W, "
        "sa-mad, sa-mc, sa-mr",
    )
    t.add_argument("--total-steps", type=int, help="environment steps (rounded up to epochs)")
    t.add_argument("--epochs", type=int, help="number of epochs (instead of --total-steps)")
    t.add_argument(
        "--out",
        help="run directory (default runs/ENV/[ALGO-]MODE-PRESET-seedSEED; no ALGO- for ppol)",
    )
    t.add_argument("--resume", action="store_true", help="continue the run in --out")
    t.add_argument(
        "--force",
        action="store_true",
        help="new run: delete the run files already in --out (config.yaml, metrics.csv, "
        "agent.pt, state.pt, checkpoints/, tb/, eval.json) and start over; --resume: go on "
        "even though metrics.csv is missing",
    )
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
    e.add_argument("--out", help="JSON file to write (default: print only)")
    e.add_argument("--force", action="store_true", help="replace an existing --out file")
    e.add_argument(
        "--allow-other-env",
        action="store_true",
        help="evaluate on an --env other than the agent's own",
    )
    e.add_argument(
        "--allow-large-eps",
        action="store_true",
        help="accept epsilons above 1 (observation units)",
    )
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
    f.add_argument("--out", help="agent file to write (required unless --force)")
    f.add_argument(
        "--force", action="store_true", help="replace --out if it exists (or the input agent)"
    )
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
    g.add_argument("--algos", default="ppol", help="comma-separated learners: ppol, focops")
    g.add_argument("--seeds", default="0", help="comma-separated seeds, e.g. 0,1,2")
    g.add_argument("--preset", default="paper", choices=PRESETS)
    g.add_argument("--out", default="runs/grid", help="root of the run directories")
    g.add_argument(
        "--workers",
        type=int,
        default=1,
        help="trainings at a time (1 on 2 cores; local backend only)",
    )
    g.add_argument("--attacks", default="none,random,mad,amad,mc,mr")
    g.add_argument("--episodes", type=int, default=50)
    g.add_argument("--eval-seed", type=int, default=0)
    g.add_argument("--eval-workers", type=int, default=2)
    g.add_argument("--eval-num-envs", type=int, default=10)
    g.add_argument("--no-eval", action="store_true", help="train only")
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
        help="CPUs a Ray task asks for (default 2); Ray runs CPUs // this at once",
    )
    g.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan, and each run's env steps and expected wall time (the compute "
        "model), and stop",
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
    g.add_argument("--total-steps", type=int, help="env steps per run")
    g.add_argument("--set", action="append", metavar="KEY=VALUE", help="setting override")
    g.set_defaults(func=cmd_grid)

    tb = sub.add_parser("table", help="the paper's Table 1 from a directory of evaluations")
    tb.add_argument("runs_dir", help="directory searched for eval.json files")
    tb.add_argument("--out", help="output prefix (default RUNS_DIR/table): .md, .csv, .tex")
    tb.add_argument(
        "--no-appendix",
        action="store_true",
        help="Table 1 only (default: also PREFIX-appendix, -minr, -mix and -amad-xi files)",
    )
    tb.set_defaults(func=cmd_table)

    xs = sub.add_parser(
        "xi-sweep", help="AMAD at several xi against MAD (the appendix's MAD/AMAD figure)"
    )
    xs.add_argument("--run", required=True, help="run directory or agent .pt file")
    xs.add_argument("--xi", default="0.05,0.1,0.2,0.3,0.5,0.75", help="fractions attacked")
    xs.add_argument("--eps", type=float, help="epsilon (default: the run's robust.epsilon)")
    xs.add_argument("--episodes", type=int, default=50)
    xs.add_argument("--seed", type=int, default=0, help="seed of the evaluation episodes")
    xs.add_argument("--attack-seed", type=int, default=0)
    xs.add_argument("--attack-space", default="raw", choices=("raw", "normalized"))
    xs.add_argument("--out", help="JSON file (default RUN/eval-xi.json)")
    xs.add_argument("--num-envs", type=int, default=10)
    xs.add_argument("--workers", type=int, default=2)
    xs.set_defaults(func=cmd_xi_sweep)

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
    except OSError as err:  # the machine's fault (disk full, permissions): one line, no trace
        where = f": {err.filename}" if err.filename else ""
        print(f"robustsafe {args.command}: error: {_os_reason(err)}{where}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
