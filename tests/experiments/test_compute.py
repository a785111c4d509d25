"""The compute model behind ``robustsafe grid --dry-run``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from robustsafe.experiments import compute_rates as rates
from robustsafe.experiments.compute import format_cost, load_factor, run_cost, step_cost
from robustsafe.experiments.grid import GridSpec, plan_grid

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_measured_scaled_and_paper_rates(monkeypatch):
    car = step_cost("SafetyCarRun-v0", "vanilla", "fast")
    key = "SafetyCarRun-v0/vanilla"
    assert car.basis.startswith("measured") and car.wall == pytest.approx(
        rates.MEASURED[key][0] * 1e-6 / load_factor(key)
    )
    assert car.env + car.attack + car.policy + car.update <= car.wall  # wall adds start-up
    assert "as adv-mc" in step_cost("SafetyCarRun-v0", "adv-mix:0.5").basis
    assert "no measurement" in step_cost("pkg.mod:Other-v0", "vanilla").basis
    # a task without runs: the reference's rates, each part scaled by the task's ratio
    # (rates in microseconds: wall, env, attack, policy, update)
    measured = {
        "Ref-v0/vanilla": (100.0, 60.0, 0.0, 10.0, 30.0, 1, 20, 2, 0.0),
        "Ref-v0/adv-mc": (150.0, 60.0, 50.0, 10.0, 30.0, 1, 20, 2, 0.5),
    }
    monkeypatch.setattr(rates, "MEASURED", measured)
    monkeypatch.setattr(rates, "REFERENCE", "Ref-v0")
    ratios = {"Ref-v0": (1.0, 1.0, 1.0), "Ant-v0": (2.0, 1.5, 0.5)}
    monkeypatch.setattr(rates, "TRAIN_OVER_REFERENCE", ratios)
    ant = step_cost("Ant-v0", "adv-mc", "fast")
    assert (ant.env, ant.attack, ant.policy, ant.update) == pytest.approx(
        (120e-6, 50e-6, 15e-6, 15e-6)
    )
    assert ant.wall == pytest.approx(150e-6 + 60e-6 + 5e-6 - 15e-6)
    assert "Ref-v0's, env x2.00, policy x1.50, update x0.50" in ant.basis
    paper = step_cost("Ant-v0", "adv-mc", "paper")
    assert paper.wall == pytest.approx(ant.wall + 15e-6 * (rates.PAPER_UPDATE_FACTOR - 1))
    assert "paper" in paper.basis


def test_a_task_measured_in_vanilla_adds_the_modes_extra_time_from_the_nearest_task(
    monkeypatch,
):
    """AntRun (fast: every env attacked after epoch 50 of 250, 0.8 of its steps) measured only
    in vanilla: its own vanilla rates plus ADV-MC's extra per step on the task whose measured
    runs attacked the nearest share, DroneRun (0.78 here), not the reference task CarCircle
    (its runs' 0.8667); AntCircle (0.41): DroneCircle (0.40, a Circle task) before CarRun
    (0.40, a Run task). The last field: the share of env steps the measured runs attacked."""
    measured = {
        "SafetyCarCircle-v0/vanilla": (100.0, 60.0, 0.0, 10.0, 30.0, 1, 20, 2, 0.0),
        "SafetyCarCircle-v0/adv-mc": (130.0, 60.0, 20.0, 10.0, 40.0, 1, 20, 2, 0.8667),
        "SafetyCarCircle-v0/sa-mc": (145.0, 60.0, 5.0, 10.0, 40.0, 1, 20, 2, 0.0),
        "SafetyCarRun-v0/vanilla": (100.0, 60.0, 0.0, 10.0, 30.0, 1, 20, 2, 0.0),
        "SafetyCarRun-v0/adv-mc": (110.0, 60.0, 10.0, 10.0, 30.0, 1, 20, 2, 0.4),
        "SafetyDroneRun-v0/vanilla": (80.0, 40.0, 0.0, 10.0, 30.0, 1, 20, 2, 0.0),
        "SafetyDroneRun-v0/adv-mc": (200.0, 40.0, 100.0, 12.0, 40.0, 1, 20, 2, 0.78),
        "SafetyDroneCircle-v0/vanilla": (80.0, 40.0, 0.0, 10.0, 30.0, 1, 20, 2, 0.0),
        "SafetyDroneCircle-v0/adv-mc": (150.0, 40.0, 60.0, 10.0, 30.0, 1, 20, 2, 0.4),
        "SafetyAntRun-v0/vanilla": (300.0, 200.0, 0.0, 20.0, 70.0, 1, 20, 2, 0.0),
        "SafetyAntCircle-v0/vanilla": (400.0, 250.0, 0.0, 20.0, 100.0, 1, 20, 2, 0.0),
    }
    monkeypatch.setattr(rates, "MEASURED", measured)
    monkeypatch.setattr(rates, "REFERENCE", "SafetyCarCircle-v0")
    monkeypatch.setattr(rates, "TRAIN_OVER_REFERENCE", {})  # no load to divide out
    ant = step_cost("SafetyAntRun-v0", "adv-mc")
    # DroneRun's extra: attack +100 x 0.8 / 0.78 (the attacked shares: the planned run's over
    # DroneRun's runs'), policy +2, update +10 (env unchanged); the wall time grows by the sum
    attack = 100 * 0.8 / 0.78
    assert (ant.wall, ant.env, ant.attack, ant.policy, ant.update) == pytest.approx(
        (1e-6 * (300 + attack + 12), 200e-6, 1e-6 * attack, 22e-6, 80e-6)
    )
    assert "SafetyDroneRun-v0/adv-mc over SafetyDroneRun-v0/vanilla, attack x1.03" in ant.basis
    # the nearest by the runs' own shares, not by today's presets (fast CarRun ADV-PPOL 0.4,
    # DroneRun 0.92): runs that attacked CarRun 0.8 and DroneRun 0.4 make it CarRun
    swapped = dict(measured)
    for key, share in (("SafetyCarRun-v0/adv-mc", 0.8), ("SafetyDroneRun-v0/adv-mc", 0.4)):
        swapped[key] = (*measured[key][:8], share)
    monkeypatch.setattr(rates, "MEASURED", swapped)
    basis = step_cost("SafetyAntRun-v0", "adv-mc").basis
    assert "SafetyCarRun-v0/adv-mc over SafetyCarRun-v0/vanilla" in basis
    monkeypatch.setattr(rates, "MEASURED", measured)
    assert step_cost("SafetyAntRun-v0", "vanilla").wall == pytest.approx(300e-6)
    # 60 x 0.40667 / 0.4; an ADV mixture is priced as ADV-MC, and says so
    circle = step_cost("SafetyAntCircle-v0", "adv-mix:0.5")
    assert (circle.wall, circle.attack) == pytest.approx((461e-6, 61e-6))
    assert "SafetyDroneCircle-v0/adv-mc" in circle.basis and "as adv-mc" in circle.basis
    # SA-PPOL does not attack its rollouts: the reference task's extra (attack +5 in its
    # regulariser, update +10), unscaled
    sa = step_cost("SafetyAntRun-v0", "sa-mc")
    assert sa.wall == pytest.approx(315e-6) and "SafetyCarCircle-v0/sa-mc" in sa.basis
    # paper: AntRun attacks every env after epoch 52 of 250 there (the original's 50, two epochs
    # later: 0.792 against fast's 0.8), and its updates cost PAPER_UPDATE_FACTOR times fast's
    paper = step_cost("SafetyAntRun-v0", "adv-mc", "paper")
    extra_update = 80e-6 * (rates.PAPER_UPDATE_FACTOR - 1)
    assert paper.wall == pytest.approx(ant.wall + ant.attack * (0.792 / 0.8 - 1) + extra_update)
    # CarCircle's runs attacked 0.8667 of their steps; paper attacks 0.48 (every env, epochs
    # 53-100), fast ADV-PPOL 0.5 x (1 - 50 / 150)
    car = step_cost("SafetyCarCircle-v0", "adv-mc", "paper")
    assert car.attack == pytest.approx(20e-6 * 0.48 / 0.8667) and "attack x0.55" in car.basis
    car = step_cost("SafetyCarCircle-v0", "adv-mc", "fast")
    assert car.attack == pytest.approx(20e-6 * (1 / 3) / 0.8667) and "attack x0.38" in car.basis


def test_the_attack_part_is_scaled_by_the_planned_runs_share_over_the_source_runs(monkeypatch):
    """The planned run's attacked share comes from the preset for its own mode and learner (fast
    CarCircle: ADV-PPOL and FOCOPS start at epoch 50 of 150, PPOL's other modes at 75; half the
    envs); the source's from its runs (MEASURED's last field), not from today's preset."""
    from robustsafe.experiments.compute import _attack_scale, _attacked_share

    measured = {
        "SafetyCarCircle-v0/vanilla": (100.0, 60.0, 0.0, 10.0, 30.0, 1, 20, 2, 0.0),
        "SafetyCarCircle-v0/adv-mc": (130.0, 60.0, 30.0, 10.0, 30.0, 1, 20, 2, 0.25),
        "SafetyCarCircle-v0/random": (110.0, 60.0, 10.0, 10.0, 30.0, 1, 20, 2, 0.5),
        "SafetyCarCircle-v0/focops-vanilla": (200.0, 60.0, 0.0, 10.0, 130.0, 1, 20, 2, 0.0),
    }
    monkeypatch.setattr(rates, "MEASURED", measured)
    monkeypatch.setattr(rates, "REFERENCE", "SafetyCarCircle-v0")
    monkeypatch.setattr(rates, "TRAIN_OVER_REFERENCE", {})
    car, adv = "SafetyCarCircle-v0", "SafetyCarCircle-v0/adv-mc"
    # 0.5 x (1 - 50 / 150) = 1/3 over the source runs' 0.25
    assert _attack_scale(car, adv, "adv-mc", "fast", "ppol") == pytest.approx((1 / 3) / 0.25)
    random = "SafetyCarCircle-v0/random"  # runs that attacked 0.5 of their steps
    assert _attack_scale(car, random, "adv-mc", "fast", "ppol") == pytest.approx((1 / 3) / 0.5)
    assert _attack_scale(car, adv, "vanilla", "fast", "ppol") == 1.0
    assert _attack_scale(car, adv, "sa-mc", "fast", "ppol") == 1.0
    # FOCOPS: its own preset's share, start 50 in every mode (PPOL-random: 75, 0.25)
    assert _attack_scale(car, adv, "adv-mc", "fast", "focops") == pytest.approx((1 / 3) / 0.25)
    assert _attack_scale(car, adv, "random", "fast", "focops") == pytest.approx((1 / 3) / 0.25)
    assert _attack_scale(car, adv, "random", "fast", "ppol") == pytest.approx(1.0)
    # FOCOPS on CarRun attacks every env (PPOL half of them): 1.0 x (1 - 30 / 150)
    assert _attacked_share("SafetyCarRun-v0", "fast", "adv-mc", "focops") == pytest.approx(0.8)
    assert _attacked_share("SafetyCarRun-v0", "fast", "adv-mc", "ppol") == pytest.approx(0.4)
    assert _attacked_share(car, "fast", "adv-mc", "sac-lag:0.1") == pytest.approx(0.25)
    assert _attacked_share("Other-v0", "fast", "adv-mc", "ppol") is None
    assert _attacked_share(car, "fast", "sa-mc", "focops") == 0.0  # clean rollouts
    # through step_cost: 30 x (1/3) / 0.25 = 40; the wall time grows by the same 10
    c = step_cost(car, "adv-mc")
    assert (c.wall, c.attack) == pytest.approx((140e-6, 40e-6)) and "attack x1.33" in c.basis
    # a learner measured only in vanilla: PPOL's attack time (random: 10 x 0.25 / 0.5) times
    # the learner's share over PPOL's ((1/3) / 0.25)
    focops = step_cost(car, "random", algo="focops")
    assert focops.attack == pytest.approx(5e-6 * (1 / 3) / 0.25)
    assert "random as vanilla + PPOL's attack time x1.33 (focops's attacked share)" in focops.basis


def test_a_task_with_one_run_group_has_its_load_measured_against_the_reference(monkeypatch):
    """Ant-v0's env stepping per step in the side-by-side trainings is twice the reference's:
    its only run group, at four times the reference's least loaded time, ran at load x2."""
    measured = {
        "Ref-v0/vanilla": (100.0, 60.0, 0.0, 10.0, 30.0, 1, 20, 2, 0.0),
        "Ref-v0/sa-mc": (200.0, 90.0, 0.0, 10.0, 90.0, 1, 20, 2, 0.0),  # x1.5 against Ref's own
        "Ant-v0/vanilla": (400.0, 240.0, 0.0, 20.0, 120.0, 1, 20, 2, 0.0),
        "Ant-v0/sac-lag-vanilla": (900.0, 240.0, 0.0, 20.0, 600.0, 1, 5, 2, 0.0),  # no Ref peer
    }
    monkeypatch.setattr(rates, "MEASURED", measured)
    monkeypatch.setattr(rates, "REFERENCE", "Ref-v0")
    ratios = {"Ref-v0": (1.0, 1.0, 1.0), "Ant-v0": (2.0, 1.0, 1.0)}
    monkeypatch.setattr(rates, "TRAIN_OVER_REFERENCE", ratios)
    assert [load_factor(k) for k in measured] == pytest.approx([1.0, 1.5, 2.0, 1.0])
    ant = step_cost("Ant-v0", "vanilla")
    assert ant.wall == pytest.approx(200e-6) and "load x2.00 divided out" in ant.basis


def test_other_learners_are_priced_from_their_own_runs(monkeypatch):
    """Rates (wall, env, attack, policy, update) in microseconds; the trainings side by side
    give each task's (env, policy, update) time per step relative to the reference's."""
    measured = {
        "Ref-v0/vanilla": (100.0, 60.0, 0.0, 10.0, 30.0, 1, 20, 2, 0.0),
        "Ref-v0/adv-mc": (150.0, 60.0, 50.0, 10.0, 30.0, 1, 20, 2, 0.5),
        "Car-v0/vanilla": (70.0, 30.0, 0.0, 10.0, 30.0, 1, 20, 2, 0.0),
        "Car-v0/adv-mc": (120.0, 30.0, 50.0, 10.0, 30.0, 1, 20, 2, 0.5),
        "Car-v0/sac-lag-vanilla": (400.0, 30.0, 0.0, 20.0, 350.0, 1, 5, 2, 0.0),
    }
    monkeypatch.setattr(rates, "MEASURED", measured)
    monkeypatch.setattr(rates, "REFERENCE", "Ref-v0")
    ratios = {"Ref-v0": (1.0, 1.0, 1.0), "Car-v0": (0.5, 1.0, 1.0), "Ant-v0": (2.0, 1.5, 0.5)}
    monkeypatch.setattr(rates, "TRAIN_OVER_REFERENCE", ratios)
    own = step_cost("Car-v0", "vanilla", algo="sac-lag")
    assert (own.wall, own.update, own.basis) == pytest.approx((400e-6, 350e-6, "measured"))
    # another entropy weight: the learner's rates, said so
    other = step_cost("Car-v0", "vanilla", algo="sac-lag:0.1")
    assert other.wall == pytest.approx(400e-6) and "sac-lag:0.1 as sac-lag-vanilla" in other.basis
    # ADV training of a learner measured only in vanilla: PPOL's attack time on top
    adv = step_cost("Car-v0", "adv-mc", algo="sac-lag")
    assert (adv.wall, adv.attack) == pytest.approx((450e-6, 50e-6))
    assert "adv-mc as vanilla + PPOL's attack time" in adv.basis
    # another task: each part scaled by Ant's ratio over Car's (env 4x, policy 1.5x, update 0.5x)
    ant = step_cost("Ant-v0", "vanilla", algo="sac-lag")
    assert (ant.env, ant.policy, ant.update) == pytest.approx((120e-6, 30e-6, 175e-6))
    assert ant.wall == pytest.approx(400e-6 + 90e-6 + 10e-6 - 175e-6)
    assert "Car-v0's, env x4.00, policy x1.50, update x0.50" in ant.basis
    # a learner without runs: PPOL's, said so
    focops = step_cost("Car-v0", "vanilla", algo="focops")
    assert focops.wall == pytest.approx(70e-6) and focops.basis == "measured; focops as ppol"


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
    car = step_cost("SafetyCarRun-v0", "vanilla")
    assert costs[0].train_seconds == pytest.approx(150 * 4000 * car.wall)
    assert costs[0].eval_steps == 6 * 10 * 200
    # natural and random at the cheap factor, MAD / AMAD / MC / MR at the gradient one, both
    # times the task's vanilla env + policy seconds per step
    factors = 2 * rates.EVAL_CHEAP_FACTOR + 4 * rates.EVAL_GRADIENT_FACTOR
    assert costs[0].eval_seconds == pytest.approx(10 * 200 * (car.env + car.policy) * factors)
    text = format_cost(spec, plan, costs)
    assert "SafetyDroneRun-v0 adv-mc seed 0" in text and "core-hours at 2 cores" in text
    total = sum(c.seconds for c in costs)
    assert f"{total / 3600:.1f} run-hours" in text
    # one short run: under 10 core-hours, to a tenth (not "0 core-hours")
    one = format_cost(spec, plan[:1], costs[:1])
    core_hours = float(re.search(r"= ([\d.,]+) core-hours", one).group(1))
    assert 0 < core_hours < 10 and core_hours == pytest.approx(
        costs[0].seconds * 2 / 3600, abs=0.05
    )


def test_hours_keep_their_precision_alike():
    """run-hours and core-hours by one rule: a tiny grid read "0.0 run-hours = 0.1 core-hours"."""
    from robustsafe.experiments.compute import _hours

    assert [_hours(h) for h in (0.0376, 0.075, 0.53, 24.34, 8529.4)] == [
        "0.038",
        "0.075",
        "0.5",
        "24",
        "8,529",
    ]


def test_dry_run_prints_the_cost(tmp_path):
    cmd = [sys.executable, "-m", "robustsafe.cli", "grid", "--envs", "SafetyCarCircle-v0"]
    cmd += ["--modes", "vanilla,sa-mr", "--preset", "paper", "--out", str(tmp_path), "--dry-run"]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO_ROOT, check=True)
    assert "expected cost" in done.stdout and "4,200,000" in done.stdout  # 100 x 42,000
    assert "total: 2 runs, 8,400,000 training env steps" in done.stdout
    assert list(tmp_path.iterdir()) == []


def test_a_dry_run_of_the_papers_attackers_imports_no_torch(tmp_path):
    """Checking the attackers' names imported torch (about 0.8 s of a 1.3 s dry run); a name
    that is none of the paper's is still checked by make_attacker."""
    code = (
        "import sys\n"
        "from robustsafe.cli import main\n"
        "args = ['grid', '--envs', 'SafetyCarRun-v0', '--modes', 'vanilla,adv-mc', '--dry-run',\n"
        f"        '--attacks', 'none,random,mad,amad,mc,mr,minr', '--out', {str(tmp_path)!r}]\n"
        "print(main(args), 'torch' in sys.modules)\n"
        "print(main([*args[:-4], '--attacks', 'none,mix:0.5', '--out', args[-1]]),\n"
        "      'torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    results = [x for x in done.stdout.splitlines() if x in ("0 False", "0 True")]
    assert results == ["0 False", "0 True"], done.stdout


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


def test_the_load_the_measured_runs_ran_under_is_divided_out(monkeypatch):
    """Env stepping per step depends on the task, the layout and the kind of rollout, not on the
    mode: a run group that stepped the same envs twice as slowly ran on a loaded machine."""
    measured = {
        "Car-v0/vanilla": (100.0, 50.0, 0.0, 10.0, 30.0, 1, 20, 2, 0.0),
        "Car-v0/focops-adv-mc": (400.0, 100.0, 120.0, 20.0, 100.0, 1, 20, 2, 0.5),  # x2 loaded
        "Car-v0/sac-lag-vanilla": (900.0, 150.0, 0.0, 40.0, 700.0, 1, 5, 2, 0.0),  # own group
        "Car-v0/cvpo-vanilla": (800.0, 70.0, 0.0, 30.0, 650.0, 1, 20, 2, 0.0),  # off-policy
    }
    monkeypatch.setattr(rates, "MEASURED", measured)
    monkeypatch.setattr(rates, "REFERENCE", "Car-v0")
    monkeypatch.setattr(rates, "TRAIN_OVER_REFERENCE", {"Car-v0": (1.0, 1.0, 1.0)})
    assert [load_factor(k) for k in measured] == [1.0, 2.0, 1.0, 1.0]
    adv = step_cost("Car-v0", "adv-mc", algo="focops")
    assert (adv.wall, adv.env, adv.attack) == pytest.approx((200e-6, 50e-6, 60e-6))
    assert adv.basis == "measured; load x2.00 divided out"
    assert step_cost("Car-v0", "vanilla").basis == "measured"
    assert step_cost("Car-v0", "vanilla", algo="cvpo").wall == pytest.approx(800e-6)


def _compute_rates_script():
    """benchmarks/compute_rates.py, loaded as a module (it is a script, not in the package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "compute_rates_script", REPO_ROOT / "benchmarks" / "compute_rates.py"
    )
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def test_epochs_stopped_for_other_measurements_count_as_median_epochs():
    """benchmarks/compute_rates.py: an epoch over 3x the median epoch time (a SIGSTOP pause)
    counts as a median epoch, in the wall time and in each part."""
    script = _compute_rates_script()
    # five epochs of 100 steps at 10 s each but the fourth, paused for 90 s (100 s: over 3x 10);
    # wall_time is cumulative, with 2 s of start-up before the first epoch
    rows, wall_time = [], 2.0
    for epoch, (seconds, env) in enumerate([(10, 6), (10, 6), (10, 7), (100, 96), (10, 6)], 1):
        wall_time += seconds
        rows.append(
            {
                "env_steps": str(100 * epoch),
                "steps_per_s": str(100 / seconds),
                "wall_time": str(wall_time),
                "time_env": str(env),
                "time_attack": "0",
                "time_policy": "1",
                "time_update": "3",
            }
        )
    wall, parts = script.without_stopped_epochs(rows)
    assert wall == pytest.approx(142.0 - 90)  # the pause taken out, start-up kept
    assert parts["time_env"] == pytest.approx(6 + 6 + 7 + 6 + 6)  # the paused epoch's: median 6
    assert parts["time_update"] == pytest.approx(15) and parts["time_policy"] == pytest.approx(5)
    # no pause: the sums as they are
    wall, parts = script.without_stopped_epochs(rows[:3])
    assert wall == pytest.approx(32.0) and parts["time_env"] == pytest.approx(19)


def test_the_rates_pool_the_attacked_share_of_each_runs_config(tmp_path):
    """benchmarks/compute_rates.py: the share of env steps attacked, from each run's own
    config.yaml (attacked envs x the epochs after the schedule's start; the constant schedule
    attacks from the first epoch; a run older than attacked_fraction attacked every env; the
    SA modes act on clean observations), pooled over the runs weighted by their env steps."""
    script = _compute_rates_script()

    def run(label, seed, epochs, steps_per_epoch, **robust):
        d = tmp_path / "table" / "SafetyCarCircle-v0" / label / f"seed{seed}"
        d.mkdir(parents=True)
        lines = [f"epochs: {epochs}", "num_envs: 20", "workers: 2", "robust:"]
        lines += [f"  {k}: {v}" for k, v in robust.items()]
        (d / "config.yaml").write_text("\n".join(lines) + "\n")
        head = "env_steps,steps_per_s,wall_time,time_env,time_attack,time_policy,time_update"
        rows = [
            f"{n * steps_per_epoch},{steps_per_epoch},{n},0.5,0.1,0.1,0.2"
            for n in range(1, epochs + 1)
        ]
        (d / "metrics.csv").write_text("\n".join([head, *rows]) + "\n")

    # half the envs after epoch 5 of 10, 1,000 steps: 0.25; every env (an old run: no
    # attacked_fraction) after epoch 1 of 4, 3,000 steps: 0.75; pooled by steps, 0.625
    run(
        "adv-mc", 0, 10, 100, mode="adv-mc", schedule="exp", schedule_start=5, attacked_fraction=0.5
    )
    run("adv-mc", 1, 4, 750, mode="adv-mc", schedule="linear", schedule_start=1)
    # the constant schedule: from the first epoch whatever its start, 0.5
    constant = dict(schedule="constant", schedule_start=5, attacked_fraction=0.5)
    run("random", 0, 10, 100, mode="random", **constant)
    run("sa-mc", 0, 10, 100, mode="sa-mc", schedule="exp", schedule_start=0, attacked_fraction=1.0)
    measured = script.measure([str(tmp_path / "table")])
    attacked = rates.FIELDS.index("attacked")
    assert len(rates.FIELDS) == 9 and all(len(v) == 9 for v in measured.values())
    assert measured["SafetyCarCircle-v0/adv-mc"][attacked] == pytest.approx(0.625)
    assert measured["SafetyCarCircle-v0/adv-mc"][rates.FIELDS.index("runs")] == 2
    assert measured["SafetyCarCircle-v0/random"][attacked] == pytest.approx(0.5)
    assert measured["SafetyCarCircle-v0/sa-mc"][attacked] == 0.0
    # every committed entry: a share in [0, 1], 0 where the mode does not attack its rollouts
    for key, values in rates.MEASURED.items():
        label = key.split("/", 1)[1]
        attacks = label.endswith("random") or "adv-" in label
        assert 0.0 < values[attacked] <= 1.0 if attacks else values[attacked] == 0.0, key


def test_runs_of_another_processor_are_left_out_of_the_rates(tmp_path):
    """benchmarks/compute_rates.py: the rates are one machine's; a run started (even once) on
    another processor is skipped, and a run older than provenance files is kept."""
    import json

    script = _compute_rates_script()

    def run(name, cpus):
        d = tmp_path / name
        d.mkdir()
        if cpus is not None:
            starts = [{"start_epoch": 10 * i, "cpu": cpu} for i, cpu in enumerate(cpus)]
            (d / "provenance.json").write_text(json.dumps({"starts": starts}))
        return d

    assert script.on_the_rates_machine(run("old", None))
    assert script.on_the_rates_machine(run("here", [script.RATES_CPU, script.RATES_CPU]))
    assert not script.on_the_rates_machine(run("there", ["Intel(R) Xeon(R) Processor"]))
    assert not script.on_the_rates_machine(run("resumed", [script.RATES_CPU, "Intel(R) Xeon"]))


def test_the_wall_time_here_shares_the_cores_between_the_runs_at_a_time():
    """A run alone keeps 1.46 cores busy: runs at a time beyond what the cores hold slow each
    other down, and no grid is shorter than its longest run."""
    from types import SimpleNamespace

    from robustsafe.experiments.compute import _duration, _local_wall_time

    def wall(workers: int, cores: int) -> str:
        spec = SimpleNamespace(workers=workers, cpus_per_run=2)
        return _local_wall_time(spec, [100.0, 100.0, 100.0, 300.0], cores=cores)

    # 4 at once on 2 cores: each at 2 / (4 x 1.46) = 0.3425 until the three 100 s runs end
    # (292 s), then the 300 s run alone at full speed for its last 200 s.
    assert wall(4, 2) == f"{_duration(492.0)} here with 4 at a time on 2 cores"
    assert wall(4, 8) == f"{_duration(300.0)} here with 4 at a time on 8 cores"
    assert wall(1, 2) == f"{_duration(600.0)} here with 1 at a time on 2 cores"
    assert wall(1000, 4000) == f"{_duration(300.0)} here with 4 at a time on 4000 cores"


def test_shared_wall_time_by_hand():
    from robustsafe.experiments.concurrency import shared_wall_time

    # two 146 s runs on 2 cores together: each at 2 / 2.92 of its speed, 213.16 s
    assert shared_wall_time([146.0, 146.0], 2, 2) == pytest.approx(213.16)
    # in order, 2 at a time: [100, 100] together (146 s), then [100, 300] (146 s), then 200 s
    assert shared_wall_time([100.0, 100.0, 100.0, 300.0], 2, 2) == pytest.approx(492.0)
    # the seconds are a run alone on 2 cores; on one core it gets 1 of the 1.46 it used
    assert shared_wall_time([10.0, 20.0], 1, 1) == pytest.approx(30.0 * 1.46)
    assert shared_wall_time([], 2, 2) == 0.0


def test_default_runs_at_a_time_fill_the_cores_within_the_memory(tmp_path):
    from robustsafe.experiments.concurrency import available_memory, default_parallel_runs

    gib = 2**30
    assert default_parallel_runs(cores=2, memory=24 * gib) == 2  # measured: 2 beat 1
    assert default_parallel_runs(cores=1, memory=24 * gib) == 1
    assert default_parallel_runs(cores=16, memory=100 * gib) == 11  # ceil(16 / 1.46)
    assert default_parallel_runs(cores=16, memory=10 * gib) == 3  # 3 GiB per run
    assert default_parallel_runs(cores=16, memory=gib) == 1
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:  24683840 kB\nMemAvailable:   19481600 kB\n")
    assert available_memory(meminfo) == 19481600 * 1024
    meminfo.write_text("MemTotal:  24683840 kB\n")
    assert available_memory(meminfo) is None
    assert available_memory(tmp_path / "absent") is None


def test_a_containers_cpu_quota_and_memory_limit_bound_the_runs_at_a_time(tmp_path):
    from robustsafe.experiments.concurrency import available_cores, available_memory

    cgroup = tmp_path / "cgroup"
    cgroup.mkdir()
    assert 1 <= available_cores(cgroup) <= (os.cpu_count() or 1)  # no quota: the affinity
    (cgroup / "cpu.max").write_text("150000 100000\n")  # 1.5 CPUs: 2 cores in use at most
    assert available_cores(cgroup) == min(2, len(os.sched_getaffinity(0)))
    (cgroup / "cpu.max").write_text("max 100000\n")
    assert available_cores(cgroup) == len(os.sched_getaffinity(0))
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemAvailable:   20971520 kB\n")  # 20 GiB free on the host
    (cgroup / "memory.max").write_text(str(8 * 2**30))
    (cgroup / "memory.current").write_text(str(2 * 2**30))
    assert available_memory(meminfo, cgroup) == 6 * 2**30  # the container's 8 GiB less 2 used
    (cgroup / "memory.max").write_text("max\n")
    assert available_memory(meminfo, cgroup) == 20 * 2**30


def test_shared_wall_time_refuses_what_has_no_wall_time():
    from robustsafe.experiments.concurrency import shared_wall_time

    for seconds, at_once, cores in (([1.0], 0, 2), ([1.0], 1, 0), ([-5.0, 10.0], 2, 2)):
        with pytest.raises(ValueError):
            shared_wall_time(seconds, at_once, cores)
    with pytest.raises(ValueError, match="finite"):
        shared_wall_time([float("nan")], 1, 2)
