"""The experiment grid: train every (env, learner, mode, seed) in its own process, then
evaluate it.

A grid is a ``GridSpec``; ``run_grid(spec)`` makes every combination's run directory

    <out>/<env>/<mode without ':'>/seed<S>/     e.g. runs/grid/SafetyCarRun-v0/adv-mix0.5/seed3
    <out>/<env>/<algo>-<mode>/seed<S>/          other learners than PPOL: .../focops-adv-mc/seed0

hold a finished training (``robustsafe train``: ``config.yaml``, ``agent.pt``, ``state.pt``, ...,
plus ``train.log``, the process's output) and an evaluation under the attacker set at the task's
epsilon (``eval.json`` from ``robustsafe evaluate``, plus ``eval.log``). It is safe to call again
and again, for instance after a crash or a reboot:

- a run whose ``state.pt`` says it has done the planned epochs is skipped;
- a run with fewer epochs done (killed, or the grid now asks for more epochs) is resumed with
  ``--resume``; a resumed run keeps its saved settings except the number of epochs (that is what
  ``robustsafe train --resume`` does), and the plan notes any difference from the spec;
- every other run is started;
- an evaluation is skipped when ``eval.json`` is newer than the run's ``agent.pt`` and was made
  with the same attackers, episodes, evaluation seed and epsilon.

Every training and evaluation is a separate process (``python -m robustsafe.cli train ...``),
so a crash or a leak in one cannot take down the others: a failed process is reported with its
exit status and the last lines of its log, and the grid goes on with the rest. At most
``workers`` processes run at a time (the Ray backend: as many as the cluster has room for); an
agent is evaluated as soon as its training ends.

This module plans and schedules; starting a command is a launcher's job
(``robustsafe.experiments.launchers``: ``LocalLauncher``, subprocesses here; ``RayLauncher``,
Ray tasks on any node without a shared disk, the results copied back to ``out``).

The planned number of epochs of a run is resolved exactly as ``robustsafe train`` resolves it
(preset, then ``--env-workers`` / ``--num-envs`` / ``--obs-norm``, ``--set``, ``--epochs`` /
``--total-steps`` from ``train_args``), so ``train_args`` are checked before any process
starts: a misspelt ``--set`` key is one clear error, not a grid of failed runs.

Example::

    spec = GridSpec(envs=("SafetyCarRun-v0",), modes=("vanilla", "adv-mc"), seeds=(0, 1, 2),
                    preset="fast", out=Path("runs/grid"))
    for r in run_grid(spec):
        print(r.env_id, r.mode, r.seed, r.train, r.evaluation)
"""

from __future__ import annotations

import argparse
import json
import math
import numbers
import os
import shlex
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from robustsafe.config import PRESETS, TrainConfig, check_mode, resolve, split_algo, to_dict
from robustsafe.experiments.launchers import RUN_LOST, make_launcher

DEFAULT_ATTACKS: tuple[str, ...] = ("none", "random", "mad", "amad", "mc", "mr")
BACKENDS = ("local", "ray")
LOG_TAIL_LINES = 15
MAX_LOST = 3  # times a run may be lost with its node (Ray) before the grid gives up on it

Action = Literal["train", "resume", "skip"]
TrainStatus = Literal["trained", "resumed", "skipped", "failed", "pending"]
EvalStatus = Literal["evaluated", "skipped", "failed", "not-run", "pending"]

# Options of ``robustsafe train`` that the grid sets itself for every run.
_GRID_OWNED_OPTIONS = (
    "--env",
    "--algo",
    "--mode",
    "--seed",
    "--preset",
    "--out",
    "--resume",
    "--no-progress",
)


# ----------------------------------------------------------------------------- the spec


def _as_tuple(value: Any, name: str, item_type: type) -> tuple:
    """A tuple from a tuple, a list or a comma-separated string; items checked for type."""
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",") if v.strip()]
        if item_type is int:
            try:
                items = [int(v) for v in items]
            except ValueError:
                raise ValueError(f"{name} must be integers, got {value!r}") from None
    elif isinstance(value, Iterable):
        items = list(value)
    else:
        raise ValueError(f"{name} must be a sequence, got {value!r}")
    for k, v in enumerate(items):
        if item_type is int:
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise ValueError(f"{name} must be integers, got {v!r}")
            items[k] = int(v)
        if item_type is str and (not isinstance(v, str) or not v.strip()):
            raise ValueError(f"{name} must be non-empty strings, got {v!r}")
    dupes = sorted({str(v) for v in items if items.count(v) > 1})
    if dupes:
        raise ValueError(f"{name} lists {', '.join(dupes)} more than once")
    return tuple(items)


@dataclass(frozen=True)
class TrainArgs:
    """The parsed ``train_args`` of a grid (the subset of ``robustsafe train`` options)."""

    epochs: int | None = None
    total_steps: int | None = None
    workers: int | None = None
    num_envs: int | None = None
    obs_norm: bool = False
    sets: tuple[str, ...] = ()


class _RaisingParser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would print and exit
        raise ValueError(f"train_args: {message}")


def parse_train_args(args: Sequence[str]) -> TrainArgs:
    """Parse extra ``robustsafe train`` options (``["--epochs", "3", "--set", "k=v"]``).

    Accepted: ``--epochs``, ``--total-steps``, ``--env-workers`` (old spelling ``--workers``),
    ``--num-envs``, ``--obs-norm``,
    ``--set`` (repeatable). The grid sets ``--env --algo --mode --seed --preset --out --resume
    --no-progress`` itself; anything else is an error.
    """
    p = _RaisingParser(prog="train_args", add_help=False, allow_abbrev=False)
    p.add_argument("--epochs", type=int)
    p.add_argument("--total-steps", type=int)
    p.add_argument("--env-workers", "--workers", dest="workers", type=int)  # old spelling kept
    p.add_argument("--num-envs", type=int)
    p.add_argument("--obs-norm", action="store_true")
    p.add_argument("--set", action="append", default=[])
    ns, extra = p.parse_known_args(list(args))
    if extra:
        owned = [a for a in extra if a.split("=", 1)[0] in _GRID_OWNED_OPTIONS]
        why = (
            f"{' '.join(owned)}: the grid sets {', '.join(_GRID_OWNED_OPTIONS)} itself"
            if owned
            else f"unsupported {' '.join(extra)}"
        )
        raise ValueError(
            f"train_args: {why}; accepted: --epochs N, --total-steps N, --env-workers K, "
            "--num-envs N, --obs-norm, --set KEY=VALUE"
        )
    return TrainArgs(ns.epochs, ns.total_steps, ns.workers, ns.num_envs, ns.obs_norm, tuple(ns.set))


@dataclass(frozen=True)
class GridSpec:
    """What to train and how to evaluate it.

    envs, modes, seeds
        The grid: every combination is one run. Sequences or comma-separated strings; modes
        are training modes (``vanilla``, ``random``, ``adv-mc``, ``adv-mr``, ``adv-mix:W``,
        ``sa-mad``, ``sa-mc``, ``sa-mr``), seeds non-negative integers. Custom envs must be
        importable in a fresh process: gymnasium's ``"package.module:EnvId-v0"`` form.
    algos
        The learners (``robustsafe train --algo``: ``ppol``, ``focops``, ``sac-lag``, ``cvpo``; and
        ``sac-lag:ALPHA``, SAC-Lag with ``--set sac.alpha=ALPHA``), each trained in every
        mode; PPOL's runs keep the directory ``<env>/<mode>``, the others' are
        ``<env>/<algo>-<mode>`` (``sac-lag0.01-vanilla``).
    preset
        ``paper`` or ``fast`` (``robustsafe train --preset``).
    out
        The root of the run directories.
    workers
        How many training / evaluation processes run at a time (local backend). Default 1:
        each training already steps its environments in 2 subprocesses (the presets'
        ``workers=2``) and each evaluation uses 2 as well, so one run at a time keeps a 2-core
        machine busy; more only makes the processes compete for the same cores (and for
        memory). Raise it on a machine with about 2 cores per parallel run. The Ray backend
        ignores it: its concurrency follows the cluster (``cpus_per_run``).
    attacks, episodes, eval_seed
        ``robustsafe evaluate --attacks --episodes --seed``; the epsilon is always the run's
        own (``robust.epsilon`` of its ``config.yaml``, the task's preset value).
    train_args
        Extra ``robustsafe train`` options for every run, e.g. ``("--epochs", "3")`` or
        ``("--set", "ppo.actor_lr=1e-3")`` (see ``parse_train_args``).
    eval_workers, eval_num_envs
        ``robustsafe evaluate --env-workers --num-envs``.
    evaluate
        False: train only.
    backend
        ``local`` (subprocesses of this process) or ``ray``: the same commands as Ray tasks
        on the cluster of ``RAY_ADDRESS`` (else a local Ray instance; ``pip install ray``),
        with no shared disk: each task gets a copy of its run directory and sends its files
        back to ``out`` at every epoch and at its end; a run whose node is lost resumes on
        another from the last epoch ``out`` holds (``robustsafe.experiments.launchers``).
    cpus_per_run
        The CPUs a Ray task asks for (default 2: a training's 2 env workers, an evaluation's
        2); the Ray backend runs as many at once as the alive nodes have room for.
    appendix_attacks, appendix_modes
        Extra attackers for the appendix's tables (``robustsafe grid --appendix``: ``minr``
        and ``mix:0.25,0.5,0.75``), evaluated for the runs of ``appendix_modes`` (default
        PPOL-vanilla and ADV-PPOL(MC/MR)) into ``<run>/eval-appendix.json`` (same episodes,
        seed and epsilon as ``eval.json``, which stays as it is). Empty: none. PPOL's runs
        only, like the xi sweep.
    xi_sweep, xi_modes
        AMAD's xi values for the appendix's MAD/AMAD figure (``robustsafe xi-sweep``), for the
        runs of ``xi_modes`` (default PPOL-vanilla), into ``<run>/eval-xi.json``. Empty: none.
    """

    envs: tuple[str, ...]
    modes: tuple[str, ...] = ("vanilla",)
    algos: tuple[str, ...] = ("ppol",)
    seeds: tuple[int, ...] = (0,)
    preset: str = "paper"
    out: Path = Path("runs/grid")
    workers: int = 1
    attacks: tuple[str, ...] = DEFAULT_ATTACKS
    episodes: int = 50
    eval_seed: int = 0
    train_args: tuple[str, ...] = ()
    eval_workers: int = 2
    eval_num_envs: int = 10
    evaluate: bool = True
    backend: str = "local"
    cpus_per_run: int = 2
    appendix_attacks: tuple[str, ...] = ()
    appendix_modes: tuple[str, ...] = ("vanilla", "adv-mc", "adv-mr")
    xi_sweep: tuple[float, ...] = ()
    xi_modes: tuple[str, ...] = ("vanilla",)

    def __post_init__(self) -> None:
        put = object.__setattr__  # normalise in place (frozen)
        put(self, "envs", _as_tuple(self.envs, "envs", str))
        put(self, "modes", _as_tuple(self.modes, "modes", str))
        put(self, "algos", _as_tuple(self.algos, "algos", str))
        put(self, "seeds", _as_tuple(self.seeds, "seeds", int))
        put(self, "attacks", _as_tuple(self.attacks, "attacks", str))
        if isinstance(self.train_args, str):
            put(self, "train_args", tuple(shlex.split(self.train_args)))
        else:
            put(self, "train_args", tuple(str(a) for a in self.train_args))
        put(self, "out", Path(self.out))
        for name in ("envs", "modes", "algos", "seeds", "attacks"):
            if not getattr(self, name):
                raise ValueError(f"{name} must not be empty")
        for mode in self.modes:
            check_mode(mode)
        for algo in self.algos:
            split_algo(algo)
        for seed in self.seeds:
            if seed < 0:
                raise ValueError(f"seeds must be non-negative integers, got {seed}")
        if self.preset not in PRESETS:
            raise ValueError(f"unknown preset {self.preset!r}; accepted: {', '.join(PRESETS)}")
        for name, low in (("workers", 1), ("episodes", 1), ("eval_seed", 0), ("cpus_per_run", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        for name, low in (("eval_workers", 0), ("eval_num_envs", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"unknown backend {self.backend!r}; accepted: {', '.join(BACKENDS)}")
        _check_attacks(self.attacks)
        _check_extras(self)
        parse_train_args(self.train_args)
        dirs: dict[str, str] = {}
        for env in self.envs:
            other = dirs.setdefault(env_dir_name(env), env)
            if other != env:
                raise ValueError(
                    f"envs {other!r} and {env!r} would share the run directory "
                    f"{env_dir_name(env)!r}"
                )

    def run_dir(self, env_id: str, mode: str, seed: int, algo: str = "ppol") -> Path:
        """``<out>/<env>/<mode without ':'>/seed<S>``; ``<algo>-<mode ...>`` for other
        learners than PPOL."""
        mode_name = mode.replace(":", "")
        name = mode_name if algo == "ppol" else f"{algo.replace(':', '')}-{mode_name}"
        return self.out / env_dir_name(env_id) / name / f"seed{seed}"

    def combinations(self) -> list[tuple[str, str, str, int]]:
        """Every (env, algo, mode, seed), env-major."""
        return [
            (e, a, m, s)
            for e in self.envs
            for a in self.algos
            for m in self.modes
            for s in self.seeds
        ]


def env_dir_name(env_id: str) -> str:
    """The directory name of an env id: the id after any ``module:`` prefix, '/' made '_'."""
    return env_id.rsplit(":", 1)[-1].replace("/", "_").replace("\\", "_")


def _check_attacks(attacks: Sequence[str]) -> None:
    from robustsafe.attacks import make_attacker

    for name in attacks:
        if name not in ("none", "amad"):  # amad needs a threshold; its name is valid
            make_attacker(name)  # raises ValueError with the accepted names


def _check_extras(spec: GridSpec) -> None:
    """Normalise and check the appendix options of a spec (in place: it is frozen)."""
    from robustsafe.experiments.xi_sweep import parse_xis

    put = object.__setattr__
    attacks = spec.appendix_attacks
    attacks = _as_tuple(attacks, "appendix_attacks", str) if attacks else ()
    put(spec, "appendix_attacks", tuple(a for a in attacks if a != "none"))
    _check_attacks(spec.appendix_attacks)
    put(spec, "xi_sweep", tuple(parse_xis(spec.xi_sweep)) if spec.xi_sweep else ())
    for name in ("appendix_modes", "xi_modes"):
        put(spec, name, _as_tuple(getattr(spec, name), name, str))
        for mode in getattr(spec, name):
            check_mode(mode)


def resolve_train_config(
    spec: GridSpec, env_id: str, mode: str, seed: int, algo: str = "ppol"
) -> TrainConfig:
    """The settings ``robustsafe train`` would resolve for this run of the grid.

    Mirrors the train command: the preset, then ``--env-workers`` / ``--num-envs`` /
    ``--obs-norm``, then ``--set``, then ``--epochs`` / ``--total-steps``. Raises ValueError.
    """
    a = parse_train_args(spec.train_args)
    algo, variant_sets = split_algo(algo)
    try:
        return resolve(
            env_id,
            spec.preset,
            mode=mode,
            algo=algo,
            seed=seed,
            workers=a.workers,
            num_envs=a.num_envs,
            obs_norm=a.obs_norm,
            sets=[*variant_sets, *a.sets],
            epochs=a.epochs,
            total_steps=a.total_steps,
        )
    except ValueError as err:
        raise ValueError(f"train_args: {err}") from None


# ----------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class PlannedRun:
    """What the grid would do for one (env, mode, seed).

    action: ``train`` (no training state yet), ``resume`` (fewer epochs done than planned, or
    a state that cannot be read: the resume then reports why) or ``skip`` (finished).
    evaluate: whether an evaluation would run (always, after a training or a resume).
    """

    env_id: str
    mode: str
    seed: int
    run_dir: Path
    action: Action
    epochs_done: int
    epochs_planned: int
    evaluate: bool
    epsilon: float
    note: str = ""
    extra: tuple[str, ...] = ()  # extra evaluation files to write (eval-appendix.json, ...)
    algo: str = "ppol"

    @property
    def label(self) -> str:
        """``mode``, with the learner before it when it is not PPOL (``focops adv-mc``)."""
        return self.mode if self.algo == "ppol" else f"{self.algo} {self.mode}"


def expected_attacks(spec: GridSpec) -> list[str]:
    """The attack names an evaluation of this grid lists: ``none`` first, then the others."""
    return ["none", *[a for a in spec.attacks if a != "none"]]


def evaluation_is_current(run_dir: Path, spec: GridSpec, epsilon: float) -> bool:
    """True if ``run_dir/eval.json`` is newer than ``agent.pt`` and matches the spec's
    attackers, episodes and evaluation seed, and the epsilon."""
    ev, agent = Path(run_dir) / "eval.json", Path(run_dir) / "agent.pt"
    try:
        if ev.stat().st_mtime_ns <= agent.stat().st_mtime_ns:
            return False
        data = json.loads(ev.read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        return False
    results = [r for r in data["results"] if isinstance(r, dict)]
    if data.get("episodes") != spec.episodes or data.get("seed") != spec.eval_seed:
        return False
    if {r.get("attack") for r in results} != set(expected_attacks(spec)):
        return False
    eps = {r.get("epsilon") for r in results if r.get("attack") != "none"}
    return all(isinstance(e, int | float) and math.isclose(e, epsilon) for e in eps)


def _settings_difference(saved: TrainConfig, wanted: TrainConfig) -> list[str]:
    """Dotted names of the settings (other than epochs and workers) that differ."""

    def flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in d.items():
            if isinstance(v, dict):
                out.update(flat(v, f"{prefix}{k}."))
            else:
                out[f"{prefix}{k}"] = v
        return out

    a, b = flat(to_dict(saved)), flat(to_dict(wanted))
    ignore = {"epochs", "workers"}
    return sorted(k for k in a.keys() | b.keys() if k not in ignore and a.get(k) != b.get(k))


def plan_run(spec: GridSpec, env_id: str, mode: str, seed: int, algo: str = "ppol") -> PlannedRun:
    """The plan of one run (reads its directory, changes nothing)."""
    return replace(_plan_run(spec, env_id, mode, seed, algo), algo=algo)


def _plan_run(spec: GridSpec, env_id: str, mode: str, seed: int, algo: str) -> PlannedRun:
    from robustsafe.train import load_run_config, run_status

    run = spec.run_dir(env_id, mode, seed, algo)
    wanted = resolve_train_config(spec, env_id, mode, seed, algo)
    target = wanted.epochs
    epsilon = wanted.robust.epsilon
    if not (run / "state.pt").exists():
        return PlannedRun(env_id, mode, seed, run, "train", 0, target, spec.evaluate, epsilon)
    notes = []
    try:
        status = run_status(run)
        saved = load_run_config(run)
    except Exception as err:  # a damaged state or config: the resume will report it
        note = f"cannot read the training state ({type(err).__name__}: {err})"
        return PlannedRun(
            env_id, mode, seed, run, "resume", 0, target, spec.evaluate, epsilon, note
        )
    done = status[0] if status is not None else 0
    epsilon = saved.robust.epsilon
    differ = _settings_difference(saved, wanted)
    if differ:
        notes.append(
            "the run's saved settings differ from the grid's in "
            + ", ".join(differ)
            + " (a resume keeps the saved ones)"
        )
    if done < target:
        note = "; ".join(notes)
        return PlannedRun(
            env_id, mode, seed, run, "resume", done, target, spec.evaluate, epsilon, note
        )
    if done > target:
        notes.append(f"holds {done} epochs, more than the {target} planned")
    current = evaluation_is_current(run, spec, epsilon)
    return PlannedRun(
        env_id,
        mode,
        seed,
        run,
        "skip",
        done,
        target,
        spec.evaluate and not current,
        epsilon,
        "; ".join(notes),
    )


def plan_grid(spec: GridSpec) -> list[PlannedRun]:
    """What ``run_grid(spec)`` would do for every run, in grid order; starts nothing.

    Raises ValueError when an env id is not a registered one (``envs.check_env_id``: a
    look-up, nothing is built) or ``train_args`` do not resolve to valid settings.
    """
    from robustsafe.envs import check_env_id

    for env_id in spec.envs:
        check_env_id(env_id)
    return [_plan_extras(spec, plan_run(spec, e, m, s, a)) for e, a, m, s in spec.combinations()]


# ----------------------------------------------------------------------------- extra evaluations


def extra_evaluations(spec: GridSpec, mode: str) -> list[str]:
    """The extra evaluation files of a run of ``mode``: ``eval-appendix.json`` (the appendix's
    attackers) and ``eval-xi.json`` (AMAD over xi), as the spec asks."""
    from robustsafe.experiments.appendix import APPENDIX_EVAL_NAME
    from robustsafe.experiments.xi_sweep import XI_EVAL_NAME

    out = []
    if spec.evaluate and spec.appendix_attacks and mode in spec.appendix_modes:
        out.append(APPENDIX_EVAL_NAME)
    if spec.evaluate and spec.xi_sweep and mode in spec.xi_modes:
        out.append(XI_EVAL_NAME)
    return out


def extra_evaluation_is_current(run_dir: Path, name: str, spec: GridSpec, epsilon: float) -> bool:
    """True if ``run_dir/name`` is newer than ``agent.pt`` and was made with the spec's
    episodes, evaluation seed, epsilon and attackers (or xi values)."""
    from robustsafe.experiments.xi_sweep import XI_EVAL_NAME

    path, agent = Path(run_dir) / name, Path(run_dir) / "agent.pt"
    try:
        if path.stat().st_mtime_ns <= agent.stat().st_mtime_ns:
            return False
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        return False
    if data.get("episodes") != spec.episodes or data.get("seed") != spec.eval_seed:
        return False
    results = [r for r in data["results"] if isinstance(r, dict)]
    if name == XI_EVAL_NAME:
        if data.get("xi_values") != list(spec.xi_sweep):
            return False
    elif {r.get("attack") for r in results} != {"none", *spec.appendix_attacks}:
        return False
    eps = {r.get("epsilon") for r in results if r.get("attack") != "none"}
    return all(isinstance(e, int | float) and math.isclose(e, epsilon) for e in eps)


def _plan_extras(spec: GridSpec, plan: PlannedRun) -> PlannedRun:
    names = extra_evaluations(spec, plan.mode) if plan.algo == "ppol" else []
    if plan.action == "skip":
        names = [
            n for n in names if not extra_evaluation_is_current(plan.run_dir, n, spec, plan.epsilon)
        ]
    return replace(plan, extra=tuple(names)) if names else plan


def extra_command(spec: GridSpec, plan: PlannedRun, name: str) -> list[str]:
    """The command (after ``python``) that writes the extra evaluation ``name`` of a run."""
    from robustsafe.experiments.xi_sweep import XI_EVAL_NAME

    common = ["--episodes", str(spec.episodes), "--seed", str(spec.eval_seed)]
    common += ["--out", str(plan.run_dir / name), "--env-workers", str(spec.eval_workers)]
    common += ["--num-envs", str(spec.eval_num_envs)]
    eps = ["--eps", repr(float(plan.epsilon))]
    if name == XI_EVAL_NAME:
        xis = ",".join(repr(x) for x in spec.xi_sweep)
        cmd = ["-m", "robustsafe.cli", "xi-sweep", "--run", str(plan.run_dir), "--xi", xis]
        return [*cmd, *eps, *common]
    attacks = ",".join(["none", *spec.appendix_attacks])
    cmd = ["-m", "robustsafe.cli", "evaluate", "--run", str(plan.run_dir), "--attacks", attacks]
    return [*cmd, *eps, *common, "--no-progress"]


def _extra_jobs(spec: GridSpec, index: int, plan: PlannedRun) -> list[_Job]:
    """The extra evaluations of a run, at the epsilon of its own config.yaml."""
    from robustsafe.train import load_run_config

    if not plan.extra:
        return []
    try:
        plan = replace(plan, epsilon=load_run_config(plan.run_dir).robust.epsilon)
    except (OSError, ValueError):
        pass  # the evaluation will report the problem with the run
    return [
        _Job(
            "extra",
            index,
            extra_command(spec, plan, name),
            plan.run_dir / (Path(name).stem + ".log"),
            name=name,
        )
        for name in plan.extra
    ]


def _finish_extra(state: _State, job: _Job, rc: int) -> bool:
    """Record the end of an extra evaluation; True if it succeeded."""
    ok = rc == 0 and (state.plan.run_dir / job.name).exists()
    state.extra[job.name] = "evaluated" if ok else "failed"
    return ok


def format_plan(plan: Sequence[PlannedRun]) -> str:
    """One line per run: action, epochs done / planned, evaluation, directory, notes."""
    lines = []
    for p in plan:
        ev = "evaluate" if p.evaluate else "-"
        if p.extra:
            ev += " + " + " + ".join(p.extra)
        line = (
            f"{p.action:<7} {p.env_id} {p.label} seed {p.seed}: "
            f"{p.epochs_done}/{p.epochs_planned} epochs, {ev}  ({p.run_dir})"
        )
        if p.note:
            line += f"  note: {p.note}"
        lines.append(line)
    counts = {a: sum(p.action == a for p in plan) for a in ("train", "resume", "skip")}
    n_eval = sum(p.evaluate for p in plan)
    n_extra = sum(len(p.extra) for p in plan)
    lines.append(
        f"{len(plan)} runs: {counts['train']} to train, {counts['resume']} to resume, "
        f"{counts['skip']} finished; {n_eval} evaluations"
        + (f", {n_extra} extra evaluations" if n_extra else "")
    )
    return "\n".join(lines)


def check_envs(env_ids: Iterable[str]) -> None:
    """Create and close each environment once; ValueError with the reason if one fails."""
    from robustsafe.envs import make

    for env_id in dict.fromkeys(env_ids):
        try:
            make(env_id).close()
        except Exception as err:
            raise ValueError(
                f"cannot create environment {env_id!r}: {type(err).__name__}: {err}"
            ) from None


# ----------------------------------------------------------------------------- commands


def train_command(spec: GridSpec, plan: PlannedRun) -> list[str]:
    """The ``robustsafe train`` arguments of a planned run (after ``python``)."""
    if plan.action == "resume":  # the saved settings go on; only the length may change
        cmd = ["-m", "robustsafe.cli", "train", "--out", str(plan.run_dir), "--resume"]
        return [*cmd, *_length_args(spec.train_args), "--no-progress"]
    cmd = ["-m", "robustsafe.cli", "train", "--env", plan.env_id, "--mode", plan.mode]
    if plan.algo != "ppol":
        algo, variant_sets = split_algo(plan.algo)  # sac-lag:ALPHA sets sac.alpha
        cmd += ["--algo", algo, *(x for item in variant_sets for x in ("--set", item))]
    cmd += ["--seed", str(plan.seed), "--preset", spec.preset, "--out", str(plan.run_dir)]
    return [*cmd, *spec.train_args, "--no-progress"]


def _length_args(train_args: Sequence[str]) -> list[str]:
    """The ``--epochs`` / ``--total-steps`` options among ``train_args`` (a resume refuses the
    others when they differ from the saved settings)."""
    out: list[str] = []
    it = iter(train_args)
    for arg in it:
        if arg in ("--epochs", "--total-steps"):
            out += [arg, next(it, "")]
        elif arg.startswith(("--epochs=", "--total-steps=")):
            out.append(arg)
    return out


def evaluate_command(spec: GridSpec, plan: PlannedRun) -> list[str]:
    """The ``robustsafe evaluate`` arguments of a run (after ``python``)."""
    return [
        "-m",
        "robustsafe.cli",
        "evaluate",
        "--run",
        str(plan.run_dir),
        "--attacks",
        ",".join(expected_attacks(spec)),
        "--eps",
        repr(float(plan.epsilon)),
        "--episodes",
        str(spec.episodes),
        "--seed",
        str(spec.eval_seed),
        "--out",
        str(plan.run_dir / "eval.json"),
        "--force",  # a stale evaluation of this run is replaced
        "--env-workers",
        str(spec.eval_workers),
        "--num-envs",
        str(spec.eval_num_envs),
        "--no-progress",
    ]


# ----------------------------------------------------------------------------- results


@dataclass(frozen=True)
class RunResult:
    """What happened to one run.

    train: ``trained`` / ``resumed`` / ``skipped`` (already finished) / ``failed`` /
    ``pending`` (dry run: would train or resume, see ``action``).
    evaluation: ``evaluated`` / ``skipped`` (eval.json up to date) / ``failed`` / ``not-run``
    (training failed, or the grid does not evaluate) / ``pending`` (dry run).
    exit_code and log_tail describe the failed process (training or evaluation), if any.
    """

    env_id: str
    mode: str
    seed: int
    run_dir: Path
    action: Action
    train: TrainStatus
    evaluation: EvalStatus
    epochs_done: int
    epochs_planned: int
    exit_code: int | None = None
    log_tail: str = ""
    train_seconds: float | None = None
    eval_seconds: float | None = None
    note: str = ""
    extra: tuple[tuple[str, str], ...] = ()  # (file, status) of the extra evaluations
    algo: str = "ppol"

    @property
    def ok(self) -> bool:
        failed = any(status == "failed" for _, status in self.extra)
        return self.train != "failed" and self.evaluation != "failed" and not failed


def format_results(results: Sequence[RunResult]) -> str:
    """A summary: one line per run, the failures' log tails, and the totals."""
    lines = []
    for r in results:
        label = r.mode if r.algo == "ppol" else f"{r.algo} {r.mode}"
        line = f"{r.env_id} {label} seed {r.seed}: {r.train}, evaluation {r.evaluation}"
        for name, status in r.extra:
            line += f", {name} {status}"
        if r.exit_code is not None:
            line += f" (exit status {r.exit_code})"
        lines.append(line)
    for r in results:
        if not r.ok and r.log_tail:
            lines.append(f"--- {r.run_dir}: last lines of its log")
            lines.extend("    " + s for s in r.log_tail.splitlines())
    failed = sum(not r.ok for r in results)
    lines.append(f"{len(results)} runs, {failed} failed")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- running


@dataclass
class _Job:
    kind: Literal["train", "evaluate", "extra"]
    index: int  # position in the plan
    args: list[str]
    log_path: Path
    started: float = 0.0
    log_offset: int = 0
    handle: Any = None
    name: str = ""  # the file an "extra" job writes
    lost: int = 0  # times its node was lost (Ray)


@dataclass
class _State:
    plan: PlannedRun
    train: TrainStatus
    evaluation: EvalStatus
    epochs_done: int
    exit_code: int | None = None
    log_tail: str = ""
    train_seconds: float | None = None
    eval_seconds: float | None = None
    notes: list[str] = field(default_factory=list)
    extra: dict[str, str] = field(default_factory=dict)

    def result(self) -> RunResult:
        p = self.plan
        notes = [n for n in (p.note, *self.notes) if n]
        return RunResult(
            p.env_id,
            p.mode,
            p.seed,
            p.run_dir,
            p.action,
            self.train,
            self.evaluation,
            self.epochs_done,
            p.epochs_planned,
            self.exit_code,
            self.log_tail,
            self.train_seconds,
            self.eval_seconds,
            "; ".join(notes),
            extra=tuple(self.extra.items()),
            algo=p.algo,
        )


def _tail(path: Path, offset: int, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines written to ``path`` after byte ``offset``."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])


def run_grid(
    spec: GridSpec,
    log: Callable[[str], None] = print,
    dry_run: bool = False,
    poll_interval: float = 0.2,
) -> list[RunResult]:
    """Train, resume or skip every run of ``spec``, then evaluate every finished agent.

    Returns one ``RunResult`` per (env, mode, seed), in grid order. A failed training or
    evaluation is reported in its result (exit status, last lines of its log) and in
    ``log``; the others go on. ``dry_run=True`` only plans (``train``/``evaluation``
    ``pending`` where work would run). Raises ValueError, before any process starts, when
    ``train_args`` are invalid or an environment with work to do cannot be created.
    If interrupted (KeyboardInterrupt), the running processes are stopped; calling again
    resumes where the grid stopped.
    """
    if spec.backend == "ray" and not dry_run:
        spec = replace(spec, out=spec.out.resolve())  # Ray workers have another cwd
    plan = plan_grid(spec)
    check_envs(p.env_id for p in plan if p.action != "skip" or p.evaluate or p.extra)
    states = [
        _State(
            p,
            "skipped" if p.action == "skip" else "pending",
            "not-run" if not spec.evaluate else ("pending" if p.evaluate else "skipped"),
            p.epochs_done,
        )
        for p in plan
    ]
    for p in plan:
        what = f"{p.action} ({p.epochs_done}/{p.epochs_planned} epochs)"
        ev = ", evaluate" if p.evaluate else ""
        ev += "".join(f", {name}" for name in p.extra)
        log(f"[grid] {p.env_id} {p.label} seed {p.seed}: {what}{ev}")
        if p.note:
            log(f"[grid]   note: {p.note}")
    for s in states:
        s.extra.update((name, "pending") for name in s.plan.extra)
    if dry_run:
        return [s.result() for s in states]

    with _GridLock(spec.out):
        launcher = make_launcher(spec.backend, spec.workers, spec.cpus_per_run)
        try:
            results = _execute(spec, plan, states, launcher, log, poll_interval)
        finally:
            launcher.close()
    failed = sum(not r.ok for r in results)
    log(f"[grid] finished: {len(results)} runs, {failed} failed")
    return results


def _execute(
    spec: GridSpec,
    plan: list[PlannedRun],
    states: list[_State],
    launcher: Any,
    log: Callable[[str], None],
    poll_interval: float,
) -> list[RunResult]:
    pending: deque[_Job] = deque()
    # Evaluations of already-finished runs first (quick, and they need no training).
    for i, p in enumerate(plan):
        if p.action == "skip" and p.evaluate:
            pending.append(_eval_job(spec, i, p))
        if p.action == "skip":
            pending.extend(_extra_jobs(spec, i, p))
    for i, p in enumerate(plan):
        if p.action != "skip":
            pending.append(_Job("train", i, train_command(spec, p), p.run_dir / "train.log"))
    total = len(pending)
    running: list[_Job] = []
    n_started = 0

    def describe(job: _Job) -> str:
        p = plan[job.index]
        return f"{job.name or job.kind} {p.env_id} {p.label} seed {p.seed}"

    def finish(job: _Job, rc: int) -> None:
        nonlocal total
        s = states[job.index]
        p = plan[job.index]
        seconds = time.monotonic() - job.started
        if rc == RUN_LOST and job.lost < MAX_LOST:
            again = _after_loss(spec, job, p)
            pending.appendleft(again)
            total += 1
            where = f"from epoch {_epochs_done(p.run_dir)}" if job.kind == "train" else "again"
            log(f"[grid] LOST  {describe(job)}: its node was lost; it runs {where}")
            return
        if job.kind == "extra":
            if _finish_extra(s, job, rc):
                log(f"[grid] done  {describe(job)} in {seconds:.1f} s")
                return
        elif job.kind == "train":
            s.train_seconds = seconds
            s.epochs_done = _epochs_done(p.run_dir)  # a crash may leave some epochs saved
            complete = s.epochs_done >= p.epochs_planned
            if rc == 0 and not complete:
                s.notes.append(
                    f"training exited normally but the run holds {s.epochs_done}"
                    f"/{p.epochs_planned} epochs"
                )
            if rc == 0 and complete:
                s.train = "resumed" if p.action == "resume" else "trained"
                log(f"[grid] done  {describe(job)} in {seconds:.1f} s")
                if s.evaluation == "pending":
                    extras = _extra_jobs(spec, job.index, p)
                    pending.extendleft(reversed(extras))
                    pending.appendleft(_eval_job(spec, job.index, p))
                    total += 1 + len(extras)
                return
            s.train = "failed"
            s.extra.update((name, "not-run") for name in p.extra)
            if s.evaluation == "pending":
                s.evaluation = "not-run"
        else:
            s.eval_seconds = seconds
            if rc == 0 and (p.run_dir / "eval.json").exists():
                s.evaluation = "evaluated"
                log(f"[grid] done  {describe(job)} in {seconds:.1f} s")
                return
            s.evaluation = "failed"
        s.exit_code = rc
        s.log_tail = _tail(job.log_path, job.log_offset)
        log(f"[grid] FAILED {describe(job)} (exit status {rc}); last lines of {job.log_path}:")
        for line in s.log_tail.splitlines():
            log(f"[grid]   {line}")

    try:
        while pending or running:
            while pending and len(running) < launcher.capacity():
                job = pending.popleft()
                n_started += 1
                job.started = time.monotonic()
                try:
                    job.log_path.parent.mkdir(parents=True, exist_ok=True)
                    job.log_offset = job.log_path.stat().st_size if job.log_path.exists() else 0
                    job.handle = launcher.start(job.args, job.log_path, plan[job.index].run_dir)
                except OSError as err:
                    s = states[job.index]
                    if job.kind == "train":
                        s.train = "failed"
                        s.evaluation = "not-run" if s.evaluation == "pending" else s.evaluation
                    elif job.kind == "extra":
                        s.extra[job.name] = "failed"
                    else:
                        s.evaluation = "failed"
                    s.log_tail = f"cannot start: {err}"
                    log(f"[grid] FAILED {describe(job)}: cannot start: {err}")
                    continue
                log(f"[grid] [{n_started}/{total}] start {describe(job)} -> {job.log_path}")
                running.append(job)
            time.sleep(poll_interval)
            for job in list(running):
                rc = job.handle.poll()
                if rc is not None:
                    running.remove(job)
                    finish(job, rc)
    finally:
        for job in running:  # interrupted: end what this grid started
            job.handle.stop()
    return [s.result() for s in states]


class _GridLock:
    """``<out>/.grid.lock`` holding this process's id, so that two grids never train the same
    run directory at once. A lock left by a process that no longer runs (on this machine) is
    taken over."""

    def __init__(self, out: Path) -> None:
        self.path = Path(out) / ".grid.lock"

    def __enter__(self) -> _GridLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                owner = self._owner()
                if owner is not None and _process_exists(owner):
                    raise RuntimeError(
                        f"another grid (process {owner}) is running in {self.path.parent}; "
                        f"wait for it to end (or, if it is gone, delete {self.path})"
                    ) from None
                self.path.unlink(missing_ok=True)  # stale
                continue
            with os.fdopen(fd, "w") as f:
                f.write(str(os.getpid()))
            return self
        raise RuntimeError(f"cannot take the grid lock {self.path}")

    def __exit__(self, *exc: object) -> None:
        if self._owner() == os.getpid():
            self.path.unlink(missing_ok=True)

    def _owner(self) -> int | None:
        try:
            return int(self.path.read_text().strip())
        except (OSError, ValueError):
            return None


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user
    return True


def _eval_job(spec: GridSpec, index: int, plan: PlannedRun) -> _Job:
    """The evaluation of a run, at the epsilon of its own config.yaml."""
    from robustsafe.train import load_run_config

    try:
        plan = replace(plan, epsilon=load_run_config(plan.run_dir).robust.epsilon)
    except (OSError, ValueError):
        pass  # the evaluation will report the problem with the run
    return _Job("evaluate", index, evaluate_command(spec, plan), plan.run_dir / "eval.log")


def _after_loss(spec: GridSpec, job: _Job, plan: PlannedRun) -> _Job:
    """The job again after its node was lost: a training resumes from the epochs that the
    driver's copy of the run holds (from the start if none)."""
    args = job.args
    if job.kind == "train":
        action: Action = "resume" if (plan.run_dir / "state.pt").exists() else "train"
        args = train_command(spec, replace(plan, action=action))
    return replace(job, args=args, handle=None, lost=job.lost + 1)


def _epochs_done(run_dir: Path) -> int:
    from robustsafe.train import run_status

    try:
        status = run_status(run_dir)
    except Exception:
        return 0
    return status[0] if status is not None else 0
