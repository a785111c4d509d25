"""Input validation: bad shapes, probabilities that do not sum to 1, costs out of range, ..."""

from __future__ import annotations

import numpy as np
import pytest

from robustsafe.tabular import (
    CMDP,
    constrained_optimum,
    evaluate_attacked,
    evaluate_policy,
    lipschitz_constant,
    mc_adversary,
    metric_from_coordinates,
    perturbation_sets,
    uniform_policy,
    validate_metric,
)


def good_arrays(n_s: int = 3, n_a: int = 2) -> dict:
    p = np.full((n_s, n_a, n_s), 1.0 / n_s)
    return {
        "transitions": p,
        "reward": np.zeros_like(p),
        "cost": np.zeros_like(p),
        "gamma": 0.9,
        "initial": np.full(n_s, 1.0 / n_s),
        "kappa": 0.5,
    }


def make(**changes) -> CMDP:
    kwargs = good_arrays()
    kwargs.update(changes)
    return CMDP(**kwargs)


def test_good_input_is_accepted_and_frozen():
    cmdp = make()
    assert (cmdp.n_states, cmdp.n_actions) == (3, 2)
    assert cmdp.c_m == 0.0
    with pytest.raises(ValueError):
        cmdp.transitions[0, 0, 0] = 1.0  # read-only copy


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"transitions": np.full((3, 2), 0.5)}, r"transitions must have shape \(S, A, S\)"),
        ({"transitions": np.full((3, 2, 4), 0.25)}, r"transitions must have shape \(S, A, S\)"),
        (
            {"transitions": np.full((3, 2, 3), 0.3)},
            r"transitions\[s=0, a=0, :\] sums to 0\.9; each distribution must sum to 1",
        ),
        (
            {"transitions": np.tile([1.5, -0.5, 0.0], (3, 2, 1))},
            r"transitions has a negative probability -0\.5 .* must be >= 0",
        ),
        ({"transitions": np.full((3, 2, 3), np.nan)}, r"transitions must be finite"),
        ({"reward": np.zeros((3, 2))}, r"reward must have shape \(S, A, S\) = \(3, 2, 3\)"),
        ({"cost": np.zeros((2, 2, 3))}, r"cost must have shape \(S, A, S\) = \(3, 2, 3\)"),
        ({"cost": np.full((3, 2, 3), -0.1)}, r"cost\[s=0, a=0, s'=0\] = -0\.1 is negative"),
        (
            {"cost": np.full((3, 2, 3), 2.0), "cost_max": 1.0},
            r"cost\[s=0, a=0, s'=0\] = 2 is outside \[0, C_m\] = \[0, 1\]",
        ),
        ({"gamma": 1.0}, r"gamma must be in \[0, 1\); got 1\.0"),
        ({"gamma": -0.1}, r"gamma must be in \[0, 1\)"),
        ({"initial": [0.5, 0.5]}, r"initial \(mu_0\) must have shape \(S,\) = \(3,\)"),
        ({"initial": [0.5, 0.5, 0.5]}, r"initial \(mu_0\) sums to 1\.5; each distribution"),
        ({"initial": [1.5, -0.5, 0.0]}, r"initial \(mu_0\) has a negative probability -0\.5"),
        ({"kappa": -1.0}, r"kappa must be >= 0; got -1\.0"),
        ({"kappa": float("inf")}, r"kappa must be finite"),
        ({"cost_max": -1.0}, r"cost_max \(C_m\) must be >= 0"),
        ({"reward": "abc"}, r"reward must be an array of real numbers"),
    ],
)
def test_bad_cmdp_input_raises_clear_value_error(changes, message):
    with pytest.raises(ValueError, match=message):
        make(**changes)


def test_bad_policy_raises():
    cmdp = make()
    with pytest.raises(ValueError, match=r"policy must have shape \(S, A\) = \(3, 2\)"):
        evaluate_policy(cmdp, np.full((2, 2), 0.5))
    with pytest.raises(ValueError, match=r"policy\[s=0, :\] sums to 0\.8"):
        evaluate_policy(cmdp, np.full((3, 2), 0.4))


def test_bad_adversary_raises():
    cmdp = make()
    pi = uniform_policy(3, 2)
    sets = perturbation_sets(metric_from_coordinates([0.0, 1.0, 2.0]), 1.0)
    with pytest.raises(ValueError, match=r"adversary maps state 0 to 2, outside B\(0\)"):
        evaluate_attacked(cmdp, pi, np.array([2, 1, 2]), sets)
    with pytest.raises(ValueError, match=r"entries in \[0, 3\)"):
        evaluate_attacked(cmdp, pi, np.array([0, 1, 3]))
    with pytest.raises(ValueError, match=r"must be an integer array"):
        evaluate_attacked(cmdp, pi, np.array([0.0, 1.0, 2.0]))
    nu = np.array([[0.5, 0.0, 0.5], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    with pytest.raises(ValueError, match=r"adversary puts mass 0\.5 on 2, outside B\(0\)"):
        evaluate_attacked(cmdp, pi, nu, sets)
    with pytest.raises(ValueError, match=r"adversary\[s=1, :\] sums to 0\.5"):
        evaluate_attacked(cmdp, pi, np.array([[1, 0, 0], [0.5, 0, 0], [0, 0, 1.0]]))
    with pytest.raises(ValueError, match=r"perturbation set B\(1\) is empty"):
        mc_adversary(cmdp, pi, np.eye(3, dtype=bool) & np.array([True, False, True]))


def test_bad_metric_raises():
    with pytest.raises(ValueError, match=r"metric must be > 0 between distinct states"):
        validate_metric(np.zeros((2, 2)))
    with pytest.raises(ValueError, match=r"symmetric"):
        validate_metric(np.array([[0.0, 1.0], [2.0, 0.0]]))
    with pytest.raises(ValueError, match=r"zero diagonal"):
        validate_metric(np.array([[1.0, 1.0], [1.0, 0.0]]))
    with pytest.raises(ValueError, match=r"eps must be a finite number >= 0"):
        perturbation_sets(np.array([[0.0, 1.0], [1.0, 0.0]]), -1.0)
    with pytest.raises(ValueError, match=r"policy has 3 states but metric has 2"):
        lipschitz_constant(uniform_policy(3, 2), np.array([[0.0, 1.0], [1.0, 0.0]]))


def test_infeasible_problem_is_reported():
    kwargs = good_arrays()
    kwargs["cost"] = np.ones((3, 2, 3))
    kwargs["kappa"] = 1.0  # every policy pays 1 per step: V_c = 10 > 1
    with pytest.raises(ValueError, match=r"infeasible: the smallest achievable V_c\(mu_0\) is 10"):
        constrained_optimum(CMDP(**kwargs))
