"""Shared test helpers: a tiny custom environment that reports its cost in info["cost"]."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

# The helpers of tiny_config.py assert: pytest explains their failures as in a test.
pytest.register_assert_rewrite("tiny_config")


class ToyCostEnv(gym.Env):
    """1-D walk: reward +a, cost 1 when |x| > 1; 'cost' is absent from info when it is 0."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(-10.0, 10.0, (2,), np.float64)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.x = 0.0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x = float(np.random.uniform(-0.5, 0.5))  # the global state, like Bullet-Safety-Gym
        return np.array([self.x, 0.0]), {}

    def step(self, action):
        a = float(np.clip(action[0], -1, 1))
        self.x += 0.1 * a
        info = {"cost": 1.0} if abs(self.x) > 1 else {}
        return np.array([self.x, a]), a, False, False, info


TOY_ID = "RobustSafeToyCost-v0"
if TOY_ID not in gym.registry:
    gym.register(TOY_ID, entry_point=ToyCostEnv, max_episode_steps=20)


@pytest.fixture(scope="session")
def toy_env_id() -> str:
    return TOY_ID


@pytest.fixture
def sb3():
    """Stable-Baselines3 (the ``sb3`` extra): skips without it, fails without it under CI."""
    from tiny_config import optional_module  # after the assert rewrite's registration above

    return optional_module("stable_baselines3", "sb3")


@pytest.fixture
def mujoco():
    """MuJoCo (the ``mujoco`` extra): skips without it, fails without it under CI."""
    from tiny_config import optional_module

    return optional_module("mujoco", "mujoco")
