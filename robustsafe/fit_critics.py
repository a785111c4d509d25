"""Fit the attackers' Q critics for an agent that has none (trained elsewhere, or too little).

The agent's stochastic policy collects its own on-policy data; Q_r and Q_c are then fitted by
the same TD learning that training runs use (``robustsafe.critics``), from freshly initialised
networks.

A foreign policy (``fit_policy_critics``; any ``robustsafe.policy.Policy``) is deterministic as
the attacks see it, and critics fitted on its deterministic actions alone would never see
another action at a state, so their action gradients (what MC and MR follow) would mean
nothing. It explores with Gaussian noise around its deterministic action: data are collected
with ``a = mu(s) + std * N(0, 1)`` (the environment clips), and the TD target's next action is
drawn the same way. ``std`` is ``exploration_std`` if given, else the policy's own
``action_std`` (``TorchPolicy(..., action_std=)``, SB3 PPO's exp(log_std)), else
``DEFAULT_EXPLORATION_STD`` (0.3 action units).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from robustsafe.agent import Agent
from robustsafe.config import CriticConfig
from robustsafe.critics import ATTACKER_COST_SCALE, CriticTrainer, QCritics
from robustsafe.envs import VectorEnv
from robustsafe.evaluate import check_compatible
from robustsafe.policy import DEFAULT_EXPLORATION_STD, policy_dtype
from robustsafe.rollout import Collector
from robustsafe.runstate import atomic_torch_save, load_tagged


def fit_critics(
    agent: Agent,
    vec: VectorEnv,
    steps: int = 200_000,
    updates_per_1000_steps: int = 50,
    seed: int = 0,
    cfg: CriticConfig | None = None,
    on_epoch: Callable[[dict[str, float]], None] | None = None,
) -> list[dict[str, float]]:
    """Replace ``agent.critics`` with critics fitted to its policy; returns per-epoch losses."""
    check_compatible(agent, vec)
    critics, history = _fit(
        agent.actor,
        agent.obs_dim,
        agent.act_dim,
        agent.config.ppo.hidden,
        agent.obs_normalizer,
        cfg or agent.config.critics,
        vec,
        steps,
        updates_per_1000_steps,
        seed,
        on_epoch,
    )
    agent.critics = critics
    return history


def _fit(
    actor,
    obs_dim: int,
    act_dim: int,
    hidden,
    normalizer,
    cfg: CriticConfig,
    vec: VectorEnv,
    steps: int,
    updates_per_1000_steps: int,
    seed: int,
    on_epoch,
) -> tuple[QCritics, list[dict[str, float]]]:
    if steps < vec.num_envs:
        raise ValueError(f"steps must be >= the number of envs ({vec.num_envs}), got {steps}")
    episode_len = vec.max_episode_steps or 200
    rollout_len = episode_len
    epochs = max(1, int(np.ceil(steps / (rollout_len * vec.num_envs))))
    updates = max(1, int(updates_per_1000_steps * rollout_len * vec.num_envs / 1000))
    cfg = replace(cfg, updates_per_epoch=updates)
    torch.manual_seed(seed)
    critics = QCritics(obs_dim, act_dim, hidden, normalizer, cfg.cost_scale)
    trainer = CriticTrainer(critics, obs_dim, act_dim, cfg)
    generator = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    collector = Collector(vec, seed)
    history = []
    for epoch in range(1, epochs + 1):
        res = collector.collect(actor, rollout_len, generator)
        ro = res.rollout
        n = ro.size
        trainer.add_rollout(ro)
        with torch.enable_grad():
            critics.train()
            metrics = trainer.update(actor, rng)
        metrics["env_steps"] = float(epoch * n)
        history.append(metrics)
        if on_epoch is not None:
            on_epoch(metrics)
    return critics.eval().requires_grad_(False), history


class ExplorationActor(torch.nn.Module):
    """A deterministic policy plus Gaussian noise, in the shape the collector and the critic
    trainer use (``mean_action``, ``log_std``, ``distribution``)."""

    def __init__(self, policy, std: torch.Tensor) -> None:
        super().__init__()
        self.policy = policy
        self.log_std = torch.nn.Parameter(std.log(), requires_grad=False)

    def mean_action(self, obs: torch.Tensor) -> torch.Tensor:
        return self.policy.deterministic_action(obs.to(policy_dtype(self.policy) or obs.dtype))

    def distribution(self, obs: torch.Tensor) -> torch.distributions.Normal:
        mean = self.mean_action(obs)
        return torch.distributions.Normal(mean, self.log_std.exp().to(mean.dtype).expand_as(mean))


# one value for every action dimension, or one per dimension; None: see resolve_exploration_std
ExplorationStd = float | Sequence[float] | torch.Tensor | None


def resolve_exploration_std(policy, act_dim: int, std: ExplorationStd = None) -> torch.Tensor:
    """The exploration noise of ``fit_policy_critics`` (see the module docstring)."""
    if std is None:
        std = getattr(policy, "action_std", None)
    if std is None:
        std = DEFAULT_EXPLORATION_STD
    t = torch.as_tensor(std, dtype=torch.float32).detach().reshape(-1).clone()
    if t.numel() == 1:
        t = t.expand(act_dim).clone()
    if t.shape != (act_dim,) or not bool(torch.all(torch.isfinite(t) & (t > 0))):
        raise ValueError(f"exploration std must be > 0, one or {act_dim} values, got {std}")
    return t


def fit_policy_critics(
    policy,
    vec: VectorEnv | str,
    steps: int = 200_000,
    exploration_std: ExplorationStd = None,
    hidden: tuple[int, ...] = (128, 128),
    updates_per_1000_steps: int = 50,
    seed: int = 0,
    cfg: CriticConfig | None = None,
    num_envs: int = 10,
    workers: int = 0,
    on_epoch: Callable[[dict[str, float]], None] | None = None,
) -> QCritics:
    """Q_r and Q_c of a foreign policy (any ``Policy``, or what ``as_policy`` adapts).

    ``vec`` is a ``VectorEnv`` or an env id (then ``num_envs`` envs on ``workers`` processes are
    built and closed). The policy explores with Gaussian noise (module docstring). The critics
    take raw observations (no normaliser) and use the paper's critic settings unless ``cfg``.
    """
    from robustsafe.policy import as_policy, check_policy_output, policy_dtype

    policy = as_policy(policy)
    if not getattr(policy, "differentiable", True):
        raise TypeError(  # critics serve only the gradient attackers
            f"{type(policy).__name__} is a black box (not torch-differentiable): Q critics serve "
            "the attackers that follow gradients through the policy (MC, MR, AMAD), which "
            "cannot attack it; attack it with random (no critics needed), or wrap a torch "
            "module with TorchPolicy"
        )
    own = isinstance(vec, str)
    if isinstance(vec, str):
        vec = VectorEnv(vec, num_envs, seed=seed, workers=workers)
    try:
        for name, d, e in (
            ("observation", policy.obs_dim, vec.obs_dim),
            ("action", policy.act_dim, vec.act_dim),
        ):
            if d is not None and d != e:
                raise ValueError(f"the policy's {name} size is {d}; {vec.env_id}'s is {e}")
        check_policy_output(policy, vec.obs_dim, vec.act_dim, policy_dtype(policy) or torch.float64)
        std = resolve_exploration_std(policy, vec.act_dim, exploration_std)
        actor = ExplorationActor(policy, std).eval()
        critics, _ = _fit(
            actor,
            vec.obs_dim,
            vec.act_dim,
            tuple(hidden),
            None,
            cfg or CriticConfig(),
            vec,
            steps,
            updates_per_1000_steps,
            seed,
            on_epoch,
        )
    finally:
        if own:
            vec.close()
    return critics


CRITICS_FORMAT = "robustsafe-critics"
CRITICS_VERSION = 1


def save_critics(
    path, critics: QCritics, obs_dim: int, act_dim: int, env_id: str | None = None
) -> None:
    """A critics file (tensors and plain values only: loads with ``weights_only=True``);
    ``env_id``, the task they were fitted on, is recorded (``load_critics`` sets it as the
    critics' ``env_id``) so that an evaluation on another task can refuse them."""

    head = critics.q_cost.heads[0]
    hidden = [m.out_features for m in head.modules() if isinstance(m, torch.nn.Linear)]
    atomic_torch_save(
        {
            "format": CRITICS_FORMAT,
            "version": CRITICS_VERSION,
            "obs_dim": obs_dim,
            "act_dim": act_dim,
            "hidden": hidden[:-1],
            "cost_scale": float(critics.cost_scale),
            "env_id": env_id,
            "critics": critics.state_dict(),
        },
        Path(path),
    )


def load_critics(path) -> QCritics:

    path = Path(path)
    try:
        data = load_tagged(
            path,
            CRITICS_FORMAT,
            CRITICS_VERSION,
            "critics file",
            hint=" (made by fit-critics --out)",
        )
    except FileNotFoundError:
        raise FileNotFoundError(f"no critics file at {path}") from None
    try:
        shape = (int(data["obs_dim"]), int(data["act_dim"]), tuple(data["hidden"]))
        # files from before cost_scale was saved were fitted with the default, 5
        critics = QCritics(*shape, cost_scale=float(data.get("cost_scale", ATTACKER_COST_SCALE)))
        critics.load_state_dict(data["critics"])
    except (KeyError, TypeError, ValueError, RuntimeError) as err:  # edited or damaged
        reason = f"no {err}" if isinstance(err, KeyError) else " ".join(str(err).split())[:240]
        raise ValueError(f"critics file {path} is damaged or inconsistent ({reason})") from None
    env_id = data.get("env_id")  # files from before it was recorded: None
    critics.env_id = env_id if isinstance(env_id, str) else None
    return critics.eval().requires_grad_(False)
