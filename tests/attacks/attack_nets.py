"""Small networks for the attack tests: random ones, and hand-built ones with known optima."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from robustsafe.critics import QCritics
from robustsafe.nets import GaussianActor


def random_agent(obs_dim: int, act_dim: int = 2, seed: int = 0, hidden=(16, 16), gain=3.0):
    """A random actor and critics; the actor's weights scaled by ``gain`` so it reacts to the
    small perturbations the tests use."""
    torch.manual_seed(seed)
    actor = GaussianActor(obs_dim, act_dim, hidden)
    with torch.no_grad():
        for p in actor.net.parameters():
            p.mul_(gain)
    critics = QCritics(obs_dim, act_dim, hidden)
    return actor, critics


def linear_actor(weight: Tensor, bias: Tensor | None = None) -> GaussianActor:
    """mu(s) = -1 + 2 sigmoid(W s + b): one linear layer, monotone in every obs coordinate."""
    act_dim, obs_dim = weight.shape
    actor = GaussianActor(obs_dim, act_dim, hidden=())
    with torch.no_grad():
        actor.net[0].weight.copy_(weight)
        actor.net[0].bias.copy_(torch.zeros(act_dim) if bias is None else bias)
    return actor


def linear_critics(
    obs_dim: int,
    cost_act: Tensor,
    reward_act: Tensor | None = None,
    cost_obs: Tensor | None = None,
) -> QCritics:
    """Q_c(s, a) = cost_obs . s + cost_act . a and Q_r(s, a) = reward_act . a (both heads)."""
    act_dim = cost_act.shape[0]
    critics = QCritics(obs_dim, act_dim, hidden=())
    with torch.no_grad():
        obs_part = torch.zeros(obs_dim) if cost_obs is None else cost_obs
        critics.q_cost.heads[0][0].weight.copy_(torch.cat([obs_part, cost_act])[None])
        critics.q_cost.heads[0][0].bias.zero_()
        r = torch.zeros(act_dim) if reward_act is None else reward_act
        for head in critics.q_reward.heads:
            head[0].weight.copy_(torch.cat([torch.zeros(obs_dim), r])[None])
            head[0].bias.zero_()
    return critics


class PeakedCost(nn.Module):
    """Q_c(s, a) = -||a - mu(s)||^2: the clean action is the cost's unique maximiser, so every
    perturbation that moves the action makes the MC objective worse."""

    def __init__(self, actor: GaussianActor) -> None:
        super().__init__()
        self.actor = actor

    def forward(self, obs: Tensor, act: Tensor) -> Tensor:
        return -((act - self.actor.deterministic_action(obs).detach()) ** 2).sum(-1)
