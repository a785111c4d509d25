"""Safe RL learners on constrained MDPs."""

from robustsafe.learners.ppo_lag import PPOLagrangian

__all__ = ["PPOLagrangian"]
