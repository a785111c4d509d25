"""The attackers' off-policy critics Q_r(s, a) and Q_c(s, a) (paper appendix C.3, Eq. 13-17).

Trained in every training run (vanilla included) from a replay buffer, with polyak-averaged
target networks, so that every agent is attacked with its own critics. Costs are divided by
``cost_scale`` in the targets (5 in the original code); MC, MR and AMAD only use the critics'
gradients and ranks, which the scale does not change; the MC / MR mixture sums Q_c and Q_r, so
it reads Q_c in these critics' units whatever critics it is given (``QCritics.cost_scale``).
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from torch import nn

from robustsafe.buffers import ReplayBuffer, Rollout
from robustsafe.config import CriticConfig
from robustsafe.nets import GaussianActor, ObsNormalizer, QCritic
from robustsafe.policy import sample_actions

ATTACKER_COST_SCALE = CriticConfig.cost_scale  # the attackers' critics' units: costs / 5


class QCritics(nn.Module):
    """Q_r (two heads, minimum taken) and Q_c, the networks an attacker needs. ``cost_scale``:
    Q_c estimates the discounted cost divided by it (the attackers' critics: ``CriticConfig``'s
    5; an off-policy learner's own critics: 1, raw costs)."""

    env_id: str | None = None  # the task they were fitted on, when loaded from a critics file

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        hidden: tuple[int, ...],
        obs_normalizer: ObsNormalizer | None = None,
        cost_scale: float = ATTACKER_COST_SCALE,
    ) -> None:
        super().__init__()
        self.cost_scale = cost_scale
        self.q_reward = QCritic(obs_dim, act_dim, hidden, 2, obs_normalizer)
        self.q_cost = QCritic(obs_dim, act_dim, hidden, 1, obs_normalizer)


def _polyak(target: nn.Module, source: nn.Module, rho: float) -> None:
    with torch.no_grad():
        for t, s in zip(target.parameters(), source.parameters(), strict=True):
            t.mul_(rho).add_(s, alpha=1.0 - rho)


class CriticTrainer:
    """Fits ``QCritics`` to the current policy by TD learning on a replay buffer."""

    def __init__(self, critics: QCritics, obs_dim: int, act_dim: int, cfg: CriticConfig) -> None:
        self.cfg = cfg
        self.critics = critics
        self.target = copy.deepcopy(critics).requires_grad_(False)
        # The target networks must see observations through the live normaliser, not a copy.
        for live, tgt in (
            (critics.q_reward, self.target.q_reward),
            (critics.q_cost, self.target.q_cost),
        ):
            tgt.obs_normalizer = live.obs_normalizer
        self.optim = torch.optim.Adam(critics.parameters(), lr=cfg.lr)
        self.replay = ReplayBuffer(obs_dim, act_dim, cfg.replay_size)

    def add(
        self,
        obs: np.ndarray,
        act: np.ndarray,
        reward: np.ndarray,
        cost: np.ndarray,
        next_obs: np.ndarray,
        terminated: np.ndarray,
    ) -> None:
        """Store transitions; a time-limit truncation is not a terminal (bootstrap through)."""
        self.replay.add(obs, act, reward, cost / self.cfg.cost_scale, next_obs, terminated)

    def add_rollout(self, ro: Rollout) -> None:
        """Store a rollout's transitions from its true observations.

        Q_r and Q_c estimate the value of the true state (the attackers query Q(s, pi(s~)) at the
        clean s). The original code stored the perturbed observation: once every step is
        attacked, no clean state reaches the replay and the attackers query Q off its data.
        """
        self.add(*ro.flat())

    def update(self, actor: GaussianActor, rng: np.random.Generator) -> dict[str, float]:
        """``updates_per_epoch`` TD steps; polyak averaging after every step."""
        if self.replay.size == 0:
            return {}
        cfg = self.cfg
        loss_r_sum = loss_c_sum = 0.0
        for _ in range(cfg.updates_per_epoch):
            b = {k: torch.as_tensor(v) for k, v in self.replay.sample(cfg.batch_size, rng).items()}
            with torch.no_grad():
                next_act = sample_actions(actor, b["next_obs"])  # squashed for SAC's actor
                not_done = 1.0 - b["done"]
                target_r = b["reward"] + cfg.gamma * not_done * self.target.q_reward(
                    b["next_obs"], next_act
                )
                target_c = b["cost"] + cfg.gamma * not_done * self.target.q_cost(
                    b["next_obs"], next_act
                )
            q_r = self.critics.q_reward.all_heads(b["obs"], b["act"])
            q_c = self.critics.q_cost.all_heads(b["obs"], b["act"])
            loss_r = ((q_r - target_r) ** 2).mean(dim=1).sum()
            loss_c = ((q_c - target_c) ** 2).mean(dim=1).sum()
            self.optim.zero_grad(set_to_none=True)
            (loss_r + loss_c).backward()
            self.optim.step()
            _polyak(self.target, self.critics, cfg.polyak)
            loss_r_sum += float(loss_r.detach())
            loss_c_sum += float(loss_c.detach())
        n = cfg.updates_per_epoch
        return {"loss_q_reward": loss_r_sum / n, "loss_q_cost": loss_c_sum / n}

    def state_dict(self) -> dict:
        return {
            "target": self.target.state_dict(),
            "optim": self.optim.state_dict(),
            "replay": self.replay.state_dict(),
        }

    def load_state_dict(self, d: dict) -> None:
        self.target.load_state_dict(d["target"])
        self.optim.load_state_dict(d["optim"])
        self.replay.load_state_dict(d["replay"])
