"""Collecting experience: the policy acts on nu(s), the environment moves on the true state.

The collector owns env stepping and episode bookkeeping so that learners never touch envs.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, fields

import numpy as np
import torch

from robustsafe.buffers import Rollout
from robustsafe.envs import Episode, VectorEnv
from robustsafe.nets import Actor, SquashedGaussianActor

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


def join_results(parts: list[CollectResult]) -> CollectResult:
    """Consecutive ``collect`` results as one (rollouts joined along time, timings summed)."""
    if len(parts) == 1:
        return parts[0]
    names = [f.name for f in fields(Rollout)]
    rollout = Rollout(**{k: np.concatenate([getattr(p.rollout, k) for p in parts]) for k in names})
    timing = Timing()
    for p in parts:
        timing.add(p.timing)
    return CollectResult(rollout, [e for p in parts for e in p.episodes], timing)


def sample_actions(
    actor: Actor, obs: torch.Tensor, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Gaussian actions drawn with ``generator`` (reproducible) and their log-probabilities
    (SAC's squashed actor draws its own: ``SquashedGaussianActor.sample``)."""
    if isinstance(actor, SquashedGaussianActor):
        return actor.sample(obs, generator)
    mean = actor.mean_action(obs)
    std = actor.log_std.exp()
    noise = torch.randn(mean.shape, generator=generator)
    act = mean + std * noise
    logp = (-0.5 * noise.pow(2) - actor.log_std - 0.5 * float(np.log(2.0 * np.pi))).sum(-1)
    return act, logp


def training_episode_seed(seed: int, env_index: int, episode: int) -> int:
    """The reset seed of the ``episode``-th training episode of env ``env_index`` (pure).

    Training episodes draw from their own seed space, disjoint from evaluation's.
    """
    ss = np.random.SeedSequence([seed, 0x7EA1], spawn_key=(env_index, episode))
    return int(ss.generate_state(1)[0])


class Collector:
    """Steps a vector env for the learner; episodes continue across ``collect`` calls.

    An epoch ends wherever it ends: unfinished episodes go on in the next epoch, and the
    learner bootstraps from the value of the last true next observation (``gae``). Env k's
    j-th episode starts from ``training_episode_seed(seed, k, j)``, so the experience depends
    only on the seed, the policy and the number of envs, not on how they are spread over
    worker processes.

    ``state_dict`` holds what resuming needs without saving simulator internals: each env's
    current episode number and the actions it has taken since that episode's reset. Restoring
    resets every env from its episode's seed and replays those actions; the replayed
    observations are checked against the saved ones, so a non-deterministic env is detected.

    ``survival_bonus`` is added to the learner's reward at every step that does not end in a
    termination (a fall; a time-limit truncation counts as survived). The episodes' statistics
    keep the env's own reward.
    """

    def __init__(self, vec: VectorEnv, seed: int, survival_bonus: float = 0.0) -> None:
        self.vec = vec
        self.seed = seed
        self.survival_bonus = survival_bonus
        n = vec.num_envs
        self.episode = np.zeros(n, np.int64)  # episode number each env is playing
        self.actions: list[list[np.ndarray]] = [[] for _ in range(n)]
        self.obs = vec.reset([training_episode_seed(seed, k, 0) for k in range(n)])

    def _next_seeds(self) -> np.ndarray:
        return np.array(
            [training_episode_seed(self.seed, k, int(j) + 1) for k, j in enumerate(self.episode)],
            dtype=np.uint64,
        )

    @torch.no_grad()
    def collect(
        self,
        actor: Actor,
        steps: int,
        generator: torch.Generator,
        perturb: Perturbation | None = None,
    ) -> CollectResult:
        """``steps`` steps of every env, continuing the episodes in progress."""
        vec = self.vec
        n, d, a = vec.num_envs, vec.obs_dim, vec.act_dim
        buf: dict[str, np.ndarray] = {
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
        upcoming = self._next_seeds()
        obs = self.obs
        for t in range(steps):
            t0 = time.perf_counter()
            obs_t = torch.from_numpy(obs)
            if perturb is not None:
                with torch.enable_grad():
                    obs_t = perturb(obs_t)
            t1 = time.perf_counter()
            act, logp = sample_actions(actor, obs_t, generator)
            act_np = act.numpy().astype(np.float32, copy=False)
            t2 = time.perf_counter()
            step = vec.step(act_np, reset_seeds=upcoming)
            t3 = time.perf_counter()
            if perturb is not None:
                timing.attack += t1 - t0
            timing.policy += t2 - t1
            timing.env += t3 - t2
            buf["true_obs"][t] = obs
            buf["obs"][t] = obs_t.numpy()
            buf["act"][t] = act_np
            buf["logp"][t] = logp.numpy()
            buf["reward"][t] = step.reward + self.survival_bonus * ~step.terminated
            buf["cost"][t] = step.cost
            buf["next_obs"][t] = step.next_obs
            buf["terminated"][t] = step.terminated
            buf["truncated"][t] = step.truncated
            ended = step.terminated | step.truncated
            for k in range(n):
                if ended[k]:
                    self.actions[k] = []
                    self.episode[k] += 1
                    upcoming[k] = training_episode_seed(self.seed, k, int(self.episode[k]) + 1)
                else:
                    self.actions[k].append(act_np[k].copy())
            episodes.extend(step.episodes)
            obs = step.obs
        self.obs = obs
        rollout = Rollout(**buf)
        return CollectResult(rollout, episodes, timing)

    # ------------------------------------------------------------------ resume

    def state_dict(self) -> dict:
        a = self.vec.act_dim
        return {
            "seed": self.seed,
            "episode": self.episode.copy(),
            "actions": [
                np.stack(acts) if acts else np.zeros((0, a), np.float32) for acts in self.actions
            ],
            "obs": self.obs.copy(),
        }

    def load_state_dict(self, d: dict) -> None:
        """Bring every env back to where the saved episodes were, by replaying their actions."""
        n = self.vec.num_envs
        episode = np.asarray(d["episode"], dtype=np.int64)
        actions = [np.asarray(x, dtype=np.float32) for x in d["actions"]]
        if int(d["seed"]) != self.seed or episode.shape != (n,) or len(actions) != n:
            raise ValueError("the saved rollout state belongs to another seed or env count")
        seeds = [training_episode_seed(self.seed, k, int(j)) for k, j in enumerate(episode)]
        obs = self.vec.replay(seeds, actions)
        saved = np.asarray(d["obs"], dtype=np.float32)
        if not np.array_equal(obs, saved):
            worst = float(np.abs(obs - saved).max())
            warnings.warn(
                f"{self.vec.env_id} did not replay its episodes exactly (max observation "
                f"difference {worst:.3g}): the resumed run goes on from the replayed states and "
                "will not be bit-identical to an uninterrupted one",
                RuntimeWarning,
                stacklevel=2,
            )
        self.episode = episode
        self.actions = [list(x) for x in actions]
        self.obs = obs
