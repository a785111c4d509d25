import csv
import math

import pytest
import torch
from tiny_config import tiny_config

from robustsafe.agent import load_agent
from robustsafe.config import TrainConfig
from robustsafe.train import train


def _tiny(env_id: str, **kw) -> TrainConfig:
    ppo = {"hidden": (16, 16), "actor_passes": 3, "critic_passes": 3, "minibatch_size": 32}
    base = dict(seed=3, epochs=3, steps_per_epoch=80, num_envs=4, torch_threads=1)
    return tiny_config(env_id, ppo, **{**base, **kw})


def _params(run_dir):
    agent = load_agent(run_dir)
    return torch.cat(
        [
            p.flatten()
            for m in (agent.actor, agent.v_reward, agent.v_cost, agent.critics)
            for p in m.state_dict().values()
        ]
    )


def test_smoke_training_writes_a_complete_run(tmp_path, toy_env_id):
    run = train(_tiny(toy_env_id, obs_normalization=True), tmp_path / "run", progress=False)
    for name in ("config.yaml", "metrics.csv", "agent.pt", "state.pt"):
        assert (run / name).exists(), name
    assert len(list((run / "checkpoints").glob("agent_epoch_*.pt"))) == 3
    assert list((run / "tb").iterdir())
    rows = list(csv.DictReader((run / "metrics.csv").open()))
    assert [int(r["epoch"]) for r in rows] == [1, 2, 3]
    assert int(rows[-1]["env_steps"]) == 240
    assert all(int(r["episodes"]) == 4 for r in rows)  # 20-step episodes, 20 steps per env
    assert not math.isnan(float(rows[-1]["loss_q_cost"]))
    agent = load_agent(run)
    assert agent.obs_normalizer is not None and float(agent.obs_normalizer.count) == 240


def test_same_seed_same_parameters_and_different_seed_differs(tmp_path, toy_env_id):
    a = _params(train(_tiny(toy_env_id), tmp_path / "a", progress=False))
    b = _params(train(_tiny(toy_env_id), tmp_path / "b", progress=False))
    c = _params(train(_tiny(toy_env_id, seed=4), tmp_path / "c", progress=False))
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


@pytest.mark.parametrize("obs_normalization", [False, True])
def test_resumed_run_ends_with_the_same_parameters(tmp_path, toy_env_id, obs_normalization):
    cfg = _tiny(toy_env_id, epochs=4, obs_normalization=obs_normalization)
    full = _params(train(cfg, tmp_path / "full", progress=False))
    train(cfg, tmp_path / "cut", progress=False, stop_after_epoch=2)  # "killed" after epoch 2
    # a crash after the CSV row but before the checkpoint leaves an extra row: add one
    with (tmp_path / "cut" / "metrics.csv").open("a") as f:
        f.write("3" + ",0" * 5 + "\n")
    resumed = _params(train(cfg, tmp_path / "cut", resume=True, progress=False))
    assert torch.equal(full, resumed)
    rows = list(csv.DictReader((tmp_path / "cut" / "metrics.csv").open()))
    assert [int(r["epoch"]) for r in rows] == [1, 2, 3, 4]


@pytest.mark.slow
def test_resume_on_a_bullet_task_with_subprocess_workers(tmp_path):
    cfg = _tiny("SafetyCarRun-v0", epochs=2, steps_per_epoch=800, workers=2)
    full = _params(train(cfg, tmp_path / "full", progress=False))
    train(cfg, tmp_path / "cut", progress=False, stop_after_epoch=1)
    resumed = _params(train(cfg, tmp_path / "cut", resume=True, progress=False))
    assert torch.equal(full, resumed)


def test_refuses_to_overwrite_and_to_resume_nothing(tmp_path, toy_env_id):
    cfg = _tiny(toy_env_id, epochs=1)
    train(cfg, tmp_path / "run", progress=False)
    with pytest.raises(FileExistsError, match="--resume"):
        train(cfg, tmp_path / "run", progress=False)
    with pytest.raises(FileNotFoundError, match="state.pt"):
        train(cfg, tmp_path / "empty", resume=True, progress=False)
