"""Safety-Gymnasium envs (for those who have ``safety_gymnasium`` installed) in RobustSafe.

Safety-Gymnasium's ``step`` returns six values, ``(obs, reward, cost, terminated, truncated,
info)``; gymnasium and RobustSafe expect five, with the cost in ``info["cost"]``.
``SixTupleAdapter`` converts. ``robustsafe.envs.make("SafetyGymnasium/SafetyPointGoal1-v0")``
(or ``robustsafe train --env SafetyGymnasium/...``) builds ``safety_gymnasium.make(...)``
through it; the id is registered with gymnasium on first use.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

NAMESPACE = "SafetyGymnasium"


class SixTupleAdapter(gym.Wrapper):
    """Safety-Gymnasium's 6-tuple ``step`` as gymnasium's 5-tuple with ``info["cost"]``."""

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        obs, reward, cost, terminated, truncated, info = self.env.step(action)
        info = dict(info)
        info["cost"] = float(cost)
        return obs, reward, bool(terminated), bool(truncated), info


def make_safety_gymnasium(env_id: str, **kwargs: Any) -> gym.Env:
    """``safety_gymnasium.make(env_id, **kwargs)`` behind ``SixTupleAdapter``."""
    try:
        import safety_gymnasium
    except ImportError as err:
        raise ImportError(
            f"{NAMESPACE}/{env_id} needs the safety_gymnasium package ({err})"
        ) from err
    return SixTupleAdapter(safety_gymnasium.make(env_id, **kwargs))


def register(gym_id: str) -> None:
    """Register ``SafetyGymnasium/<id>`` with gymnasium (idempotent). Safety-Gymnasium's own
    make applies the task's time limit; it is not known here without importing it."""
    if not gym_id.startswith(NAMESPACE + "/"):
        raise ValueError(f"not a {NAMESPACE}/ id: {gym_id!r}")
    if gym_id not in gym.registry:
        gym.register(
            id=gym_id,
            entry_point=make_safety_gymnasium,
            kwargs={"env_id": gym_id[len(NAMESPACE) + 1 :]},
        )
