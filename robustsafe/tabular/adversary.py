"""Exact optimal observational adversaries: MC, MR and minimum reward (Section 3.3, Theorem 1).

For a fixed policy pi the adversary faces its own MDP (Appendix A.3): its action is the observed
state s~ in B(s), the agent acts on it and the true state moves on,

    p^(s'|s, s~)  = sum_a pi(a|s~) p(s'|s,a),
    R^_f(s, s~)   = sum_a pi(a|s~) sum_s' p(s'|s,a) f(s,a,s'),      f in {r, c}.

(The paper writes R^_f per transition and penalises s~ outside B(s) with -C; we use the
expected one-step reward, which has the same values, and simply forbid s~ outside B(s).)
An optimal policy of this MDP is an optimal deterministic adversary, and its value is
V_f^{pi o nu} (Theorem 1). Value iteration uses the operator T*_f of Appendix A.6.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._solver import solve_mdp
from .cmdp import CMDP, FloatArray, _signal_array, validate_policy
from .evaluation import Values, evaluate_attacked
from .perturbation import validate_sets

IntArray = NDArray[np.int64]
Objective = Literal["max_cost", "max_reward", "min_reward"]


@dataclass(frozen=True, eq=False)
class AdversaryMDP:
    """The adversary's MDP of Appendix A.3 for a fixed policy (actions = observed states)."""

    transitions: FloatArray  # (S, S~, S'): p^(s'|s, s~)
    reward: FloatArray  # (S, S~): R^_r(s, s~)
    cost: FloatArray  # (S, S~): R^_c(s, s~)
    allowed: NDArray[np.bool_]  # (S, S~): s~ in B(s)


@dataclass(frozen=True, eq=False)
class Attack:
    """An optimal deterministic adversary nu[s] = s~ and the exact values of pi o nu."""

    objective: str
    adversary: IntArray
    values: Values
    sweeps: int


def adversary_mdp(cmdp: CMDP, policy: ArrayLike, sets: ArrayLike) -> AdversaryMDP:
    """Build p^ and R^_f of Appendix A.3 for ``policy`` and perturbation sets ``sets``."""
    pi = validate_policy(policy, cmdp.n_states, cmdp.n_actions)
    b = validate_sets(sets, cmdp.n_states)
    # transitions[s, s~, s'] = sum_a pi(a|s~) P(s'|s,a)
    p_hat = np.einsum("ta,sak->stk", pi, cmdp.transitions)
    r_hat = cmdp.expected("reward") @ pi.T  # [s, s~] = sum_a R(s,a) pi(a|s~)
    c_hat = cmdp.expected("cost") @ pi.T
    return AdversaryMDP(p_hat, r_hat, c_hat, b)


def adversary_bellman_operator(
    cmdp: CMDP, policy: ArrayLike, sets: ArrayLike, values: ArrayLike, signal: str = "cost"
) -> FloatArray:
    """(T*_f V)(s) = max_{s~ in B(s)} sum_a pi(a|s~) sum_s' p(s'|s,a)[f + gamma V(s')].

    The Bellman adversary effectiveness (f = c) / stealthiness (f = r) operator of Appendix A.6;
    Lemma 3 there: a gamma-contraction whose fixed point is V_c^{pi o nu_MC} (resp. V_r, MR).
    """
    pi = validate_policy(policy, cmdp.n_states, cmdp.n_actions)
    b = validate_sets(sets, cmdp.n_states)
    f = _signal_array(cmdp, signal)
    v = np.asarray(values, dtype=np.float64)
    g = np.einsum("sak,sak->sa", cmdp.transitions, f + cmdp.gamma * v[None, None, :])
    q = g @ pi.T  # q[s, s~] = sum_a pi(a|s~) g(s, a)
    return np.where(b, q, -np.inf).max(axis=1)


def optimal_adversary(
    cmdp: CMDP, policy: ArrayLike, sets: ArrayLike, objective: Objective
) -> Attack:
    """The exact optimal deterministic adversary nu(s) in B(s) for one objective.

    * ``"max_cost"``: the MC attacker, argmax_nu V_c^{pi o nu}.
    * ``"max_reward"``: the MR attacker, argmax_nu V_r^{pi o nu}.
    * ``"min_reward"``: the classic reward attacker, argmin_nu V_r^{pi o nu}.

    The optimum is simultaneous for every start state (so also for mu_0). Among tied optimal
    observations the true state itself is kept, so the adversary perturbs only when it gains.
    """
    mdp = adversary_mdp(cmdp, policy, sets)
    if objective == "max_cost":
        rewards, maximize = mdp.cost, True
    elif objective == "max_reward":
        rewards, maximize = mdp.reward, True
    elif objective == "min_reward":
        rewards, maximize = mdp.reward, False
    else:
        raise ValueError(
            f"objective must be 'max_cost', 'max_reward' or 'min_reward'; got {objective!r}"
        )
    identity = np.arange(cmdp.n_states, dtype=np.int64)
    nu, _, sweeps = solve_mdp(
        mdp.transitions, rewards, cmdp.gamma, mdp.allowed, maximize=maximize, preferred=identity
    )
    return Attack(objective, nu, evaluate_attacked(cmdp, policy, nu, mdp.allowed), sweeps)


def mc_adversary(cmdp: CMDP, policy: ArrayLike, sets: ArrayLike) -> Attack:
    """Maximum Cost attacker nu_MC = argmax_nu V_c^{pi o nu}(mu_0) (Section 3.3)."""
    return optimal_adversary(cmdp, policy, sets, "max_cost")


def mr_adversary(cmdp: CMDP, policy: ArrayLike, sets: ArrayLike) -> Attack:
    """Maximum Reward attacker nu_MR = argmax_nu V_r^{pi o nu}(mu_0) (Section 3.3)."""
    return optimal_adversary(cmdp, policy, sets, "max_reward")


def min_reward_adversary(cmdp: CMDP, policy: ArrayLike, sets: ArrayLike) -> Attack:
    """Minimum reward attacker argmin_nu V_r^{pi o nu}(mu_0) (the standard-RL attack)."""
    return optimal_adversary(cmdp, policy, sets, "min_reward")


def random_stochastic_adversary(
    sets: ArrayLike, rng: np.random.Generator, concentration: float = 1.0
) -> FloatArray:
    """A random nu(s~|s): Dirichlet(concentration) weights on B(s), zero outside."""
    b = validate_sets(sets, np.asarray(sets).shape[0])
    w = rng.gamma(concentration, size=b.shape) * b
    # guard against a row of numerical zeros (tiny concentration)
    empty = w.sum(axis=1) == 0
    w[empty] = b[empty]
    return w / w.sum(axis=1, keepdims=True)


def deterministic_adversaries(sets: ArrayLike) -> Iterator[IntArray]:
    """Every deterministic adversary nu(s) in B(s) (prod_s |B(s)| of them; tiny problems only)."""
    b = validate_sets(sets, np.asarray(sets).shape[0])
    choices = [np.flatnonzero(row) for row in b]
    for combo in itertools.product(*choices):
        yield np.array(combo, dtype=np.int64)
