"""A trained agent on disk: policy, value critics, the attackers' Q critics and the normaliser.

Agent files hold only tensors and plain values, so they load with ``torch.load(...,
weights_only=True)``: loading a file from someone else cannot run code.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from robustsafe.choices import OFF_POLICY_ALGOS
from robustsafe.config import TrainConfig
from robustsafe.critics import QCritics
from robustsafe.nets import (
    Actor,
    GaussianActor,
    ObsNormalizer,
    SquashedGaussianActor,
    ValueCritic,
    all_finite,
)
from robustsafe.runstate import atomic_torch_save, first_line, load_tagged
from robustsafe.settings_io import from_dict, to_dict

AGENT_FORMAT = "robustsafe-agent"
AGENT_VERSION = 1


@dataclass
class Agent:
    config: TrainConfig
    actor: Actor
    v_reward: ValueCritic
    v_cost: ValueCritic
    critics: QCritics
    obs_normalizer: ObsNormalizer | None
    epoch: int

    @property
    def obs_dim(self) -> int:
        return self.actor.obs_dim

    @property
    def act_dim(self) -> int:
        return self.actor.act_dim

    def predict(self, obs: Any, deterministic: bool = True) -> np.ndarray:
        """The actor's actions (float32 numpy) for one observation or a batch, of any float dtype.

        ``deterministic=True``: the deterministic action (what evaluation executes); False: a
        sample of the Gaussian policy (unclipped: the environment clips).
        """
        from robustsafe.policy import predict

        return predict(self.actor, obs, deterministic)

    def eval(self) -> Agent:
        for m in (self.actor, self.v_reward, self.v_cost, self.critics):
            m.eval().requires_grad_(False)
        return self


def build_networks(
    cfg: TrainConfig, obs_dim: int, act_dim: int, act_low: float = -1.0, act_high: float = 1.0
) -> tuple[Actor, ValueCritic, ValueCritic, QCritics, ObsNormalizer | None]:
    """Fresh networks of the shapes ``cfg`` asks for."""
    norm = ObsNormalizer(obs_dim) if cfg.obs_normalization else None
    h = cfg.ppo.hidden
    actor: Actor
    off_policy = cfg.algo in OFF_POLICY_ALGOS
    if off_policy:  # tanh-squashed Gaussian, state-dependent std
        actor = SquashedGaussianActor(obs_dim, act_dim, h, act_low, act_high, norm)
    else:
        actor = GaussianActor(
            obs_dim,
            act_dim,
            h,
            act_low,
            act_high,
            cfg.ppo.init_log_std,
            norm,
            cfg.deterministic_action,
        )
    return (
        actor,
        ValueCritic(obs_dim, h, norm),
        ValueCritic(obs_dim, h, norm),
        # an off-policy learner's own critics learn raw costs, the attackers' costs / scale
        QCritics(obs_dim, act_dim, h, norm, 1.0 if off_policy else cfg.critics.cost_scale),
        norm,
    )


def save_agent(
    path: Path,
    cfg: TrainConfig,
    actor: Actor,
    v_reward: ValueCritic,
    v_cost: ValueCritic,
    critics: QCritics,
    epoch: int,
) -> None:
    atomic_torch_save(
        {
            "format": AGENT_FORMAT,
            "version": AGENT_VERSION,
            "config": to_dict(cfg),
            "obs_dim": actor.obs_dim,
            "act_dim": actor.act_dim,
            "act_low": float(actor.act_low[0]),
            "act_high": float(actor.act_high[0]),
            "epoch": epoch,
            "actor": actor.state_dict(),
            "v_reward": v_reward.state_dict(),
            "v_cost": v_cost.state_dict(),
            "critics": critics.state_dict(),
        },
        path,
    )


def load_agent(path: str | Path) -> Agent:
    """Load an agent file, or the latest agent of a run directory, with clear errors."""
    path = Path(path)
    if path.is_dir():
        path = path / "agent.pt"
    if not path.exists():
        raise FileNotFoundError(
            f"no agent at {path}: pass a run directory made by `robustsafe train` "
            "(it holds agent.pt) or an agent .pt file"
        )
    data = load_tagged(path, AGENT_FORMAT, AGENT_VERSION, "agent file")
    try:
        cfg = from_dict(TrainConfig, data["config"])
        actor, v_r, v_c, critics, norm = build_networks(
            cfg, data["obs_dim"], data["act_dim"], data["act_low"], data["act_high"]
        )
        actor.load_state_dict(data["actor"])
        v_r.load_state_dict(data["v_reward"])
        v_c.load_state_dict(data["v_cost"])
        critics.load_state_dict(data["critics"])
        epoch = int(data["epoch"])
    except (RuntimeError, KeyError, TypeError, ValueError) as err:
        raise ValueError(
            f"{path}: damaged agent, or its networks do not match its config ({first_line(err)})"
        ) from None
    for name, net in (("actor", actor), ("critics", critics)):
        if not all_finite(net):
            raise ValueError(f"{path}: the agent's {name} hold non-finite weights (NaN / inf)")
    return Agent(cfg, actor, v_r, v_c, critics, norm, epoch).eval()
