"""Experience storage: GAE for the on-policy learner, a replay buffer (and n-step transitions)
for the Q critics."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


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


def n_step_sums(
    reward: np.ndarray,
    cost: np.ndarray,
    episode_end: np.ndarray,
    n: int,
    gamma: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n-step sums over a rollout of shape ``(T, N)`` (time, env).

    For every step t, ``k_t`` = the number of steps t, t+1, ... up to n, stopping after the
    step that ends the episode (``episode_end``) and at the rollout's last step, and

        R_t = sum_{j < k_t} gamma^j r_{t+j},    C_t the same for the costs.

    Returns ``(R, C, k)``; ``k`` is an integer array. With n = 1: (r, c, 1).
    """
    T = reward.shape[0]
    r_sum = np.zeros(reward.shape, np.float64)
    c_sum = np.zeros(cost.shape, np.float64)
    k = np.zeros(reward.shape, np.int64)
    open_ = np.ones(reward.shape, bool)  # step t's sum still takes step t + j
    for j in range(min(n, T)):
        take = open_[: T - j]
        r_sum[: T - j] += np.where(take, gamma**j * reward[j:], 0.0)
        c_sum[: T - j] += np.where(take, gamma**j * cost[j:], 0.0)
        k[: T - j] += take
        open_[: T - j] &= ~episode_end[j:]
    return r_sum, c_sum, k


class NStepWindow:
    """Turns consecutive rollout chunks of the same envs into n-step transitions
    (s_t, a_t, R_t, C_t, s_{t+k}, done_{t+k-1}, k) (``n_step_sums``; done: the episode
    terminated at the k-th step, so the target does not bootstrap; a time-limit truncation does).

    A step's transition is complete once the n - 1 steps after it are known, so the last n - 1
    steps of a chunk wait for the next chunk (``state_dict``: part of a run's resumable state)
    and the sums never stop at a chunk's end. n = 1 passes every step through at once.
    """

    _KEYS = ("true_obs", "act", "reward", "cost", "next_obs", "terminated", "truncated")

    def __init__(self, n: int, gamma: float) -> None:
        if n < 1:
            raise ValueError(f"n_step must be >= 1, got {n}")
        self.n = n
        self.gamma = gamma
        self.pending: dict[str, np.ndarray] | None = None  # time-major, at most n - 1 steps

    def transitions(self, ro: Rollout) -> tuple[np.ndarray, ...]:
        """The complete transitions (obs, act, R, C, next_obs, done, k), flattened over (time,
        env) in time order, for ``ReplayBuffer.add``."""
        if self.n == 1:  # what ``_n_step`` gives for n = 1, without copies
            return (*ro.flat(), np.ones(ro.size, np.float32))
        return self._n_step(ro)

    def _n_step(self, ro: Rollout) -> tuple[np.ndarray, ...]:
        x = {key: getattr(ro, key) for key in self._KEYS}
        if self.pending is not None:
            x = {key: np.concatenate([self.pending[key], x[key]]) for key in self._KEYS}
        T, N = x["reward"].shape
        ready = max(0, T - (self.n - 1))
        self.pending = {key: v[ready:].copy() for key, v in x.items()}
        end = x["terminated"] | x["truncated"]
        r_sum, c_sum, k = n_step_sums(x["reward"], x["cost"], end, self.n, self.gamma)
        t = np.arange(ready)[:, None]
        last = t + k[:ready] - 1  # (ready, N): the step whose next state the target uses
        env = np.arange(N)[None, :]
        m = ready * N  # 0 while the first steps wait: explicit shapes, not -1
        obs_dim, act_dim = x["true_obs"].shape[2:], x["act"].shape[2:]
        return (
            x["true_obs"][:ready].reshape(m, *obs_dim),
            x["act"][:ready].reshape(m, *act_dim),
            r_sum[:ready].reshape(m).astype(np.float32),
            c_sum[:ready].reshape(m).astype(np.float32),
            x["next_obs"][last, env].reshape(m, *obs_dim),
            x["terminated"][last, env].reshape(m),
            k[:ready].reshape(m).astype(np.float32),
        )

    def state_dict(self) -> dict:
        return {} if self.pending is None else {k: v.copy() for k, v in self.pending.items()}

    def load_state_dict(self, d: dict) -> None:
        self.pending = {k: np.asarray(d[k]) for k in self._KEYS} if d else None


class ReplayBuffer:
    """A fixed-size ring buffer of transitions (s, a, r, c, s', done, k) for the Q critics; k is
    the number of env steps the transition spans (1 but for n-step transitions, ``NStepWindow``):
    the target discounts its bootstrap by gamma^k."""

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
        self.steps = np.ones(capacity, np.float32)
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
        steps: np.ndarray | None = None,
    ) -> None:
        """Append a batch of transitions (first axis), overwriting the oldest when full;
        ``steps`` None: one-step transitions."""
        n = obs.shape[0]
        if steps is None:
            steps = np.ones(n, np.float32)
        if n > self.capacity:  # only the newest ``capacity`` survive anyway
            obs, act, reward, cost, next_obs, done, steps = (
                x[-self.capacity :] for x in (obs, act, reward, cost, next_obs, done, steps)
            )
            n = self.capacity
        idx = (self.pos + np.arange(n)) % self.capacity
        self.obs[idx] = obs
        self.act[idx] = act
        self.reward[idx] = reward
        self.cost[idx] = cost
        self.next_obs[idx] = next_obs
        self.done[idx] = done
        self.steps[idx] = steps
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
            "steps": self.steps[idx],
        }

    def newest_obs(self, count: int, window: int, generator: torch.Generator) -> np.ndarray:
        """``count`` observations drawn uniformly, with replacement, from the newest ``window``
        transitions (all of them while fewer are stored)."""
        if self.size == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        back = torch.randint(0, min(window, self.size), (count,), generator=generator).numpy()
        return self.obs[(self.pos - 1 - back) % self.capacity]

    def state_dict(self) -> dict:
        n = self.size
        return {
            "obs": self.obs[:n].copy(),
            "act": self.act[:n].copy(),
            "reward": self.reward[:n].copy(),
            "cost": self.cost[:n].copy(),
            "next_obs": self.next_obs[:n].copy(),
            "done": self.done[:n].copy(),
            "steps": self.steps[:n].copy(),
            "pos": self.pos,
            "size": self.size,
        }

    def load_state_dict(self, d: dict) -> None:
        n = int(d["size"])
        for key in ("obs", "act", "reward", "cost", "next_obs", "done"):
            getattr(self, key)[:n] = d[key]
        # a state saved before n-step transitions existed holds one-step transitions only
        self.steps[:n] = d["steps"] if "steps" in d else 1.0
        self.size = n
        self.pos = int(d["pos"])
