"""A tiny custom environment for the grid tests, importable in subprocesses.

Pass it by id in gymnasium's ``"module:EnvId"`` form, ``TOY_ENV_ID`` below, so that a fresh
process (``python -m robustsafe.cli train ...``) imports this module, which registers the id.
The repository root must be importable there (it is the working directory in the tests, and
the tests also put it on ``PYTHONPATH``).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

ENV_NAME = "RobustSafeGridToy-v0"
CRASH_ENV_NAME = "RobustSafeGridToyCrash-v0"
TOY_ENV_ID = f"tests.experiments.toy_env:{ENV_NAME}"
CRASH_ENV_ID = f"tests.experiments.toy_env:{CRASH_ENV_NAME}"
CRASH_MESSAGE = "the grid toy env crashed on purpose"


class GridToyEnv(gym.Env):
    """1-D position x pushed by the action: reward +a, cost 1 in ``info['cost']`` when |x| > 1.

    Observation (x, last action) as float32; action in [-1, 1]; 20-step episodes (the
    registration's ``max_episode_steps``). The start is drawn from the generator seeded by
    ``reset(seed=...)``.
    """

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(-10.0, 10.0, (2,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.x = 0.0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x = float(self.np_random.uniform(-0.5, 0.5))
        return np.array([self.x, 0.0], dtype=np.float32), {}

    def step(self, action):
        a = float(np.clip(np.asarray(action, dtype=np.float64).reshape(-1)[0], -1.0, 1.0))
        self.x += 0.2 * a
        cost = 1.0 if abs(self.x) > 1.0 else 0.0
        obs = np.array([self.x, a], dtype=np.float32)
        return obs, a, False, False, {"cost": cost}


class CrashingToyEnv(GridToyEnv):
    """Builds and resets like ``GridToyEnv`` but raises on the first step: a training crash."""

    def step(self, action):
        raise RuntimeError(CRASH_MESSAGE)


def register() -> None:
    """Register ``ENV_NAME`` and ``CRASH_ENV_NAME`` with gymnasium (idempotent)."""
    if ENV_NAME not in gym.registry:
        gym.register(ENV_NAME, entry_point=GridToyEnv, max_episode_steps=20)
    if CRASH_ENV_NAME not in gym.registry:
        gym.register(CRASH_ENV_NAME, entry_point=CrashingToyEnv, max_episode_steps=20)


register()
