"""Planning a grid: what ``run_grid`` would do for every run (train, resume or skip; which
evaluations are out of date), read from the run directories without changing them; and what
happened to each run (``RunResult``)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from robustsafe.config import TrainConfig
from robustsafe.experiments.grid.spec import (
    Action,
    EvalStatus,
    GridSpec,
    TrainStatus,
    resolve_train_config,
)
from robustsafe.files import read_text_file
from robustsafe.rundir import RESUME_MAY_CHANGE
from robustsafe.settings_io import flat_settings


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
    settings_differ: tuple[str, ...] = ()  # the saved settings that are not the grid's

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
    wanted = set(expected_attacks(spec))
    return _eval_file_is_current(
        Path(run_dir), "eval.json", spec, epsilon, lambda data, attacks: attacks == wanted
    )


def _eval_file_is_current(
    run_dir: Path,
    name: str,
    spec: GridSpec,
    epsilon: float,
    made_as_asked: Callable[[dict, set], bool],
) -> bool:
    """True if ``run_dir/name`` is newer than the run's ``agent.pt``, was made with the spec's
    episodes and evaluation seed, at ``epsilon``, and ``made_as_asked(data, its attackers)``.
    A damaged or foreign file (bad JSON, wrong types, numbers beyond a float) is not current:
    the run is evaluated again, the old file kept beside it."""
    try:
        if (run_dir / name).stat().st_mtime_ns <= (run_dir / "agent.pt").stat().st_mtime_ns:
            return False
        data = json.loads(read_text_file(run_dir / name))  # (a FIFO would wait for a writer)
        if not isinstance(data, dict) or not isinstance(data.get("results"), list):
            return False
        if data.get("episodes") != spec.episodes or data.get("seed") != spec.eval_seed:
            return False
        results = [r for r in data["results"] if isinstance(r, dict)]
        if not made_as_asked(data, {r.get("attack") for r in results}):
            return False
        eps = [r.get("epsilon") for r in results if r.get("attack") != "none"]
        return all(isinstance(e, int | float) and math.isclose(e, epsilon) for e in eps)
    except (OSError, ValueError, TypeError, OverflowError, RecursionError):
        return False


def _settings_difference(saved: TrainConfig, wanted: TrainConfig) -> list[str]:
    """Dotted names of the settings (other than those a resume may change) that differ."""
    a, b = flat_settings(saved), flat_settings(wanted)
    keys = a.keys() | b.keys()
    return sorted(k for k in keys if k not in RESUME_MAY_CHANGE and a.get(k) != b.get(k))


def _described_difference(saved: TrainConfig, wanted: TrainConfig) -> list[str]:
    """``_settings_difference`` with the values: "KEY SAVED -> GRID'S"."""
    a, b = flat_settings(saved), flat_settings(wanted)
    return [f"{k} {a.get(k)!r} -> {b.get(k)!r}" for k in _settings_difference(saved, wanted)]


def plan_run(spec: GridSpec, env_id: str, mode: str, seed: int, algo: str = "ppol") -> PlannedRun:
    """The plan of one run (reads its directory, changes nothing)."""
    return replace(_plan_run(spec, env_id, mode, seed, algo), algo=algo)


def _plan_run(spec: GridSpec, env_id: str, mode: str, seed: int, algo: str) -> PlannedRun:
    from robustsafe.rundir import load_run_config, run_status

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
    differ = tuple(_described_difference(saved, wanted))
    if differ:
        notes.append(
            "the run's saved settings differ from the grid's (saved -> grid's): "
            + ", ".join(differ)
            + (" (kept: --keep-saved-settings)" if spec.keep_saved_settings else "")
        )
    if done < target:
        note = "; ".join(notes)
        return PlannedRun(
            env_id,
            mode,
            seed,
            run,
            "resume",
            done,
            target,
            spec.evaluate,
            epsilon,
            note,
            settings_differ=differ,
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
        settings_differ=differ,
    )


def check_saved_settings(spec: GridSpec, plan: list[PlannedRun]) -> None:
    """ValueError if a run in ``spec.out`` holds other settings than the grid asks for (the
    grid would go on with the saved ones: results of settings nobody asked for), unless
    ``spec.keep_saved_settings``."""
    differ = [p for p in plan if p.settings_differ]
    if not differ or spec.keep_saved_settings:
        return
    first = differ[0]
    raise ValueError(
        f"{len(differ)} run(s) in {spec.out} were trained with other settings than this "
        f"grid's (first: {first.env_id} {first.label} seed {first.seed}, saved -> grid's: "
        f"{', '.join(first.settings_differ)}; a preset may have changed since); use another "
        "--out for the new settings, or --keep-saved-settings to go on with the saved ones"
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
    from robustsafe.experiments.appendix_runs import APPENDIX_EVAL_NAME
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

    def made_as_asked(data: dict, attacks: set) -> bool:
        if name == XI_EVAL_NAME:
            return data.get("xi_values") == list(spec.xi_sweep)
        return attacks == {"none", *spec.appendix_attacks}

    return _eval_file_is_current(Path(run_dir), name, spec, epsilon, made_as_asked)


def _plan_extras(spec: GridSpec, plan: PlannedRun) -> PlannedRun:
    names = extra_evaluations(spec, plan.mode) if plan.algo == "ppol" else []
    if plan.action == "skip":
        names = [
            n for n in names if not extra_evaluation_is_current(plan.run_dir, n, spec, plan.epsilon)
        ]
    return replace(plan, extra=tuple(names)) if names else plan


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
    """A summary: one line per run, why each failed run failed (a refused evaluation's reason,
    the last lines of a failed job's log), and the totals."""
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
            lines.append(f"--- {r.run_dir}: why it failed")
            lines.extend("    " + s for s in r.log_tail.splitlines())
    failed = sum(not r.ok for r in results)
    lines.append(f"{len(results)} runs, {failed} failed")
    return "\n".join(lines)
