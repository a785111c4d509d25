"""The grid's spec: ``GridSpec`` (what to train and how to evaluate it), its validation, the
``train_args`` parser and the settings ``robustsafe train`` would resolve for a run."""

from __future__ import annotations

import argparse
import numbers
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from robustsafe.choices import check_mode, spelling_key, split_algo
from robustsafe.config import TrainConfig
from robustsafe.presets import PRESETS, resolve

DEFAULT_ATTACKS: tuple[str, ...] = ("none", "random", "mad", "amad", "mc", "mr")
# the extra attackers of ``robustsafe grid --appendix`` (``GridSpec.appendix_attacks``, for
# the runs of ``GridSpec.appendix_modes``): the paper's minimum-reward and mixture tables
# (``robustsafe.experiments.minr_table`` and ``mix_table``)
APPENDIX_ATTACKS: tuple[str, ...] = ("minr", "mix:0.25", "mix:0.5", "mix:0.75")
BACKENDS = ("local", "ray")

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
    keys = [spelling_key(v) if isinstance(v, str) else v for v in items]
    dupes = sorted({str(v) for v, k in zip(items, keys, strict=True) if keys.count(k) > 1})
    if dupes:  # (mix:0.5 and mix:.5 name one thing)
        raise ValueError(f"{name} lists {' / '.join(dupes)}: the same entry more than once")
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
    if ns.epochs is not None and ns.total_steps is not None:
        raise ValueError("give --epochs or --total-steps, not both: each sets the run's length")
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
        How many training / evaluation processes run at a time (local backend). Default 1
        here; ``robustsafe grid`` passes ``concurrency.default_parallel_runs()`` (2 on a 2-core
        machine): a run's env workers wait while its main process acts, attacks and updates,
        so a run alone keeps about 1.46 cores busy, and two at a time on 2 cores trained
        1.19-1.58x as many runs per hour, with the same numbers. The Ray backend ignores it:
        its concurrency follows the cluster (``cpus_per_run``).
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
    keep_saved_settings
        A run already in ``out`` that holds other settings than the grid's (another preset,
        ``--set``, code defaults since changed) makes the grid refuse before it starts
        anything; True goes on with the saved settings (a resume keeps them, a finished run is
        skipped). ``--epochs`` and the workers never count as other settings.
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
    keep_saved_settings: bool = False

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
        for name, low in (
            ("workers", 1),
            ("episodes", 1),
            ("eval_seed", 0),
            ("cpus_per_run", 1),
            ("eval_workers", 0),
            ("eval_num_envs", 1),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(
                    f"{name} ({_OPTIONS[name]}) must be an integer >= {low}, got {value!r}"
                )
        if self.backend not in BACKENDS:
            raise ValueError(f"unknown backend {self.backend!r}; accepted: {', '.join(BACKENDS)}")
        _check_attacks(self.attacks)
        _check_extras(self)
        _check_learner_variants(self)
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


# The grid's options of GridSpec's fields whose names differ (their errors name both).
_OPTIONS = {
    "workers": "--parallel-runs",
    "episodes": "--episodes",
    "eval_seed": "--eval-seed",
    "cpus_per_run": "--cpus-per-run",
    "eval_workers": "--eval-env-workers",
    "eval_num_envs": "--eval-num-envs",
}


def _check_learner_variants(spec: GridSpec) -> None:
    """``sac-lag:ALPHA`` names its runs' alpha: a ``--set sac.alpha`` would make the name lie,
    and two learners with one alpha (``sac-lag`` at the preset's, ``sac-lag:0.001``) would train
    the same runs twice (and the table would refuse the seeds counted twice)."""
    sets = parse_train_args(spec.train_args).sets
    if any(":" in a for a in spec.algos) and any(s.startswith("sac.alpha=") for s in sets):
        raise ValueError(
            "--set sac.alpha with a learner sac-lag:ALPHA, which names its alpha: give the "
            "alphas as learners (--algos sac-lag:0.1,sac-lag:0.01) and drop --set sac.alpha"
        )
    sac = [a for a in spec.algos if split_algo(a)[0] == "sac-lag"]
    if len(sac) < 2:
        return
    for env in spec.envs:
        by_alpha: dict[float, str] = {}
        for algo in sac:
            alpha = resolve_train_config(spec, env, spec.modes[0], spec.seeds[0], algo).sac.alpha
            other = by_alpha.setdefault(alpha, algo)
            if other != algo:
                raise ValueError(
                    f"learners {other} and {algo} train the same runs on {env} (alpha {alpha}); "
                    "list one of them"
                )


def env_dir_name(env_id: str) -> str:
    """The directory name of an env id: the id after any ``module:`` prefix, '/' made '_'."""
    return env_id.rsplit(":", 1)[-1].replace("/", "_").replace("\\", "_")


def _check_attacks(attacks: Sequence[str]) -> None:
    """ValueError, with the accepted names, for an attacker name that is none of the paper's
    (valid by name: checked without importing torch, so a dry run stays quick) and that
    ``make_attacker`` refuses (a mixture's weight, a registered attacker)."""
    from robustsafe.experiments.names import ATTACK_NAMES

    others = [name for name in attacks if name not in ATTACK_NAMES]
    if not others:
        return
    from robustsafe.attacks import make_attacker

    for name in others:
        make_attacker(name)


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
    return resolve(  # its errors name the option (--algo, --set KEY, --epochs, ...)
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
