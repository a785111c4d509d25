import dataclasses
import json
from pathlib import Path

import pytest
import torch
from tiny_config import tiny_config

from robustsafe.agent import load_agent, save_agent
from robustsafe.cli import main
from robustsafe.config import RobustConfig
from robustsafe.provenance import code_version
from robustsafe.train import train


@pytest.fixture
def toy_run(tmp_path, toy_env_id):
    return train(tiny_config(toy_env_id), tmp_path / "run", progress=False)


def test_evaluate_writes_json_and_prints_a_table(toy_run, tmp_path, capsys):
    out = tmp_path / "eval.json"
    args = ["evaluate", "--run", str(toy_run), "--episodes", "5", "--env-workers", "0"]
    assert main([*args, "--out", str(out), "--num-envs", "2"]) == 0
    printed = capsys.readouterr().out
    assert "reward" in printed and "none" in printed
    data = json.loads(out.read_text())
    res = data["results"][0]
    assert res["attack"] == "none" and len(res["episodes"]) == 5
    assert all(e["length"] == 20 for e in res["episodes"])
    rewards = [e["reward"] for e in res["episodes"]]
    assert res["reward_mean"] == pytest.approx(sum(rewards) / 5)
    # deterministic: a second evaluation with the same seed gives the same episodes
    assert main([*args, "--out", str(tmp_path / "again.json")]) == 0
    again = json.loads((tmp_path / "again.json").read_text())["results"][0]["episodes"]
    assert again == res["episodes"]


def test_evaluate_errors(toy_run, tmp_path, capsys):
    assert main(["evaluate", "--run", str(tmp_path / "missing")]) == 2
    assert "no agent" in capsys.readouterr().err
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    assert main(["evaluate", "--run", str(bad)]) == 2
    assert "damaged, or not a RobustSafe agent file" in capsys.readouterr().err
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes((toy_run / "agent.pt").read_bytes()[:500])
    assert main(["evaluate", "--run", str(truncated)]) == 2
    assert "damaged, or not a RobustSafe agent file" in capsys.readouterr().err
    args = ["evaluate", "--run", str(toy_run), "--env-workers", "0", "--episodes", "2"]
    assert main([*args, "--env", "SafetyCarRun-v0", "--allow-other-env"]) == 2
    assert "observation size" in capsys.readouterr().err
    assert main([*args, "--env", "NoSuchEnv-v0", "--allow-other-env"]) == 2
    assert "SafetyCarRun-v0" in capsys.readouterr().err
    assert main([*args, "--episodes", "0"]) == 2
    capsys.readouterr()
    # the same one-line errors when the envs run in worker processes
    workers = ["evaluate", "--run", str(toy_run), "--env-workers", "2", "--num-envs", "2"]
    assert main([*workers, "--episodes", "2", "--env", "NoSuchEnv-v0", "--allow-other-env"]) == 2
    err = capsys.readouterr().err
    assert "SafetyCarRun-v0" in err and len(err.strip().splitlines()) == 1
    zoo_agent = Path(__file__).parents[1] / "zoo" / "SafetyCarRun-v0" / "vanilla"  # a real env
    workers[2] = str(zoo_agent)
    assert main([*workers, "--episodes", "2", "--seed", "-1"]) == 2
    err = capsys.readouterr().err
    assert "seed must be a non-negative integer" in err and len(err.strip().splitlines()) == 1


def test_evaluate_refuses_xi_outside_0_1_and_an_empty_attack_list(toy_run, capsys):
    args = ["evaluate", "--run", str(toy_run), "--env-workers", "0", "--episodes", "2"]
    assert main([*args, "--attack-seed", "-1"]) == 2
    assert "--attack-seed must be >= 0, got -1" in capsys.readouterr().err
    xi_args = ["xi-sweep", "--run", str(toy_run), "--env-workers", "0", "--episodes", "1"]
    assert main([*xi_args, "--attack-seed", "-1"]) == 2  # the same words, not numpy's
    assert "--attack-seed must be >= 0, got -1" in capsys.readouterr().err
    for xi in ("0", "-0.1", "1.5", "nan"):
        assert main([*args, "--attacks", "amad", "--xi", xi]) == 2
        captured = capsys.readouterr()
        assert "--xi must be in (0, 1]" in captured.err and captured.err.count("\n") == 1
        assert "reward" not in captured.out
    assert main([*args, "--attacks", "amad", "--xi", "1"]) == 0
    capsys.readouterr()
    for empty in ("", " , "):
        assert main([*args, "--attacks", empty]) == 2
        captured = capsys.readouterr()
        assert "--attacks is empty" in captured.err and "reward" not in captured.out


def test_train_errors(tmp_path, capsys, toy_run):
    assert main(["train", "--env", "SafetyCarJump-v0", "--out", str(tmp_path / "x")]) == 2
    assert "SafetyCarRun-v0" in capsys.readouterr().err
    assert main(["train", "--out", str(tmp_path / "y"), "--set", "ppo.nope=1"]) == 2
    assert "unknown setting" in capsys.readouterr().err
    assert main(["train", "--out", str(tmp_path / "y"), "--set", "ppo.actor_lr=-1"]) == 2
    assert "actor_lr" in capsys.readouterr().err
    assert main(["train", "--env", "RobustSafeToyCost-v0", "--out", str(toy_run)]) == 2
    assert "--resume" in capsys.readouterr().err
    assert main(["train", "--resume", "--out", str(tmp_path / "nothing")]) == 2
    assert "state.pt" in capsys.readouterr().err
    both = ["--epochs", "2", "--total-steps", "80", "--env", "RobustSafeToyCost-v0"]
    assert main(["train", "--out", str(tmp_path / "z"), *both]) == 2
    assert "not both" in capsys.readouterr().err and not (tmp_path / "z").exists()
    assert main(["train", "--resume", "--out", str(toy_run), *both[:4]]) == 2
    assert "not both" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["train", "--preset", "nope"])


def test_agent_round_trip_keeps_every_network(toy_run, tmp_path):
    agent = load_agent(toy_run)
    copy_path = tmp_path / "copy.pt"
    save_agent(copy_path, agent.config, agent.actor, agent.v_reward, agent.v_cost, agent.critics, 7)
    again = load_agent(copy_path)
    assert again.epoch == 7 and again.config == agent.config
    obs = torch.randn(4, agent.obs_dim)
    act = agent.actor.mean_action(obs)
    assert torch.equal(again.actor.mean_action(obs), act)
    assert torch.equal(again.critics.q_cost(obs, act), agent.critics.q_cost(obs, act))
    assert torch.equal(again.v_reward(obs), agent.v_reward(obs))
    # every tensor of every network (a normaliser's statistics too), each in its own place
    for name in ("actor", "v_reward", "v_cost", "critics"):
        saved, loaded = getattr(agent, name).state_dict(), getattr(again, name).state_dict()
        assert saved.keys() == loaded.keys(), name
        assert all(torch.equal(saved[k], loaded[k]) for k in saved), name
    # the two value critics (and the Q_r heads) differ, so a swap in the file would show
    assert not torch.equal(agent.v_reward(obs), agent.v_cost(obs))
    q_r = agent.critics.q_reward.all_heads(obs, act)
    assert not torch.equal(q_r[0], q_r[1])


def test_evaluate_attacks_at_the_runs_budget_unless_told(tmp_path, toy_env_id):
    from robustsafe.presets import paper_epsilon

    run = train(
        tiny_config(toy_env_id, robust=RobustConfig(epsilon=0.025)), tmp_path / "r", progress=False
    )
    base = ["evaluate", "--run", str(run), "--episodes", "2", "--env-workers", "0"]
    for extra, want in (([], 0.025), (["--eps", "0.05"], 0.05)):
        out = tmp_path / f"eval{want}.json"
        assert main([*base, "--attacks", "random", "--out", str(out), *extra]) == 0
        eps = {r["attack"]: r["epsilon"] for r in json.loads(out.read_text())["results"]}
        assert eps["random"] == pytest.approx(want)
    # a foreign policy's default: the paper's budget for the task (Table 1)
    assert paper_epsilon("SafetyDroneCircle-v0") == 0.025
    assert paper_epsilon("SafetyAntRun-v0") == 0.025
    assert paper_epsilon("SafetyCarCircle-v0") == 0.05
    assert paper_epsilon("SafetyBallRun-v0") == 0.05


def test_evaluate_deterministic_action_override(toy_run, tmp_path, capsys):
    """--deterministic-action picks the action executed: on the toy env the reward of a step is
    the action, so a constant saturated mean (0.905) and its E[clip(a)] give different, known
    episode rewards; the file records which action ran. A squashed actor refuses the option."""
    from robustsafe.agent import build_networks
    from robustsafe.nets import expected_clipped_action

    agent = load_agent(toy_run)
    last = agent.actor.net[-1]
    with torch.no_grad():
        last.weight.zero_()
        last.bias.fill_(3.0)  # mean = -1 + 2 sigmoid(3) = 0.905 in every state
        agent.actor.log_std.fill_(-0.5)
    path = tmp_path / "saturated.pt"
    save_agent(path, agent.config, agent.actor, agent.v_reward, agent.v_cost, agent.critics, 1)
    mean = -1.0 + 2.0 * torch.sigmoid(torch.tensor(3.0, dtype=torch.float64))
    one = torch.ones((), dtype=torch.float64)
    std = torch.exp(torch.tensor(-0.5, dtype=torch.float64))
    expected = expected_clipped_action(mean, std, -one, one)
    assert float(mean - expected) > 0.02  # the two actions differ clearly at this mean
    base = ["evaluate", "--run", str(path), "--episodes", "2", "--env-workers", "0"]
    for kind, action in (("mean", mean), ("expected", expected), (None, expected)):
        out = tmp_path / f"{kind}.json"
        extra = [] if kind is None else ["--deterministic-action", kind]
        assert main([*base, *extra, "--out", str(out)]) == 0
        data = json.loads(out.read_text())
        assert data["actions"] == (
            "deterministic (mean)"
            if kind == "mean"
            else "deterministic (E[clip(a)], the expected executed action)"
        )
        for ep in data["results"][0]["episodes"]:
            assert ep["reward"] == pytest.approx(20 * float(action), abs=1e-4)
        assert data["code"] == code_version()  # the code that ran the episodes
        assert data["train_epsilon"] is None  # a vanilla agent: no training budget
    # a robust agent records its training budget (the table notes one unlike the evaluation's)
    adv = dataclasses.replace(
        agent.config,
        robust=dataclasses.replace(agent.config.robust, mode="adv-mc", train_epsilon=0.07),
    )
    save_agent(path, adv, agent.actor, agent.v_reward, agent.v_cost, agent.critics, 1)
    assert main([*base, "--attacks", "none", "--out", str(tmp_path / "adv.json")]) == 0
    assert json.loads((tmp_path / "adv.json").read_text())["train_epsilon"] == 0.07
    sac_cfg = tiny_config(agent.config.env_id, algo="sac-lag")
    actor, v_r, v_c, critics, _ = build_networks(sac_cfg, agent.obs_dim, agent.act_dim)
    sac_path = tmp_path / "sac.pt"
    save_agent(sac_path, sac_cfg, actor, v_r, v_c, critics, 0)
    assert main(["evaluate", "--run", str(sac_path), "--deterministic-action", "mean"]) == 2
    assert "squashed mean" in capsys.readouterr().err
    foreign = ["evaluate", "--policy", "no_such_module:policy", "--env", agent.config.env_id]
    assert main([*foreign, "--deterministic-action", "mean"]) == 2
    assert "applies to --run agents" in capsys.readouterr().err
