"""Constrained and unconstrained optima, temptation (Definition 3) and the classes of Lemma 1.

The constrained optimum pi* = argmax V_r^pi(mu_0) s.t. V_c^pi(mu_0) <= kappa (Eq. 1) is the
linear program over discounted occupancy measures x(s,a) = sum_t gamma^t Pr(s_t=s, a_t=a):

    max_x  sum x(s,a) R(s,a)   s.t.  sum_a x(s',a) - gamma sum_{s,a} P(s'|s,a) x(s,a) = mu_0(s'),
                                     sum x(s,a) C(s,a) <= kappa,   x >= 0,

with R, C the expected one-step reward and cost. Its optimum is attained by the stochastic
Markov policy pi(a|s) = x(s,a) / sum_a' x(s,a') and is optimal among all policies.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import OptimizeResult, linprog

from ._solver import solve_mdp
from .cmdp import CMDP, FloatArray, deterministic_policy
from .evaluation import Values, evaluate_policy

#: Default tolerance of the feasibility / temptation tests (HiGHS works to about 1e-7).
VALUE_ATOL = 1e-7

#: States whose discounted occupancy is below this are "unvisited" by the LP solution.
VISITED_ATOL = 1e-10


@dataclass(frozen=True, eq=False)
class Optimum:
    """An optimal policy with its exact values.

    ``occupancy`` is the LP's x(s,a) (None for the unconstrained solver) and ``multiplier`` the
    Lagrange multiplier lambda* >= 0 of the cost constraint (0 when it is slack or absent).
    """

    policy: FloatArray
    values: Values
    occupancy: FloatArray | None
    multiplier: float


def _flow_constraints(cmdp: CMDP) -> tuple[FloatArray, FloatArray]:
    n_s, n_a = cmdp.n_states, cmdp.n_actions
    # A_eq[s', (s,a)] = 1[s = s'] - gamma P(s'|s,a): the occupancy flow (Bellman flow) equation.
    a_eq = (
        np.repeat(np.eye(n_s), n_a, axis=0).T
        - cmdp.gamma * cmdp.transitions.reshape(n_s * n_a, n_s).T
    )
    return a_eq, np.asarray(cmdp.initial)


def _solve_lp(
    cmdp: CMDP, objective: FloatArray, cost_limit: float | None, presolve: bool = True
) -> OptimizeResult:
    a_eq, b_eq = _flow_constraints(cmdp)
    kwargs = {}
    if cost_limit is not None:
        kwargs = {
            "A_ub": cmdp.expected("cost").reshape(1, -1),
            "b_ub": np.array([cost_limit]),
        }
    return linprog(
        c=-objective.reshape(-1),
        A_eq=a_eq,
        b_eq=b_eq,
        bounds=(0, None),
        method="highs",
        options={"presolve": presolve},
        **kwargs,
    )


def minimum_cost(cmdp: CMDP) -> float:
    """min_pi V_c^pi(mu_0): the problem has a feasible policy iff this is <= kappa."""
    _, v, _ = solve_mdp(cmdp.transitions, cmdp.expected("cost"), cmdp.gamma, maximize=False)
    return float(cmdp.initial @ v)


def _policy_from_occupancy(x: FloatArray) -> tuple[FloatArray, np.ndarray]:
    visits = x.sum(axis=1)
    visited = visits > VISITED_ATOL
    pi = np.zeros_like(x)
    pi[visited] = x[visited] / visits[visited, None]
    return pi, visited


def _complete_policy(
    cmdp: CMDP, pi: FloatArray, visited: np.ndarray, multiplier: float
) -> FloatArray:
    """Fill the states the LP solution never visits with Lagrangian-greedy actions.

    The LP fixes pi only where x(s,.) > 0; an observational adversary can however show the agent
    any state, so pi must be defined everywhere. Off the visited set we choose actions optimal
    for the Lagrangian reward r - lambda* c while the visited states keep pi (they never reach
    unvisited ones, so the values from mu_0 are unchanged). Choice A stands for "follow pi".
    """
    if np.all(visited):
        return pi
    n_s, n_a = cmdp.n_states, cmdp.n_actions
    lagrangian = cmdp.expected("reward") - multiplier * cmdp.expected("cost")
    follow_p = np.einsum("ij,ijk->ik", pi, cmdp.transitions)
    follow_r = (pi * lagrangian).sum(axis=1)
    transitions = np.concatenate([cmdp.transitions, follow_p[:, None, :]], axis=1)
    rewards = np.concatenate([lagrangian, follow_r[:, None]], axis=1)
    allowed = np.zeros((n_s, n_a + 1), dtype=bool)
    allowed[visited, n_a] = True
    allowed[~visited, :n_a] = True
    choice, _, _ = solve_mdp(transitions, rewards, cmdp.gamma, allowed)
    out = pi.copy()
    out[~visited] = deterministic_policy(choice[~visited], n_a)
    return out


def constrained_optimum(cmdp: CMDP) -> Optimum:
    """The optimal policy pi* of the safe RL problem (Definition 2), by the occupancy LP (HiGHS).

    Raises ValueError when no policy satisfies V_c(mu_0) <= kappa.
    """
    res = _solve_lp(cmdp, cmdp.expected("reward"), cmdp.kappa)
    if res.status != 0:
        # HiGHS's presolve can misjudge problems with coefficients near its tolerances (a tiny
        # gamma, or kappa within ~1e-7 of the least cost) as infeasible or unbounded; the
        # solver without presolve settles them.
        res = _solve_lp(cmdp, cmdp.expected("reward"), cmdp.kappa, presolve=False)
    if res.status == 2:
        raise ValueError(
            f"the safe RL problem is infeasible: the smallest achievable V_c(mu_0) is "
            f"{minimum_cost(cmdp):.6g} > kappa = {cmdp.kappa:g}"
        )
    if res.status != 0:
        raise RuntimeError(f"linprog failed (status {res.status}): {res.message}")
    x = np.clip(res.x.reshape(cmdp.n_states, cmdp.n_actions), 0.0, None)
    # HiGHS reports d(objective)/d(b_ub) <= 0 for the minimised -V_r; lambda* is its negation.
    multiplier = max(0.0, -float(res.ineqlin.marginals[0]))
    pi, visited = _policy_from_occupancy(x)
    pi = _complete_policy(cmdp, pi, visited, multiplier)
    return Optimum(pi, evaluate_policy(cmdp, pi), x, multiplier)


def unconstrained_optimum(cmdp: CMDP) -> Optimum:
    """argmax_pi V_r^pi, ignoring the cost: deterministic and optimal from every state."""
    choice, _, _ = solve_mdp(cmdp.transitions, cmdp.expected("reward"), cmdp.gamma)
    pi = deterministic_policy(choice, cmdp.n_actions)
    return Optimum(pi, evaluate_policy(cmdp, pi), None, 0.0)


def unconstrained_lp_value(cmdp: CMDP) -> float:
    """max_pi V_r^pi(mu_0) by the occupancy LP without the cost row (a cross-check)."""
    res = _solve_lp(cmdp, cmdp.expected("reward"), None)
    if res.status != 0:
        res = _solve_lp(cmdp, cmdp.expected("reward"), None, presolve=False)
    if res.status != 0:
        raise RuntimeError(f"linprog failed (status {res.status}): {res.message}")
    return float(-res.fun)


def is_tempting_problem(cmdp: CMDP, atol: float = VALUE_ATOL) -> bool:
    """Definition 3: some policy has V_r(mu_0) > V_r^{pi*}(mu_0), i.e. the tempting class is
    non-empty. Equivalently, the unconstrained optimum beats the constrained one."""
    v_star = constrained_optimum(cmdp).values.reward_return
    v_max = unconstrained_optimum(cmdp).values.reward_return
    return v_max > v_star + atol


def is_feasible(cmdp: CMDP, policy: ArrayLike, atol: float = VALUE_ATOL) -> bool:
    """Definition 1: pi is in the feasible class Pi^kappa_M iff V_c^pi(mu_0) <= kappa."""
    return evaluate_policy(cmdp, policy).cost_return <= cmdp.kappa + atol


def is_tempting(
    cmdp: CMDP, policy: ArrayLike, optimal_reward: float | None = None, atol: float = VALUE_ATOL
) -> bool:
    """Definition 3: pi is in the tempting class Pi^T_M iff V_r^pi(mu_0) > V_r^{pi*}(mu_0).

    ``optimal_reward`` is V_r^{pi*}(mu_0); it is computed by the LP when omitted.
    """
    if optimal_reward is None:
        optimal_reward = constrained_optimum(cmdp).values.reward_return
    return evaluate_policy(cmdp, policy).reward_return > optimal_reward + atol


@dataclass(frozen=True, eq=False)
class PolicyClass:
    """Where a policy sits among the classes of Lemma 1."""

    values: Values
    feasible: bool
    tempting: bool


def classify_policy(
    cmdp: CMDP,
    policy: ArrayLike,
    optimal_reward: float | None = None,
    *,
    cost_atol: float = VALUE_ATOL,
    reward_atol: float = VALUE_ATOL,
) -> PolicyClass:
    """Feasible (Definition 1) and tempting (Definition 3) membership; Lemma 1 says never both.

    feasible: V_c(mu_0) <= kappa + cost_atol; tempting: V_r(mu_0) > V_r^{pi*}(mu_0) + reward_atol.
    """
    if optimal_reward is None:
        optimal_reward = constrained_optimum(cmdp).values.reward_return
    values = evaluate_policy(cmdp, policy)
    return PolicyClass(
        values=values,
        feasible=values.cost_return <= cmdp.kappa + cost_atol,
        tempting=values.reward_return > optimal_reward + reward_atol,
    )
