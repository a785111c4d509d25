"""Random small CMDPs and policies, for property-based checks and experiments."""

from __future__ import annotations

import numpy as np

from .cmdp import CMDP, FloatArray


def _dirichlet_rows(
    rng: np.random.Generator, shape: tuple[int, ...], n: int, sparsity: float
) -> FloatArray:
    w = rng.gamma(1.0, size=(*shape, n))
    if sparsity > 0:
        w = w * (rng.random(size=w.shape) >= sparsity)
        # keep at least one successor per row
        empty = w.sum(axis=-1) == 0
        idx = rng.integers(n, size=shape)
        w[empty, idx[empty]] = 1.0
    return w / w.sum(axis=-1, keepdims=True)


def random_cmdp(
    rng: np.random.Generator,
    n_states: int,
    n_actions: int,
    *,
    gamma: float = 0.9,
    kappa: float = 0.0,
    sparsity: float = 0.0,
    cost_density: float = 0.5,
    cost_max: float = 1.0,
    full_support_start: bool = True,
) -> CMDP:
    """A random CMDP: Dirichlet transitions (a ``sparsity`` fraction of successors removed),
    rewards uniform in [0, 1], costs uniform in [0, cost_max] on a ``cost_density`` fraction of
    (s, a, s'), mu_0 Dirichlet (or a single random start state)."""
    p = _dirichlet_rows(rng, (n_states, n_actions), n_states, sparsity)
    r = rng.random(size=p.shape)
    c = cost_max * rng.random(size=p.shape) * (rng.random(size=p.shape) < cost_density)
    if full_support_start:
        mu0 = _dirichlet_rows(rng, (), n_states, 0.0)
    else:
        mu0 = np.zeros(n_states)
        mu0[rng.integers(n_states)] = 1.0
    return CMDP(p, r, c, gamma, mu0, kappa, cost_max)


def random_policy(
    rng: np.random.Generator, n_states: int, n_actions: int, concentration: float = 1.0
) -> FloatArray:
    """pi(.|s) ~ Dirichlet(concentration) independently per state."""
    w = rng.gamma(concentration, size=(n_states, n_actions))
    empty = w.sum(axis=1) == 0
    w[empty] = 1.0
    return w / w.sum(axis=1, keepdims=True)


def smooth_policy(
    rng: np.random.Generator, coordinates: FloatArray, n_actions: int, temperature: float
) -> FloatArray:
    """pi(a|s) = softmax(theta_a . x_s / temperature): Lipschitz in the state coordinates."""
    x = np.asarray(coordinates, dtype=float)
    theta = rng.normal(size=(x.shape[1], n_actions))
    logits = x @ theta / temperature
    logits -= logits.max(axis=1, keepdims=True)
    w = np.exp(logits)
    return w / w.sum(axis=1, keepdims=True)
