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
    from robustsafe.experiments.plots import cost_limit_of

    torch.set_num_threads(1)  # small-batch inference beside busy env workers
    _one_policy_source(args)
    if args.run is None:
        return _evaluate_foreign(args)
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
    if args.video is not None:  # before any episode runs
        if not any(a != "none" for a in attacks) or max(epsilons) <= 0:
            raise CLIError("--video needs an attacker (--attacks) and an epsilon > 0 (--eps)")
        if args.video_episodes < 1:
            raise CLIError(f"--video-episodes must be >= 1, got {args.video_episodes}")
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
        "train_alpha": agent.config.sac.alpha if agent.config.algo == "sac-lag" else None,
        "train_mode": agent.config.robust.mode,
        "train_seed": agent.config.seed,
        "train_preset": agent.config.preset,
        "episodes": args.episodes,
        "seed": args.seed,
        "attack_seed": args.attack_seed,
        "actions": "deterministic (mean)",
        "epsilon_space": args.attack_space,
        "xi": args.xi,
        "cost_limit": cost_limit_of(agent.config),
        "results": [r.to_dict() for r in results],
    }
    print(  # first: whatever happens to the files, the numbers are on screen
        f"{env_id}: {args.episodes} paired episodes, seed {args.seed}, agent epoch "
        f"{agent.epoch}, epsilon in {args.attack_space} observation units"
    )
    print(format_table(results))
    if out is None:
        print("not saved: pass --out FILE.json to keep every episode (and a sweep's figure)")
        return _record_videos(args, agent, env_id, attacks, epsilons)
    _write_or_keep(out, lambda path: write_json_atomic(path, payload))
    print(f"written to {out}")
    if len(epsilons) > 1 and any(a != "none" for a in attacks):
        meta = {k: v for k, v in payload.items() if k not in ("env_id", "results")}
        files = write_sweep(results, out.with_name(out.stem + "_sweep"), f"{env_id}", meta)
        print("sweep written to " + ", ".join(str(f) for f in files))
    return _record_videos(args, agent, env_id, attacks, epsilons)


def _record_videos(args: argparse.Namespace, agent, env_id, attacks, epsilons) -> int:
    """``evaluate --video DIR``: natural and attacked episodes side by side, at the largest
    epsilon (robustsafe.video)."""
    if args.video is None:
        return 0
    from robustsafe.video import record_videos

    eps = max(epsilons)
    print(f"recording {args.video_episodes} paired episode(s) per attacker at epsilon {eps:g}")
    try:
        paths = record_videos(
            agent,
            env_id,
            attacks,
            eps,
            args.video,
            episodes=args.video_episodes,
            seed=args.seed,
            attack_seed=args.attack_seed,
            attack_space=args.attack_space,
            xi=args.xi,
            fps=args.video_fps,
            env_kwargs=agent.config.env_kwargs,
        )
    except ValueError as err:
        raise CLIError(f"--video: {err}") from None
    if any(p.suffix == ".gif" for p in paths):
        print("imageio-ffmpeg is not installed (pip install robustsafe[video]): wrote GIFs")
    print("videos written: " + ", ".join(str(p) for p in paths))
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
    return [prefix.with_suffix(ext) for ext in (".csv", ".png", ".pdf")]


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
    _one_policy_source(args)
    if args.run is None:
        return _fit_critics_foreign(args)
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


# ----------------------------------------------------------------------------- foreign policy


def _one_policy_source(args: argparse.Namespace) -> None:
    given = [f"--{k}" for k in ("run", "policy", "sb3") if getattr(args, k) is not None]
    if len(given) > 1:
        raise CLIError(f"give one of --run, --policy, --sb3, not {' and '.join(given)}")
    if args.run is not None and getattr(args, "critics", None) is not None:
        raise CLIError("--critics is for --policy/--sb3; a --run agent has its own critics")


def _foreign_policy(args: argparse.Namespace):
    """The policy of --policy or --sb3 (both need --env)."""
    from robustsafe.policy import load_policy_spec, load_sb3

    if args.policy is None and args.sb3 is None:
        raise CLIError("give the policy: --run (a RobustSafe agent), --policy or --sb3")
    if not args.env:
        raise CLIError("--policy and --sb3 need --env (the environment id the policy acts in)")
    try:
        if args.sb3 is not None:
            try:
                import stable_baselines3  # noqa: F401
            except ImportError:
                raise CLIError(
                    "--sb3 needs Stable-Baselines3: pip install 'robustsafe[sb3]'"
                ) from None
            return load_sb3(args.sb3, env_id=args.env, trust_pickle=args.trust_pickle)
        return load_policy_spec(args.policy, action_std=args.action_std)
    except (FileNotFoundError, ValueError, TypeError) as err:
        raise CLIError(str(err)) from None


def _evaluate_foreign(args: argparse.Namespace) -> int:
    from robustsafe.envs import VectorEnv
    from robustsafe.evaluate import (
        evaluate_policy,
        format_paired_table,
        parse_epsilons,
        write_json_atomic,
        write_sweep,
    )
    from robustsafe.fit_critics import load_critics

    if args.episodes < 1:
        raise CLIError(f"--episodes must be >= 1, got {args.episodes}")
    if args.attack_space != "raw":
        raise CLIError("--policy/--sb3: epsilon is in raw observation units (--attack-space raw)")
    policy = _foreign_policy(args)
    attacks = [a.strip() for a in args.attacks.split(",") if a.strip()]
    if "none" not in attacks:
        attacks.insert(0, "none")
    out = Path(args.out) if args.out else None
    if out is not None:
        _check_output(out, args.force)
    try:
        critics = load_critics(args.critics) if args.critics else None
        epsilons = parse_epsilons(args.eps)
        too_large = [e for e in epsilons if e > MAX_EPSILON]
        if too_large and not args.allow_large_eps:
            raise ValueError(
                f"epsilon {max(too_large):g} is larger than {MAX_EPSILON:g}; pass "
                "--allow-large-eps if you mean it"
            )
        from robustsafe.evaluate import check_attacks_for

        check_attacks_for(policy, attacks, critics)
        vec = VectorEnv(
            args.env, min(args.num_envs, args.episodes), seed=args.seed, workers=args.workers
        )
    except (FileNotFoundError, ValueError, TypeError) as err:
        raise CLIError(str(err)) from None
    try:
        results = evaluate_policy(
            policy,
            vec,
            attacks=attacks,
            epsilons=epsilons,
            critics=critics,
            episodes=args.episodes,
            seed=args.seed,
            attack_seed=args.attack_seed,
            xi=args.xi,
        )
    except (ValueError, TypeError) as err:
        raise CLIError(str(err)) from None
    finally:
        vec.close()
    source = f"--sb3 {args.sb3}" if args.sb3 else f"--policy {args.policy}"
    print(f"{args.env}: {args.episodes} paired episodes, seed {args.seed}, policy {source}")
    print(format_paired_table(results))
    if out is None:
        return 0
    payload = {
        "policy": source,
        "env_id": args.env,
        "critics": args.critics,
        "episodes": args.episodes,
        "seed": args.seed,
        "attack_seed": args.attack_seed,
        "actions": "deterministic",
        "epsilon_space": "raw",
        "xi": args.xi,
        "results": [r.to_dict() for r in results],
    }
    _write_or_keep(out, lambda path: write_json_atomic(path, payload))
    print(f"written to {out}")
    if len(epsilons) > 1 and len(attacks) > 1:
        files = write_sweep(results, out.with_name(out.stem + "_sweep"), args.env)
        print("sweep written to " + ", ".join(str(f) for f in files))
    return 0


def _fit_critics_foreign(args: argparse.Namespace) -> int:
    from robustsafe.envs import VectorEnv
    from robustsafe.fit_critics import fit_policy_critics, resolve_exploration_std, save_critics

    if args.steps < 1:
        raise CLIError(f"--steps must be >= 1, got {args.steps}")
    if args.out is None:
        raise CLIError("--policy/--sb3: pass --out FILE.pt, the critics file to write")
    out = Path(args.out)
    _check_output(out, args.force)
    policy = _foreign_policy(args)
    try:
        vec = VectorEnv(args.env, args.num_envs, seed=args.seed, workers=args.workers)
    except ValueError as err:
        raise CLIError(str(err)) from None
    try:
        std = resolve_exploration_std(policy, vec.act_dim, args.exploration_std)
        print(
            f"exploration noise std {[round(float(x), 4) for x in std]} around the policy's action"
        )
        critics = fit_policy_critics(
            policy,
            vec,
            steps=args.steps,
            exploration_std=std,
            seed=args.seed,
            on_epoch=lambda m: print(
                f"steps {m['env_steps']:>8.0f}  TD loss Q_r {m['loss_q_reward']:.4f}  "
                f"Q_c {m['loss_q_cost']:.4f}",
                flush=True,
            ),
        )
    except (ValueError, TypeError) as err:
        raise CLIError(str(err)) from None
    finally:
        vec.close()
    _write_or_keep(out, lambda path: save_critics(path, critics, vec.obs_dim, vec.act_dim))
    print(f"critics written to {out}; use them with evaluate --critics {out}")
    return 0


def _add_policy_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--policy",
        metavar="MODULE:ATTR",
        help="your own policy instead of --run: module:attr or file.py:attr (attr() calls it); "
        "a torch.nn.Module, a robustsafe Policy or a numpy callable (black box). Runs that "
        "code: name only code you trust. Needs --env",
    )
    p.add_argument(
        "--sb3", metavar="ZIP", help="a Stable-Baselines3 PPO/A2C/SAC model file; needs --env"
    )
    p.add_argument(
        "--trust-pickle",
        action="store_true",
        help="--sb3: load the zip with SB3's own loader, which unpickles it (can run code "
        "from the file). Without it only the weights are read (weights_only), for MlpPolicy "
        "models with plain settings",
    )
    p.add_argument(
        "--action-std",
        type=float,
        help="--policy with a torch module: std of the Gaussian around its action that MAD "
        "measures (without it MAD and AMAD are refused) and fit-critics explores with",
    )


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
        "train_alpha": agent.config.sac.alpha if agent.config.algo == "sac-lag" else None,
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


# ----------------------------------------------------------------------------- plot


def _figure_prefix(out: str) -> Path:
    """``--out fig``, ``fig.png`` or ``fig.pdf``: the prefix of fig.png, fig.pdf, fig.csv."""
    path = Path(out)
    return path.with_suffix("") if path.suffix.lower() in (".png", ".pdf", ".csv") else path


def cmd_plot_curves(args: argparse.Namespace) -> int:
    from robustsafe.experiments.plots import load_training_run, write_curves_figure

    try:
        runs = [load_training_run(r) for r in args.runs]
        paths, notes = write_curves_figure(runs, _figure_prefix(args.out), args.smooth)
    except ValueError as err:
        raise CLIError(str(err)) from None
    for note in notes:
        print(f"note: {note}")
    print("written: " + ", ".join(str(p) for p in paths))
    return 0


def cmd_plot_sweep(args: argparse.Namespace) -> int:
    from robustsafe.experiments.plots import load_sweep_file, write_sweep_figure

    attacks = None
    if args.attacks:
        attacks = [a.strip() for a in args.attacks.split(",") if a.strip()]
    try:
        runs = [load_sweep_file(f) for f in args.files]
        paths = write_sweep_figure(runs, _figure_prefix(args.out), attacks, args.cost_limit)
    except ValueError as err:
        raise CLIError(str(err)) from None
    print("written: " + ", ".join(str(p) for p in paths))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from robustsafe.experiments.report import write_report

    try:
        page, notes = write_report(args.runs_dir, args.out)
    except ValueError as err:
        raise CLIError(str(err)) from None
    for note in notes:
        print(f"note: {note}")
    print(f"written: {page}")
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

    t = sub.add_parser(
        "train", help="train a safe RL agent (PPO-Lagrangian, FOCOPS, SAC-Lagrangian, CVPO)"
    )
    t.add_argument("--env", help="environment id (default SafetyCarRun-v0)")
    t.add_argument(
        "--algo",
        help="learner (default ppol): ppol (PPO-Lagrangian, PID multiplier), focops (FOCOPS), "
        "sac-lag (SAC-Lagrangian), cvpo (CVPO)",
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
    e.add_argument("--run", help="run directory or agent .pt file (or --policy / --sb3)")
    _add_policy_options(e)
    e.add_argument(
        "--critics", help="--policy/--sb3: critics file from fit-critics (mc, mr, amad, ...)"
    )
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
    e.add_argument(
        "--video",
        metavar="DIR",
        help="also record natural and attacked episodes side by side, one MP4 per attacker at "
        "the largest --eps, in DIR (Bullet's offscreen renderer; the `video` extra)",
    )
    e.add_argument(
        "--video-episodes",
        type=int,
        default=1,
        help="paired episodes per video (the first ones of --seed; default 1)",
    )
    e.add_argument("--video-fps", type=int, default=30, help="frames per second (default 30)")
    e.set_defaults(func=cmd_evaluate)

    f = sub.add_parser("fit-critics", help="fit the attackers' Q critics for an agent")
    f.add_argument("--run", help="run directory or agent .pt file (or --policy / --sb3)")
    _add_policy_options(f)
    f.add_argument(
        "--exploration-std",
        type=float,
        help="--policy/--sb3: Gaussian noise std around the policy's action while fitting "
        "(default: the policy's own std if it has one, else 0.3)",
    )
    f.add_argument("--steps", type=int, default=200_000, help="on-policy env steps to collect")
    f.add_argument(
        "--out",
        help="agent file to write (required unless --force); with --policy/--sb3 the critics "
        "file (evaluate --critics)",
    )
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
    g.add_argument(
        "--algos",
        default="ppol",
        help="comma-separated learners: ppol, focops, sac-lag, sac-lag:ALPHA (entropy weight), "
        "cvpo",
    )
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
    pc.add_argument(
        "--smooth",
        type=int,
        default=1,
        help="average each seed over the last N epochs before the mean and band (default 1: none)",
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

    rp = sub.add_parser(
        "report",
        help="one self-contained HTML page of a grid: tables, figures, videos, runs, settings",
    )
    rp.add_argument("runs_dir", help="directory of run directories (as robustsafe grid writes)")
    rp.add_argument("--out", help="HTML file (default RUNS_DIR/report.html)")
    rp.set_defaults(func=cmd_report)

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
