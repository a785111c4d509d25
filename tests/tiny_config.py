"""The small training configurations the tests share, the command-line steps of the learners'
suites (train, evaluate, compare parameters) on the toy env, and the optional extras' imports."""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from robustsafe.agent import load_agent
from robustsafe.cli import main
from robustsafe.config import PPOLagConfig, TrainConfig


def optional_module(name: str, extra: str) -> Any:
    """Import ``name``, from an optional extra that the reproducible set-up installs: a test that
    needs it skips without it, except under CI (``CI`` set), where its absence is a failure."""
    if os.environ.get("CI"):
        return importlib.import_module(name)
    return pytest.importorskip(name, reason=f'pip install -e ".[{extra}]"')


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

TOY = "RobustSafeToyCost-v0"  # registered by tests/conftest.py; 20-step episodes

# The robust modes at full strength from the first epoch (no warm-up of the attack budget).
ROBUST_CLI = ["--set", "robust.schedule_start=0", "--set", "robust.schedule_length=1"]


def spy_acted_on(monkeypatch: Any, cls: type, method: str) -> list[float]:
    """Wrap ``cls.method`` (whose first argument is a Rollout) to record, per call, the largest
    gap between the observations the policy acted on and the true ones: a robust-training test
    checks the attack reached the policy, else its checks on true observations hold trivially."""
    gaps: list[float] = []
    wrapped = getattr(cls, method)

    def spy(self: Any, ro: Any, *args: Any, **kwargs: Any) -> Any:
        gaps.append(float(np.abs(ro.obs - ro.true_obs).max()))
        return wrapped(self, ro, *args, **kwargs)

    monkeypatch.setattr(cls, method, spy)
    return gaps


def cli_train(algo: str, out: Path, settings: list[str], *extra: str) -> int:
    """``robustsafe train --algo ALGO`` on the toy env into ``out``, with the learner's tiny
    ``settings`` (TINY_CLI and its own) and then ``extra``: the exit status."""
    return main(["train", "--algo", algo, "--env", TOY, "--out", str(out), *settings, *extra])


def cli_evaluate(run: Path, out: Path, attacks: str) -> dict[str, Any]:
    """``robustsafe evaluate`` of ``run`` against ``attacks`` (2 episodes on 2 in-process envs),
    asserted to succeed: the JSON file it wrote to ``out``."""
    args = ["evaluate", "--run", str(run), "--episodes", "2", "--env-workers", "0"]
    args += ["--num-envs", "2", "--attacks", attacks, "--out", str(out), "--no-progress"]
    assert main(args) == 0
    return json.loads(out.read_text())


def agent_params(run: Path, nets: tuple[str, ...] = ("actor", "critics")) -> torch.Tensor:
    """The parameters of the agent saved in ``run``'s networks ``nets``, as one flat tensor."""
    agent = load_agent(run)
    modules = [getattr(agent, name) for name in nets]
    return torch.cat([p.flatten() for m in modules for p in m.state_dict().values()])


def full_and_resumed(
    train: Callable[..., int], root: Path, mode: str, nets: tuple[str, ...] = ("actor", "critics")
) -> tuple[Path, Path]:
    """Two runs of ``train`` (``train(out, *extra)``) in ``mode`` under ``root``, a robust mode at
    full strength from the start: ``full``, 3 epochs straight, and ``cut``, 2 epochs then resumed
    to 3. Asserts that each step succeeds and that the two agents' networks ``nets`` are
    bit-identical; returns (full, cut)."""
    robust = ROBUST_CLI if mode != "vanilla" else []
    full, cut = root / "full", root / "cut"
    assert train(full, "--epochs", "3", "--mode", mode, *robust) == 0
    assert train(cut, "--epochs", "2", "--mode", mode, *robust) == 0
    assert main(["train", "--resume", "--out", str(cut), "--epochs", "3", "--no-progress"]) == 0
    # it did resume (a fresh start of 3 epochs would match the full run too)
    starts = json.loads((cut / "provenance.json").read_text())["starts"]
    assert [s["start_epoch"] for s in starts] == [0, 2]
    assert torch.equal(agent_params(full, nets), agent_params(cut, nets))
    return full, cut


class WalkToy(gym.Env):
    """A 1-D walk for tests: x starts uniform in [-start, start], moves by 0.1 a, reward a;
    subclasses choose the per-step cost and when the walker falls (a termination)."""

    observation_space = gym.spaces.Box(-10.0, 10.0, (2,), np.float64)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    start = 0.5

    def cost(self, x: float) -> float:
        return 0.0

    def fallen(self, x: float) -> bool:
        return False

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x = float(np.random.uniform(-self.start, self.start))  # the global state, as Bullet
        return np.array([self.x, 0.0]), {}

    def step(self, action):
        a = float(np.clip(action[0], -1, 1))
        self.x += 0.1 * a
        info = {"cost": self.cost(self.x)}
        return np.array([self.x, a]), a, self.fallen(self.x), False, info


def register_toy(env_id: str, cls: type[WalkToy], episode_steps: int) -> str:
    """Register ``cls`` as ``env_id`` (once) and return the id."""
    if env_id not in gym.registry:
        gym.register(env_id, entry_point=cls, max_episode_steps=episode_steps)
    return env_id


def replay_batch(n: int, obs_dim: int = 2, seed: int = 0) -> dict[str, np.ndarray]:
    """A random one-step replay batch of ``n`` transitions (1-D actions, none done), as
    ``ReplayBuffer.sample`` returns without ``steps``."""
    rng = np.random.default_rng(seed)
    return {
        "obs": rng.normal(size=(n, obs_dim)).astype(np.float32),
        "act": rng.uniform(-1, 1, size=(n, 1)).astype(np.float32),
        "reward": rng.normal(size=n).astype(np.float32),
        "cost": rng.uniform(size=n).astype(np.float32),
        "next_obs": rng.normal(size=(n, obs_dim)).astype(np.float32),
        "done": np.zeros(n, np.float32),
    }
