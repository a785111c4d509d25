"""Safe RL learners on constrained MDPs, behind one interface (``learners.base``).

ppol     PPO-Lagrangian with a PID multiplier (``ppo_lag``), the paper's learner
focops   FOCOPS (``focops``), the paper's appendix C
sac-lag  SAC-Lagrangian with a fixed entropy weight (``sac_lag``), the paper's appendix C
cvpo     CVPO, constrained variational policy optimisation (``cvpo``), the paper's appendix C
"""

from __future__ import annotations

from typing import TypeVar

from robustsafe.choices import OFF_POLICY_ALGOS
from robustsafe.config import TrainConfig
from robustsafe.critics import QCritics
from robustsafe.learners.base import OffPolicyLearner, OnPolicyLearner
from robustsafe.learners.cvpo import CVPO
from robustsafe.learners.focops import FOCOPS
from robustsafe.learners.ppo_lag import PPOLagrangian
from robustsafe.learners.sac_lag import SACLagrangian
from robustsafe.nets import Actor, GaussianActor, SquashedGaussianActor, ValueCritic

__all__ = [
    "CVPO",
    "FOCOPS",
    "OffPolicyLearner",
    "OnPolicyLearner",
    "PPOLagrangian",
    "SACLagrangian",
    "make_learner",
]


def make_learner(
    cfg: TrainConfig,
    actor: Actor,
    v_reward: ValueCritic,
    v_cost: ValueCritic,
    critics: QCritics | None = None,
    obs_dim: int = 0,
    act_dim: int = 0,
    episode_steps: int | None = None,
) -> OnPolicyLearner | OffPolicyLearner:
    """The learner ``cfg.algo`` names, on the given networks, with its settings group. An
    off-policy learner also takes the Q critics (its own), the sizes of its replay and the
    episode length (for its Q_c threshold; 1,000 when the env has no time limit)."""
    if cfg.algo == "ppol":
        return PPOLagrangian(
            _actor(actor, GaussianActor, cfg.algo), v_reward, v_cost, cfg.ppo, cfg.pid
        )
    if cfg.algo == "focops":
        return FOCOPS(_actor(actor, GaussianActor, cfg.algo), v_reward, v_cost, cfg.focops, cfg.pid)
    if cfg.algo in OFF_POLICY_ALGOS:
        if critics is None:
            raise ValueError(f"{cfg.algo} needs its Q critics")
        T = cfg.episode_steps or episode_steps or 1_000
        squashed = _actor(actor, SquashedGaussianActor, cfg.algo)
        if cfg.algo == "cvpo":
            return CVPO(squashed, critics, v_reward, v_cost, cfg.cvpo, obs_dim, act_dim, T)
        return SACLagrangian(
            squashed, critics, v_reward, v_cost, cfg.sac, obs_dim, act_dim, T, cfg.pid
        )
    raise ValueError(f"no learner {cfg.algo!r}")  # TrainConfig checks the name first


_A = TypeVar("_A", GaussianActor, SquashedGaussianActor)


def _actor(actor: Actor, kind: type[_A], algo: str) -> _A:
    """``actor`` if it is the kind of policy ``algo`` trains (``build_networks`` makes it)."""
    if not isinstance(actor, kind):
        raise TypeError(f"{algo} trains a {kind.__name__}, got a {type(actor).__name__}")
    return actor
