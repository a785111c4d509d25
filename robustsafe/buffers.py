"""Experience storage: GAE for the on-policy learner, a replay buffer for the Q critics."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Rollout:
    """One epoch of experience, arrays of shape ``(T, N, ...)`` (time, environment).

    ``obs`` is what the policy acted on (perturbed under adversarial training), ``true_obs`` the
    true observation of the same step (equal to ``obs`` in clean rollouts) and ``next_obs`` the
    true next observation (the final one at an episode's end). The actor learns on ``obs``; the
    value critics and the Q critics learn on ``true_obs`` (see ``robustsafe.learners.ppo_lag``).
    """

    obs: np.ndarray
    true_obs: np.ndarray
    act: np.ndarray
    logp: np.ndarray
    reward: np.ndarray
    cost: np.ndarray
    next_obs: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray

    @property
    def size(self) -> int:
        return int(self.reward.size)

    def flat(self) -> tuple[np.ndarray, ...]:
        """The Q critics' transitions (true_obs, act, reward, cost, next_obs, terminated), each
        flattened over (T, N)."""
        n = self.size
        return (
            self.true_obs.reshape(n, -1),
            self.act.reshape(n, -1),
            self.reward.reshape(n),
            self.cost.reshape(n),
            self.next_obs.reshape(n, -1),
            self.terminated.reshape(n),
        )


def gae(
    rewards: np.ndarray,
    values: np.ndarray,
    next_values: np.ndarray,
    terminated: np.ndarray,
    episode_end: np.ndarray,
    gamma: float,
    lam: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Generalised advantage estimation over a rollout of shape ``(T, ...)``.

    ``next_values[t]`` is V of the true next observation (the final observation of an episode
    that ended at t), so a time-limit truncation bootstraps from it while a termination does not
    (``terminated``). ``episode_end`` (terminated or truncated) stops the recursion. The rollout's
    last step bootstraps from ``next_values`` like any other step.

        delta_t = f_t + gamma (1 - term_t) V(s_{t+1}) - V(s_t)
        A_t     = delta_t + gamma lam (1 - end_t) A_{t+1}

    Returns the advantages and the value targets ``A + V``.
    """
    T = rewards.shape[0]
    not_term = 1.0 - terminated.astype(np.float64)
    not_end = 1.0 - episode_end.astype(np.float64)
    deltas = rewards + gamma * not_term * next_values - values
    adv = np.zeros(rewards.shape, dtype=np.float64)
    running = np.zeros(rewards.shape[1:], dtype=np.float64)
    for t in range(T - 1, -1, -1):
        running = deltas[t] + gamma * lam * not_end[t] * running
        adv[t] = running
    return adv, adv + values


class ReplayBuffer:
    """A fixed-size ring buffer of transitions (s, a, r, c, s', done) for the Q critics."""

    def __init__(self, obs_dim: int, act_dim: int, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"replay capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self.obs = np.zeros((capacity, obs_dim), np.float32)
        self.act = np.zeros((capacity, act_dim), np.float32)
        self.reward = np.zeros(capacity, np.float32)
        self.cost = np.zeros(capacity, np.float32)
        self.next_obs = np.zeros((capacity, obs_dim), np.float32)
        self.done = np.zeros(capacity, np.float32)
        self.pos = 0
        self.size = 0

    def add(
        self,
        obs: np.ndarray,
        act: np.ndarray,
        reward: np.ndarray,
        cost: np.ndarray,
        next_obs: np.ndarray,
        done: np.ndarray,
    ) -> None:
        """Append a batch of transitions (first axis), overwriting the oldest when full."""
        n = obs.shape[0]
        if n > self.capacity:  # only the newest ``capacity`` survive anyway
            obs, act, reward, cost, next_obs, done = (
                x[-self.capacity :] for x in (obs, act, reward, cost, next_obs, done)
            )
            n = self.capacity
        idx = (self.pos + np.arange(n)) % self.capacity
        self.obs[idx] = obs
        self.act[idx] = act
        self.reward[idx] = reward
        self.cost[idx] = cost
        self.next_obs[idx] = next_obs
        self.done[idx] = done
        self.pos = int((self.pos + n) % self.capacity)
        self.size = int(min(self.size + n, self.capacity))

    def sample(self, batch_size: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        if self.size == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        idx = rng.integers(0, self.size, size=batch_size)
        return {
            "obs": self.obs[idx],
            "act": self.act[idx],
            "reward": self.reward[idx],
            "cost": self.cost[idx],
            "next_obs": self.next_obs[idx],
            "done": self.done[idx],
        }

    def state_dict(self) -> dict:
        n = self.size
        return {
            "obs": self.obs[:n].copy(),
            "act": self.act[:n].copy(),
            "reward": self.reward[:n].copy(),
            "cost": self.cost[:n].copy(),
            "next_obs": self.next_obs[:n].copy(),
            "done": self.done[:n].copy(),
            "pos": self.pos,
            "size": self.size,
        }

    def load_state_dict(self, d: dict) -> None:
        n = int(d["size"])
        for key in ("obs", "act", "reward", "cost", "next_obs", "done"):
            getattr(self, key)[:n] = d[key]
        self.size = n
        self.pos = int(d["pos"])
