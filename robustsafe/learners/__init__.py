"""Safe RL learners on constrained MDPs, behind one interface (``learners.base``).

ppol     PPO-Lagrangian with a PID multiplier (``ppo_lag``), the paper's learner
focops   FOCOPS (``focops``), the paper's appendix C
sac-lag  SAC-Lagrangian with a fixed entropy weight (``sac_lag``), the paper's appendix C
cvpo     CVPO, constrained variational policy optimisation (``cvpo``), the paper's appendix C
"""

from __future__ import annotations

from robustsafe.choices import OFF_POLICY_ALGOS
from robustsafe.config import TrainConfig
from robustsafe.critics import QCritics
from robustsafe.learners.base import OffPolicyLearner, OnPolicyLearner
from robustsafe.learners.cvpo import CVPO
from robustsafe.learners.focops import FOCOPS
from robustsafe.learners.ppo_lag import PPOLagrangian
from robustsafe.learners.sac_lag import SACLagrangian
from robustsafe.nets import GaussianActor, ValueCritic

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
    actor: GaussianActor,
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
        return PPOLagrangian(actor, v_reward, v_cost, cfg.ppo, cfg.pid)
    if cfg.algo == "focops":
        return FOCOPS(actor, v_reward, v_cost, cfg.focops, cfg.pid)
    if cfg.algo in OFF_POLICY_ALGOS:
        if critics is None:
            raise ValueError(f"{cfg.algo} needs its Q critics")
        T = cfg.episode_steps or episode_steps or 1_000
        if cfg.algo == "cvpo":
            return CVPO(actor, critics, v_reward, v_cost, cfg.cvpo, obs_dim, act_dim, T)  # type: ignore[arg-type]
        return SACLagrangian(  # type: ignore[arg-type]
            actor, critics, v_reward, v_cost, cfg.sac, obs_dim, act_dim, T, cfg.pid
        )
    raise ValueError(f"no learner {cfg.algo!r}")  # TrainConfig checks the name first
