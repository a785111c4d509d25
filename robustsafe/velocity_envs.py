"""Safety-Gymnasium's velocity-constrained MuJoCo tasks, on gymnasium's own MuJoCo envs.

Safety-Gymnasium 1.0.0 does not import on Python 3.11. Its velocity tasks are gymnasium's MuJoCo
v4 envs with unchanged observations, rewards and terminations plus a cost: 1 on a step whose
velocity exceeds a per-robot threshold, else 0. The velocity is the one gymnasium's v4 envs
already report in ``info`` (position difference over ``dt``: ``qpos[0]`` for Hopper, Walker2d,
HalfCheetah, ``qpos[0:2]`` for Swimmer, the torso for Ant, the centre of mass for Humanoid), the
same quantities Safety-Gymnasium computes. Ant and Humanoid are constrained on their planar speed
|(vx, vy)|, the others on the forward velocity vx (signed). Episodes last 1,000 steps.

The ids (``RobustSafe/SafetyHopperVelocity-v1``, ...) are registered with gymnasium on first use
by ``robustsafe.envs.make``, or by calling ``register()``. They need the ``mujoco`` extra.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

NAMESPACE = "RobustSafe"
EPISODE_STEPS = 1_000


@dataclass(frozen=True)
class VelocityTask:
    """One velocity task: gymnasium's ``{robot}-v4`` with a cost on its velocity."""

    robot: str
    threshold: float  # Safety-Gymnasium's v1 threshold (m/s)
    planar: bool  # constrain |(vx, vy)| instead of vx


TASKS: dict[str, VelocityTask] = {
    t.robot: t
    for t in (
        VelocityTask("Hopper", 0.7402, planar=False),
        VelocityTask("HalfCheetah", 3.2096, planar=False),
        VelocityTask("Walker2d", 2.3415, planar=False),
        VelocityTask("Swimmer", 0.2282, planar=False),
        VelocityTask("Ant", 2.6222, planar=True),
        VelocityTask("Humanoid", 1.4149, planar=True),
    )
}


def env_id(robot: str) -> str:
    """The registered id of ``robot``'s velocity task."""
    return f"{NAMESPACE}/Safety{robot}Velocity-v1"


VELOCITY_IDS: tuple[str, ...] = tuple(env_id(r) for r in TASKS)


def velocity_cost(task: VelocityTask, x_velocity: float, y_velocity: float = 0.0) -> float:
    """1.0 when the constrained velocity is strictly above the task's threshold, else 0.0."""
    v = math.hypot(x_velocity, y_velocity) if task.planar else x_velocity
    return float(v > task.threshold)


class VelocityCost(gym.Wrapper):
    """Puts the velocity cost of ``task`` in ``info["cost"]`` (and the velocity it used in
    ``info["velocity"]``); everything else passes through."""

    def __init__(self, env: gym.Env, task: VelocityTask) -> None:
        super().__init__(env)
        self.task = task

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        vx = float(info["x_velocity"])
        vy = float(info.get("y_velocity", 0.0)) if self.task.planar else 0.0
        info = dict(info)
        info["velocity"] = math.hypot(vx, vy) if self.task.planar else vx
        info["cost"] = velocity_cost(self.task, vx, vy)
        return obs, reward, terminated, truncated, info


def make_velocity_env(robot: str, **kwargs: Any) -> gym.Env:
    """The entry point of the registered ids: ``{robot}-v4`` under ``VelocityCost``."""
    task = TASKS[robot]
    try:
        with warnings.catch_warnings():
            # v4 on purpose (Safety-Gymnasium's tasks are v4): gymnasium 1.x says v5 exists.
            warnings.filterwarnings("ignore", message=".*out of date", category=DeprecationWarning)
            # .unwrapped: the registered id adds its own time limit and order checks.
            base = gym.make(f"{robot}-v4", disable_env_checker=True, **kwargs).unwrapped
    except ValueError as err:
        # gymnasium < 1.0 ships Hopper, Walker2d and Swimmer models that later MuJoCo releases
        # reject (2.3.4 dropped global coordinates; 4.0 a Swimmer attribute).
        if "XML Error" in str(err) and int(gym.__version__.split(".")[0]) < 1:
            raise ImportError(
                f"{robot}-v4's model in gymnasium {gym.__version__} needs mujoco 2.3.3 "
                f"(pip install 'mujoco==2.3.3'), or use gymnasium >= 1.0: {err}"
            ) from err
        raise
    return VelocityCost(base, task)


def register() -> None:
    """Register every velocity task with gymnasium (idempotent)."""
    for robot in TASKS:
        if env_id(robot) not in gym.registry:
            gym.register(
                id=env_id(robot),
                entry_point=make_velocity_env,
                kwargs={"robot": robot},
                max_episode_steps=EPISODE_STEPS,
            )
