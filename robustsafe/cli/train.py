"""``robustsafe train``."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from robustsafe.choices import ALGOS
from robustsafe.cli._common import CLIError, add_env_workers_option, check_env_module
from robustsafe.config import TrainConfig
from robustsafe.experiments.launchers import recorded_path
from robustsafe.presets import PRESETS, epochs_for_steps, resolve
from robustsafe.rundir import RESUME_SETS, dotted_setting, run_files_text
from robustsafe.settings_io import apply_sets, merge_sets, set_key, to_dict

# The --preset of train and grid when none is given: the quickstart's.
DEFAULT_PRESET = "fast"

# Defaults of the train options that name a run; None in the parser, so that a resume can
# tell an option the user gave from one left out.
_TRAIN_DEFAULTS = {
    "env": "SafetyCarRun-v0",
    "seed": 0,
    "preset": DEFAULT_PRESET,
    "mode": "vanilla",
    "algo": "ppol",
}


def cmd_train(args: argparse.Namespace) -> int:
    from robustsafe.runstate import RunLockedError
    from robustsafe.train import train

    cfg, out = train_settings(args)
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
    print(f"run saved in {recorded_path(str(out))}")  # (a Ray task: the driver's)
    return 0


def train_settings(args: argparse.Namespace) -> tuple[TrainConfig, Path]:
    """The settings and the run directory of ``robustsafe train ARGS``; starts nothing.

    A new run: the preset, then the ``--config`` file, then the options (``--env-workers``,
    ``--num-envs``, ``--obs-norm``, then ``--set``, then ``--epochs`` / ``--total-steps``); the
    run-naming values (env, seed, preset, mode, algo) likewise: default < file < option. A
    resume: the run's saved settings, with only the length changed. Raises CLIError.
    """
    from robustsafe.rundir import check_resumable, load_run_config, load_settings_file
    from robustsafe.runstate import RunLockedError

    if args.epochs is not None and args.total_steps is not None:
        raise CLIError("give --epochs or --total-steps, not both: each sets the run's length")
    file_named: dict = {}
    file_sets: list[str] = []
    if args.config is not None:
        try:
            file_named, file_sets = load_settings_file(args.config)
        except (ValueError, FileNotFoundError) as err:
            raise CLIError(str(err)) from None
    given = {k: getattr(args, k) for k in _TRAIN_DEFAULTS if getattr(args, k) is not None}
    if "env" in file_named and "env" not in given:
        check_env_module(file_named["env"], f"--config {args.config}")
    named = {**_TRAIN_DEFAULTS, **file_named, **given}  # preset < --config FILE < options
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
            check_resumable(out)  # the lock first: a first epoch being written has no state.pt
            cfg = load_run_config(out)
            if "env" not in given:
                check_env_module(cfg.env_id, f"{out / 'config.yaml'}")
            conflicts = _resume_conflicts(cfg, args, given, file_named, file_sets)
            if conflicts:
                raise ValueError(
                    f"cannot resume {out}: " + "; ".join(conflicts) + ". A resume keeps the "
                    "run's saved settings (only --epochs / --total-steps, --env-workers, --set "
                    "workers=K and --set checkpoint_every=N may change): drop these options, or "
                    "train a new run in another --out"
                )
            cfg = _resume_runtime(cfg, args, file_sets)
            if args.epochs is not None:
                cfg = replace(cfg, epochs=args.epochs)
            elif args.total_steps is not None:
                cfg = replace(cfg, epochs=epochs_for_steps(args.total_steps, cfg.steps_per_epoch))
        else:
            mine = args.config is not None and not args.force
            if mine and Path(args.config).resolve() == (out / "config.yaml").resolve():
                raise ValueError(
                    f"--config {args.config} is the file a new run in {out} writes its settings "
                    "to; copy it elsewhere, pass --resume to continue that run, or --force to "
                    "replace it"
                )
            if file_sets:  # the file's own errors name the file (each setting on its own: the
                # settings are checked together, with the options and --set, by resolve)
                from robustsafe.presets import preset

                base = preset(named["env"], named["preset"], mode=named["mode"], algo=named["algo"])
                try:
                    merge_sets(to_dict(base), file_sets)
                except ValueError as err:
                    raise ValueError(f"--config {args.config}: {err}") from None
            cfg = resolve(
                named["env"],
                named["preset"],
                mode=named["mode"],
                algo=named["algo"],
                seed=named["seed"],
                workers=args.env_workers,
                num_envs=args.num_envs,
                obs_norm=args.obs_norm,
                sets=args.set or [],
                epochs=args.epochs,
                total_steps=args.total_steps,
                file_sets=file_sets,
            )
    except (ValueError, FileNotFoundError, RunLockedError) as err:
        raise CLIError(str(err)) from None
    return cfg, out


def _resume_conflicts(
    saved: TrainConfig,
    args: argparse.Namespace,
    given: dict,
    file_named: dict | None = None,
    file_sets: list[str] | None = None,
) -> list[str]:
    """The options of a resume (and the values of its --config file) that ask for other
    settings than the run's saved ones."""

    saved_values = {
        "env": saved.env_id,
        "seed": saved.seed,
        "preset": saved.preset,
        "mode": saved.robust.mode,
        "algo": saved.algo,
        "num_envs": saved.num_envs,
    }
    asked = {**given, "num_envs": args.num_envs}  # (--env-workers may change: see below)
    out = [
        f"--{k.replace('_', '-')} {v} (saved: {saved_values[k]})"
        for k, v in asked.items()
        if v is not None and v != saved_values[k]
    ]
    out += [
        f"--config {args.config}: {k} {v} (saved: {saved_values[k]})"
        for k, v in (file_named or {}).items()
        if k not in given and v != saved_values[k]
    ]
    if args.obs_norm and not saved.obs_normalization:
        out.append("--obs-norm (saved: no normaliser)")
    items = [(f"--config {args.config}: ", i) for i in file_sets or []]
    items += [("--set ", i) for i in args.set or []]
    for label, item in items:
        if set_key(item) in RESUME_SETS:
            continue  # (applied to the resume's settings, not a conflict)
        try:
            changed = apply_sets(saved, [item]) != saved
        except ValueError as err:
            out.append(f"{label}{item} ({err})")
            continue
        if changed:
            key = item.split("=", 1)[0]
            out.append(f"{label}{item} (saved: {key}={dotted_setting(saved, key)!r})")
    return out


def _resume_runtime(
    cfg: TrainConfig, args: argparse.Namespace, file_sets: list[str]
) -> TrainConfig:
    """The saved settings with the env workers and snapshot spacing a resume asks for
    (``RESUME_SETS`` in the --config file, a ``--set``, then ``--env-workers``; the numbers
    depend on neither)."""

    items = [i for i in [*file_sets, *(args.set or [])] if set_key(i) in RESUME_SETS]
    if args.env_workers is not None:
        items.append(f"workers={args.env_workers}")
    return apply_sets(cfg, items) if items else cfg


# The learners of ``--algo``, in --help: every name of ``robustsafe.choices.ALGOS`` (which is what
# train checks the name against) with a few words on it. A new learner: add its name to
# ``choices.ALGOS`` and its words here.
LEARNERS = {
    "ppol": "PPO-Lagrangian, PID multiplier",
    "focops": "FOCOPS",
    "sac-lag": "SAC-Lagrangian",
    "cvpo": "CVPO",
}


def add_train(sub: argparse._SubParsersAction) -> None:
    d = _TRAIN_DEFAULTS
    t = sub.add_parser(
        "train",
        help="train a safe RL agent (" + ", ".join(LEARNERS.get(a, a) for a in ALGOS) + ")",
        description="Train a safe RL agent. Settings, later ones winning: the --preset, then "
        "the --config file, then the options below (--env-workers, --num-envs, --obs-norm, "
        "--set KEY=VALUE, --epochs / --total-steps).",
    )
    t.add_argument("--env", help=f"environment id (default: {d['env']})")
    t.add_argument(
        "--algo",
        help=f"learner (default: {d['algo']}): "
        + ", ".join(f"{a} ({LEARNERS.get(a, a)})" for a in ALGOS),
    )
    t.add_argument("--seed", type=int, help=f"seed (default: {d['seed']})")
    t.add_argument("--preset", choices=PRESETS, help=f"settings preset (default: {d['preset']})")
    t.add_argument(
        "--mode",
        help=f"training mode (default: {d['mode']}): vanilla, random, adv-mc, adv-mr, "
        "adv-mix:W, sa-mad, sa-mc, sa-mr",
    )
    t.add_argument(
        "--config",
        metavar="FILE.yaml",
        help="settings from a YAML file in the format of a run's config.yaml (any subset of "
        "its keys); they replace the preset's, and the options on the command line replace "
        "the file's (default: none)",
    )
    t.add_argument(
        "--total-steps",
        type=int,
        help="environment steps, rounded up to whole epochs (default: the preset's epochs)",
    )
    t.add_argument(
        "--epochs",
        type=int,
        help="number of epochs, instead of --total-steps (default: the preset's)",
    )
    t.add_argument(
        "--out",
        help="run directory (default: runs/ENV/[ALGO-]MODE-PRESET-seedSEED; no ALGO- for ppol)",
    )
    t.add_argument("--resume", action="store_true", help="continue the run in --out")
    t.add_argument(
        "--force",
        action="store_true",
        help=f"new run: delete the run files already in --out ({run_files_text()}; any other "
        "file stays) and start over; --resume: go on even though metrics.csv is missing or lacks "
        "rows of saved epochs",
    )
    add_env_workers_option(
        t,
        help="subprocesses stepping the environments, 0: in this process (default: the "
        "preset's, 2)",
    )
    t.add_argument(
        "--num-envs",
        type=int,
        help="parallel environments (default: the preset's: 20, 2 for sac-lag under fast)",
    )
    t.add_argument("--obs-norm", action="store_true", help="observation normaliser (off: paper)")
    t.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a setting, e.g. ppo.actor_lr=1e-3; repeatable (default: none)",
    )
    t.add_argument("--no-progress", action="store_true", help="no progress bar")
    t.set_defaults(func=cmd_train)
