"""Evaluation: deterministic (mean) actions, paired episodes, optionally under attack.

Paired episodes: episode i always starts from the reset seed ``episode_seed(seed, i)``, so
episode i of every attacker starts from the same initial state, whatever the number of
environments or workers (environment k plays episodes k, k + N, k + 2N, ...).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from robustsafe.agent import Agent
from robustsafe.envs import VectorEnv, episode_seed

# (agent, observations, generator) -> the observations the agent sees
ObservationAttack = Callable[[Agent, torch.Tensor, torch.Generator], torch.Tensor]


@dataclass
class EpisodeRecord:
    reward: float
    cost: float
    length: int


@dataclass
class EvalResult:
    attack: str
    epsilon: float
    episodes: list[EpisodeRecord] = field(default_factory=list)

    def summary(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for key in ("reward", "cost", "length"):
            vals = np.array([getattr(e, key) for e in self.episodes], dtype=np.float64)
            out[f"{key}_mean"] = float(vals.mean()) if len(vals) else math.nan
            out[f"{key}_std"] = float(vals.std()) if len(vals) else math.nan
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "attack": self.attack,
            "epsilon": self.epsilon,
            **self.summary(),
            "episodes": [e.__dict__ for e in self.episodes],
        }


def check_compatible(agent: Agent, vec: VectorEnv) -> None:
    if (agent.obs_dim, agent.act_dim) != (vec.obs_dim, vec.act_dim):
        raise ValueError(
            f"the agent was trained on {agent.config.env_id} (observation size {agent.obs_dim}, "
            f"action size {agent.act_dim}); {vec.env_id} has observation size {vec.obs_dim} and "
            f"action size {vec.act_dim}"
        )


@torch.no_grad()
def run_episodes(
    agent: Agent,
    vec: VectorEnv,
    episodes: int,
    seed: int,
    attack: ObservationAttack | None = None,
    generator: torch.Generator | None = None,
    on_step: Callable[[int], None] | None = None,
) -> list[EpisodeRecord]:
    """Play ``episodes`` paired episodes with mean actions; returns them in episode order."""
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    check_compatible(agent, vec)
    n = vec.num_envs
    current = np.arange(n)  # the episode number each env is playing
    records: dict[int, EpisodeRecord] = {}
    obs = vec.reset([episode_seed(seed, int(i)) for i in current])
    upcoming = np.array([episode_seed(seed, int(j)) for j in current + n], dtype=np.uint64)
    while len(records) < episodes:
        obs_t = torch.from_numpy(obs)
        if attack is not None:
            with torch.enable_grad():
                obs_t = attack(agent, obs_t, generator)
        act = agent.actor.mean_action(obs_t)
        step = vec.step(act.numpy(), reset_seeds=upcoming)
        for ep in step.episodes:
            k = ep.env_index
            if current[k] < episodes:
                records[int(current[k])] = EpisodeRecord(ep.ret, ep.cost, ep.length)
            current[k] += n
            upcoming[k] = episode_seed(seed, int(current[k] + n))
        if on_step is not None:
            on_step(n)
        obs = step.obs
    return [records[i] for i in range(episodes)]


def evaluate_agent(
    agent: Agent,
    vec: VectorEnv,
    episodes: int = 50,
    seed: int = 0,
    attacks: Sequence[tuple[str, float, ObservationAttack | None]] = (("none", 0.0, None),),
    attack_seed: int = 0,
    on_step: Callable[[int], None] | None = None,
) -> list[EvalResult]:
    """Paired evaluation of ``agent`` under each (name, epsilon, attack) in ``attacks``."""
    results = []
    for name, eps, attack in attacks:
        generator = torch.Generator().manual_seed(attack_seed)
        recs = run_episodes(agent, vec, episodes, seed, attack, generator, on_step)
        results.append(EvalResult(name, eps, recs))
    return results


def write_json_atomic(path: Path, payload: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(payload, indent=2))
    os.replace(tmp, path)


def format_table(results: Sequence[EvalResult]) -> str:
    head = f"{'attack':<10} {'epsilon':>8} {'reward':>18} {'cost':>16} {'length':>8} {'n':>4}"
    lines = [head, "-" * len(head)]
    for r in results:
        s = r.summary()
        lines.append(
            f"{r.attack:<10} {r.epsilon:>8.4g} "
            f"{s['reward_mean']:>9.1f} ± {s['reward_std']:<6.1f} "
            f"{s['cost_mean']:>7.2f} ± {s['cost_std']:<6.2f} "
            f"{s['length_mean']:>8.1f} {len(r.episodes):>4}"
        )
    return "\n".join(lines)
