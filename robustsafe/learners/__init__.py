"""Safe RL learners on constrained MDPs, behind one interface (``learners.base``).

ppol     PPO-Lagrangian with a PID multiplier (``ppo_lag``), the paper's learner
focops   FOCOPS (``focops``), the paper's appendix C
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from robustsafe.learners.base import OnPolicyLearner
from robustsafe.learners.focops import FOCOPS
from robustsafe.learners.ppo_lag import PPOLagrangian
from robustsafe.nets import GaussianActor, ValueCritic

if TYPE_CHECKING:
    from robustsafe.config import TrainConfig

__all__ = ["FOCOPS", "OnPolicyLearner", "PPOLagrangian", "make_learner"]


def make_learner(
    cfg: TrainConfig, actor: GaussianActor, v_reward: ValueCritic, v_cost: ValueCritic
) -> OnPolicyLearner:
    """The learner ``cfg.algo`` names, on the given networks, with its settings group."""
    if cfg.algo == "ppol":
        return PPOLagrangian(actor, v_reward, v_cost, cfg.ppo, cfg.pid)
    if cfg.algo == "focops":
        return FOCOPS(actor, v_reward, v_cost, cfg.focops)
    raise ValueError(f"no learner {cfg.algo!r}")  # TrainConfig checks the name first
