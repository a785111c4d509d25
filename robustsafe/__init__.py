"""RobustSafe: safe reinforcement learning under observational perturbations."""

__version__ = "0.1.0"
