"""Safe RL learners on constrained MDPs."""

from robustsafe.learners.ppo_lag import PPOLagrangian, Rollout

__all__ = ["PPOLagrangian", "Rollout"]
