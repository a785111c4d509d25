"""SAC-Lagrangian through the command line: the off-policy loop, robust modes, resume and the
attacks on its own critics (tiny runs on the toy env)."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
import torch
import yaml
from tiny_config import (
    ROBUST_CLI,
    TINY_CLI,
    TOY,
    WalkToy,
    agent_params,
    cli_evaluate,
    cli_train,
    full_and_resumed,
    register_toy,
    spy_acted_on,
)

from robustsafe.agent import load_agent
from robustsafe.config import SACLagConfig
from robustsafe.experiments.grid import GridSpec, plan_run, resolve_train_config, train_command
from robustsafe.experiments.table import collect_table
from robustsafe.learners.base import OffPolicyNetworks
from robustsafe.nets import SquashedGaussianActor
from robustsafe.pid import PIDConfig, PIDState, pid_step
from robustsafe.presets import preset, resolve
from robustsafe.runstate import load_state
from robustsafe.schedule import epsilon_at

TINY = [
    *TINY_CLI,
    "--set",
    "sac.batch_size=16",
    "--set",
    "sac.steps_per_collect=5",  # 4 chunks per epoch
    "--set",
    "sac.updates_per_step=0.5",  # 5 gradient steps per chunk
    "--set",
    "sac.update_after=11",  # from the second chunk on
    "--set",
    "sac.multiplier=gradient",  # these tests follow the gradient form; the PID: its own test
    "--set",
    "sac.lambda_init=0.5",
    "--set",
    "sac.lambda_lr=0.05",
    "--no-progress",
]


def sac_train(out: Path, *extra: str) -> int:
    return cli_train("sac-lag", out, TINY, *extra)


def test_an_epoch_takes_every_gradient_step_it_owes(tmp_path):
    """0.03 x 10 steps per chunk, ten chunks: 3 gradient steps, though 0.3 added ten times is
    2.9999999999999996 (the third step was lost)."""
    run = tmp_path / "run"
    extra = ["--set", "steps_per_epoch=100", "--set", "sac.updates_per_step=0.03"]
    assert sac_train(run, "--epochs", "1", *extra, "--set", "sac.update_after=0") == 0
    rows = list(csv.DictReader((run / "metrics.csv").open()))
    assert [float(r["gradient_steps"]) for r in rows] == [3.0]


def test_cli_trains_sac_lag_and_attacks_use_its_critics(tmp_path):
    run = tmp_path / "run"
    assert sac_train(run, "--epochs", "2") == 0
    assert yaml.safe_load((run / "config.yaml").read_text())["algo"] == "sac-lag"
    rows = list(csv.DictReader((run / "metrics.csv").open()))
    assert [r["env_steps"] for r in rows] == ["40", "80"]
    # Epoch 1: no update after the first chunk (10 < 11 transitions), then 5 per chunk.
    assert [float(r["gradient_steps"]) for r in rows] == [15.0, 20.0]
    assert "loss_q" in rows[0] and "loss_q_reward" not in rows[0]  # no attacker critics
    assert float(rows[1]["lambda"]) < 0.5  # the toy's Q_c is far below its threshold
    state = load_state(run / "state.pt")
    assert state["learner"]["replay"]["size"] == 80 and state["critic_trainer"] is None
    agent = load_agent(run)
    assert isinstance(agent.actor, SquashedGaussianActor)
    # The agent's critics are the learner's own (trained) critics.
    saved = state["learner"]["critics"]["q_cost.heads.0.0.weight"]
    assert torch.equal(agent.critics.q_cost.heads[0][0].weight, saved)
    data = cli_evaluate(run, tmp_path / "eval.json", "none,mc,mr")
    assert data["train_algo"] == "sac-lag" and data["train_alpha"] == 0.001
    assert data["train_alpha_learned"] is False
    assert [r["attack"] for r in data["results"]] == ["none", "mc", "mr"]
    # Each attack changes what the agent does: its episodes are not the unattacked ones.
    natural = data["results"][0]["episodes"]
    for attacked in data["results"][1:]:
        assert attacked["episodes"] != natural, attacked["attack"]


def test_sac_alpha_is_set_from_the_command_line(tmp_path):
    runs = {a: tmp_path / f"alpha{a}" for a in ("0.01", "0.1")}
    for alpha, run in runs.items():
        assert sac_train(run, "--epochs", "1", "--set", f"sac.alpha={alpha}") == 0
    assert load_agent(runs["0.01"]).config.sac.alpha == 0.01
    # the weight reaches the losses: same seed and data, another alpha, another actor
    a, b = (agent_params(run, ("actor",)) for run in runs.values())
    assert not torch.equal(a, b)


def test_train_names_the_alpha_setting_for_the_grids_learner_form(tmp_path, capsys):
    """``train --algo sac-lag:0.1`` (the grid's form) is refused with the one-run equivalent."""
    from robustsafe.cli import main

    assert main(["train", "--algo", "sac-lag:0.1", "--env", TOY, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--algo sac-lag --set sac.alpha=0.1;" in err[0]
    assert not (tmp_path / "config.yaml").exists()


@pytest.mark.parametrize("mode", ["vanilla", "adv-mr"])
def test_sac_lag_resume_is_bit_identical(tmp_path, mode, monkeypatch):
    acted_on = spy_acted_on(monkeypatch, OffPolicyNetworks, "add")
    full, cut = full_and_resumed(sac_train, tmp_path, mode)
    a, b = (load_state(d / "state.pt")["learner"] for d in (full, cut))
    assert a["lam"] == b["lam"] != 0.5
    for key in ("obs", "act", "reward"):
        assert (a["replay"][key] == b["replay"][key]).all()
    if mode != "vanilla":
        row = list(csv.DictReader((full / "metrics.csv").open()))[-1]
        eps = float(row["epsilon"])
        assert eps > 0 and float(row["time_attack"]) > 0
        # the policy acted on attacked observations (else the replay check below holds trivially)
        assert 0 < max(acted_on) <= eps + 1e-6
        # The replay holds the true observations, not the attacked ones the policy acted on:
        # within an episode (20 steps, 2 envs interleaved) s_{t+1} is the stored s'_t.
        obs, next_obs = a["replay"]["obs"], a["replay"]["next_obs"]
        going_on = [i for i in range(len(obs) - 2) if (i // 2 + 1) % 20]
        assert (obs[[i + 2 for i in going_on]] == next_obs[going_on]).all()


@pytest.mark.parametrize("update_attack", [True, False])
def test_adversarial_training_attacks_the_actors_batches_unless_asked_not_to(
    tmp_path, monkeypatch, update_attack
):
    """Every gradient step of an adv run gets the batch's attacked view (the first half of its
    rows moved inside the ball), or none with ``robust.actor_update_attack=false``."""
    from robustsafe.learners.sac_lag import SACLagrangian

    gaps: list[float | None] = []
    update = SACLagrangian.update

    def spy(self, batch, generator, actor_obs=None):
        if actor_obs is None:
            gaps.append(None)
        else:
            obs = torch.as_tensor(batch["obs"])
            seen = actor_obs(obs)
            assert torch.equal(seen[8:], obs[8:])  # sac.batch_size=16: the clean half
            gaps.append(float((seen - obs).abs().max()))
        return update(self, batch, generator, actor_obs)

    monkeypatch.setattr(SACLagrangian, "update", spy)
    flag = f"robust.actor_update_attack={str(update_attack).lower()}"
    extra = ["--set", "robust.attacked_fraction=0.5", "--set", flag]
    assert sac_train(tmp_path, "--epochs", "2", "--mode", "adv-mr", *ROBUST_CLI, *extra) == 0
    assert len(gaps) == 35  # TINY: 5 per chunk of 20 steps, from the second chunk on
    if update_attack:
        eps = 0.05  # the fast preset's Car budget, at full strength from the start (ROBUST_CLI)
        assert all(g is not None and 0 < g <= eps + 1e-6 for g in gaps)
    else:
        assert gaps == [None] * 35


@pytest.mark.parametrize("critic_attack", [True, False])
def test_critic_update_attack_gives_the_batches_attacked_next_observations(
    tmp_path, monkeypatch, critic_attack
):
    """With ``robust.critic_update_attack`` every gradient step's batch carries what the actor
    sees of its next states (the first half moved inside the ball); without it, none does."""
    from robustsafe.learners.sac_lag import SACLagrangian

    gaps: list[float | None] = []
    update = SACLagrangian.update

    def spy(self, batch, generator, actor_obs=None):
        if "next_actor_obs" not in batch:
            gaps.append(None)
        else:
            seen, true = batch["next_actor_obs"], batch["next_obs"]
            assert (seen[8:] == true[8:]).all()  # sac.batch_size=16: the clean half
            gaps.append(float(abs(seen - true).max()))
        return update(self, batch, generator, actor_obs)

    monkeypatch.setattr(SACLagrangian, "update", spy)
    flag = f"robust.critic_update_attack={str(critic_attack).lower()}"
    extra = ["--set", "robust.attacked_fraction=0.5", "--set", flag]
    assert sac_train(tmp_path, "--epochs", "2", "--mode", "adv-mc", *ROBUST_CLI, *extra) == 0
    assert len(gaps) == 35
    if critic_attack:
        assert all(g is not None and 0 < g <= 0.05 + 1e-6 for g in gaps)
    else:
        assert gaps == [None] * 35


def test_the_agent_file_holds_the_actor_average_and_resume_keeps_it(tmp_path):
    def averaged(out: Path, *extra: str) -> int:
        return sac_train(out, "--set", "sac.actor_average=0.9", *extra)

    full, cut = full_and_resumed(averaged, tmp_path, "vanilla")
    learner = load_state(full / "state.pt")["learner"]
    saved = load_agent(full).actor.state_dict()
    for name, value in saved.items():
        assert torch.equal(value, learner["actor_average"][name])
    assert not all(torch.equal(v, learner["actor"][k]) for k, v in saved.items())
    resumed = load_state(cut / "state.pt")["learner"]["actor_average"]
    assert all(torch.equal(v, resumed[k]) for k, v in learner["actor_average"].items())


def test_sa_modes_are_refused_for_sac_lag(tmp_path, capsys):
    assert sac_train(tmp_path / "x", "--mode", "sa-mr") == 2
    assert "SA's regulariser (sa-mr) is for the on-policy learners" in capsys.readouterr().err


def test_grid_runs_sac_lag_per_alpha(tmp_path):
    spec = GridSpec(envs=(TOY,), algos="sac-lag:0.1,sac-lag:0.001", out=tmp_path)
    plan = plan_run(spec, TOY, "vanilla", 0, "sac-lag:0.1")
    assert plan.run_dir == tmp_path / TOY / "sac-lag0.1-vanilla" / "seed0"
    cmd = train_command(spec, plan)
    assert cmd[cmd.index("--algo") + 1 : cmd.index("--algo") + 4] == [
        "sac-lag",
        "--set",
        "sac.alpha=0.1",
    ]
    assert resolve_train_config(spec, TOY, "vanilla", 0, "sac-lag:0.1").sac.alpha == 0.1
    for bad in ("focops:0.1", "sac-lag:x", "sac-lag:-1"):
        with pytest.raises(ValueError, match="learner"):
            GridSpec(envs=(TOY,), algos=bad, out=tmp_path)


def _eval_file(root: Path, alpha: float, mode: str, reward: float, cost: float) -> None:
    path = root / "SafetyCarRun-v0" / f"sac-lag{alpha}-{mode}" / "seed0" / "eval.json"
    path.parent.mkdir(parents=True)
    results = [
        {"attack": a, "epsilon": 0.05, "episodes": [{"reward": reward, "cost": cost}] * 2}
        for a in ("none", "mc", "mr")
    ]
    payload = {"env_id": "SafetyCarRun-v0", "train_mode": mode, "train_seed": 0}
    payload |= {"train_algo": "sac-lag", "train_alpha": alpha, "results": results}
    path.write_text(json.dumps(payload))


def test_table_has_a_row_per_sac_lag_alpha(tmp_path):
    _eval_file(tmp_path, 0.001, "vanilla", 500.0, 1.0)
    _eval_file(tmp_path, 0.1, "vanilla", 520.0, 0.5)
    _eval_file(tmp_path, 0.1, "adv-mc", 480.0, 0.2)
    labels = [r.label for r in collect_table(tmp_path).rows]
    assert labels == ["SAC-Lag(alpha=0.1)", "SAC-Lag(alpha=0.1)(MC)", "SAC-Lag(alpha=0.001)"]


class _CostlyToy(WalkToy):
    """A cost at every step where x > 0 (episode costs vary, 0-20)."""

    def cost(self, x: float) -> float:
        return float(x > 0)


COSTLY = register_toy("RobustSafeToyCostly-v0", _CostlyToy, 20)


def test_pid_multiplier_follows_the_epochs_episode_costs(tmp_path):
    """sac.multiplier=pid: lambda is the PID of the epochs' mean episode costs (episodes of 20
    steps: each epoch of 20 steps per env finishes 2), recomputed here from metrics.csv with the
    pure controller; resume is bit-identical, the PID state included."""
    pid = ["--set", "pid.cost_limit=0.5", "--set", "pid.kp=0.3", "--set", "pid.ki=0.2"]
    pid_run = ["--env", COSTLY, *pid, "--set", "sac.multiplier=pid", "--set", "sac.lambda_init=0"]

    def train(out: Path, *extra: str) -> int:
        return sac_train(out, *pid_run, *extra)

    full, cut = full_and_resumed(train, tmp_path, "vanilla")
    rows = list(csv.DictReader((full / "metrics.csv").open()))
    cfg = PIDConfig(kp=0.3, ki=0.2, kd=0.1, cost_limit=0.5)  # kd: the fast SAC preset's
    state, expected = PIDState(), []
    for r in rows:
        assert int(r["episodes"]) == 2
        state = pid_step(state, float(r["ep_cost"]), cfg)
        expected.append(state.multiplier)
    assert [float(r["lambda"]) for r in rows] == pytest.approx(expected, abs=1e-6)
    assert min(expected) > 0  # the costs moved it every epoch
    saved = [load_state(run / "state.pt")["learner"]["pid"] for run in (full, cut)]
    assert saved[0] == saved[1] and saved[0]["integral"] == pytest.approx(state.integral)


def test_pid_multiplier_is_the_default_and_bad_names_are_refused():
    assert preset("SafetyCarRun-v0", "fast", algo="sac-lag").sac.multiplier == "pid"
    with pytest.raises(ValueError, match="multiplier must be .gradient. or .pid."):
        SACLagConfig(multiplier="pi")


@pytest.mark.parametrize("env_id", ["SafetyCarRun-v0", "SafetyCarCircle-v0"])
def test_sac_presets_scale_the_attack_schedule_to_their_epochs(env_id):
    ppol = preset(env_id, "fast")
    sac = preset(env_id, "fast", algo="sac-lag")
    assert (sac.epochs, sac.steps_per_epoch, sac.num_envs) == (750, 400, 2)
    assert sac.sac.floor_cost_targets  # the paper preset keeps the plain target
    assert not preset(env_id, "paper", algo="sac-lag").sac.floor_cost_targets
    r, q = sac.robust, ppol.robust
    assert r.schedule_start / sac.epochs == pytest.approx(q.schedule_start / ppol.epochs, abs=0.02)
    final = epsilon_at(sac.epochs, r.epsilon, r.schedule, r.schedule_start, r.schedule_length)
    assert final >= 0.9 * r.epsilon  # the full budget is reached, as PPOL's schedule does
    assert preset(env_id, "paper", algo="sac-lag").epochs == 100


def test_fast_sac_steps_its_pid_after_every_episode_batch_with_fsrls_gains():
    cfg = preset("SafetyCarRun-v0", "fast", algo="sac-lag")
    # 200 steps per env per epoch: every env ends one 200-step CarRun episode each epoch
    assert cfg.rollout_length == 200 and cfg.steps_per_epoch == 2 * 200
    assert (cfg.pid.kp, cfg.pid.ki, cfg.pid.kd) == (0.05, 0.0005, 0.1)
    assert cfg.sac.gamma == 0.97  # FSRL's discount
    assert cfg.checkpoint_every * cfg.steps_per_epoch == 10_000  # a snapshot every 10,000 steps
    assert cfg.epochs * cfg.steps_per_epoch == 300_000
    ppol = preset("SafetyCarRun-v0", "fast")
    assert (ppol.pid.kp, ppol.pid.ki, ppol.pid.kd) == (0.1, 0.01, 0.001)  # PPOL's untouched
    paper = preset("SafetyCarRun-v0", "paper", algo="sac-lag")
    assert (paper.steps_per_epoch, paper.num_envs, paper.sac.gamma) == (10_000, 20, 0.99)


@pytest.mark.parametrize("env_id", ["SafetyCarRun-v0", "SafetyCarCircle-v0"])
def test_fast_sac_saves_the_actors_weight_average_and_paper_the_last_actor(env_id):
    assert preset(env_id, "fast", algo="sac-lag").sac.actor_average == 0.995
    assert preset(env_id, "paper", algo="sac-lag").sac.actor_average == 0.0
    # an explicit setting still wins over the preset's
    explicit = resolve(env_id, "fast", algo="sac-lag", sets=["sac.actor_average=0"])
    assert explicit.sac.actor_average == 0


def test_the_judged_cost_limit_is_the_one_the_multiplier_trains_to():
    """Evaluations and the runs table judge a run against ``TrainConfig.cost_limit``: for
    SAC-Lagrangian that is ``sac.cost_limit`` under the gradient multiplier (its Q_c threshold
    comes from it) and the PID's ``pid.cost_limit`` under the PID."""
    from dataclasses import replace

    base = preset("SafetyCarRun-v0", "fast", algo="sac-lag")
    gradient = replace(
        base,
        sac=replace(base.sac, multiplier="gradient", cost_limit=10.0),
        pid=replace(base.pid, cost_limit=5.0),
    )
    assert gradient.cost_limit == 10.0
    assert replace(gradient, sac=replace(gradient.sac, multiplier="pid")).cost_limit == 5.0


def test_losses_reach_metrics_csv_when_the_first_epoch_takes_no_gradient_step(tmp_path):
    """With ``update_after`` past the first epoch, epoch 1 has no losses; the columns that
    appear at epoch 2 widen metrics.csv (epoch 1 empty there) instead of being dropped."""
    out = tmp_path / "late"
    assert sac_train(out, "--epochs", "2", "--set", "sac.update_after=41") == 0
    with (out / "metrics.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["epoch"] for r in rows] == ["1", "2"]
    assert rows[0]["loss_q"] == "" and rows[0]["gradient_steps"] == "0.0"
    assert float(rows[1]["loss_q"]) > 0 and float(rows[1]["gradient_steps"]) > 0


def test_a_learned_alpha_moves_and_resumes_bit_identically(tmp_path):
    def learned(out: Path, *extra: str) -> int:
        settings = ["sac.learn_alpha=true", "sac.target_entropy=5.0", "sac.alpha=0.1"]
        return sac_train(out, *(x for kv in settings for x in ("--set", kv)), *extra)

    full, cut = full_and_resumed(learned, tmp_path, "vanilla")
    a, b = (load_state(d / "state.pt")["learner"] for d in (full, cut))
    assert torch.equal(a["log_alpha"], b["log_alpha"])
    assert float(a["log_alpha"]) > math.log(0.1)  # entropy under 5 nats: alpha rose
    rows = list(csv.DictReader((full / "metrics.csv").open()))
    # metrics.csv: the epoch's mean alpha, on its way up to the final one
    assert 0.1 < float(rows[-1]["alpha"]) < math.exp(float(a["log_alpha"]))
