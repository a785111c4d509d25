"""Scaling the compute model to this machine: ``robustsafe grid --dry-run --calibrate``."""

from __future__ import annotations

import re

import pytest

from robustsafe.cli import main as cli_main
from robustsafe.experiments import compute_rates as rates
from robustsafe.experiments.compute import RunCost, format_cost
from robustsafe.experiments.grid import GridSpec, plan_grid
from robustsafe.experiments.machine_speed import machine_factor, per_step


def _row(steps: int, env: float, policy: float, update: float, steps_per_s: float) -> dict:
    return {
        "env_steps": str(steps),
        "time_env": str(env),
        "time_attack": "0.0",
        "time_policy": str(policy),
        "time_update": str(update),
        "steps_per_s": str(steps_per_s),
    }


def test_per_step_leaves_out_the_skipped_epochs():
    rows = [  # epoch 1 carries the start-up; epochs 2 and 3 take 100 steps each
        _row(100, 9.0, 1.0, 5.0, 5.0),
        _row(200, 0.2, 0.01, 0.1, 200.0),
        _row(300, 0.4, 0.03, 0.3, 100.0),
    ]
    got = per_step(rows, 1)
    assert got["time_env"] == pytest.approx(0.6 / 200)
    assert got["time_policy"] == pytest.approx(0.04 / 200)
    assert got["time_update"] == pytest.approx(0.4 / 200)
    assert got["epoch"] == pytest.approx((0.5 + 1.0) / 200)  # 100/200 s + 100/100 s
    assert per_step(rows, 0)["time_env"] == pytest.approx(9.6 / 300)
    with pytest.raises(ValueError, match="skip"):
        per_step(rows, 3)


def test_machine_factor_is_this_machine_over_the_rates_machine():
    reference = rates.REFERENCE_TRAIN_US_PER_STEP * 1e-6
    assert machine_factor(2 * reference) == pytest.approx(2.0)
    assert machine_factor(reference / 4) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="positive"):
        machine_factor(0.0)


def test_the_machine_factor_multiplies_every_time(tmp_path):
    spec = GridSpec(envs=("SafetyCarRun-v0",), modes=("vanilla",), preset="fast", out=tmp_path)
    plan = plan_grid(spec)
    costs = [RunCost(600_000, 1800.0, 60_000, 1200.0, "measured")]
    plain = format_cost(spec, plan, costs)
    scaled = format_cost(spec, plan, costs, machine_factor=2.0)
    assert re.search(r"600,000 +30 min +60,000 +20 min", plain)
    assert re.search(r"600,000 +60 min +60,000 +40 min", scaled)
    assert "0.8 run-hours" in plain and "1.7 run-hours" in scaled
    assert "times x2.00 for this machine" in scaled and "for this machine" not in plain


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--calibrate"], "go with --dry-run"),
        (["--machine-factor", "2"], "go with --dry-run"),
        (["--dry-run", "--machine-factor", "0"], "positive number"),
        (["--dry-run", "--machine-factor", "nan"], "positive number"),
        (["--dry-run", "--calibrate", "--machine-factor", "2"], "not both"),
    ],
)
def test_bad_machine_options_are_one_line_errors(tmp_path, capsys, extra, message):
    argv = ["grid", "--envs", "SafetyCarRun-v0", "--modes", "vanilla", "--out", str(tmp_path)]
    assert cli_main(argv + extra) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_dry_run_with_a_machine_factor(tmp_path, capsys):
    argv = ["grid", "--envs", "SafetyCarRun-v0", "--modes", "vanilla", "--out", str(tmp_path)]
    assert cli_main([*argv, "--dry-run"]) == 0
    plain = capsys.readouterr().out
    assert cli_main([*argv, "--dry-run", "--machine-factor", "3"]) == 0
    scaled = capsys.readouterr().out
    hours = [float(re.search(r"([\d.]+) run-hours", t).group(1)) for t in (plain, scaled)]
    assert hours[1] == pytest.approx(3 * hours[0], abs=0.15)
    assert "times x3.00 for this machine" in scaled


def test_a_failed_calibration_is_a_one_line_error(tmp_path, capsys, monkeypatch):
    import subprocess

    from robustsafe.experiments import machine_speed

    def fails(*args, **kwargs):
        raise subprocess.CalledProcessError(1, ["robustsafe", "train"])

    monkeypatch.setattr(machine_speed.subprocess, "run", fails)
    argv = ["grid", "--envs", "SafetyCarRun-v0", "--modes", "vanilla", "--out", str(tmp_path)]
    assert cli_main([*argv, "--dry-run", "--calibrate"]) == 2
    err = capsys.readouterr().err
    assert "the reference training failed (exit 1)" in err and len(err.strip().splitlines()) == 1
