"""Executing a grid's plan: ``run_grid`` starts the trainings, evaluations and extra
evaluations through a launcher (``robustsafe.experiments.launchers``), at most as many at once
as the launcher has room for, records how each ended, starts a lost run again (Ray) and holds
``<out>/.grid.lock`` while it runs."""

from __future__ import annotations

import contextlib
import datetime as dt
import shutil
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from robustsafe.experiments.grid.commands import (
    _after_loss,
    _eval_job,
    _extra_jobs,
    _Job,
    train_command,
)
from robustsafe.experiments.grid.plan import (
    PlannedRun,
    RunResult,
    check_saved_settings,
    plan_grid,
)
from robustsafe.experiments.grid.spec import EvalStatus, GridSpec, TrainStatus, check_envs
from robustsafe.experiments.launchers import RUN_LOST, make_launcher
from robustsafe.runstate import RunLockedError, check_unlocked, run_lock

LOG_TAIL_LINES = 15
MAX_LOST = 3  # times a run may be lost with its node (Ray) before the grid gives up on it
STOPPED = -1001  # a job's end when the grid itself is stopped (SIGTERM, Ctrl-C)
_ENDINGS = {RUN_LOST: "lost", STOPPED: "interrupted"}  # timings.json's names for those ends


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
    ``train_args`` are invalid, an environment with work to do cannot be created, or a run in
    ``spec.out`` holds other settings than the grid's (``check_saved_settings``).
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
    check_saved_settings(spec, plan)

    # the launcher before the lock: a backend that refuses (no Ray node with the CPUs of a run)
    # leaves no --out folder behind; but not for a folder another grid holds (nor Ray started)
    _check_no_other_grid(spec.out)
    launcher = make_launcher(spec.backend, spec.workers, spec.cpus_per_run)
    if spec.backend == "local":
        log(f"[grid] {spec.workers} job(s) at a time (--parallel-runs)")
    try:
        with _grid_lock(spec.out):
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
    """Run the plan's jobs through ``launcher``, as many at once as it has room for."""
    for p in plan:
        _close_interrupted(p.run_dir, log)
    jobs = _Jobs(spec, plan, states, launcher, log)
    jobs.queue_plan()
    try:
        while jobs.pending or jobs.running:
            room = launcher.capacity()
            jobs.say_if_waiting(room)
            while jobs.pending and len(jobs.running) < room:
                jobs.start(jobs.pending.popleft())
            time.sleep(poll_interval)
            jobs.poll()
    finally:
        jobs.stop_running()  # interrupted: end what this grid started
    return [s.result() for s in states]


@dataclass
class _Jobs:
    """The jobs of one grid: those waiting, those running, and how each ended."""

    spec: GridSpec
    plan: list[PlannedRun]
    states: list[_State]
    launcher: Any
    log: Callable[[str], None]
    pending: deque[_Job] = field(default_factory=deque)
    running: list[_Job] = field(default_factory=list)
    after_training: dict[int, int] = field(default_factory=dict)  # run: evaluations after it
    total: int = 0  # jobs planned, for the log's [started/total]
    n_started: int = 0
    waiting_said: bool = False

    def describe(self, job: _Job) -> str:
        """The job and its run, as the log names them."""
        p = self.plan[job.index]
        return f"{job.name or job.kind} {p.env_id} {p.label} seed {p.seed}"

    def queue_plan(self) -> None:
        """Queue the finished runs' evaluations (quick, no training needed), then the trainings."""
        for i, p in enumerate(self.plan):
            if p.action == "skip":
                self.pending.extend(self.evaluations(i, ["eval.json"] * p.evaluate))
        for i, p in enumerate(self.plan):
            if p.action != "skip":
                args = train_command(self.spec, p)
                self.pending.append(_Job("train", i, args, p.run_dir / "train.log"))
        # every job planned, the evaluations that follow a training included (a failed
        # training's are taken off again)
        self.after_training = {
            i: 1 + len(p.extra)
            for i, p in enumerate(self.plan)
            if p.action != "skip" and self.states[i].evaluation == "pending"
        }
        self.total = len(self.pending) + sum(self.after_training.values())

    def say_if_waiting(self, room: int) -> None:
        """Say once that jobs wait while no node has room (a cluster that lost its nodes)."""
        if self.pending and not self.running and room == 0:
            if not self.waiting_said:
                self.log(
                    f"[grid] waiting: no node has room for a run now ({len(self.pending)} "
                    "pending); it goes on when one joins (Ctrl-C stops the grid)"
                )
                self.waiting_said = True
        else:
            self.waiting_said = False

    def start(self, job: _Job) -> None:
        """Start ``job`` through the launcher: running, or failed if it cannot start."""
        self.n_started += 1
        run_dir = self.plan[job.index].run_dir
        job.started = time.monotonic()
        job.started_at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        if job.kind == "train":
            job.from_epoch = _epochs_done(run_dir)
        try:
            job.log_path.parent.mkdir(parents=True, exist_ok=True)
            job.log_offset = job.log_path.stat().st_size if job.log_path.exists() else 0
            job.handle = self.launcher.start(job.args, job.log_path, run_dir)
        except OSError as err:
            _cannot_start(self.states[job.index], job, err)
            if job.kind == "train":  # its evaluations will not run either
                self.total -= self.after_training.get(job.index, 0)
            self.log(f"[grid] FAILED {self.describe(job)}: cannot start: {err}")
            return
        _record_timing(job, run_dir, None, None, self.log)
        self.log(
            f"[grid] [{self.n_started}/{self.total}] start {self.describe(job)} -> {job.log_path}"
        )
        self.running.append(job)

    def poll(self) -> None:
        """Take every job that has ended off ``running`` and record how it ended."""
        for job in list(self.running):
            rc = job.handle.poll()
            if rc is not None:
                self.running.remove(job)
                self.finish(job, rc)

    def finish(self, job: _Job, rc: int) -> None:
        """Record how ``job`` ended, and queue what follows: it again if lost, else evaluations."""
        seconds = time.monotonic() - job.started
        _record_timing(job, self.plan[job.index].run_dir, seconds, rc, self.log)
        if rc == RUN_LOST and job.lost < MAX_LOST:
            self.queue_again(job)
            return
        if not self.record_end(job, rc, seconds):
            self.report_failure(job, rc)
            return
        self.log(f"[grid] done  {self.describe(job)} in {seconds:.1f} s")
        if job.kind == "train" and self.states[job.index].evaluation == "pending":
            self.queue_evaluations(job)

    def queue_again(self, job: _Job) -> None:
        """Queue first, to run again, a job whose node was lost (Ray)."""
        p = self.plan[job.index]
        self.pending.appendleft(_after_loss(self.spec, job, p))
        self.total += 1
        where = f"from epoch {_epochs_done(p.run_dir)}" if job.kind == "train" else "again"
        self.log(f"[grid] LOST  {self.describe(job)}: its node was lost; it runs {where}")

    def record_end(self, job: _Job, rc: int, seconds: float) -> bool:
        """Record the end of ``job`` in its run's state; True if it succeeded."""
        state = self.states[job.index]
        if job.kind == "extra":
            return _finish_extra(state, job, rc)
        if job.kind == "train":
            if _finish_training(state, rc, seconds):
                return True
            self.total -= self.after_training.get(job.index, 0)
            return False
        return _finish_evaluation(state, rc, seconds)

    def queue_evaluations(self, job: _Job) -> None:
        """Queue first a trained run's evaluation, then its extra ones (old files kept)."""
        jobs = self.evaluations(job.index, ["eval.json"])
        self.total -= 1 + len(self.plan[job.index].extra) - len(jobs)  # counted when planned
        self.pending.extendleft(reversed(jobs))

    def evaluations(self, index: int, main: list[str]) -> list[_Job]:
        """The evaluation jobs of run ``index`` (``main``: ["eval.json"] or []; then its extra
        files), after a copy of each file they replace is kept. An evaluation whose previous
        file cannot be copied (a full disk) does not run, so that the file is not lost: it is
        recorded as failed, and the grid goes on."""
        p, state = self.plan[index], self.states[index]
        refused = _keep_previous(p.run_dir, [*main, *p.extra], self.log)
        for name, why in refused.items():
            if name == "eval.json":
                state.evaluation = "failed"
            else:
                state.extra[name] = "failed"
            state.log_tail = "\n".join(filter(None, [state.log_tail, why]))
            self.log(
                f"[grid] FAILED evaluation {name} of {p.env_id} {p.label} seed {p.seed}: {why}"
            )
        jobs = [_eval_job(self.spec, index, p)] if main and "eval.json" not in refused else []
        return jobs + [j for j in _extra_jobs(self.spec, index, p) if j.name not in refused]

    def report_failure(self, job: _Job, rc: int) -> None:
        """Record a failed job's exit status and log the last lines of its log."""
        s = self.states[job.index]
        s.exit_code = rc
        tail = _tail(job.log_path, job.log_offset)
        s.log_tail = "\n".join(filter(None, [s.log_tail, tail]))  # kept: a refusal's reason
        self.log(
            f"[grid] FAILED {self.describe(job)} (exit status {rc}); last lines of {job.log_path}:"
        )
        for line in tail.splitlines():
            self.log(f"[grid]   {line}")
        for note in s.notes:
            self.log(f"[grid]   ({note})")

    def stop_running(self) -> None:
        """Stop the jobs still running and record them as stopped with the grid."""
        for job in self.running:
            job.handle.stop()
            seconds = time.monotonic() - job.started
            _record_timing(job, self.plan[job.index].run_dir, seconds, STOPPED, self.log)


GRID_LOCK_NAME = ".grid.lock"  # in --out: two grids never train one folder at once


def _check_no_other_grid(out: Path) -> None:
    """RuntimeError if another live grid holds ``out``'s lock (read only: before any work)."""
    try:
        check_unlocked(Path(out), GRID_LOCK_NAME)
    except RunLockedError as err:
        raise RuntimeError(_other_grid(out, err)) from None


@contextmanager
def _grid_lock(out: Path) -> Iterator[None]:
    """Hold ``out``'s grid lock (``runstate.run_lock``'s flock) while the grid runs."""
    try:
        lock = run_lock(Path(out), GRID_LOCK_NAME)
        lock.__enter__()
    except RunLockedError as err:
        raise RuntimeError(_other_grid(out, err)) from None
    with contextlib.ExitStack() as stack:
        stack.push(lock)  # its exit (the release) runs however the block ends
        yield


def _other_grid(out: Path, err: RunLockedError) -> str:
    return f"another grid (process {err.owner}) is running in {out}; wait for it to end"


def _keep_previous(run_dir: Path, names: list[str], log: Callable[[str], None]) -> dict[str, str]:
    """A copy of each evaluation file ``names`` of a run that a new evaluation is about to
    replace (other episodes, seed, attackers or epsilon, or a newer agent: a resumed run's):
    NAME.replaced-STAMP.json beside it (no table reads it), so that no measurement is lost to
    a changed option. Returns {name: why} for the files that could not be copied (what was
    written of the copy removed): their evaluations must not run."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    refused: dict[str, str] = {}
    for name in names:
        path = run_dir / name
        if path.is_file():
            kept = path.with_name(f"{path.stem}.replaced-{stamp}{path.suffix}")
            n = 1
            while kept.exists():  # another copy this second: never replace a copy
                n += 1
                kept = path.with_name(f"{path.stem}.replaced-{stamp}-{n}{path.suffix}")
            try:
                shutil.copy2(path, kept)
            except OSError as err:
                with contextlib.suppress(OSError):
                    kept.unlink()  # a partial copy (the name was free before)
                refused[name] = (
                    f"the previous {name} could not be kept ({err}); not evaluated again, so "
                    "that it is not lost"
                )
                continue
            log(f"[grid] {path} is evaluated again; the previous one is kept as {kept}")
    return refused


def _record_timing(
    job: _Job, run_dir: Path, seconds: float | None, rc: int | None, log: Callable[[str], None]
) -> None:
    """Write ``job`` into the run's ``timings.json``: as "running" when it starts (``rc``
    None), how it ended when it ends: its exit status, "lost" with its node, "interrupted"
    with the grid (a warning if that cannot be written: the timings are a record, the run's
    results do not depend on them)."""
    from robustsafe.rundir import record_timing

    entry: dict[str, Any] = {"job": job.name or job.kind, "started": job.started_at}
    if job.kind == "train":
        entry.update(
            from_epoch=job.from_epoch, to_epoch=None if rc is None else _epochs_done(run_dir)
        )
    if rc is None:
        entry.update(seconds=None, exit_status="running")
    else:
        entry.update(seconds=round(seconds or 0.0, 1), exit_status=_ENDINGS.get(rc, rc))
    try:
        record_timing(run_dir, entry)
    except (OSError, ValueError) as err:
        log(f"[grid] warning: no timing recorded: {err}")


def _close_interrupted(run_dir: Path, log: Callable[[str], None]) -> None:
    """Jobs still "running" in ``timings.json`` when a grid starts were left by a grid that
    was stopped before they ended (killed, machine stopped): mark them "interrupted", a
    training's with the epochs the run holds and the seconds from its start to its last saved
    epoch (what came after is lost with that epoch; None where it saved none)."""
    from robustsafe.rundir import read_timings, record_timing

    try:
        stale = [e for e in read_timings(run_dir) if e.get("exit_status") == "running"]
        for entry in stale:
            entry["exit_status"] = "interrupted"
            if entry.get("job") == "train":
                entry["to_epoch"] = _epochs_done(run_dir)
                entry["seconds"] = _seconds_to_last_save(run_dir, str(entry.get("started")))
            record_timing(run_dir, entry)
    except (OSError, ValueError) as err:
        log(f"[grid] warning: timings not brought up to date: {err}")


def _seconds_to_last_save(run_dir: Path, started: str) -> float | None:
    try:
        start = dt.datetime.fromisoformat(started).timestamp()
        saved = (run_dir / "state.pt").stat().st_mtime
    except (OSError, ValueError):
        return None
    return round(saved - start, 1) if saved > start else None


def _epochs_done(run_dir: Path) -> int:
    return _read_epochs(run_dir)[0]


def _read_epochs(run_dir: Path) -> tuple[int, str | None]:
    """(epochs saved, None), or (0, why) when this process cannot read the run's state."""
    from robustsafe.rundir import run_status

    try:
        status = run_status(run_dir)
    except Exception as err:
        return 0, f"{type(err).__name__}: {err}"
    return (status[0] if status is not None else 0), None


def _finish_extra(state: _State, job: _Job, rc: int) -> bool:
    """Record the end of an extra evaluation; True if it succeeded."""
    ok = rc == 0 and (state.plan.run_dir / job.name).exists()
    state.extra[job.name] = "evaluated" if ok else "failed"
    return ok


def _finish_training(state: _State, rc: int, seconds: float) -> bool:
    """Record the end of a training; True if it ended with every planned epoch saved."""
    p = state.plan
    state.train_seconds = seconds
    state.epochs_done, unreadable = _read_epochs(p.run_dir)  # a crash may leave some saved
    complete = state.epochs_done >= p.epochs_planned
    if rc == 0 and unreadable:
        state.notes.append(
            f"training exited normally but this grid cannot read the run's state ({unreadable});"
            " if the package changed while the grid ran, the same grid command run again reads it"
        )
    elif rc == 0 and not complete:
        state.notes.append(
            f"training exited normally but the run holds {state.epochs_done}"
            f"/{p.epochs_planned} epochs"
        )
    if rc == 0 and complete:
        state.train = "resumed" if p.action == "resume" else "trained"
        return True
    state.train = "failed"
    state.extra.update((name, "not-run") for name in p.extra)
    if state.evaluation == "pending":
        state.evaluation = "not-run"
    return False


def _finish_evaluation(state: _State, rc: int, seconds: float) -> bool:
    """Record the end of an evaluation; True if it succeeded (eval.json written)."""
    state.eval_seconds = seconds
    if rc == 0 and (state.plan.run_dir / "eval.json").exists():
        state.evaluation = "evaluated"
        return True
    state.evaluation = "failed"
    return False


def _cannot_start(state: _State, job: _Job, err: OSError) -> None:
    """Record that ``job`` could not start (its log's folder, the launcher)."""
    if job.kind == "train":
        state.train = "failed"
        state.extra.update((name, "not-run") for name in state.plan.extra)
        state.evaluation = "not-run" if state.evaluation == "pending" else state.evaluation
    elif job.kind == "extra":
        state.extra[job.name] = "failed"
    else:
        state.evaluation = "failed"
    state.log_tail = f"cannot start: {err}"
