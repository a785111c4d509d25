"""The grid runner, on a tiny toy environment that subprocesses import by "module:EnvId"."""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import fcntl
import json
import os
import sys
from pathlib import Path

import pytest
import yaml
from grid_interrupt import epoch_of, signal_after_two_epochs

from robustsafe.experiments.grid import (
    GridSpec,
    evaluation_is_current,
    format_plan,
    format_results,
    parse_train_args,
    plan_grid,
    run_grid,
)
from robustsafe.experiments.table_format import format_csv, write_tables
from robustsafe.presets import resolve
from robustsafe.rundir import check_fresh, load_run_config, run_status
from robustsafe.settings_io import to_dict

REPO_ROOT = Path(__file__).resolve().parents[2]
TOY = "tests.experiments.toy_env:RobustSafeGridToy-v0"
CRASH = "tests.experiments.toy_env:RobustSafeGridToyCrash-v0"
TINY = (
    "--set steps_per_epoch=40 --set num_envs=2 --set workers=0 --set ppo.hidden=[8,8] "
    "--set ppo.actor_passes=1 --set ppo.critic_passes=1 --set ppo.minibatch_size=null"
).split()


@pytest.fixture
def importable_toy(monkeypatch):
    """Make ``tests.experiments.toy_env`` importable here and in the grid's subprocesses."""
    monkeypatch.syspath_prepend(str(REPO_ROOT))
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT) + (os.pathsep + path if path else ""))
    monkeypatch.chdir(REPO_ROOT)


@contextlib.contextmanager
def held_lock(path: Path):
    """Hold the flock of ``path`` with this process's PID in it, as a live grid does."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        f.truncate(0)
        f.write(f"{os.getpid()}\n")
        f.flush()
        yield


def not_held(path: Path) -> bool:
    """Whether nobody holds the flock of ``path`` (taken and dropped again to see)."""
    with path.open("a") as f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
    return True


def tiny_spec(out: Path, epochs: int, **kw) -> GridSpec:
    base = dict(
        envs=(TOY,),
        modes=("vanilla",),
        seeds=(0,),
        preset="fast",
        out=out,
        train_args=("--epochs", str(epochs), *TINY),
        episodes=2,
        eval_workers=0,
        eval_num_envs=2,
    )
    base.update(kw)
    return GridSpec(**base)


def test_every_name_of_the_grid_is_importable_from_robustsafe_experiments_grid():
    """The grid is a package of modules (spec, plan, commands, driver); its names stay where
    callers import them from."""
    import robustsafe.experiments.grid as grid

    names = """APPENDIX_ATTACKS BACKENDS DEFAULT_ATTACKS LOG_TAIL_LINES MAX_LOST Action EvalStatus
    GridSpec PlannedRun RunResult TrainArgs TrainStatus check_envs env_dir_name evaluate_command
    evaluation_is_current expected_attacks extra_command extra_evaluation_is_current
    extra_evaluations format_plan format_results parse_train_args plan_grid plan_run
    resolve_train_config run_grid train_command""".split()
    assert sorted(grid.__all__) == sorted(names)
    assert all(getattr(grid, name) is not None for name in names)
    assert grid.run_grid.__module__ == "robustsafe.experiments.grid.driver"
    assert grid.GridSpec.__module__ == "robustsafe.experiments.grid.spec"


def test_spec_validation(tmp_path):
    ok = GridSpec(envs="A-v0,B-v0", modes="vanilla,adv-mix:0.5", seeds="0,3", out=tmp_path)
    assert ok.envs == ("A-v0", "B-v0") and ok.seeds == (0, 3)
    assert ok.run_dir("B-v0", "adv-mix:0.5", 3) == tmp_path / "B-v0" / "adv-mix0.5" / "seed3"
    assert ok.run_dir(TOY, "vanilla", 0) == tmp_path / "RobustSafeGridToy-v0" / "vanilla" / "seed0"
    assert ok.attacks == ("none", "random", "mad", "amad", "mc", "mr") and ok.episodes == 50
    assert ok.workers == 1
    bad = [
        (dict(modes=("adv-foo",)), "unknown training mode"),
        (dict(modes=("adv-mix:2",)), "unknown training mode"),
        (dict(seeds=(-1,)), "non-negative"),
        (dict(seeds=(1.5,)), "integers"),
        (dict(seeds="0,x"), "integers"),
        (dict(seeds=(True,)), "integers"),
        (dict(seeds=(0, 0)), "more than once"),
        (dict(modes=("adv-mix:0.5", "adv-mix:.5")), "adv-mix:.5 / adv-mix:0.5: the same entry"),
        (dict(algos=("sac-lag:1", "sac-lag:1.0")), "sac-lag:1 / sac-lag:1.0: the same entry"),
        (dict(attacks=("none", "mix:0.50", "mix:0.5")), "the same entry"),
        (dict(seeds=()), "must not be empty"),
        (dict(preset="slow"), "unknown preset"),
        (dict(workers=0), "workers"),
        (dict(episodes=0), "episodes"),
        (dict(attacks=("none", "foo")), "unknown attacker"),
        (dict(backend="dask"), "unknown backend"),
        (dict(train_args=("--out", "x")), "the grid sets"),
        (dict(train_args=("--resume",)), "the grid sets"),
        (dict(train_args=("--lr", "1")), "unsupported --lr"),
        (dict(train_args=("--epochs", "x")), "invalid int"),
        (dict(envs=("a.b:Toy-v0", "c.d:Toy-v0")), "share the run directory"),
        # a learner that names its alpha, and --set giving another (the name would lie)
        (
            dict(algos=("sac-lag:0.01",), train_args=("--set", "sac.alpha=0.5")),
            "--set sac.alpha with a learner sac-lag:ALPHA",
        ),
        # the preset's alpha spelled as a variant: the same runs twice
        (dict(algos=("sac-lag", "sac-lag:0.001")), "sac-lag and sac-lag:0.001 train the same"),
        (dict(eval_workers=-1), r"eval_workers \(--eval-env-workers\) must be"),
    ]
    for kwargs, message in bad:
        args = dict(envs=("A-v0",), out=tmp_path)
        args.update(kwargs)
        with pytest.raises(ValueError, match=message):
            GridSpec(**args)
    alphas = GridSpec(envs=("A-v0",), out=tmp_path, algos=("sac-lag", "sac-lag:0.01"))
    assert alphas.algos == ("sac-lag", "sac-lag:0.01")  # the preset's 0.001 and 0.01
    two = GridSpec(envs=("A-v0",), out=tmp_path, modes=("adv-mix:0.5", "adv-mix:0.7"))
    assert two.modes == ("adv-mix:0.5", "adv-mix:0.7")  # two weights are two modes
    a = parse_train_args(["--epochs", "3", "--set", "a=1", "--set=b=2", "--obs-norm"])
    assert (a.epochs, a.sets, a.obs_norm) == (3, ("a=1", "b=2"), True)


def test_bad_settings_and_envs_fail_before_anything_starts(tmp_path, importable_toy):
    # --set values are resolved like `robustsafe train` does: one clear error, no processes
    for sets, message in (("ppo.nope=1", "unknown setting"), ("ppo.actor_lr=-1", "actor_lr")):
        spec = tiny_spec(tmp_path, 1, train_args=("--set", sets))
        with pytest.raises(ValueError, match=message):
            run_grid(spec, log=lambda s: None)
    with pytest.raises(ValueError, match="NoSuchEnv-v0"):
        run_grid(tiny_spec(tmp_path, 1, envs=("NoSuchEnv-v0",)), log=lambda s: None)
    with pytest.raises(ValueError, match="no_such_module"):
        run_grid(tiny_spec(tmp_path, 1, envs=("no_such_module:Toy-v0",)), log=lambda s: None)
    assert list(tmp_path.iterdir()) == []


def test_a_larger_training_budget_leaves_the_evaluation_at_epsilon(tmp_path, importable_toy):
    sets = ("--epochs", "1", *TINY, "--set", "robust.train_epsilon=0.08")
    spec = tiny_spec(tmp_path, 1, modes=("adv-mc",), train_args=sets)
    (plan,) = plan_grid(spec)
    assert plan.epsilon == 0.05  # the toy task's budget, not the training's 0.08


def test_ray_backend_without_ray_says_how_to_install_it(
    tmp_path, importable_toy, monkeypatch, capsys
):
    """The extra to install, in the CLI's words, before the plan is printed; and no empty
    --out folder left behind (it was made before the launcher refused)."""
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    spec = tiny_spec(tmp_path / "g", 1, backend="ray")
    assert run_grid(spec, log=lambda s: None, dry_run=True)[0].train == "pending"
    with pytest.raises(RuntimeError, match=r'pip install "robustsafe\[ray\]"'):
        run_grid(spec, log=lambda s: None)
    assert not (tmp_path / "g").exists()
    out = tmp_path / "cli"
    argv = ["grid", "--envs", TOY, "--backend", "ray", "--out", str(out), "--no-eval"]
    from robustsafe.cli import main

    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1
    assert "--backend ray" in captured.err and not out.exists()


def test_a_grid_with_no_room_says_it_waits(tmp_path, importable_toy, monkeypatch):
    """A Ray cluster that lost every node: the grid sat silent, runs pending, until Ctrl-C.
    It says once that it waits, and goes on when room comes back."""
    from robustsafe.experiments.grid import driver
    from robustsafe.experiments.launchers import LocalLauncher

    class Shrunk(LocalLauncher):
        polls = 0

        def capacity(self) -> int:
            Shrunk.polls += 1
            return 0 if Shrunk.polls <= 5 else 1  # no node for the first five looks

    monkeypatch.setattr(driver, "make_launcher", lambda *a: Shrunk(1))
    logged: list[str] = []
    spec = tiny_spec(tmp_path / "g", 1, evaluate=False)
    results = run_grid(spec, log=logged.append, poll_interval=0.01)
    assert [r.train for r in results] == ["trained"]
    waits = [line for line in logged if "waiting: no node has room" in line]
    assert len(waits) == 1 and "(1 pending)" in waits[0]
    assert logged.index(waits[0]) < next(i for i, x in enumerate(logged) if "start train" in x)


def test_a_grid_held_by_another_starts_no_backend(tmp_path, importable_toy, monkeypatch):
    """The launcher is made before the lock is taken (so that a backend's refusal leaves no
    --out); a folder another grid holds was then found only after Ray had been started."""
    from robustsafe.experiments.grid import driver

    started = []
    monkeypatch.setattr(driver, "make_launcher", lambda *a: started.append(a))
    out = tmp_path / "g"
    out.mkdir()
    with held_lock(out / ".grid.lock"):  # a live grid holds it
        with pytest.raises(RuntimeError, match=f"another grid \\(process {os.getpid()}\\)"):
            run_grid(tiny_spec(out, 1, evaluate=False), log=lambda s: None)
    assert started == []
    # and a FIFO named status.json in a run of that folder does not make the plan wait
    import signal

    from robustsafe.rundir import run_status

    run = out / "run"
    run.mkdir()
    cfg = resolve(TOY, "fast", seed=0)
    (run / "config.yaml").write_text(yaml.safe_dump(to_dict(cfg)))
    (run / "state.pt").write_bytes(b"")
    os.mkfifo(run / "status.json")
    signal.signal(signal.SIGALRM, lambda *_: pytest.fail("run_status waited on a FIFO"))
    signal.alarm(20)
    try:
        with pytest.raises(ValueError):  # read the state itself: this one is empty
            run_status(run)
    finally:
        signal.alarm(0)


def test_grid_trains_resumes_skips_evaluates_and_survives_a_crash(tmp_path, importable_toy):
    out = tmp_path / "grid"
    logged: list[str] = []

    # 1. one epoch, train only; the crashing env comes first and must not stop the other run
    first = run_grid(tiny_spec(out, 1, envs=(CRASH, TOY), evaluate=False), log=logged.append)
    crash, toy = first
    assert (crash.env_id, crash.train, crash.evaluation) == (CRASH, "failed", "not-run")
    assert crash.exit_code not in (None, 0) and "crashed on purpose" in crash.log_tail
    assert "RuntimeError" in crash.log_tail and not crash.ok
    assert "crashed on purpose" in (crash.run_dir / "train.log").read_text()
    assert any("FAILED" in line for line in logged)
    assert "crashed on purpose" in format_results(first)
    assert (toy.train, toy.evaluation, toy.epochs_done, toy.epochs_planned) == (
        "trained",
        "not-run",
        1,
        1,
    )
    assert run_status(toy.run_dir) == (1, 1) and not (toy.run_dir / "eval.json").exists()

    # 2. ask for two epochs and a second mode: the plan (dry run changes nothing)
    spec = tiny_spec(out, 2, modes=("vanilla", "adv-mc"), workers=2)
    plan = plan_grid(spec)
    assert [(p.mode, p.action, p.epochs_done, p.epochs_planned) for p in plan] == [
        ("vanilla", "resume", 1, 2),
        ("adv-mc", "train", 0, 2),
    ]
    assert all(p.evaluate and p.epsilon == 0.05 for p in plan)
    assert "1 to train, 1 to resume" in format_plan(plan)
    dry = run_grid(spec, log=lambda s: None, dry_run=True)
    assert [(r.action, r.train, r.evaluation) for r in dry] == [
        ("resume", "pending", "pending"),
        ("train", "pending", "pending"),
    ]
    assert not (out / "RobustSafeGridToy-v0" / "adv-mc").exists()

    # 3. run it: vanilla resumed to 2 epochs, adv-mc trained, both evaluated (2 at a time)
    logged.clear()
    second = run_grid(spec, log=logged.append)
    counters = [line.split("] start")[0].split("[")[-1] for line in logged if "] start" in line]
    assert counters == ["1/4", "2/4", "3/4", "4/4"]  # the evaluations counted from the start
    assert f"[grid] {spec.workers} job(s) at a time (--parallel-runs)" in logged
    assert [(r.mode, r.train, r.evaluation, r.epochs_done) for r in second] == [
        ("vanilla", "resumed", "evaluated", 2),
        ("adv-mc", "trained", "evaluated", 2),
    ]
    for r in second:
        assert run_status(r.run_dir) == (2, 2)
        with (r.run_dir / "metrics.csv").open() as f:
            assert [int(x["epoch"]) for x in csv.DictReader(f)] == [1, 2]
        data = json.loads((r.run_dir / "eval.json").read_text())
        assert [x["attack"] for x in data["results"]] == list(spec.attacks)
        eps = load_run_config(r.run_dir).robust.epsilon
        assert {x["epsilon"] for x in data["results"][1:]} == {eps}
        assert data["episodes"] == 2 and data["train_mode"] == r.mode
        assert evaluation_is_current(r.run_dir, spec, eps)
    assert (second[0].run_dir / "train.log").read_text().count("=== robustsafe grid") == 2
    # timings.json: every job the grid ran in the run, in order, with its epochs and exit status
    jobs = json.loads((second[0].run_dir / "timings.json").read_text())
    assert [(j["job"], j.get("from_epoch"), j.get("to_epoch"), j["exit_status"]) for j in jobs] == [
        ("train", 0, 1, 0),
        ("train", 1, 2, 0),
        ("evaluate", None, None, 0),
    ]
    assert all(j["seconds"] > 0 and j["started"].endswith("+00:00") for j in jobs)
    assert jobs[0]["started"] <= jobs[1]["started"] <= jobs[2]["started"]
    failed = json.loads((crash.run_dir / "timings.json").read_text())
    assert [(j["job"], j["exit_status"]) for j in failed] == [("train", crash.exit_code)]
    check_fresh(crash.run_dir, force=False)  # the crashed run can still start afresh there

    # 4. again: nothing to do
    logged.clear()
    third = run_grid(spec, log=logged.append)
    assert [(r.train, r.evaluation) for r in third] == [("skipped", "skipped")] * 2
    assert not any("start" in line for line in logged)

    # a different evaluation, or a newer agent, makes the evaluation stale (plan only)
    more = dataclasses.replace(spec, episodes=3)
    assert [p.evaluate for p in plan_grid(more)] == [True, True]
    fewer = dataclasses.replace(spec, attacks=("none", "mc"))
    assert [p.evaluate for p in plan_grid(fewer)] == [True, True]
    agent = second[1].run_dir / "agent.pt"
    newer = (second[1].run_dir / "eval.json").stat().st_mtime_ns + 10**9
    os.utime(agent, ns=(newer, newer))
    assert [(p.action, p.evaluate) for p in plan_grid(spec)] == [
        ("skip", False),
        ("skip", True),
    ]
    # (the Ray backend runs the same commands as tasks: tests/experiments/test_grid_ray.py)
    # two grids never work in one directory at once; a lock nobody holds (its owner gone, or
    # its PID now another program's) is taken over
    lock = out / ".grid.lock"
    with held_lock(lock):
        with pytest.raises(RuntimeError, match="another grid"):
            run_grid(spec, log=lambda s: None)
    lock.write_text(f"{os.getpid()}\n")  # a PID that lives, but holds no lock
    previous = (second[1].run_dir / "eval.json").read_text()
    assert [r.train for r in run_grid(spec, log=lambda s: None)] == ["skipped"] * 2
    assert not_held(lock) and lock.read_text() == ""
    # the stale evaluation was run again (the newer agent's), the previous one kept beside it
    (kept_eval,) = second[1].run_dir.glob("eval.replaced-*.json")
    assert kept_eval.read_text() == previous
    assert not list(second[0].run_dir.glob("*.replaced-*"))  # current: neither run nor kept

    # a run holding other settings than the grid's is noted, and refused before anything runs
    changed = dataclasses.replace(spec, train_args=(*spec.train_args, "--set", "ppo.actor_lr=1"))
    saved_lr = load_run_config(second[0].run_dir).ppo.actor_lr
    assert all(f"ppo.actor_lr {saved_lr!r} -> 1.0" in p.note for p in plan_grid(changed))
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    with pytest.raises(
        ValueError, match=r"2 run\(s\) in .* other settings .*ppo\.actor_lr \S+ -> 1\.0"
    ):
        run_grid(changed, log=lambda s: None)
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == before
    kept = dataclasses.replace(changed, keep_saved_settings=True)
    assert [r.train for r in run_grid(kept, log=lambda s: None)] == ["skipped"] * 2
    assert load_run_config(second[0].run_dir).ppo.actor_lr != 1

    # 5. extended by an epoch: both runs resume and are evaluated again, each previous
    # evaluation kept beside the new one
    before = {r.run_dir: (r.run_dir / "eval.json").read_text() for r in second}
    copies = {r.run_dir: set(r.run_dir.glob("eval.replaced-*.json")) for r in second}
    longer = run_grid(tiny_spec(out, 3, modes=("vanilla", "adv-mc"), workers=2), log=print)
    assert [(r.train, r.evaluation) for r in longer] == [("resumed", "evaluated")] * 2
    for run_dir, text in before.items():
        (new,) = set(run_dir.glob("eval.replaced-*.json")) - copies[run_dir]
        assert new.read_text() == text

    # 6. the table of the grid's directory has both methods
    paths = write_tables(out, tmp_path / "table")
    md = paths[0].read_text()
    assert "PPOL-vanilla" in md and "ADV-PPOL(MC)" in md
    methods = {x.split(",")[1] for x in format_csv(out).splitlines()[1:]}
    assert methods == {"PPOL-vanilla", "ADV-PPOL(MC)"}


def test_sigterm_to_the_grid_stops_the_training_it_started(tmp_path, importable_toy):
    """``kill <grid pid>`` must not leave its training running on its own."""
    import time

    out = tmp_path / "grid"
    cmd = [sys.executable, "-m", "robustsafe.cli", "grid", "--envs", TOY, "--modes", "vanilla"]
    cmd += ["--seeds", "0", "--out", str(out), "--epochs", "100000", "--no-eval"]
    cmd += [f"--set={item}" for item in TINY if item != "--set"]
    run = out / "RobustSafeGridToy-v0" / "vanilla" / "seed0"
    err = signal_after_two_epochs(cmd, run)
    assert "Run the same command again to resume" in err
    stopped_at = epoch_of(run)
    time.sleep(2.0)  # an orphaned training would go on writing epochs
    assert epoch_of(run) == stopped_at
    assert not_held(out / ".grid.lock")
    # its timing is written as it was stopped: "interrupted", with the epochs it saved
    [job] = json.loads((run / "timings.json").read_text())
    assert (job["job"], job["from_epoch"], job["to_epoch"]) == ("train", 0, stopped_at)
    assert job["exit_status"] == "interrupted" and job["seconds"] > 0


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="a training dies with its grid on Linux"
)
def test_a_grid_killed_outright_leaves_its_job_running_and_the_next_grid_closes_it(
    tmp_path, importable_toy
):
    """``kill -9`` gives the grid no chance to write how its job ended: ``timings.json``
    holds it as "running", and the next grid in the same ``--out`` marks it "interrupted"
    with the epochs saved and the seconds from its start to the last one saved."""
    import datetime as dt
    import signal
    import time

    out = tmp_path / "grid"
    cmd = [sys.executable, "-m", "robustsafe.cli", "grid", "--envs", TOY, "--modes", "vanilla"]
    cmd += ["--seeds", "0", "--out", str(out), "--epochs", "100000", "--no-eval"]
    cmd += [f"--set={item}" for item in TINY if item != "--set"]
    run = out / "RobustSafeGridToy-v0" / "vanilla" / "seed0"
    signal_after_two_epochs(cmd, run, sig=signal.SIGKILL)
    [job] = json.loads((run / "timings.json").read_text())
    assert (job["exit_status"], job["to_epoch"], job["seconds"]) == ("running", None, None)
    trainer = int((run / ".lock").read_text().strip())  # the training's process id
    deadline = time.monotonic() + 60  # it gets SIGTERM with the grid's death
    while Path(f"/proc/{trainer}").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not Path(f"/proc/{trainer}").exists()
    killed_at = epoch_of(run)
    saved = (run / "state.pt").stat().st_mtime

    [result] = run_grid(
        tiny_spec(
            out, killed_at + 1, evaluate=False, train_args=("--epochs", str(killed_at + 1), *TINY)
        ),
        log=lambda s: None,
    )
    assert (result.train, result.epochs_done) == ("resumed", killed_at + 1)
    first, second = json.loads((run / "timings.json").read_text())
    assert (first["from_epoch"], first["to_epoch"], first["exit_status"]) == (
        0,
        killed_at,
        "interrupted",
    )
    start = dt.datetime.fromisoformat(first["started"]).timestamp()
    assert first["seconds"] == pytest.approx(saved - start, abs=0.11)
    assert (second["from_epoch"], second["to_epoch"], second["exit_status"]) == (
        killed_at,
        killed_at + 1,
        0,
    )


def test_a_damaged_evaluation_file_is_not_current(tmp_path):
    """The grid evaluates a run again when its eval.json is damaged or foreign, whatever the
    damage (wrong types, numbers beyond a float, deep nesting), instead of stopping."""
    from robustsafe.experiments.grid.plan import evaluation_is_current, extra_evaluation_is_current

    spec = GridSpec(envs=("A-v0",), out=tmp_path, attacks=("none", "mc"), episodes=2)
    run = tmp_path / "run"
    run.mkdir()
    (run / "agent.pt").write_bytes(b"agent")
    os.utime(run / "agent.pt", ns=(1, 1))  # older than every evaluation file below
    results = '[{"attack": "none", "epsilon": 0}, {"attack": "mc", "epsilon": EPS}]'
    good = '{"episodes": 2, "seed": 0, "results": ' + results + "}"
    (run / "eval.json").write_text(good.replace("EPS", "0.05"))
    assert evaluation_is_current(run, spec, 0.05)
    assert not evaluation_is_current(run, spec, 0.025)
    for bad in (
        good.replace("EPS", "1" + "0" * 400),  # an int no float holds
        good.replace('"mc"', '["mc"]').replace("EPS", "0.05"),  # an attack that is a list
        good.replace("EPS", "[0.05]"),
        "[" * 100_000 + "]" * 100_000,
    ):
        (run / "eval.json").write_text(bad)
        assert evaluation_is_current(run, spec, 0.05) is False
        (run / "eval-appendix.json").write_text(bad)
        assert extra_evaluation_is_current(run, "eval-appendix.json", spec, 0.05) is False
