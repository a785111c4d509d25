"""The cost bounds of Theorems 2 (one step) and 3 (episodic), beside the exact attacked values.

p_s is the largest probability of entering an unsafe state from s (Section 3.4):
S_c = {s' : c(s,a,s') > 0 for some (s,a)} ("the set of unsafe states that have non-zero cost")
and p_s = max_a sum_{s' in S_c} p(s'|s,a). With C_m the maximum cost, L a Lipschitz constant of
pi in total variation over the state metric and eps the radius of B(s):

    Theorem 2:  V~_c^{pi,nu}(s) - V_c^pi(s) <= 2 L eps (p_s C_m + gamma C_m / (1 - gamma))
    Theorem 3:  V_c^{pi o nu}(mu_0) <= kappa + 2 L eps C_m (1/(1-gamma) + 4 gamma L eps/(1-gamma)^2)
                                              * (max_s p_s + gamma / (1 - gamma))
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .adversary import mc_adversary
from .cmdp import CMDP, FloatArray, validate_policy
from .evaluation import attacked_bellman_operator, evaluate_policy
from .perturbation import lipschitz_constant, lipschitz_constants, perturbation_sets


def unsafe_states(cmdp: CMDP) -> np.ndarray:
    """S_c: states s' with c(s,a,s') > 0 for some (s, a)."""
    return (cmdp.cost > 0).any(axis=(0, 1))


def unsafe_entry_probability(cmdp: CMDP) -> FloatArray:
    """p_s = max_a sum_{s' in S_c} p(s'|s,a), shape (S,)."""
    return cmdp.transitions[:, :, unsafe_states(cmdp)].sum(axis=2).max(axis=1)


def _check_nonnegative(**values: float | ArrayLike) -> None:
    """ValueError naming the first argument that is not a finite number >= 0 (everywhere)."""
    for name, value in values.items():
        v = np.asarray(value, dtype=float)
        if not (np.all(np.isfinite(v)) and np.all(v >= 0)):
            raise ValueError(f"{name} must be a finite number >= 0, got {value}")


def one_step_bound(cmdp: CMDP, lipschitz: float | ArrayLike, eps: float) -> FloatArray:
    """Right-hand side of Theorem 2 (Eq. 1-step-bound) for every state, shape (S,).

    ``lipschitz`` is a global L or per-state local constants L(s).
    """
    g, c_m = cmdp.gamma, cmdp.c_m
    lip = np.broadcast_to(np.asarray(lipschitz, dtype=float), (cmdp.n_states,))
    _check_nonnegative(eps=eps, lipschitz=lip)
    return 2.0 * lip * eps * (unsafe_entry_probability(cmdp) * c_m + g * c_m / (1.0 - g))


def episodic_bound(
    cmdp: CMDP, lipschitz: float, eps: float, baseline: float | None = None
) -> float:
    """Right-hand side of Theorem 3 (Eq. multi-step-bound).

    ``baseline`` replaces kappa by V_c^pi(mu_0); the proof bounds the increase over V_c^pi(mu_0)
    and then uses V_c^pi(mu_0) <= kappa for a feasible pi, so the baseline form holds for any pi.
    """
    g, c_m = cmdp.gamma, cmdp.c_m
    _check_nonnegative(eps=eps, lipschitz=lipschitz)
    if baseline is not None:
        _check_nonnegative(baseline=baseline)
    base = cmdp.kappa if baseline is None else baseline
    p_max = float(unsafe_entry_probability(cmdp).max())
    horizon = 1.0 / (1.0 - g) + 4.0 * g * lipschitz * eps / (1.0 - g) ** 2
    return base + 2.0 * lipschitz * eps * c_m * horizon * (p_max + g / (1.0 - g))


def worst_one_step_cost(cmdp: CMDP, policy: ArrayLike, sets: ArrayLike) -> FloatArray:
    """max_{nu(s) in B(s)} V~_c^{pi,nu}(s): the exact worst one-step attacked cost (Theorem 2).

    V~ at s depends only on nu(s), so the maximum over adversaries is a maximum per state.
    """
    pi = validate_policy(policy, cmdp.n_states, cmdp.n_actions)
    b = np.asarray(sets, dtype=bool)
    v_c = evaluate_policy(cmdp, pi).cost
    n = cmdp.n_states
    best = np.full(n, -np.inf)
    for t in range(n):  # observe state t everywhere t is admissible
        v = attacked_bellman_operator(cmdp, pi, np.full(n, t), v_c, "cost")
        best = np.where(b[:, t], np.maximum(best, v), best)
    return best


@dataclass(frozen=True, eq=False)
class BoundReport:
    """Theorems 2 and 3 for one policy and one radius, next to the exact attacked values.

    Lipschitz constants count only pairs within distance eps (all the proofs use), so they are
    no larger than the paper's global constant ``lipschitz_global``; both bounds are reported.
    """

    eps: float
    lipschitz_global: float  # max over all pairs s != s' (the paper's global L)
    lipschitz_in_ball: float  # max over pairs with d(s, s') <= eps
    p_max: float  # max_s p_s
    cost_max: float  # C_m
    natural_cost: float  # V_c^pi(mu_0)
    one_step_exact: FloatArray  # max_nu V~_c^{pi,nu}(s) - V_c^pi(s)
    one_step_bound: FloatArray  # Theorem 2 with the local L(s) within the ball
    mc_cost: float  # V_c^{pi o nu_MC}(mu_0): the exact worst episodic cost (Theorem 1)
    episodic_bound_paper: float  # Theorem 3 as stated: kappa, global L
    episodic_bound_ball: float  # Theorem 3 with L within the ball and kappa


def bound_report(cmdp: CMDP, policy: ArrayLike, metric: ArrayLike, eps: float) -> BoundReport:
    """Compute Theorem 2 and 3 bounds and the exact quantities they bound."""
    pi = validate_policy(policy, cmdp.n_states, cmdp.n_actions)
    sets = perturbation_sets(metric, eps)
    natural = evaluate_policy(cmdp, pi)
    local = lipschitz_constants(pi, metric, radius=eps)
    l_global = lipschitz_constant(pi, metric)
    l_ball = float(local.max())
    return BoundReport(
        eps=float(eps),
        lipschitz_global=l_global,
        lipschitz_in_ball=l_ball,
        p_max=float(unsafe_entry_probability(cmdp).max()),
        cost_max=cmdp.c_m,
        natural_cost=natural.cost_return,
        one_step_exact=worst_one_step_cost(cmdp, pi, sets) - natural.cost,
        one_step_bound=one_step_bound(cmdp, local, eps),
        mc_cost=mc_adversary(cmdp, pi, sets).values.cost_return,
        episodic_bound_paper=episodic_bound(cmdp, l_global, eps),
        episodic_bound_ball=episodic_bound(cmdp, l_ball, eps),
    )
