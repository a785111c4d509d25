"""``robustsafe train``."""

from __future__ import annotations

import argparse
import math
from dataclasses import replace
from pathlib import Path

from robustsafe.cli._common import CLIError
from robustsafe.config import PRESETS, TrainConfig, resolve

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


def add_train(sub: argparse._SubParsersAction) -> None:
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
