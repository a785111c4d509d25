"""Perturbation sets B(s) over a finite state space and the policy's Lipschitz constant.

The paper's perturbation set is the l_p ball B^eps_p(s) = {s~ : ||s~ - s||_p <= eps} (Section 3.2).
For finite states we take any state metric d(s, s') (for instance the l_p distance between the
coordinates of grid cells) and B(s) = {s~ : d(s, s~) <= eps}; it always contains s itself.

Theorems 2 and 3 assume TV[pi(.|s') || pi(.|s)] <= L d(s', s); for a finite policy the smallest
such L is L = max_{s' != s} TV[pi(.|s'), pi(.|s)] / d(s, s') (global), or the same maximum with
s fixed (locally at s).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .cmdp import FloatArray, _float_array

BoolArray = NDArray[np.bool_]

#: Slack on d(s, s~) <= eps so that eps = 1 catches neighbours at distance 1 + 1e-16.
RADIUS_RTOL = 1e-9


def metric_from_coordinates(coordinates: ArrayLike, p: float = 2.0) -> FloatArray:
    """d(s, s') = ||x_s - x_s'||_p for state coordinates ``x`` of shape (S, k); p >= 1 or inf."""
    x = _float_array("coordinates", coordinates)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ValueError(f"coordinates must have shape (S, k); got shape {x.shape}")
    if not (p >= 1.0):
        raise ValueError(f"p must be >= 1 (or inf) for an l_p distance; got {p}")
    diff = np.abs(x[:, None, :] - x[None, :, :])
    if np.isinf(p):
        return diff.max(axis=-1)
    return (diff**p).sum(axis=-1) ** (1.0 / p)


def validate_metric(metric: ArrayLike) -> FloatArray:
    """Check a state metric: shape (S, S), symmetric, zero diagonal, positive off the diagonal."""
    d = _float_array("metric", metric)
    if d.ndim != 2 or d.shape[0] != d.shape[1]:
        raise ValueError(f"metric must have shape (S, S); got shape {d.shape}")
    if np.any(np.diag(d) != 0):
        raise ValueError("metric must have a zero diagonal: d(s, s) = 0")
    off = ~np.eye(d.shape[0], dtype=bool)
    if np.any(d[off] <= 0):
        i, j = (int(k) for k in np.argwhere(off & (d <= 0))[0])
        raise ValueError(
            f"metric must be > 0 between distinct states; d({i}, {j}) = {d[i, j]:g} "
            "(two states at distance 0 make the Lipschitz constant infinite)"
        )
    if not np.allclose(d, d.T, rtol=1e-12, atol=0.0):
        raise ValueError("metric must be symmetric: d(s, s') = d(s', s)")
    return d


def perturbation_sets(metric: ArrayLike, eps: float) -> BoolArray:
    """B(s) = {s~ : d(s, s~) <= eps} as a boolean matrix ``B[s, s~]`` (Section 3.2)."""
    d = validate_metric(metric)
    if not (eps >= 0 and np.isfinite(eps)):
        raise ValueError(f"eps must be a finite number >= 0; got {eps}")
    return d <= eps * (1.0 + RADIUS_RTOL)


def validate_sets(sets: ArrayLike, n_states: int) -> BoolArray:
    """Check perturbation sets: a boolean (S, S) matrix with every B(s) non-empty."""
    b = np.asarray(sets)
    if b.shape != (n_states, n_states):
        raise ValueError(
            f"perturbation sets must be a boolean matrix of shape (S, S) = ({n_states}, "
            f"{n_states}) with B[s, s~] = (s~ in B(s)); got shape {b.shape}"
        )
    if b.dtype != np.bool_:
        if not np.all((b == 0) | (b == 1)):
            raise ValueError("perturbation sets must be boolean (or 0/1) entries")
        b = b.astype(bool)
    if not np.all(b.any(axis=1)):
        s = int(np.argmin(b.any(axis=1)))
        raise ValueError(f"perturbation set B({s}) is empty; every B(s) needs a state")
    return b


def total_variation(p: ArrayLike, q: ArrayLike) -> FloatArray:
    """TV[p || q] = 1/2 sum_a |p(a) - q(a)| along the last axis."""
    return 0.5 * np.abs(np.asarray(p, dtype=float) - np.asarray(q, dtype=float)).sum(axis=-1)


def pairwise_total_variation(policy: ArrayLike) -> FloatArray:
    """TV[pi(.|s') || pi(.|s)] for all pairs, shape (S, S)."""
    pi = np.asarray(policy, dtype=float)
    return total_variation(pi[:, None, :], pi[None, :, :])


def lipschitz_constants(
    policy: ArrayLike, metric: ArrayLike, radius: float | None = None
) -> FloatArray:
    """Local Lipschitz constants L(s) = max_{s' != s, d(s,s') <= radius} TV / d(s, s').

    With ``radius=None`` all s' != s count (the paper's "locally L-Lipschitz at s" of Theorem 2);
    with a radius only the states the adversary can reach matter, which is all the proofs of
    Theorems 2 and 3 use. States with no other state in range get L(s) = 0.
    """
    d = validate_metric(metric)
    tv = pairwise_total_variation(policy)
    if tv.shape != d.shape:
        raise ValueError(f"policy has {tv.shape[0]} states but metric has {d.shape[0]}")
    mask = ~np.eye(d.shape[0], dtype=bool)
    if radius is not None:
        if not (np.isfinite(radius) and radius >= 0):
            raise ValueError(f"radius must be a finite number >= 0, got {radius}")
        mask &= d <= radius * (1.0 + RADIUS_RTOL)
    ratio = np.where(mask, tv / np.where(mask, d, 1.0), 0.0)
    return ratio.max(axis=1)


def lipschitz_constant(policy: ArrayLike, metric: ArrayLike, radius: float | None = None) -> float:
    """Global L = max over pairs s != s' of TV[pi(.|s') || pi(.|s)] / d(s, s') (Theorem 3)."""
    return float(lipschitz_constants(policy, metric, radius).max())
