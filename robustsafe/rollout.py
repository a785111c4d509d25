"""Collecting experience: the policy acts on nu(s), the environment moves on the true state.

The collector owns env stepping and episode bookkeeping so that learners never touch envs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from robustsafe.buffers import Rollout
from robustsafe.envs import Episode, VectorEnv
from robustsafe.nets import GaussianActor

# nu: a batch of true observations -> the observations the agent sees.
Perturbation = Callable[[torch.Tensor], torch.Tensor]


@dataclass
class Timing:
    """Seconds spent in each part of a rollout."""

    env: float = 0.0
    attack: float = 0.0
    policy: float = 0.0

    def add(self, other: Timing) -> None:
        self.env += other.env
        self.attack += other.attack
        self.policy += other.policy


@dataclass
class CollectResult:
    rollout: Rollout
    episodes: list[Episode] = field(default_factory=list)
    timing: Timing = field(default_factory=Timing)


def sample_actions(
    actor: GaussianActor, obs: torch.Tensor, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Gaussian actions drawn with ``generator`` (reproducible) and their log-probabilities."""
    mean = actor.mean_action(obs)
    std = actor.log_std.exp()
    noise = torch.randn(mean.shape, generator=generator)
    act = mean + std * noise
    logp = (-0.5 * noise.pow(2) - actor.log_std - 0.5 * float(np.log(2.0 * np.pi))).sum(-1)
    return act, logp


@torch.no_grad()
def collect(
    vec: VectorEnv,
    actor: GaussianActor,
    steps: int,
    episode_seed: int,
    generator: torch.Generator,
    perturb: Perturbation | None = None,
) -> CollectResult:
    """``steps`` steps of every env of ``vec``, starting fresh episodes seeded by ``episode_seed``.

    Starting each epoch from fresh, seeded episodes makes an epoch a pure function of the
    agent and the seeds, which is what makes an interrupted run resume exactly.
    """
    n, d, a = vec.num_envs, vec.obs_dim, vec.act_dim
    buf = {
        "obs": np.empty((steps, n, d), np.float32),
        "true_obs": np.empty((steps, n, d), np.float32),
        "act": np.empty((steps, n, a), np.float32),
        "logp": np.empty((steps, n), np.float32),
        "reward": np.empty((steps, n), np.float64),
        "cost": np.empty((steps, n), np.float64),
        "next_obs": np.empty((steps, n, d), np.float32),
        "terminated": np.empty((steps, n), bool),
        "truncated": np.empty((steps, n), bool),
    }
    timing = Timing()
    episodes: list[Episode] = []
    t0 = time.perf_counter()
    vec.seed(episode_seed)
    obs = vec.reset()
    timing.env += time.perf_counter() - t0
    for t in range(steps):
        t0 = time.perf_counter()
        obs_t = torch.from_numpy(obs)
        if perturb is not None:
            with torch.enable_grad():
                obs_t = perturb(obs_t)
        t1 = time.perf_counter()
        act, logp = sample_actions(actor, obs_t, generator)
        t2 = time.perf_counter()
        step = vec.step(act.numpy())
        t3 = time.perf_counter()
        if perturb is not None:
            timing.attack += t1 - t0
        timing.policy += t2 - t1
        timing.env += t3 - t2
        buf["true_obs"][t] = obs
        buf["obs"][t] = obs_t.numpy()
        buf["act"][t] = act.numpy()
        buf["logp"][t] = logp.numpy()
        buf["reward"][t] = step.reward
        buf["cost"][t] = step.cost
        buf["next_obs"][t] = step.next_obs
        buf["terminated"][t] = step.terminated
        buf["truncated"][t] = step.truncated
        episodes.extend(step.episodes)
        obs = step.obs
    rollout = Rollout(
        obs=buf["obs"],
        true_obs=buf["true_obs"],
        act=buf["act"],
        logp=buf["logp"],
        reward=buf["reward"],
        cost=buf["cost"],
        next_obs=buf["next_obs"],
        terminated=buf["terminated"],
        truncated=buf["truncated"],
    )
    return CollectResult(rollout, episodes, timing)
