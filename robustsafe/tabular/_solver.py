"""Exact solution of a finite discounted MDP over deterministic stationary choices.

Shared by the unconstrained optimum (choices = actions) and by the adversary MDPs of
Appendix A.3 (choices = observed states s~ in B(s)). Value iteration with the Bellman
optimality operator (a gamma-contraction, Lemma 3 of Appendix A.6 for the adversary case) gives
a near-optimal greedy choice; policy iteration then certifies it: it stops only when no choice
improves on the exact value of the current one, which is the optimality condition.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def evaluate_choices(
    transitions: FloatArray, rewards: FloatArray, gamma: float, choice: IntArray
) -> FloatArray:
    """Exact value of the stationary choice: solve (I - gamma P_choice) V = R_choice."""
    n = transitions.shape[0]
    rows = np.arange(n)
    p = transitions[rows, choice, :]
    r = rewards[rows, choice]
    return np.linalg.solve(np.eye(n) - gamma * p, r)


def _greedy(q: FloatArray, preferred: IntArray | None, tie_tol: float) -> IntArray:
    best = q.max(axis=1, keepdims=True)
    near = q >= best - tie_tol
    choice = near.argmax(axis=1)
    if preferred is not None:
        rows = np.arange(q.shape[0])
        choice = np.where(near[rows, preferred], preferred, choice)
    return choice.astype(np.int64)


def solve_mdp(
    transitions: FloatArray,
    rewards: FloatArray,
    gamma: float,
    allowed: NDArray[np.bool_] | None = None,
    *,
    maximize: bool = True,
    preferred: IntArray | None = None,
    tol: float = 1e-10,
    max_iter: int = 200_000,
) -> tuple[IntArray, FloatArray, int]:
    """Optimal deterministic stationary choice of an MDP with ``K`` choices per state.

    ``transitions`` has shape (S, K, S), ``rewards`` (S, K) (expected one-step rewards);
    ``allowed[s, k]`` marks the admissible choices (at least one per state). Among (near-)tied
    optimal choices ``preferred[s]`` is kept when admissible, otherwise the lowest index.
    Returns (choice, exact values, number of value-iteration sweeps).
    """
    n_s, n_k, _ = transitions.shape
    if allowed is None:
        allowed = np.ones((n_s, n_k), dtype=bool)
    if not np.all(allowed.any(axis=1)):
        raise ValueError("every state needs at least one admissible choice")
    sign = 1.0 if maximize else -1.0
    r = sign * rewards
    scale = max(1.0, float(np.abs(np.where(allowed, r, 0.0)).max())) / (1.0 - gamma)

    def q_of(v: FloatArray) -> FloatArray:
        return np.where(allowed, r + gamma * (transitions @ v), -np.inf)

    # Value iteration: V_{k+1} = max_k [R + gamma P V_k], a gamma-contraction in sup norm.
    v = np.zeros(n_s)
    sweeps = 0
    for sweeps in range(1, max_iter + 1):  # noqa: B007 - the count is returned
        v_new = q_of(v).max(axis=1)
        done = np.max(np.abs(v_new - v)) <= tol * scale
        v = v_new
        if done:
            break
    choice = _greedy(q_of(v), preferred, tie_tol=1e-8 * scale)

    # Policy iteration polish: exact evaluation, switch only on a strict improvement.
    strict = 1e-11 * scale
    rows = np.arange(n_s)
    for _ in range(10 * n_s * n_k + 10):
        v = evaluate_choices(transitions, r, gamma, choice)
        q = q_of(v)
        best = q.argmax(axis=1)
        improve = q[rows, best] > q[rows, choice] + strict
        if not np.any(improve):
            break
        choice = np.where(improve, best, choice).astype(np.int64)
    return choice, sign * v, sweeps
