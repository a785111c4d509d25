import csv
import itertools
import math

import torch
from tiny_config import tiny_config

from robustsafe.agent import load_agent
from robustsafe.config import TrainConfig
from robustsafe.train import train


def _tiny(env_id: str, **kw) -> TrainConfig:
    ppo = {"hidden": (16, 16), "actor_passes": 3, "critic_passes": 3, "minibatch_size": 32}
    base = dict(seed=3, epochs=3, steps_per_epoch=80, num_envs=4, torch_threads=1)
    return tiny_config(env_id, ppo, **{**base, **kw})


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
    # it learns: every epoch's update moves the actor, and the agent's log std with it
    actors = [load_agent(p).actor.state_dict() for p in sorted(run.glob("checkpoints/*.pt"))]
    for before, after in itertools.pairwise(actors):
        assert any(not torch.equal(before[k], after[k]) for k in before)
    assert len({r["log_std"] for r in rows}) == 3
