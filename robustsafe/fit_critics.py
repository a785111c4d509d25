"""Fit the attackers' Q critics for an agent that has none (trained elsewhere, or too little).

The agent's stochastic policy collects its own on-policy data; Q_r and Q_c are then fitted by
the same TD learning that training runs use (``robustsafe.critics``), from freshly initialised
networks.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch

from robustsafe.agent import Agent
from robustsafe.critics import CriticConfig, CriticTrainer, QCritics
from robustsafe.envs import VectorEnv
from robustsafe.evaluate import check_compatible
from robustsafe.rollout import Collector


def fit_critics(
    agent: Agent,
    vec: VectorEnv,
    steps: int = 200_000,
    updates_per_1000_steps: int = 50,
    seed: int = 0,
    cfg: CriticConfig | None = None,
    on_epoch: callable | None = None,
) -> list[dict[str, float]]:
    """Replace ``agent.critics`` with critics fitted to its policy; returns per-epoch losses."""
    check_compatible(agent, vec)
    if steps < vec.num_envs:
        raise ValueError(f"steps must be >= the number of envs ({vec.num_envs}), got {steps}")
    cfg = cfg or agent.config.critics
    episode_len = vec.max_episode_steps or 200
    rollout_len = episode_len
    epochs = max(1, int(np.ceil(steps / (rollout_len * vec.num_envs))))
    updates = max(1, int(updates_per_1000_steps * rollout_len * vec.num_envs / 1000))
    cfg = replace(cfg, updates_per_epoch=updates)
    torch.manual_seed(seed)
    critics = QCritics(agent.obs_dim, agent.act_dim, agent.config.ppo.hidden, agent.obs_normalizer)
    trainer = CriticTrainer(critics, agent.obs_dim, agent.act_dim, cfg)
    generator = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    collector = Collector(vec, seed)
    history = []
    for epoch in range(1, epochs + 1):
        res = collector.collect(agent.actor, rollout_len, generator)
        ro = res.rollout
        n = ro.size
        trainer.add_rollout(ro)
        with torch.enable_grad():
            critics.train()
            metrics = trainer.update(agent.actor, rng)
        metrics["env_steps"] = float(epoch * n)
        history.append(metrics)
        if on_epoch is not None:
            on_epoch(metrics)
    agent.critics = critics.eval().requires_grad_(False)
    return history
