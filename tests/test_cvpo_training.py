"""CVPO through the command line: the off-policy loop, resume, attacks on its own critics, the
grid and the appendix table (tiny runs on the toy env)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
import torch
import yaml
from tiny_config import TINY_CLI, TOY, cli_evaluate, cli_train, full_and_resumed, spy_acted_on

from robustsafe.agent import build_networks, load_agent
from robustsafe.experiments.appendix import write_appendix
from robustsafe.experiments.grid import GridSpec, plan_run, resolve_train_config, train_command
from robustsafe.experiments.table import collect_table
from robustsafe.learners.base import OffPolicyNetworks
from robustsafe.nets import SquashedGaussianActor
from robustsafe.presets import preset
from robustsafe.runstate import load_state

TINY = [
    *TINY_CLI,
    "--set",
    "cvpo.batch_size=16",
    "--set",
    "cvpo.sample_actions=8",
    "--set",
    "cvpo.mstep_iters=2",
    "--set",
    "cvpo.steps_per_collect=5",  # 4 chunks per epoch
    "--set",
    "cvpo.updates_per_step=0.5",  # 5 gradient steps per chunk
    "--set",
    "cvpo.update_after=11",  # from the second chunk on
    "--no-progress",
]


def cvpo_train(out: Path, *extra: str) -> int:
    return cli_train("cvpo", out, TINY, *extra)


def test_cli_trains_cvpo_and_attacks_use_its_critics(tmp_path):
    run = tmp_path / "run"
    assert cvpo_train(run, "--epochs", "2") == 0
    assert yaml.safe_load((run / "config.yaml").read_text())["algo"] == "cvpo"
    rows = list(csv.DictReader((run / "metrics.csv").open()))
    assert [r["env_steps"] for r in rows] == ["40", "80"]
    # Epoch 1: no update after the first chunk (10 < 11 transitions), then 5 per chunk.
    assert [float(r["gradient_steps"]) for r in rows] == [15.0, 20.0]
    assert "loss_q_reward" not in rows[0]  # no attacker critics: its own are theirs
    keys = ("loss_q", "loss_pi", "eta", "lambda", "kl_estep", "kl_mean", "kl_std", "q_cost")
    for row in rows:
        assert all(math.isfinite(float(row[k])) for k in keys)
        assert float(row["eta"]) > 0 and float(row["lambda"]) >= 0
        assert float(row["kl_estep"]) == pytest.approx(0.1, rel=0.05)  # the E-step's bound
    state = load_state(run / "state.pt")
    # the fast preset's 2-step targets: each env's last step waits for the next collect
    assert state["learner"]["replay"]["size"] == 78 and state["critic_trainer"] is None
    assert state["learner"]["n_step_pending"]["reward"].shape == (1, 2)
    agent = load_agent(run)
    assert isinstance(agent.actor, SquashedGaussianActor)
    # Training moved the actor and the critics away from their initial values.
    torch.manual_seed(agent.config.seed)
    actor0, _, _, critics0, _ = build_networks(agent.config, 2, 1)
    for trained, initial in ((agent.actor, actor0), (agent.critics, critics0)):
        for (name, p), p0 in zip(
            trained.state_dict().items(), initial.state_dict().values(), strict=True
        ):
            if name.endswith("weight"):
                assert not torch.equal(p, p0), name
    saved = state["learner"]["critics"]["q_cost.heads.0.0.weight"]
    assert torch.equal(agent.critics.q_cost.heads[0][0].weight, saved)
    data = cli_evaluate(run, tmp_path / "eval.json", "none,mad,mc,mr")
    assert data["train_algo"] == "cvpo"
    assert [r["attack"] for r in data["results"]] == ["none", "mad", "mc", "mr"]
    # Each attack changes what the agent does: its episodes are not the unattacked ones.
    natural = data["results"][0]["episodes"]
    for attacked in data["results"][1:]:
        assert attacked["episodes"] != natural, attacked["attack"]


@pytest.mark.parametrize(
    "mode, dual_lr, recent",
    [("vanilla", 0.0, 0), ("adv-mc", 0.0, 0), ("vanilla", 0.05, 0), ("adv-mr", 0.0, 30)],
)
def test_cvpo_resume_is_bit_identical(tmp_path, mode, dual_lr, recent, monkeypatch):
    acted_on = spy_acted_on(monkeypatch, OffPolicyNetworks, "add")

    def train(out: Path, *extra: str) -> int:
        settings = ("--set", f"cvpo.dual_lr={dual_lr}", "--set", f"cvpo.estep_recent={recent}")
        return cvpo_train(out, *settings, *extra)

    full, cut = full_and_resumed(train, tmp_path, mode)
    # a robust mode's policy acted on attacked observations, vanilla's on the true ones
    assert (max(acted_on) > 0) == (mode != "vanilla")
    a, b = (load_state(d / "state.pt")["learner"] for d in (full, cut))
    assert a["duals"] == b["duals"] and a["duals"][0] != 0.1  # eta moved from its start
    # with dual_lr the duals took one Adam step per gradient step (11 chunks x 5 steps)
    assert a["dual_moments"] == b["dual_moments"]
    assert a["dual_moments"][4] == (55 if dual_lr else 0)
    for key in ("obs", "act", "reward", "steps"):
        assert (a["replay"][key] == b["replay"][key]).all()
    # The fast preset's 2-step transitions hold the true states, not the attacked ones: within
    # an episode (20 steps, 2 envs interleaved, row 2 t + env) s'_t is the stored s_{t+2}.
    obs, next_obs, steps = (a["replay"][k] for k in ("obs", "next_obs", "steps"))
    whole = [i for i in range(len(obs) - 4) if steps[i] == 2 and (i // 2 + 2) % 20]
    assert len(whole) > len(obs) // 2
    assert (obs[[i + 4 for i in whole]] == next_obs[whole]).all()
    for part in ("target", "target_actor"):
        for name, value in a[part].items():
            assert torch.equal(value, b[part][name]), f"{part}.{name}"
    rows = [list(csv.DictReader((d / "metrics.csv").open())) for d in (full, cut)]
    drop = ("wall_time", "steps_per_s", "time_env", "time_attack", "time_policy", "time_update")
    strip = [[{k: v for k, v in r.items() if k not in drop} for r in rs] for rs in rows]
    assert strip[0] == strip[1]


def test_bad_cvpo_settings_are_refused_in_one_line(tmp_path, capsys):
    assert cvpo_train(tmp_path / "x", "--set", "cvpo.sample_actions=0") == 2
    err = capsys.readouterr().err
    assert "sample_actions must be > 0" in err and "Traceback" not in err
    assert cvpo_train(tmp_path / "y", "--mode", "sa-mc") == 2
    assert "SA's regulariser (sa-mc) is for the on-policy learners" in capsys.readouterr().err


def test_grid_runs_cvpo_in_its_own_directory(tmp_path):
    spec = GridSpec(envs=(TOY,), algos="ppol,cvpo", out=tmp_path)
    plan = plan_run(spec, TOY, "vanilla", 0, "cvpo")
    assert plan.run_dir == tmp_path / TOY / "cvpo-vanilla" / "seed0"
    cmd = train_command(spec, plan)
    assert cmd[cmd.index("--algo") + 1] == "cvpo"
    assert resolve_train_config(spec, TOY, "vanilla", 0, "cvpo").algo == "cvpo"
    with pytest.raises(ValueError, match="only sac-lag takes a variant"):
        GridSpec(envs=(TOY,), algos="cvpo:0.1", out=tmp_path)


@pytest.mark.parametrize("env_id", ["SafetyCarRun-v0", "SafetyCarCircle-v0"])
def test_cvpo_presets_take_the_off_policy_epochs(env_id):
    cfg = preset(env_id, "fast", algo="cvpo")
    assert (cfg.epochs, cfg.steps_per_epoch) == (40, 10_000)
    ppol = preset(env_id, "fast")
    start = cfg.robust.schedule_start / cfg.epochs
    assert start == pytest.approx(ppol.robust.schedule_start / ppol.epochs, abs=0.02)
    # fast: FSRL's lighter updates, target averaging, E-step dual bound and 2-step targets
    # (measured); paper: the CVPO code's
    fast, paper = cfg.cvpo, preset(env_id, "paper", algo="cvpo").cvpo
    assert (fast.sample_actions, fast.batch_size, fast.mstep_iters) == (16, 256, 1)
    assert (fast.polyak, fast.dual_max, fast.n_step) == (0.95, 20.0, 2)
    assert (paper.sample_actions, paper.batch_size, paper.mstep_iters) == (32, 300, 6)
    assert (paper.polyak, paper.dual_max, paper.n_step) == (0.995, 1e5, 1)
    assert fast.estep_kl == paper.estep_kl == 0.1
    assert preset(env_id, "fast", algo="sac-lag").cvpo == paper  # other learners untouched


def _eval_file(root: Path, algo: str, mode: str, env: str, reward: float, cost: float) -> None:
    name = mode if algo == "ppol" else f"{algo}-{mode}"
    path = root / env / name / "seed0" / "eval.json"
    path.parent.mkdir(parents=True)
    results = [
        {
            "attack": a,
            "epsilon": 0.0 if a == "none" else 0.05,
            "episodes": [{"reward": reward + i, "cost": cost + i} for i in range(2)],
        }
        for a in ("none", "random", "mad", "amad", "mc", "mr")
    ]
    payload = {"env_id": env, "train_mode": mode, "train_seed": 0, "train_algo": algo}
    path.write_text(json.dumps(payload | {"results": results}))


def test_table_writes_the_appendix_cvpo_table(tmp_path):
    runs = tmp_path / "runs"
    _eval_file(runs, "ppol", "vanilla", "SafetyCarRun-v0", 600.0, 1.0)
    _eval_file(runs, "cvpo", "vanilla", "SafetyCarRun-v0", 530.0, 0.0)
    _eval_file(runs, "cvpo", "vanilla", "SafetyCarCircle-v0", 412.0, 2.0)
    table = collect_table(runs)
    assert [r.label for r in table.rows] == ["PPOL-vanilla", "CVPO-vanilla", "CVPO-vanilla"]
    paths = write_appendix(runs, tmp_path / "out" / "table", table=table)
    names = {p.name for p in paths}
    assert {"table-cvpo.md", "table-cvpo.csv", "table-cvpo.tex"} <= names
    lines = list(csv.DictReader((tmp_path / "out" / "table-cvpo.csv").open()))
    # CVPO's rows only, Run before Circle (the paper's env order), four columns each.
    got = [(r["env"], r["method"], r["attack"], r["reward_mean"], r["cost_mean"]) for r in lines]
    envs = (("SafetyCarRun-v0", 530.5, 0.5), ("SafetyCarCircle-v0", 412.5, 2.5))
    assert got == [
        (env, "CVPO-vanilla", attack, repr(reward), repr(cost))
        for env, reward, cost in envs
        for attack in ("none", "mad", "mc", "mr")
    ]
    md = (tmp_path / "out" / "table-cvpo.md").read_text()
    assert "| Natural reward | Natural cost | MAD reward | MAD cost | MC reward" in md
    assert "PPOL" not in md.split("\n\n")[0] and "Random" not in md.split("\n\n")[0]


def test_no_cvpo_table_without_cvpo_runs(tmp_path):
    _eval_file(tmp_path, "ppol", "vanilla", "SafetyCarRun-v0", 600.0, 1.0)
    paths = write_appendix(tmp_path, tmp_path / "table")
    assert not any("cvpo" in p.name for p in paths)
