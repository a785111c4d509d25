"""The critic attacks on a real trained agent (the committed CarRun PPOL-vanilla agent)."""

from pathlib import Path

import numpy as np
import pytest
import torch

from robustsafe.agent import load_agent
from robustsafe.attacks import make_attacker
from robustsafe.envs import make

ZOO = Path(__file__).resolve().parents[1] / "zoo" / "SafetyCarRun-v0" / "vanilla" / "agent.pt"


@pytest.fixture(scope="module")
def agent_and_states():
    agent = load_agent(ZOO)
    env = make("SafetyCarRun-v0", seed=0)
    obs = [env.reset()]
    with torch.no_grad():
        for _ in range(120):
            act = agent.actor.mean_action(torch.from_numpy(obs[-1])[None])[0].numpy()
            obs.append(env.step(act)[0])
    env.close()
    return agent, torch.from_numpy(np.stack(obs))


@pytest.mark.slow
@pytest.mark.parametrize("name,critic", [("mc", "q_cost"), ("mr", "q_reward")])
def test_mc_and_mr_beat_no_attack_and_random_noise(agent_and_states, name, critic):
    agent, obs = agent_and_states
    q = getattr(agent.critics, critic)

    def objective(observed: torch.Tensor) -> float:
        with torch.no_grad():
            return float(q(obs, agent.actor.deterministic_action(observed)).mean())

    gen = torch.Generator().manual_seed(0)
    attacked = make_attacker(name)(agent.actor, agent.critics, obs, 0.05, gen)
    noisy = make_attacker("random")(agent.actor, agent.critics, obs, 0.05, gen)
    clean_value, random_value, attack_value = objective(obs), objective(noisy), objective(attacked)
    assert attack_value > clean_value + 1e-3
    assert attack_value > random_value + 1e-3
    assert float((attacked - obs).abs().max()) <= 0.05
