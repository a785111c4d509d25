"""The compute model behind ``robustsafe grid --dry-run``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from robustsafe.experiments import compute_rates as rates
from robustsafe.experiments.compute import format_cost, run_cost, step_cost
from robustsafe.experiments.grid import GridSpec, plan_grid

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_measured_scaled_and_paper_rates():
    car = step_cost("SafetyCarRun-v0", "vanilla", "fast")
    assert car.basis == "measured" and car.wall == pytest.approx(
        rates.MEASURED["SafetyCarRun-v0/vanilla"][0] * 1e-6
    )
    assert car.env + car.attack + car.policy + car.update <= car.wall  # wall adds start-up
    ref = step_cost(rates.REFERENCE, "adv-mc", "fast")
    ant = step_cost("SafetyAntRun-v0", "adv-mc", "fast")
    ratio = rates.RAW_OVER_REFERENCE["SafetyAntRun-v0"]
    assert ant.env == pytest.approx(ref.env / ratio) and "raw rate" in ant.basis
    assert ant.wall == pytest.approx(ref.wall - ref.env + ref.env / ratio)
    paper = step_cost("SafetyAntRun-v0", "adv-mc", "paper")
    assert paper.wall == pytest.approx(ant.wall + ant.update * (rates.PAPER_UPDATE_FACTOR - 1))
    assert "paper" in paper.basis
    assert "as adv-mc" in step_cost("SafetyCarRun-v0", "adv-mix:0.5").basis
    assert "focops as ppol" in step_cost("SafetyCarRun-v0", "vanilla", algo="focops").basis
    assert "no measurement" in step_cost("pkg.mod:Other-v0", "vanilla").basis


def test_run_costs_follow_the_plan(tmp_path):
    spec = GridSpec(
        envs=("SafetyCarRun-v0", "SafetyDroneRun-v0"),
        modes=("vanilla", "adv-mc"),
        preset="fast",
        out=tmp_path,
        episodes=10,
    )
    plan = plan_grid(spec)
    costs = [run_cost(spec, p) for p in plan]
    # fast CarRun: 150 epochs x 4,000 steps; evaluation: 6 attackers x 10 episodes x 200 steps
    assert costs[0].train_steps == 150 * 4000
    assert costs[0].train_seconds == pytest.approx(
        150 * 4000 * rates.MEASURED["SafetyCarRun-v0/vanilla"][0] * 1e-6
    )
    assert costs[0].eval_steps == 6 * 10 * 200 and costs[0].eval_seconds > 0
    text = format_cost(spec, plan, costs)
    assert "SafetyDroneRun-v0 adv-mc seed 0" in text and "core-hours at 2 cores" in text
    total = sum(c.seconds for c in costs)
    assert f"{total / 3600:.1f} run-hours" in text


def test_dry_run_prints_the_cost(tmp_path):
    cmd = [sys.executable, "-m", "robustsafe.cli", "grid", "--envs", "SafetyCarCircle-v0"]
    cmd += ["--modes", "vanilla,sa-mr", "--preset", "paper", "--out", str(tmp_path), "--dry-run"]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO_ROOT, check=True)
    assert "expected cost" in done.stdout and "4,200,000" in done.stdout  # 100 x 42,000
    assert "total: 2 runs, 8,400,000 training env steps" in done.stdout
    assert list(tmp_path.iterdir()) == []


def test_the_committed_rates_are_the_scripts_output(tmp_path):
    out = tmp_path / "rates.py"
    subprocess.run(
        [sys.executable, "benchmarks/compute_rates.py", "--out", str(out)],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
    )
    committed = REPO_ROOT / "robustsafe" / "experiments" / "compute_rates.py"
    assert out.read_text() == committed.read_text()
