"""The grid's appendix evaluations (minr / mix:W and the AMAD xi sweep) on the toy env."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from robustsafe.experiments.appendix import write_appendix
from robustsafe.experiments.grid import (
    GridSpec,
    evaluation_is_current,
    extra_evaluation_is_current,
    format_plan,
    format_results,
    plan_grid,
    run_grid,
)
from robustsafe.experiments.table import collect_table

REPO_ROOT = Path(__file__).resolve().parents[2]
TOY = "tests.experiments.toy_env:RobustSafeGridToy-v0"
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


def spec(out: Path, **kw) -> GridSpec:
    base = dict(
        envs=(TOY,),
        modes=("vanilla", "adv-mc", "sa-mc"),
        seeds=(0,),
        preset="fast",
        out=out,
        train_args=("--epochs", "1", *TINY),
        attacks=("none", "mad", "mc", "mr"),
        episodes=2,
        eval_workers=0,
        eval_num_envs=2,
        appendix_attacks=("minr", "mix:0.5"),
        xi_sweep=(0.5, 0.1),
    )
    base.update(kw)
    return GridSpec(**base)


def test_appendix_options_are_checked(tmp_path):
    s = spec(tmp_path, appendix_attacks="none,minr", xi_sweep="0.5,0.1")
    assert s.appendix_attacks == ("minr",) and s.xi_sweep == (0.1, 0.5)
    assert s.appendix_modes == ("vanilla", "adv-mc", "adv-mr") and s.xi_modes == ("vanilla",)
    for bad, match in (
        (dict(appendix_attacks=("foo",)), "unknown attacker"),
        (dict(xi_sweep=(0.0,)), "xi values"),
        (dict(appendix_modes=("adv-foo",)), "unknown training mode"),
    ):
        with pytest.raises(ValueError, match=match):
            spec(tmp_path, **bad)
    plain = spec(tmp_path, appendix_attacks=(), xi_sweep=())
    assert all(p.extra == () for p in plan_grid(plain))


def test_grid_writes_the_appendix_evaluations_beside_eval_json(tmp_path, importable_toy):
    out = tmp_path / "grid"
    s = spec(out)
    plan = plan_grid(s)
    assert [p.extra for p in plan] == [
        ("eval-appendix.json", "eval-xi.json"),
        ("eval-appendix.json",),
        (),
    ]
    assert "evaluate + eval-appendix.json + eval-xi.json" in format_plan(plan)
    results = run_grid(s, log=lambda line: None)
    assert [(r.train, r.evaluation) for r in results] == [("trained", "evaluated")] * 3
    assert [r.extra for r in results] == [
        (("eval-appendix.json", "evaluated"), ("eval-xi.json", "evaluated")),
        (("eval-appendix.json", "evaluated"),),
        (),
    ]
    assert "eval-xi.json evaluated" in format_results(results)
    vanilla, adv, sa = (r.run_dir for r in results)
    # eval.json is exactly the main evaluation; the extras are in their own files
    main = json.loads((vanilla / "eval.json").read_text())
    assert [x["attack"] for x in main["results"]] == ["none", "mad", "mc", "mr"]
    assert evaluation_is_current(vanilla, s, 0.05)
    extra = json.loads((adv / "eval-appendix.json").read_text())
    assert [x["attack"] for x in extra["results"]] == ["none", "minr", "mix:0.5"]
    assert {x["epsilon"] for x in extra["results"][1:]} == {0.05}
    assert extra["episodes"] == 2 and extra["train_mode"] == "adv-mc"
    # the natural episodes are paired: the same in both files
    assert (
        extra["results"][0]["episodes"]
        == json.loads((adv / "eval.json").read_text())["results"][0]["episodes"]
    )
    sweep = json.loads((vanilla / "eval-xi.json").read_text())
    assert [(x["attack"], x.get("xi")) for x in sweep["results"]] == [
        ("none", None),
        ("mad", None),
        ("amad", 0.1),
        ("amad", 0.5),
    ]
    assert not (sa / "eval-appendix.json").exists() and not (adv / "eval-xi.json").exists()
    assert extra_evaluation_is_current(vanilla, "eval-xi.json", s, 0.05)

    # again: nothing to do; other xi values make the sweep stale (plan only)
    again = run_grid(s, log=lambda line: None)
    assert [(r.train, r.evaluation, r.extra) for r in again] == [("skipped", "skipped", ())] * 3
    other = dataclasses.replace(s, xi_sweep=(0.2,))
    assert [p.extra for p in plan_grid(other)] == [("eval-xi.json",), (), ()]

    # the tables: Table 1 reads eval.json only; the appendix tables read the extra files
    assert {r.mode for r in collect_table(out).rows} == {"vanilla", "adv-mc", "sa-mc"}
    names = {p.name for p in write_appendix(out, tmp_path / "table")}
    assert {"table-appendix.md", "table-minr.md", "table-mix.md", "table-amad-xi.png"} <= names
    mix = (tmp_path / "table-mix.md").read_text()
    assert "ADV-PPOL(MC)" in mix and "SA-PPOL(MC)" not in mix

    # a stale extra evaluation is run again and replaces its file (the grid passes --force)
    other = dataclasses.replace(other, appendix_attacks=("minr",))
    again = run_grid(other, log=lambda line: None)
    assert [r.extra for r in again[:2]] == [
        (("eval-appendix.json", "evaluated"), ("eval-xi.json", "evaluated")),
        (("eval-appendix.json", "evaluated"),),
    ]
    assert json.loads((vanilla / "eval-xi.json").read_text())["xi_values"] == [0.2]
    assert extra_evaluation_is_current(adv, "eval-appendix.json", other, 0.05)


def test_a_training_that_cannot_start_takes_its_extra_evaluations_with_it(
    tmp_path, importable_toy, monkeypatch
):
    """A training whose process could not start (its log's folder, the launcher: an OSError)
    left its extra evaluations "pending" after the grid had ended, and the log's count of jobs
    kept its evaluations; a training that starts and fails takes both off."""
    from robustsafe.experiments.grid import driver
    from robustsafe.experiments.launchers import LocalLauncher

    class NoSeed0Training(LocalLauncher):
        def start(self, args, log_path, run_dir):
            if "train" in args and run_dir.name == "seed0":
                raise PermissionError(13, "Permission denied", str(log_path))
            return super().start(args, log_path, run_dir)

    monkeypatch.setattr(driver, "make_launcher", lambda *a: NoSeed0Training(1))
    logged: list[str] = []
    s = spec(tmp_path / "g", modes=("vanilla",), seeds=(0, 1), xi_sweep=())
    no_start, trained = run_grid(s, log=logged.append)
    assert (no_start.train, no_start.evaluation) == ("failed", "not-run")
    assert no_start.extra == (("eval-appendix.json", "not-run"),)
    assert "cannot start: [Errno 13] Permission denied" in no_start.log_tail
    assert (trained.train, trained.evaluation) == ("trained", "evaluated")
    assert trained.extra == (("eval-appendix.json", "evaluated"),)
    counts = [line.split()[1] for line in logged if " start " in line]
    assert counts == ["[2/4]", "[3/4]", "[4/4]"]  # seed 0's training, then seed 1's three jobs


def test_an_evaluation_whose_previous_file_cannot_be_kept_does_not_run(
    tmp_path, importable_toy, monkeypatch
):
    """A full disk while the grid copied an evaluation file it was about to replace raised out
    of the driver and stopped every job of the grid. Now that one evaluation does not run (its
    file stays as it was, no partial copy is left), it is reported failed with the reason, and
    the other jobs go on; the log's job count leaves it out."""
    from robustsafe.experiments.grid import driver

    s = spec(tmp_path / "g", modes=("vanilla",), seeds=(0, 1), xi_sweep=())
    done = run_grid(s, log=lambda line: None)
    assert all(r.ok for r in done)
    seed0 = done[0].run_dir
    real_copy = driver.shutil.copy2

    def full_disk(src, dst, **kw):
        if Path(src) == seed0 / "eval.json":
            Path(dst).write_bytes(b"part")
            raise OSError(28, "No space left on device")
        return real_copy(src, dst, **kw)

    monkeypatch.setattr(driver.shutil, "copy2", full_disk)
    for rounds, again in enumerate(
        (
            dataclasses.replace(s, episodes=3),  # finished runs, evaluated again
            dataclasses.replace(s, train_args=("--epochs", "2", *TINY)),  # resumed, evaluated
        ),
        start=1,
    ):
        kept = (seed0 / "eval.json").read_bytes()
        logged: list[str] = []
        first, second = run_grid(again, log=logged.append)
        assert (first.evaluation, first.extra) == ("failed", (("eval-appendix.json", "evaluated"),))
        assert "the previous eval.json could not be kept ([Errno 28]" in first.log_tail
        summary = format_results([first]).splitlines()
        assert summary[1] == f"--- {seed0}: why it failed"
        assert "the previous eval.json could not be kept" in summary[2]
        assert (seed0 / "eval.json").read_bytes() == kept
        assert not list(seed0.glob("eval.replaced-*"))
        assert (second.evaluation, second.extra) == (
            "evaluated",
            (("eval-appendix.json", "evaluated"),),
        )
        assert len(list(second.run_dir.glob("eval.replaced-*"))) == rounds
        counts = [line.split()[1] for line in logged if " start " in line]
        n = 3 + 2 * (rounds == 2)  # seed 0's extra, seed 1's two (and both trainings)
        assert [c.split("/")[0] for c in counts] == [f"[{k}" for k in range(1, n + 1)]
        assert counts[-1] == f"[{n}/{n}]"  # planned first with it (6), then without (5)
    # the refusal's reason stays in the summary when the run's extra evaluation fails after it
    # (its log's tail was put in place of the reason)
    from robustsafe.experiments.grid import commands

    monkeypatch.setattr(commands, "extra_command", lambda *a: ["-c", "raise SystemExit('boom')"])
    first, _ = run_grid(dataclasses.replace(s, episodes=4), log=lambda line: None)
    assert (first.evaluation, first.extra) == ("failed", (("eval-appendix.json", "failed"),))
    assert "could not be kept ([Errno 28]" in first.log_tail and "boom" in first.log_tail
