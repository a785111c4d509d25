"""The small training configurations the tests share."""

from __future__ import annotations

from typing import Any

from robustsafe.config import PPOLagConfig, TrainConfig


def tiny_config(env_id: str, ppo: dict[str, Any] | None = None, **fields: Any) -> TrainConfig:
    """A run small enough for a unit test: one epoch of 40 steps over 2 in-process envs, an
    (8, 8) network and one pass per update. ``fields`` override TrainConfig's fields, ``ppo``
    PPOLagConfig's."""
    ppo_fields = {"hidden": (8, 8), "actor_passes": 1, "critic_passes": 1, **(ppo or {})}
    base = {"epochs": 1, "steps_per_epoch": 40, "num_envs": 2, "workers": 0, **fields}
    return TrainConfig(env_id=env_id, ppo=PPOLagConfig(**ppo_fields), **base)


# The command-line start of a tiny CLI run on the toy env (tests/conftest.py registers it):
# fast preset, 2 in-process envs, 40 steps per epoch, an (8, 8) network. Each suite appends the
# settings of its learner.
TINY_CLI = [
    "--preset",
    "fast",
    "--env-workers",
    "0",
    "--num-envs",
    "2",
    "--set",
    "steps_per_epoch=40",
    "--set",
    "ppo.hidden=[8,8]",
]
