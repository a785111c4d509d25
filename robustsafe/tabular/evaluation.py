"""Exact policy evaluation, natural and under an observational adversary (Sections 3.2 and 4.1).

An adversary is either deterministic, ``nu[s] = s~`` (an integer array of shape (S,)), or
stochastic, ``nu[s, s~] = nu(s~|s)`` (a float array of shape (S, S)). The corrupted policy
pi o nu acts on the observed state while the true state moves on:
(pi o nu)(a|s) = sum_s~ nu(s~|s) pi(a|s~), which is again a Markov policy on true states.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .cmdp import CMDP, FloatArray, _signal_array, check_distributions, validate_policy

IntArray = NDArray[np.int64]
Adversary = ArrayLike  # int (S,) deterministic or float (S, S) stochastic


@dataclass(frozen=True, eq=False)
class Values:
    """V_r and V_c per state, and the returns V_f(mu_0) = sum_s mu_0(s) V_f(s)."""

    reward: FloatArray
    cost: FloatArray
    reward_return: float
    cost_return: float


def validate_adversary(
    adversary: Adversary, n_states: int, sets: ArrayLike | None = None
) -> IntArray | FloatArray:
    """Check an adversary (deterministic or stochastic) and that it stays inside B(s)."""
    nu = np.asarray(adversary)
    if nu.ndim == 1:
        if not np.issubdtype(nu.dtype, np.integer):
            raise ValueError(
                "a deterministic adversary must be an integer array nu[s] = s~ of shape (S,); "
                f"got dtype {nu.dtype}"
            )
        if nu.shape != (n_states,) or np.any((nu < 0) | (nu >= n_states)):
            raise ValueError(
                f"a deterministic adversary must have shape ({n_states},) with entries in "
                f"[0, {n_states}); got {nu.tolist()}"
            )
        nu = nu.astype(np.int64)
        if sets is not None:
            b = np.asarray(sets, dtype=bool)
            inside = b[np.arange(n_states), nu]
            if not np.all(inside):
                s = int(np.argmin(inside))
                raise ValueError(f"adversary maps state {s} to {int(nu[s])}, outside B({s})")
        return nu
    if nu.ndim == 2:
        if nu.shape != (n_states, n_states):
            raise ValueError(
                f"a stochastic adversary must have shape (S, S) = ({n_states}, {n_states}) "
                f"with nu[s, s~] = nu(s~|s); got shape {nu.shape}"
            )
        nu = np.asarray(nu, dtype=np.float64)
        check_distributions("adversary", nu, ("s",))
        if sets is not None:
            b = np.asarray(sets, dtype=bool)
            outside = (nu > 0) & ~b
            if np.any(outside):
                s, t = (int(i) for i in np.argwhere(outside)[0])
                raise ValueError(f"adversary puts mass {nu[s, t]:g} on {t}, outside B({s})")
        return nu
    raise ValueError(
        "an adversary must be an integer array of shape (S,) (deterministic) or a float "
        f"array of shape (S, S) (stochastic); got shape {nu.shape}"
    )


def corrupted_policy(policy: ArrayLike, adversary: Adversary | None) -> FloatArray:
    """pi o nu: (pi o nu)(a|s) = pi(a|nu(s)), or sum_s~ nu(s~|s) pi(a|s~) if nu is stochastic."""
    pi = np.asarray(policy, dtype=np.float64)
    if adversary is None:
        return pi
    nu = validate_adversary(adversary, pi.shape[0])
    if nu.ndim == 1:
        return pi[nu]
    return nu @ pi


def state_transition_matrix(cmdp: CMDP, policy: FloatArray) -> FloatArray:
    """P_pi[s, s'] = sum_a pi(a|s) P(s'|s,a)."""
    return np.einsum("ij,ijk->ik", policy, cmdp.transitions)


def evaluate_policy(cmdp: CMDP, policy: ArrayLike) -> Values:
    """Exact V_r^pi and V_c^pi: the solution of V = R_pi + gamma P_pi V (a linear system)."""
    pi = validate_policy(policy, cmdp.n_states, cmdp.n_actions)
    a = np.eye(cmdp.n_states) - cmdp.gamma * state_transition_matrix(cmdp, pi)
    rhs = np.stack(
        [(pi * cmdp.expected("reward")).sum(axis=1), (pi * cmdp.expected("cost")).sum(axis=1)],
        axis=1,
    )
    v = np.linalg.solve(a, rhs)
    return Values(
        reward=v[:, 0],
        cost=v[:, 1],
        reward_return=float(cmdp.initial @ v[:, 0]),
        cost_return=float(cmdp.initial @ v[:, 1]),
    )


def evaluate_attacked(
    cmdp: CMDP, policy: ArrayLike, adversary: Adversary | None, sets: ArrayLike | None = None
) -> Values:
    """Exact V_f^{pi o nu}: the fixed point of the Bellman operator of Theorem 4.

    Works for deterministic and for stochastic adversaries; ``sets`` (optional) checks that
    nu stays inside B(s).
    """
    pi = validate_policy(policy, cmdp.n_states, cmdp.n_actions)
    if adversary is not None:
        validate_adversary(adversary, cmdp.n_states, sets)
    return evaluate_policy(cmdp, corrupted_policy(pi, adversary))


def attacked_bellman_operator(
    cmdp: CMDP,
    policy: ArrayLike,
    adversary: Adversary | None,
    values: ArrayLike,
    signal: str = "cost",
) -> FloatArray:
    """(T_pi V)(s) = sum_a pi(a|nu(s)) sum_s' p(s'|s,a) [f(s,a,s') + gamma V(s')] (Theorem 4)."""
    pi_nu = corrupted_policy(policy, adversary)
    f = _signal_array(cmdp, signal)
    v = np.asarray(values, dtype=np.float64)
    target = f + cmdp.gamma * v[None, None, :]
    return np.einsum("ij,ijk,ijk->i", pi_nu, cmdp.transitions, target)


def contraction_ratio(
    cmdp: CMDP,
    policy: ArrayLike,
    adversary: Adversary | None,
    u: ArrayLike,
    v: ArrayLike,
    signal: str = "cost",
) -> float:
    """||T_pi U - T_pi V||_inf / ||U - V||_inf; Theorem 4 says it is at most gamma."""
    u = np.asarray(u, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    den = float(np.max(np.abs(u - v)))
    if den == 0.0:
        raise ValueError("U and V must differ to measure a contraction ratio")
    tu = attacked_bellman_operator(cmdp, policy, adversary, u, signal)
    tv = attacked_bellman_operator(cmdp, policy, adversary, v, signal)
    return float(np.max(np.abs(tu - tv))) / den


def max_contraction_ratio(
    cmdp: CMDP,
    policy: ArrayLike,
    adversary: Adversary | None,
    rng: np.random.Generator,
    n_pairs: int = 64,
) -> float:
    """Largest observed contraction ratio over random pairs (U, V), both signals.

    The pairs mix random vectors of several scales with constant shifts V = U + c (for which
    the ratio is exactly gamma, so the check is tight). Theorem 4: the result is <= gamma.
    """
    n = cmdp.n_states
    worst = 0.0
    for k in range(n_pairs):
        scale = 10.0 ** rng.uniform(-3, 3)
        u = scale * rng.normal(size=n)
        if k % 4 == 0:
            v = u + scale * rng.choice([-1.0, 1.0]) * rng.uniform(0.5, 2.0)
        else:
            v = scale * rng.normal(size=n)
        # (differences far below the rewards' size would only measure floating-point rounding)
        for signal in ("reward", "cost"):
            worst = max(worst, contraction_ratio(cmdp, policy, adversary, u, v, signal))
    return worst


def one_step_attacked_cost(
    cmdp: CMDP, policy: ArrayLike, adversary: Adversary | None
) -> FloatArray:
    """V~_c^{pi,nu}(s) = E_{a~pi(.|nu(s)), s'~p(.|s,a)}[c(s,a,s') + gamma V_c^pi(s')] (Theorem 2).

    Only the current state's observation is perturbed; the continuation is the natural V_c^pi.
    """
    pi = validate_policy(policy, cmdp.n_states, cmdp.n_actions)
    v_c = evaluate_policy(cmdp, pi).cost
    return attacked_bellman_operator(cmdp, pi, adversary, v_c, "cost")


def discounted_state_occupancy(cmdp: CMDP, policy: ArrayLike) -> FloatArray:
    """d(s) = sum_t gamma^t Pr(s_t = s) from mu_0 (sums to 1 / (1 - gamma))."""
    pi = validate_policy(policy, cmdp.n_states, cmdp.n_actions)
    a = np.eye(cmdp.n_states) - cmdp.gamma * state_transition_matrix(cmdp, pi)
    return np.linalg.solve(a.T, cmdp.initial)


def sample_trajectory(
    cmdp: CMDP,
    policy: ArrayLike,
    adversary: Adversary | None,
    rng: np.random.Generator,
    horizon: int,
    start: int | None = None,
) -> tuple[IntArray, IntArray]:
    """Roll out pi o nu for ``horizon`` steps: returns (true states, observed states).

    The adversary picks the observation s~_t ~ nu(.|s_t), the agent draws a_t ~ pi(.|s~_t)
    and the true state moves on, s_{t+1} ~ P(.|s_t, a_t). ``start``: the first true state, an
    index in [0, n_states) (None: drawn from the initial distribution); ValueError otherwise.
    """
    pi = validate_policy(policy, cmdp.n_states, cmdp.n_actions)
    n = cmdp.n_states
    for name, value, top in (("start", start, n), ("horizon", horizon, None)):
        if name == "start" and value is None:
            continue
        whole = isinstance(value, int | np.integer) and not isinstance(value, bool)
        if not whole or value < 0 or (top is not None and value >= top):
            span = f"a state index in [0, {n})" if top else "an integer >= 0"
            raise ValueError(f"{name} must be {span}, got {value!r}")
    if adversary is None:
        nu = np.eye(n)
    else:
        nu_raw = validate_adversary(adversary, n)
        nu = np.eye(n)[nu_raw] if nu_raw.ndim == 1 else nu_raw
    s = int(rng.choice(n, p=cmdp.initial)) if start is None else int(start)
    true_states, observed = [s], []
    for _ in range(horizon):
        obs = int(rng.choice(n, p=nu[s]))
        a = int(rng.choice(cmdp.n_actions, p=pi[obs]))
        s = int(rng.choice(n, p=cmdp.transitions[s, a]))
        observed.append(obs)
        true_states.append(s)
    return np.array(true_states, dtype=np.int64), np.array(observed, dtype=np.int64)
