"""The attack API takes numpy's float64 and names a wrong width (issue 12: 9)."""

from __future__ import annotations

import pytest
import torch

from robustsafe.agent import load_agent
from robustsafe.attacks import make_attacker


@pytest.mark.parametrize("name", ["random", "mad", "mc", "mr"])
def test_attacks_accept_float64_and_reject_a_wrong_width(cli_run, name):
    agent = load_agent(cli_run)
    attacker = make_attacker(name)
    obs = torch.randn(5, agent.obs_dim, generator=torch.Generator().manual_seed(1))
    single = attacker(agent.actor, agent.critics, obs, 0.05, torch.Generator().manual_seed(0))
    double = attacker(
        agent.actor, agent.critics, obs.double(), 0.05, torch.Generator().manual_seed(0)
    )
    assert double.dtype == torch.float32 and torch.allclose(double, single, atol=1e-6)
    with pytest.raises(ValueError, match="columns"):
        attacker(
            agent.actor, agent.critics, torch.zeros(5, agent.obs_dim + 1), 0.05, torch.Generator()
        )


def test_amad_threshold_takes_what_the_attackers_take(cli_run):
    """float64 or numpy observations on a float32 agent, as the attackers; a wrong width and
    missing critics named."""
    from robustsafe.attacks import amad_threshold

    agent = load_agent(cli_run)
    obs = torch.randn(20, agent.obs_dim, generator=torch.Generator().manual_seed(1))
    single = amad_threshold(agent.actor, agent.critics, obs)
    assert amad_threshold(agent.actor, agent.critics, obs.double()) == single
    assert amad_threshold(agent.actor, agent.critics, obs.double().numpy()) == single
    with pytest.raises(ValueError, match="columns"):
        amad_threshold(agent.actor, agent.critics, torch.zeros(5, agent.obs_dim + 1))
    with pytest.raises(ValueError, match="needs the agent's Q critics"):
        amad_threshold(agent.actor, None, obs)


def test_evaluate_policy_names_a_bad_episode_count(toy_env_id):
    from torch import nn

    from robustsafe.evaluate import evaluate_policy

    with pytest.raises(ValueError, match="episodes must be an integer >= 1, got 0"):
        evaluate_policy(nn.Sequential(nn.Linear(2, 1)), toy_env_id, episodes=0)
