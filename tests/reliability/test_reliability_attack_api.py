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
