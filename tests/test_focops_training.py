"""FOCOPS through the command line: training, robust modes, resume, evaluation, the grid and
the table (tiny runs on the toy env)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml
from tiny_config import (
    ROBUST_CLI,
    TINY_CLI,
    TOY,
    cli_evaluate,
    cli_train,
    full_and_resumed,
    spy_acted_on,
)

from robustsafe.agent import load_agent
from robustsafe.cli import main
from robustsafe.experiments.grid import GridSpec, plan_run, train_command
from robustsafe.experiments.names import method_name
from robustsafe.experiments.table import collect_table
from robustsafe.learners.focops import FOCOPS
from robustsafe.runstate import load_state

TINY = [
    *TINY_CLI,
    "--set",
    "focops.passes=2",
    "--set",
    "focops.critic_passes=2",
    "--set",
    "focops.minibatch_size=16",
    "--set",
    "focops.nu_init=0.5",  # nu moves every epoch (down, at the toy's low costs)
    "--no-progress",
]

FOCOPS_NETS = ("actor", "v_reward", "v_cost", "critics")  # the value nets too


def focops_train(out: Path, *extra: str) -> int:
    return cli_train("focops", out, TINY, *extra)


def test_cli_trains_focops_and_evaluation_knows_it(tmp_path, capsys):
    run = tmp_path / "run"
    assert focops_train(run, "--epochs", "2") == 0
    assert yaml.safe_load((run / "config.yaml").read_text())["algo"] == "focops"
    rows = list(csv.DictReader((run / "metrics.csv").open()))
    assert [r["epoch"] for r in rows] == ["1", "2"]
    assert "nu" in rows[0] and "lambda" not in rows[0]  # the FOCOPS learner ran, not PPOL
    assert float(rows[1]["nu"]) < 0.5  # the toy's episodes cost less than the limit 5
    assert "nu" in load_state(run / "state.pt")["learner"]
    assert load_agent(run).config.algo == "focops"
    data = cli_evaluate(run, tmp_path / "eval.json", "none,mc,mr")
    assert data["train_algo"] == "focops"
    assert [r["attack"] for r in data["results"]] == ["none", "mc", "mr"]
    # each attack changes what the FOCOPS agent does: its episodes are not the unattacked ones
    natural = data["results"][0]["episodes"]
    for attacked in data["results"][1:]:
        assert attacked["episodes"] != natural, attacked["attack"]


@pytest.mark.parametrize("mode", ["adv-mc", "sa-mr"])
def test_focops_trains_in_robust_modes(tmp_path, mode, monkeypatch):
    acted_on = spy_acted_on(monkeypatch, FOCOPS, "update")
    run = tmp_path / mode
    assert focops_train(run, "--epochs", "1", "--mode", mode, *ROBUST_CLI) == 0
    row = next(csv.DictReader((run / "metrics.csv").open()))
    eps = float(row["epsilon"])
    assert eps > 0
    if mode.startswith("sa-"):  # SA's regulariser went into the FOCOPS actor loss
        assert float(row["extra_actor_loss"]) > 0
        assert acted_on == [0.0]  # SA trains on true observations
    else:  # the update got a rollout that acted on attacked observations, inside the budget
        assert float(row["time_attack"]) > 0
        assert len(acted_on) == 1 and 0 < acted_on[0] <= eps + 1e-6


@pytest.mark.parametrize(
    "mode, multiplier", [("vanilla", "dual"), ("adv-mr", "dual"), ("vanilla", "pid")]
)
def test_focops_resume_is_bit_identical(tmp_path, mode, multiplier, monkeypatch):
    acted_on = spy_acted_on(monkeypatch, FOCOPS, "update")

    def train(out: Path, *extra: str) -> int:
        return focops_train(out, "--set", f"focops.multiplier={multiplier}", *extra)

    full, cut = full_and_resumed(train, tmp_path, mode, FOCOPS_NETS)
    # a robust mode's policy acted on attacked observations (else its resume is vanilla's)
    assert (max(acted_on) > 0) == (mode != "vanilla")
    a, b = (load_state(d / "state.pt")["learner"] for d in (full, cut))
    assert a["nu"] == b["nu"] != 0.5
    assert a.get("pid") == b.get("pid") and ("pid" in a) == (multiplier == "pid")


def test_algo_is_validated_and_kept_on_resume(tmp_path, capsys):
    assert main(["train", "--algo", "sac", "--env", TOY, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "unknown learner (--algo) 'sac'; accepted: ppol, focops, sac-lag, cvpo" in err
    assert "Traceback" not in err
    run = tmp_path / "run"
    assert focops_train(run, "--epochs", "1") == 0
    assert main(["train", "--resume", "--out", str(run), "--algo", "ppol"]) == 2
    assert "--algo ppol (saved: focops)" in capsys.readouterr().err


def test_grid_plans_each_learner_in_its_own_directory(tmp_path):
    spec = GridSpec(envs=(TOY,), modes="vanilla,adv-mc", algos="ppol,focops", out=tmp_path)
    assert [(a, m) for _, a, m, _ in spec.combinations()] == [
        ("ppol", "vanilla"),
        ("ppol", "adv-mc"),
        ("focops", "vanilla"),
        ("focops", "adv-mc"),
    ]
    ppol = plan_run(spec, TOY, "adv-mc", 0)
    focops = plan_run(spec, TOY, "adv-mc", 0, "focops")
    assert ppol.run_dir == tmp_path / TOY / "adv-mc" / "seed0"  # as before learners
    assert focops.run_dir == tmp_path / TOY / "focops-adv-mc" / "seed0"
    assert "--algo" not in train_command(spec, ppol)
    cmd = train_command(spec, focops)
    assert cmd[cmd.index("--algo") + 1] == "focops"
    with pytest.raises(ValueError, match="unknown learner"):
        GridSpec(envs=(TOY,), algos="ppol,cpo", out=tmp_path)


def _eval_file(root: Path, algo: str | None, mode: str, reward: float, cost: float) -> None:
    name = mode if algo is None else f"{algo}-{mode}"
    path = root / "SafetyCarRun-v0" / name / "seed0" / "eval.json"
    path.parent.mkdir(parents=True)
    payload = {
        "env_id": "SafetyCarRun-v0",
        "train_mode": mode,
        "train_seed": 0,
        "results": [
            {
                "attack": a,
                "epsilon": 0.0 if a == "none" else 0.05,
                "episodes": [{"reward": reward, "cost": cost}] * 2,
            }
            for a in ("none", "random", "mad", "amad", "mc", "mr")
        ],
    }
    if algo is not None:
        payload["train_algo"] = algo
    path.write_text(json.dumps(payload))


def test_table_groups_rows_by_learner_and_mode(tmp_path):
    _eval_file(tmp_path, None, "vanilla", 500.0, 1.0)  # no train_algo: PPOL
    _eval_file(tmp_path, None, "adv-mc", 480.0, 0.0)
    _eval_file(tmp_path, "focops", "adv-mr", 100.0, 0.5)
    _eval_file(tmp_path, "focops", "vanilla", 400.0, 9.0)
    _eval_file(tmp_path, "focops", "adv-mc", 300.0, 0.2)
    table = collect_table(tmp_path)
    assert [r.label for r in table.rows] == [
        "PPOL-vanilla",
        "ADV-PPOL(MC)",
        "FOCOPS-vanilla",
        "FOCOPS(MC)",
        "FOCOPS(MR)*",  # below 30% of FOCOPS-vanilla's 400 (not of PPOL-vanilla's)
    ]
    marked = {r.label: r.cells["mc"].marked for r in table.rows}
    # the two lowest costs of each learner are marked (failing agents never)
    assert marked == {
        "PPOL-vanilla": True,
        "ADV-PPOL(MC)": True,
        "FOCOPS-vanilla": True,
        "FOCOPS(MC)": True,
        "FOCOPS(MR)*": False,
    }
    assert method_name("random", "focops") == "FOCOPS-random"
    assert method_name("sa-mc", "focops") == "SA-FOCOPS(MC)"
