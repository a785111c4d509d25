"""The commands (after ``python``) that the grid runs for a planned run: its training or
resume (``robustsafe train``), its evaluation (``robustsafe evaluate``) and its extra
evaluations (the appendix's attackers, ``robustsafe xi-sweep``); and the driver's jobs, each
such a command with its log."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from robustsafe.choices import split_algo
from robustsafe.experiments.grid.plan import PlannedRun, expected_attacks
from robustsafe.experiments.grid.spec import Action, GridSpec
from robustsafe.rundir import RESUME_SETS
from robustsafe.settings_io import set_key


def train_command(spec: GridSpec, plan: PlannedRun) -> list[str]:
    """The ``robustsafe train`` arguments of a planned run (after ``python``)."""
    if plan.action == "resume":  # the saved settings go on; the length and workers may change
        cmd = ["-m", "robustsafe.cli", "train", "--out", str(plan.run_dir), "--resume"]
        return [*cmd, *_env_module_args(plan), *_resume_args(spec.train_args), "--no-progress"]
    cmd = ["-m", "robustsafe.cli", "train", "--env", plan.env_id, "--mode", plan.mode]
    if plan.algo != "ppol":
        algo, variant_sets = split_algo(plan.algo)  # sac-lag:ALPHA sets sac.alpha
        cmd += ["--algo", algo, *(x for item in variant_sets for x in ("--set", item))]
    cmd += ["--seed", str(plan.seed), "--preset", spec.preset, "--out", str(plan.run_dir)]
    return [*cmd, *spec.train_args, "--no-progress"]


def _env_module_args(plan: PlannedRun) -> list[str]:
    """``--env ID`` for a ``module:Id`` task, whose module the commands that read the id from
    the run's files import only on the command line's word; none for the others (their id
    comes from the run's files)."""
    return ["--env", plan.env_id] if ":" in plan.env_id else []


# the options of train_args a resume takes: the length, the env workers and the snapshot
# spacing (which do not change the numbers; a resume refuses the other options when they
# differ from the saved ones)
_RESUME_OPTIONS = ("--epochs", "--total-steps", "--env-workers", "--workers")


def _resume_args(train_args: Sequence[str]) -> list[str]:
    """The options among ``train_args`` that a resume takes: ``--epochs`` / ``--total-steps``,
    ``--env-workers`` and ``--set KEY=V`` of ``rundir.RESUME_SETS`` (workers, checkpoint_every)."""
    out: list[str] = []
    it = iter(train_args)
    for arg in it:
        if arg in _RESUME_OPTIONS:
            out += [arg, next(it, "")]
        elif arg.startswith(tuple(f"{o}=" for o in _RESUME_OPTIONS)):
            out.append(arg)
        elif arg == "--set":
            item = next(it, "")
            if set_key(item) in RESUME_SETS:
                out += [arg, item]
        elif arg.startswith("--set=") and set_key(arg.removeprefix("--set=")) in RESUME_SETS:
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
        *_env_module_args(plan),
        "--force",  # a stale evaluation of this run is replaced
        "--env-workers",
        str(spec.eval_workers),
        "--num-envs",
        str(spec.eval_num_envs),
        "--no-progress",
    ]


def extra_command(spec: GridSpec, plan: PlannedRun, name: str) -> list[str]:
    """The command (after ``python``) that writes the extra evaluation ``name`` of a run."""
    from robustsafe.experiments.xi_sweep import XI_EVAL_NAME

    common = ["--episodes", str(spec.episodes), "--seed", str(spec.eval_seed)]
    common += ["--out", str(plan.run_dir / name), "--force"]  # a stale evaluation is replaced
    common += _env_module_args(plan)
    common += ["--env-workers", str(spec.eval_workers)]
    common += ["--num-envs", str(spec.eval_num_envs)]
    eps = ["--eps", repr(float(plan.epsilon))]
    if name == XI_EVAL_NAME:
        xis = ",".join(repr(x) for x in spec.xi_sweep)
        cmd = ["-m", "robustsafe.cli", "xi-sweep", "--run", str(plan.run_dir), "--xi", xis]
        return [*cmd, *eps, *common]
    attacks = ",".join(["none", *spec.appendix_attacks])
    cmd = ["-m", "robustsafe.cli", "evaluate", "--run", str(plan.run_dir), "--attacks", attacks]
    return [*cmd, *eps, *common, "--no-progress"]


# ----------------------------------------------------------------------------- jobs


@dataclass
class _Job:
    """A command that the driver runs for a run of the plan, its log, and how it ran."""

    kind: Literal["train", "evaluate", "extra"]
    index: int  # position in the plan
    args: list[str]
    log_path: Path
    started: float = 0.0  # time.monotonic() at its start
    started_at: str = ""  # ... and the UTC date and time, for timings.json
    from_epoch: int = 0  # a training's epochs done at its start
    log_offset: int = 0
    handle: Any = None
    name: str = ""  # the file an "extra" job writes
    lost: int = 0  # times its node was lost (Ray)


def _at_run_epsilon(plan: PlannedRun) -> PlannedRun:
    """``plan`` at the epsilon of its run's own config.yaml (unchanged where that is not
    readable: the evaluation will report the problem with the run)."""
    from robustsafe.rundir import load_run_config

    try:
        return replace(plan, epsilon=load_run_config(plan.run_dir).robust.epsilon)
    except (OSError, ValueError):
        return plan


def _eval_job(spec: GridSpec, index: int, plan: PlannedRun) -> _Job:
    """The evaluation of a run, at the epsilon of its own config.yaml."""
    plan = _at_run_epsilon(plan)
    return _Job("evaluate", index, evaluate_command(spec, plan), plan.run_dir / "eval.log")


def _extra_jobs(spec: GridSpec, index: int, plan: PlannedRun) -> list[_Job]:
    """The extra evaluations of a run, at the epsilon of its own config.yaml."""
    if not plan.extra:
        return []
    plan = _at_run_epsilon(plan)
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


def _after_loss(spec: GridSpec, job: _Job, plan: PlannedRun) -> _Job:
    """The job again after its node was lost: a training resumes from the epochs that the
    driver's copy of the run holds (from the start if none)."""
    args = job.args
    if job.kind == "train":
        action: Action = "resume" if (plan.run_dir / "state.pt").exists() else "train"
        args = train_command(spec, replace(plan, action=action))
    return replace(job, args=args, handle=None, lost=job.lost + 1)
