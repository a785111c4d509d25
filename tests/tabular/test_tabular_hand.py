"""Hand-checked values on a two-state CMDP small enough to solve on paper.

States: 0 = safe, 1 = hazard. Actions: 0 = "go to the safe state", 1 = "go to the hazard"
(deterministic). gamma = 1/2, mu_0 = delta_0, kappa = 1.
    reward: 1 for 0 -> 1 (the tempting shortcut), 1/2 for 0 -> 0, 0 otherwise;
    cost:   1 whenever the next state is the hazard (0 -> 1 and 1 -> 1).

Hand computation (occupancy LP, x(s,a) = sum_t gamma^t Pr(s_t=s, a_t=a), total mass 2):
    flow at 1:  x10 + x11 - (x01 + x11)/2 = 0   =>  x10 = (x01 - x11)/2
    mass:       x00 + x01 + x10 + x11 = 2       =>  x00 = 2 - 3/2 x01 - 1/2 x11
    V_r = x00/2 + x01 = 1 + x01/4 - x11/4,   V_c = x01 + x11.
  Constrained (V_c <= 1, x10 >= 0 i.e. x11 <= x01): x11 = 0, x01 = 1 => V_r = 5/4, V_c = 1,
  x00 = 1/2, x10 = 1/2, so pi*(hazard|0) = 1 / (1 + 1/2) = 2/3 and pi*(safe|1) = 1.
  Each unit of cost buys 1/4 of reward: lambda* = 1/4.
  Unconstrained: x00 = 0 => x01 = 4/3, V_r = V_c = 4/3 > 5/4, so the problem is tempting.
  Per state under pi*: V(1) = gamma V(0): V_r(1) = 5/8, V_c(1) = 1/2.

Attacks with B(s) = {0, 1} (d(0,1) = 1, eps = 1): the agent acts with pi*(.|0) = (1/3, 2/3) or
pi*(.|1) = (1, 0).
  MC: nu = (0, 0). Then both states enter the hazard w.p. 2/3 each step: V_c = 2/3 * 2 = 4/3 in
      both states. V_r(1) = V_r(1)/3 + V_r(0)/6 => V_r(1) = V_r(0)/4, and
      V_r(0) = 2/3 (1 + V_r(1)/2) + 1/3 (1/2 + V_r(0)/2) = 5/6 + V_r(0)/4 => V_r(0) = 10/9.
  MR: nu = (0, 1), the identity (showing 1 at state 0 gives 1/2 + 5/8 = 9/8 < 5/4; showing 0 at
      state 1 gives 2/3 * 5/16 + 1/3 * 5/8 = 5/12 < 5/8).
  min reward: nu = (1, 0): at 0 the agent always stays safe, V_r(0) = (1/2)/(1 - 1/2) = 1,
      V_c(0) = 0; at 1, V_r(1) = V_r(1)/3 + V_r(0)/6 => 1/4 and V_c(1) = 2/3 + V_c(1)/3 => 1.
  Stochastic nu(.|0) = (1/2, 1/2), nu(.|1) = (0, 1): pi(hazard|0) becomes 1/3 and with
      p = pi(hazard|0), V_c(0) = 4p / (2 + p) = 4/7 and V_r(0) = (2 + 2p) / (2 + p) = 8/7.
Bounds (L = TV(pi*(.|0), pi*(.|1)) / d = 2/3, p_0 = p_1 = 1, C_m = 1):
  Theorem 2: 2 (2/3) 1 (1 + (1/2) / (1/2)) = 8/3 at both states. Exact worst one-step increase:
      state 0: 0 (showing 1 gives 0 + V_c(0)/2 = 1/2 < 1); state 1: showing 0 gives
      2/3 (1 + 1/4) + 1/3 * 1/2 = 1, an increase of 1/2.
  Theorem 3: 1 + 2 (2/3) (2 + 4 (1/2)(2/3) / (1/4)) (1 + 1) = 1 + 176/9 = 185/9.
"""

from __future__ import annotations

import numpy as np
import pytest

from robustsafe.tabular import (
    CMDP,
    constrained_optimum,
    episodic_bound,
    evaluate_attacked,
    is_tempting_problem,
    lipschitz_constant,
    mc_adversary,
    min_reward_adversary,
    mr_adversary,
    one_step_bound,
    perturbation_sets,
    unconstrained_optimum,
    unsafe_entry_probability,
    worst_one_step_cost,
)

TOL = 1e-7


def two_state_cmdp() -> CMDP:
    p = np.zeros((2, 2, 2))
    p[:, 0, 0] = 1.0  # action 0: go to the safe state
    p[:, 1, 1] = 1.0  # action 1: go to the hazard
    r = np.zeros((2, 2, 2))
    r[0, 1, 1] = 1.0
    r[0, 0, 0] = 0.5
    c = np.zeros((2, 2, 2))
    c[:, :, 1] = 1.0
    return CMDP(p, r, c, gamma=0.5, initial=[1.0, 0.0], kappa=1.0)


METRIC = np.array([[0.0, 1.0], [1.0, 0.0]])


@pytest.fixture(scope="module")
def solved():
    cmdp = two_state_cmdp()
    return cmdp, constrained_optimum(cmdp)


def test_constrained_optimum_matches_hand_solution(solved):
    cmdp, opt = solved
    np.testing.assert_allclose(opt.policy, [[1 / 3, 2 / 3], [1.0, 0.0]], atol=TOL)
    np.testing.assert_allclose(opt.occupancy, [[0.5, 1.0], [0.5, 0.0]], atol=TOL)
    np.testing.assert_allclose(opt.values.reward, [5 / 4, 5 / 8], atol=TOL)
    np.testing.assert_allclose(opt.values.cost, [1.0, 0.5], atol=TOL)
    assert opt.multiplier == pytest.approx(0.25, abs=TOL)


def test_unconstrained_optimum_and_temptation(solved):
    cmdp, _ = solved
    unc = unconstrained_optimum(cmdp)
    np.testing.assert_allclose(unc.policy, [[0.0, 1.0], [1.0, 0.0]])
    assert unc.values.reward_return == pytest.approx(4 / 3, abs=TOL)
    assert unc.values.cost_return == pytest.approx(4 / 3, abs=TOL)
    assert is_tempting_problem(cmdp)
    assert not is_tempting_problem(cmdp.with_kappa(4 / 3))  # kappa >= 4/3: constraint slack


def test_exact_adversaries_match_hand_solution(solved):
    cmdp, opt = solved
    sets = perturbation_sets(METRIC, 1.0)
    mc = mc_adversary(cmdp, opt.policy, sets)
    np.testing.assert_array_equal(mc.adversary, [0, 0])
    np.testing.assert_allclose(mc.values.cost, [4 / 3, 4 / 3], atol=TOL)
    np.testing.assert_allclose(mc.values.reward, [10 / 9, 5 / 18], atol=TOL)
    mr = mr_adversary(cmdp, opt.policy, sets)
    np.testing.assert_array_equal(mr.adversary, [0, 1])
    np.testing.assert_allclose(mr.values.reward, [5 / 4, 5 / 8], atol=TOL)
    low = min_reward_adversary(cmdp, opt.policy, sets)
    np.testing.assert_array_equal(low.adversary, [1, 0])
    np.testing.assert_allclose(low.values.reward, [1.0, 0.25], atol=TOL)
    np.testing.assert_allclose(low.values.cost, [0.0, 1.0], atol=TOL)


def test_small_radius_leaves_the_policy_alone(solved):
    cmdp, opt = solved
    mc = mc_adversary(cmdp, opt.policy, perturbation_sets(METRIC, 0.5))
    np.testing.assert_array_equal(mc.adversary, [0, 1])
    assert mc.values.cost_return == pytest.approx(1.0, abs=TOL)


def test_stochastic_adversary_matches_hand_solution(solved):
    cmdp, opt = solved
    nu = np.array([[0.5, 0.5], [0.0, 1.0]])
    v = evaluate_attacked(cmdp, opt.policy, nu, perturbation_sets(METRIC, 1.0))
    assert v.cost_return == pytest.approx(4 / 7, abs=TOL)
    assert v.reward_return == pytest.approx(8 / 7, abs=TOL)


def test_bounds_match_hand_solution(solved):
    cmdp, opt = solved
    lip = lipschitz_constant(opt.policy, METRIC)
    assert lip == pytest.approx(2 / 3, abs=TOL)
    np.testing.assert_allclose(unsafe_entry_probability(cmdp), [1.0, 1.0])
    np.testing.assert_allclose(one_step_bound(cmdp, lip, 1.0), [8 / 3, 8 / 3], atol=TOL)
    assert episodic_bound(cmdp, lip, 1.0) == pytest.approx(185 / 9, abs=TOL)
    worst = worst_one_step_cost(cmdp, opt.policy, perturbation_sets(METRIC, 1.0))
    np.testing.assert_allclose(worst - opt.values.cost, [0.0, 0.5], atol=TOL)
