"""The FSRL speed comparison's own parts that run without FSRL: the launch clock and the report
(FSRL's side runs in a scratch venv that CI does not have)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _module(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_process_age_counts_from_launch() -> None:
    """Time spent before the clock's module is imported is counted (it is read from /proc)."""
    code = (
        "import time; time.sleep(0.5); import sys; "
        f"sys.path.insert(0, {str(BENCH)!r}); "
        "from speed_common import process_age; print(process_age())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    age = float(out.stdout)
    assert 0.5 <= age < 30


def _write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_report_table_ratio_and_missing_sides(tmp_path: Path) -> None:
    drv = _module("speed_vs_fsrl")
    target = {"reward": 500.0, "cost": 5.0}
    ours = {
        "command": "python benchmarks/ppol_benchmark.py --seeds 0",
        "git_commit": "abc1234",
        "target": target,
        "episodes": 50,
        "load_average": {"start": [0.1, 0.2, 0.3], "end": [1.0, 1.0, 1.0]},
        "seeds": [
            {
                "first_meeting_target": {
                    "epoch": 9,
                    "env_steps": 36_000,
                    "wall_time_s": 20.0,
                    "wall_from_launch_s": 24.0,
                    "reward": 510.0,
                    "cost": 1.0,
                },
                "final": {"reward_mean": 550.0, "cost_mean": 0.5},
                "train_env_steps": 400_000,
                "train_steps_per_s": 2000.0,
                "train_cpu_s": 400.0,
                "load_average_after_training": [1.9, 1.0, 1.0],
            }
        ],
    }

    def fsrl(first: dict | None) -> dict:
        return {
            "command": "python benchmarks/fsrl_speed.py --seed 0",
            "first_meeting_target": first,
            "final": {"reward": 530.0, "cost": 8.0},
            "train": {"env_steps": 400_000, "steps_per_s": 1600.0, "cpu_s": 800.0},
            "load_average": {"start": [0.2, 0, 0], "after_training": [2.0, 0, 0]},
            "versions": {"fast-safe-rl": "0.1.0"},
            "target": target,
            "episodes": 50,
            "fsrl_overrides": [],
        }

    _write(tmp_path / "ours" / "ppol-seed0" / "ppol_SafetyCarRun-v0.json", ours)
    first = {"index": 12, "env_steps": 48_000, "wall_from_launch_s": 32.0}
    _write(tmp_path / "fsrl" / "ppol-seed0.json", fsrl({**first, "reward": 505, "cost": 4}))
    _write(tmp_path / "fsrl" / "cvpo-seed1.json", fsrl(None))
    text = drv.report(tmp_path, ["python benchmarks/speed_vs_fsrl.py --seeds 0"])
    ours = "| ppol | 0 | RobustSafe | 36,000 | 24.0 | 510.0 / 1.00 | 550.0 / 0.50 | 2000 | 1.0 |"
    assert ours in text
    assert "| ppol | 0 | FSRL | 48,000 | 32.0 | 505.0 / 4.00 | 530.0 / 8.00 | 1600 | 2.0 |" in text
    assert (
        "- ppol: seed 0 0.75; ours ahead on 1 of 1 seed (geometric mean of the ratios over the "
        "seed where both met it: 0.75)" in text
    )
    assert "| cvpo | 1 | RobustSafe | not in this checkout | - | - | - | - | - | - |" in text
    assert "| cvpo | 1 | FSRL | not within 400,000 | - | - |" in text
    assert ".fsrl-venv/bin/python benchmarks/fsrl_speed.py --seed 0" in text


def test_driver_calls_accumulate_without_the_venv_path(tmp_path: Path) -> None:
    """Each driver call is listed once, in order; the machine-specific --fsrl-venv is dropped."""
    drv = _module("speed_vs_fsrl")
    first = drv.driver_command(["--learners", "ppol", "--fsrl-venv", "/some/venv", "--seeds", "0"])
    assert first == "python benchmarks/speed_vs_fsrl.py --learners ppol --seeds 0"
    second = drv.driver_command(["--learners", "sac-lag", "--fsrl-venv=/x"])
    assert second == "python benchmarks/speed_vs_fsrl.py --learners sac-lag"
    assert drv.record_driver(tmp_path, first) == [first]
    assert drv.record_driver(tmp_path, second) == [first, second]
    assert drv.record_driver(tmp_path, first) == [first, second]
    text = drv.report(tmp_path, [first, second])
    assert f"```\n{first}\n{second}\n```" in text


def test_run_logs_name_the_venv_not_its_place(tmp_path: Path) -> None:
    drv = _module("speed_vs_fsrl")
    log = tmp_path / "run.log"
    cmd = [sys.executable, "-c", "print('/some/place/venv/lib/x.py: warning')"]
    rc, _ = drv.run_logged(cmd, log, dict(os.environ), {"/some/place/venv": ".fsrl-venv"})
    assert rc == 0
    assert log.read_text() == ".fsrl-venv/lib/x.py: warning\n"


def test_fsrl_snapshots_as_often_as_ours() -> None:
    """FSRL's snapshot spacing defaults to ours': an epoch of the fast preset times its
    ``checkpoint_every`` (SAC-Lag keeps a snapshot every 25 epochs of 400 steps), and ours'
    epochs stop at the step budget."""
    bench = _module("speed_vs_fsrl")
    assert bench.our_epochs(sys.executable, "sac-lag", 400_000) == (10_000, 750)
    assert bench.our_epochs(sys.executable, "sac-lag", 55_000) == (10_000, 138)
    assert bench.our_epochs(sys.executable, "ppol", 200_000) == (4_000, 50)
    # ours' overrides (--ours-set) move the spacing with them
    sets = ["num_envs=5", "steps_per_epoch=1000", "checkpoint_every=4"]
    assert bench.our_epochs(sys.executable, "sac-lag", 100_000, sets) == (4_000, 100)
    assert bench.our_epochs(sys.executable, "sac-lag", 40_000, sets) == (4_000, 40)


def test_report_counts_a_seed_ours_missed_against_ours() -> None:
    # A seed where only FSRL met the criterion must count as FSRL's, not drop out of the summary:
    # seeds 0 and 1 give ratios 1.5 and 0.5 (geometric mean 0.87), seed 2 FSRL's alone.
    drv = _module("speed_vs_fsrl")
    met = lambda wall: {"steps": 10_000, "wall": wall, "trained": 100_000}  # noqa: E731
    missed = {"steps": None, "wall": None, "trained": 100_000}
    v = [
        (0, *drv._verdict(met(30.0), met(20.0))),
        (1, *drv._verdict(met(10.0), met(20.0))),
        (2, *drv._verdict(missed, met(20.0))),
    ]
    assert drv._verdict_line("sac-lag", v) == (
        "- sac-lag: seed 0 1.50, seed 1 0.50, seed 2 ours not within 100,000 steps; ours ahead "
        "on 1 of 3 seeds (geometric mean of the ratios over the 2 seeds where both met it: 0.87)"
    )
    assert drv._verdict(met(5.0), missed)[0] == "FSRL not within 100,000 steps"
    assert drv._verdict(missed, missed) == ("neither within its budget", None, None)


def test_report_keeps_a_seed_ours_missed_in_the_summary(tmp_path: Path) -> None:
    # Through report(): seed 0 both met (ratio 0.5), seed 1 only FSRL met. The seed must be
    # listed and counted as FSRL's; a report that keeps only seeds with two wall times says
    # "seed 0 0.50; ours ahead on 1 of 1 seed".
    drv = _module("speed_vs_fsrl")
    target = {"reward": 500.0, "cost": 5.0}
    for seed, first in ((0, {"env_steps": 10_000, "wall_from_launch_s": 10.0}), (1, None)):
        if first is not None:
            first = {**first, "reward": 510.0, "cost": 0.0}
        ours_seed = {
            "first_meeting_target": first,
            "final": {"reward_mean": 450.0, "cost_mean": 0.0},
            "train_env_steps": 100_000,
            "train_steps_per_s": 300.0,
        }
        ours = {"command": "ours", "target": target, "episodes": 50, "seeds": [ours_seed]}
        if seed == 1:  # a run with --ours-set: the report names its overrides
            ours["settings"] = ["sac.learn_alpha=true", "sac.alpha=0.005"]
        _write(tmp_path / "ours" / f"sac-lag-seed{seed}" / "sac-lag_SafetyCarRun-v0.json", ours)
        fsrl = {
            "command": "fsrl",
            "first_meeting_target": {"env_steps": 30_000, "wall_from_launch_s": 20.0}
            | {"reward": 520.0, "cost": 0.0},
            "final": {"reward": 540.0, "cost": 0.0},
            "train": {"env_steps": 100_000, "steps_per_s": 130.0},
            "load_average": {"start": [1.0], "after_training": [1.0]},
            "versions": {},
            "target": target,
            "episodes": 50,
            "fsrl_overrides": [],
        }
        _write(tmp_path / "fsrl" / f"sac-lag-seed{seed}.json", fsrl)
    text = drv.report(tmp_path, [])
    assert (
        "- sac-lag: seed 0 0.50, seed 1 ours not within 100,000 steps; ours ahead on 1 of 2 "
        "seeds (geometric mean of the ratios over the seed where both met it: 0.50)" in text
    )
    assert (
        "Ours' overrides of its preset (`--ours-set`, as `robustsafe train --set`): none; "
        "sac.learn_alpha=true, sac.alpha=0.005." in text
    )


def test_report_states_ours_layout_from_the_runs(tmp_path: Path) -> None:
    """The report's statement of ours' envs and snapshot spacing comes from each run's JSON (not
    from text in the script), and says so when a run did not record it."""
    drv = _module("speed_vs_fsrl")
    seed = {
        "first_meeting_target": None,
        "final": {"reward_mean": 490.0, "cost_mean": 0.0},
        "train_env_steps": 100_000,
        "train_steps_per_s": 300.0,
    }
    base = {"command": "c", "target": {"reward": 500.0, "cost": 5.0}, "episodes": 50}
    sac = dict(
        base,
        seeds=[seed],
        layout=dict(num_envs=2, workers=0, steps_per_epoch=400, checkpoint_every=25),
    )
    ppol = dict(
        base,
        seeds=[seed],
        layout=dict(num_envs=20, workers=2, steps_per_epoch=4000, checkpoint_every=1),
    )
    _write(tmp_path / "ours" / "sac-lag-seed0" / "sac-lag_SafetyCarRun-v0.json", sac)
    _write(tmp_path / "ours" / "ppol-seed3" / "ppol_SafetyCarRun-v0.json", ppol)
    _write(tmp_path / "ours" / "cvpo-seed0" / "cvpo_SafetyCarRun-v0.json", dict(base, seeds=[seed]))
    text = drv.report(tmp_path, [])
    assert (
        "ppol: 20 envs in 2 worker processes, epochs of 4,000 steps, a snapshot every epoch; "
        "sac-lag: 2 envs in the main process, epochs of 400 steps, a snapshot every 25 epochs "
        "(10,000 steps); cvpo: not recorded" in text
    )


def test_existing_run_folders_are_kept_without_force(tmp_path: Path) -> None:
    """Each side trains from scratch, so earlier run folders would be deleted: without --force
    the driver refuses them before anything runs (no freeze, no training, nothing deleted)."""
    venv, runs, out = tmp_path / "venv", tmp_path / "runs", tmp_path / "out"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")  # never run: the check comes first
    mine = runs / "fsrl" / "ppol-seed1"
    mine.mkdir(parents=True)
    (mine / "notes.txt").write_text("precious")
    cmd = [sys.executable, str(BENCH / "speed_vs_fsrl.py"), "--learners", "ppol"]
    cmd += ["--seeds", "0", "1", "--fsrl-venv", str(venv), "--runs", str(runs), "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "pass --force" in done.stderr and str(mine) in done.stderr
    assert (mine / "notes.txt").read_text() == "precious" and not out.exists()
