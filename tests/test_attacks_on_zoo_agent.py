"""The critic attacks on real trained agents: the committed CarRun PPOL-vanilla agent (a Gaussian
actor, attacked with the attackers' critics) and the SAC-Lagrangian and CVPO agents (tanh-squashed
actors, attacked through their squashed mean with their own Q critics)."""

from pathlib import Path

import numpy as np
import pytest
import torch

from robustsafe.agent import load_agent
from robustsafe.attacks import make_attacker
from robustsafe.envs import make

ZOO = Path(__file__).resolve().parents[1] / "zoo" / "SafetyCarRun-v0"
AGENTS = ["vanilla", "sac-lag-vanilla", "cvpo-vanilla"]


@pytest.fixture(scope="module", params=AGENTS)
def agent_and_states(request):
    agent = load_agent(ZOO / request.param / "agent.pt")
    env = make("SafetyCarRun-v0", seed=0)
    obs = [env.reset()]
    with torch.no_grad():
        for _ in range(120):
            act = agent.actor.deterministic_action(torch.from_numpy(obs[-1])[None])[0].numpy()
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
    # the same search without gradient steps: its 8 starts only (clean + 7 uniform draws)
    starts = make_attacker(name, steps=0)(agent.actor, agent.critics, obs, 0.05, gen)
    clean_value, random_value, attack_value = objective(obs), objective(noisy), objective(attacked)
    assert attack_value > clean_value + 1e-3
    assert attack_value > random_value + 1e-3
    # the gradient steps do the work: they add at least a quarter again of what the starts found
    # (a policy whose action carries no gradient to the observation would leave them at 0)
    starts_value = objective(starts)
    assert attack_value - clean_value > 1.25 * (starts_value - clean_value) + 1e-3
    assert float((attacked - obs).abs().max()) <= 0.05
