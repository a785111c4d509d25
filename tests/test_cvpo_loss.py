"""CVPO's math against known solutions and hand-computed values: the E-step dual (its gradient
and Hessian, its minimiser with and without an active cost constraint, from several starts),
the M-step's Gaussian log-density, decoupled likelihood and KL terms, the M-step multipliers,
and one whole update on hand-set networks."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from robustsafe.config import CVPOConfig
from robustsafe.critics import QCritics
from robustsafe.learners.cvpo import (
    CVPO,
    estep_dual,
    estep_dual_hessian,
    estep_weights,
    gaussian_log_prob,
    mstep_loss,
    mstep_terms,
    multiplier_step,
    sample_kl,
    solve_estep,
)
from robustsafe.learners.sac_lag import qc_threshold
from robustsafe.nets import SquashedGaussianActor, ValueCritic


def _softmax(z):
    e = [math.exp(v - max(z)) for v in z]
    return [v / sum(e) for v in e]


def _kl_to_uniform(w):
    return sum(p * math.log(len(w) * p) for p in w if p > 0)


def test_dual_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    q_r, q_c = rng.normal(size=(8, 5)), rng.uniform(0, 2, size=(8, 5))
    x, h = np.array([0.7, 0.3]), 1e-6
    g, grad = estep_dual(x, q_r, q_c, 0.1, 0.8)
    for i in range(2):
        step = np.eye(2)[i] * h
        up, down = (estep_dual(x + d, q_r, q_c, 0.1, 0.8)[0] for d in (step, -step))
        numeric = (up - down) / (2 * h)
        assert grad[i] == pytest.approx(numeric, rel=1e-5, abs=1e-8)
    # The value by the formula, without the log-sum-exp shift.
    z = q_r - 0.3 * q_c
    by_hand = 0.7 * 0.1 + 0.3 * 0.8 + 0.7 * np.mean(np.log(np.mean(np.exp(z / 0.7), axis=0)))
    assert g == pytest.approx(by_hand, rel=1e-12)


def test_dual_hessian_matches_finite_differences_of_the_gradient():
    rng = np.random.default_rng(1)
    q_r, q_c = rng.normal(size=(8, 5)), rng.uniform(0, 2, size=(8, 5))
    x, h = np.array([0.7, 0.3]), 1e-6
    hess = estep_dual_hessian(x, q_r, q_c)
    for i in range(2):
        step = np.eye(2)[i] * h
        up, down = (estep_dual(x + d, q_r, q_c, 0.1, 0.8)[1] for d in (step, -step))
        assert hess[:, i] == pytest.approx((up - down) / (2 * h), rel=1e-5, abs=1e-8)
    assert np.all(np.linalg.eigvalsh(hess) > 0)  # convex


def test_estep_solution_is_tight_and_warm_start_independent():
    """The projected gradient vanishes at the solution (to 1e-9): from three starts (one at eta's
    lower bound, where the weights are one-hot and the Hessian vanishes), the same
    (eta, lambda) to 1e-6 relative, KL = eps and E_q[Q_c] = threshold (the cost bound binds)."""
    rng = np.random.default_rng(2)
    q_r = rng.normal(size=(32, 50))
    q_c = 0.5 * q_r + rng.normal(size=(32, 50))  # costly actions tend to be rewarding
    thres = float(q_c.mean()) + 0.2
    starts = ((0.1, 0.1), (5.0, 0.0), (1e-6, 0.0))
    sols = [solve_estep(q_r, q_c, 0.1, thres, init, iters=50) for init in starts]
    assert sols[0] == pytest.approx(sols[1], rel=1e-6) == sols[2]
    eta, lam = sols[0]
    assert lam > 0.01
    w = estep_weights(q_r, q_c, eta, lam)
    assert sample_kl(w) == pytest.approx(0.1, rel=1e-7)
    assert float((w * q_c).sum(axis=0).mean()) == pytest.approx(thres, rel=1e-7)


def test_estep_without_an_active_cost_constraint_meets_the_kl_bound():
    """No cost anywhere: lambda = 0 and eta is the temperature whose softmax is exactly eps
    away from pi_old. We pick eta* = 0.5, compute its KL, and ask the solver for eta*."""
    q_r = [0.0, 1.0, 2.0, 3.0]
    w_star = _softmax([q / 0.5 for q in q_r])
    eps = _kl_to_uniform(w_star)  # about 1.0
    Q_r, Q_c = np.array([q_r]).T, np.zeros((4, 1))
    eta, lam = solve_estep(Q_r, Q_c, eps, qc_thres=1.0, init=(0.1, 0.1), iters=500)
    assert eta == pytest.approx(0.5, rel=1e-3)
    assert lam == pytest.approx(0.0, abs=1e-8)
    w = estep_weights(Q_r, Q_c, eta, lam)
    assert sample_kl(w) == pytest.approx(eps, rel=1e-3)
    assert w[:, 0] == pytest.approx(w_star, abs=1e-3)


def test_estep_with_an_active_cost_constraint_meets_the_cost_bound():
    """Reward and cost rise together (not in proportion). We pick (eta*, lambda*) = (0.5,
    0.8), take the KL and E_q[Q_c] of its q as the bounds; then (eta*, lambda*) satisfies the
    KKT conditions, so the solver must find it, with E_q[Q_c] = threshold and KL = eps."""
    q_r, q_c = [0.0, 1.0, 2.0, 3.0], [0.0, 0.5, 2.0, 3.0]
    w_star = _softmax([(r - 0.8 * c) / 0.5 for r, c in zip(q_r, q_c, strict=True)])
    eps = _kl_to_uniform(w_star)
    thres = sum(p * c for p, c in zip(w_star, q_c, strict=True))
    Q_r, Q_c = np.array([q_r]).T, np.array([q_c]).T
    eta, lam = solve_estep(Q_r, Q_c, eps, thres, init=(0.1, 0.1), iters=500)
    assert (eta, lam) == pytest.approx((0.5, 0.8), rel=1e-3)
    w = estep_weights(Q_r, Q_c, eta, lam)
    assert float((w[:, 0] * np.array(q_c)).sum()) == pytest.approx(thres, abs=1e-4)
    assert sample_kl(w) <= eps + 1e-4
    # The constraint is active: at lambda = 0 with the same KL, q would cost more.
    eta0, lam0 = solve_estep(Q_r, Q_c, eps, qc_thres=1e9, init=(0.1, 0.1), iters=500)
    assert lam0 == pytest.approx(0.0, abs=1e-8)
    w0 = estep_weights(Q_r, Q_c, eta0, 0.0)
    assert float((w0[:, 0] * np.array(q_c)).sum()) > thres + 0.2  # 1.86 against 1.63


def test_estep_weights_are_a_stable_softmax_and_kl_is_zero_for_uniform():
    w = estep_weights(np.array([[1e4], [1e4 + 1.0]]), np.zeros((2, 1)), eta=1.0, lam=0.0)
    assert w[:, 0] == pytest.approx([1 / (1 + math.e), math.e / (1 + math.e)])
    assert sample_kl(np.full((4, 3), 0.25)) == pytest.approx(0.0, abs=1e-12)
    assert sample_kl(np.array([[1.0], [0.0], [0.0], [0.0]])) == pytest.approx(math.log(4))


def test_gaussian_log_prob_is_normal_log_prob_bit_for_bit():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 3, 2, generator=g)
    mean, std = torch.randn(3, 2, generator=g), torch.rand(3, 2, generator=g) + 0.1
    ours = gaussian_log_prob(x, mean, std)
    assert torch.equal(ours, torch.distributions.Normal(mean, std).log_prob(x))
    assert float(gaussian_log_prob(torch.zeros(()), torch.zeros(()), torch.ones(()))) == (
        pytest.approx(-0.5 * math.log(2 * math.pi))
    )


def test_mstep_terms_against_hand_computed_values():
    """K = 2 samples of one state, one action dimension: pi_old = N(0, 1), pi_theta =
    N(0.5, 2^2), weights (0.25, 0.75)."""
    u = torch.tensor([[[-1.0]], [[1.0]]])
    w = torch.tensor([[0.25], [0.75]])
    mu, log_std = torch.tensor([[0.5]]), torch.tensor([[math.log(2.0)]])
    mu_old, log_std_old = torch.tensor([[0.0]]), torch.tensor([[0.0]])
    loglik, kl_mu, kl_std = mstep_terms(u, w, mu, log_std, mu_old, log_std_old)
    c = 0.5 * math.log(2 * math.pi)
    total = 0.0
    for uk, wk in ((-1.0, 0.25), (1.0, 0.75)):
        new_mean = -0.5 * (uk - 0.5) ** 2 - c  # N(u; 0.5, 1)
        new_std = -0.5 * (uk / 2.0) ** 2 - math.log(2.0) - c  # N(u; 0, 2^2)
        total += wk * (new_mean + new_std)
    assert float(loglik) == pytest.approx(total / 2, rel=1e-6)  # mean over K x B = 2
    assert float(kl_mu) == pytest.approx(0.5**2 / 2)
    assert float(kl_std) == pytest.approx(math.log(2.0) + 1 / 8 - 0.5, rel=1e-6)
    loss = mstep_loss(loglik, kl_mu, kl_std, 0.1, 2.0, 0.01, 0.02)
    expected = -(total / 2 + 0.1 * (0.01 - 0.125) + 2.0 * (0.02 - (math.log(2) - 0.375)))
    assert float(loss) == pytest.approx(expected, rel=1e-6)


def test_mstep_terms_vanish_at_the_old_policy_and_pull_the_mean_to_heavy_samples():
    u = torch.tensor([[[-1.0]], [[1.0]]])
    w = torch.tensor([[0.1], [0.9]])
    mu = torch.zeros(1, 1, requires_grad=True)
    _, kl_mu, kl_std = mstep_terms(
        u, w, mu.detach(), torch.zeros(1, 1), torch.zeros(1, 1), torch.zeros(1, 1)
    )
    assert float(kl_mu) == 0.0 and float(kl_std) == pytest.approx(0.0, abs=1e-7)
    loglik, _, _ = mstep_terms(u, w, mu, torch.zeros(1, 1), torch.zeros(1, 1), torch.zeros(1, 1))
    loglik.backward()
    # d/dmu mean_k w_k log N(u_k; mu, 1) = sum_k w_k (u_k - mu) / 2 = (0.9 - 0.1) / 2.
    assert float(mu.grad) == pytest.approx(0.4)


def test_multiplier_step_descends_and_clips():
    assert multiplier_step(0.05, kl=0.03, eps=0.01, lr=1.0, alpha_max=0.1) == pytest.approx(0.07)
    assert multiplier_step(0.05, kl=0.0, eps=0.01, lr=1.0, alpha_max=0.1) == pytest.approx(0.04)
    assert multiplier_step(0.005, kl=0.0, eps=0.01, lr=1.0, alpha_max=0.1) == 0.0
    assert multiplier_step(0.09, kl=0.5, eps=0.01, lr=1.0, alpha_max=0.1) == 0.1


def _learner(cost_limit: float, sample_actions: int = 64) -> CVPO:
    """A constant actor (pre-tanh N(0, 0.5^2)) and linear critics Q_r = a, Q_c = 1 + a."""
    actor = SquashedGaussianActor(1, 1, ())
    with torch.no_grad():
        actor.net[0].weight.zero_()
        actor.net[0].bias.copy_(torch.tensor([0.0, math.log(0.5)]))
    critics = QCritics(1, 1, ())
    with torch.no_grad():
        heads = (*critics.q_reward.heads, *critics.q_cost.heads)
        for head, bias in zip(heads, (0.0, 0.0, 1.0), strict=True):
            head[0].weight.copy_(torch.tensor([[0.0, 1.0]]))  # (obs, act)
            head[0].bias.fill_(bias)
    cfg = CVPOConfig(
        cost_limit=cost_limit,
        gamma=0.5,
        sample_actions=sample_actions,
        dual_iters=200,
        mstep_iters=3,
        actor_lr=1e-2,
    )
    return CVPO(actor, critics, ValueCritic(1, ()), ValueCritic(1, ()), cfg, 1, 1, episode_steps=1)


def _batch(n: int = 32) -> dict[str, np.ndarray]:
    z = np.zeros((n, 1), np.float32)
    return {"obs": z, "act": z, "reward": z[:, 0], "cost": z[:, 0], "next_obs": z, "done": z[:, 0]}


def test_one_update_without_active_constraint_moves_the_mean_to_higher_reward():
    learner = _learner(cost_limit=100.0)  # Q_c < 2 everywhere: never binding
    m = learner.update(_batch(), torch.Generator().manual_seed(0))
    assert learner.multiplier == pytest.approx(0.0, abs=1e-8)
    assert m["kl_estep"] == pytest.approx(0.1, rel=1e-3)  # eps of the E-step
    assert m["q_cost_estep"] > m["q_cost"]  # q prefers large actions: Q_r = a
    mu, _ = learner.actor.gaussian(torch.zeros(1, 1))
    assert float(mu.detach()) > 0  # the M-step followed q
    assert all(math.isfinite(v) for v in m.values())


def test_one_update_with_active_constraint_holds_q_at_the_cost_threshold():
    # T = 1: qc_threshold = cost_limit; E_pi_old[Q_c] = 1 (symmetric actions), so 1.05 binds.
    learner = _learner(cost_limit=1.05)
    assert learner.qc_threshold == pytest.approx(qc_threshold(1.05, 0.5, 1)) == 1.05
    m = learner.update(_batch(), torch.Generator().manual_seed(0))
    assert learner.multiplier > 0.1
    assert m["q_cost_estep"] == pytest.approx(1.05, abs=1e-3)
    assert m["kl_estep"] <= 0.1 + 1e-3


def test_the_estep_scores_with_the_targets_and_every_target_follows_polyak():
    """The E-step scores pi_old's actions with the target critics (set apart here: Q_r target
    0.3 + a, Q_c target 1.2 + a, against the live a and 1 + a), so mean Q_c - mean Q_r over
    the same actions is 1.2 - 0.3 = 0.9 (the live critics would give 1.0); after the step every
    target, the critics' and pi_old, is polyak * itself + (1 - polyak) * the live network."""
    import copy

    learner = _learner(cost_limit=100.0)
    with torch.no_grad():
        heads = (*learner.target.q_reward.heads, *learner.target.q_cost.heads)
        for head, bias in zip(heads, (0.3, 0.3, 1.2), strict=True):
            head[0].bias.fill_(bias)
        for p in learner.target_actor.parameters():  # pi_old apart from the actor as well
            p.add_(0.1)
    before = copy.deepcopy((learner.target, learner.target_actor))
    m = learner.update(_batch(), torch.Generator().manual_seed(0))
    assert m["q_cost"] - m["q_reward"] == pytest.approx(0.9, abs=1e-5)
    polyak = learner.cfg.polyak
    pairs = (
        (learner.target, learner.critics, before[0]),
        (learner.target_actor, learner.actor, before[1]),
    )
    for target, live, old in pairs:
        params = zip(target.parameters(), live.parameters(), old.parameters(), strict=True)
        for t, p, o in params:
            torch.testing.assert_close(t, polyak * o + (1 - polyak) * p.detach())
        moved = zip(target.parameters(), old.parameters(), strict=True)
        assert not all(torch.equal(t, o) for t, o in moved)


def test_dual_adam_step_against_hand_computed_values():
    """Adam's first step moves each coordinate by lr against its gradient's sign (m_hat = g,
    v_hat = g^2); the second, with the same gradient, again by lr; the box clips."""
    from robustsafe.learners.cvpo import dual_adam_step

    lo, hi = np.array([1e-6, 0.0]), np.array([20.0, 20.0])
    moments = (np.zeros(2), np.zeros(2), 0)
    x, moments = dual_adam_step(np.array([1.0, 0.5]), np.array([2.0, -3.0]), moments, 0.1, lo, hi)
    np.testing.assert_allclose(x, [0.9, 0.6], rtol=1e-7)
    assert moments[2] == 1
    np.testing.assert_allclose(moments[0], [0.2, -0.3])
    np.testing.assert_allclose(moments[1], [0.004, 0.009])
    x, moments = dual_adam_step(x, np.array([2.0, -3.0]), moments, 0.1, lo, hi)
    np.testing.assert_allclose(x, [0.8, 0.7], rtol=1e-7)
    # a gradient of the other sign: m = 0.9 * 0.38 - 0.2 = 0.142, v = 0.999 * 0.007996 + 0.004
    m, v = 0.9 * 0.38 + 0.1 * -2.0, 0.999 * (0.999 * 0.004 + 0.004) + 0.001 * 4.0
    step = 0.1 * (m / (1 - 0.9**3)) / (np.sqrt(v / (1 - 0.999**3)) + 1e-8)
    x3, _ = dual_adam_step(x, np.array([-2.0, 0.0]), moments, 0.1, lo, hi)
    assert x3[0] == pytest.approx(x[0] - step, rel=1e-12)
    fresh = (np.zeros(2), np.zeros(2), 0)
    clipped, _ = dual_adam_step(np.array([1e-6, 0.0]), np.array([1.0, 1.0]), fresh, 0.1, lo, hi)
    np.testing.assert_array_equal(clipped, lo)


def test_with_a_dual_rate_lambda_takes_one_adam_step_per_update():
    """``dual_lr``: the duals move by one Adam step per update (lr each at the first), towards
    the constraint's side, instead of jumping to the batch's optimum as the solver does."""
    solved = _learner(cost_limit=1.05)
    solved.update(_batch(), torch.Generator().manual_seed(0))
    stepped = _learner(cost_limit=1.05)
    stepped.cfg = dataclasses.replace(stepped.cfg, dual_lr=0.05)
    start = (stepped.eta, stepped.lam)
    stepped.update(_batch(), torch.Generator().manual_seed(0))
    assert stepped.lam == pytest.approx(start[1] + 0.05, rel=1e-6)  # E_pi_old[Q_c] > thres
    assert abs(stepped.eta - start[0]) == pytest.approx(0.05, rel=1e-6)
    assert solved.lam > start[1] + 0.1  # the solver's jump is larger than one step
    assert stepped.state_dict()["dual_moments"][4] == 1
    fresh = _learner(cost_limit=1.05)
    fresh.cfg = stepped.cfg
    fresh.load_state_dict(stepped.state_dict())
    assert fresh.dual_moments[2] == 1
    np.testing.assert_array_equal(fresh.dual_moments[0], stepped.dual_moments[0])


@pytest.mark.parametrize("recent, q_cost", [(0, 11.0), (2, 1.0)])
def test_estep_recent_takes_the_policy_steps_states_from_the_newest_transitions(recent, q_cost):
    """Q_c = 1 + a + s here. The update's batch holds old states s = 10; the replay's two newest
    transitions hold s = 0. With ``estep_recent`` 0 the E-step scores the batch's states (mean
    Q_c under pi_old about 11, far above the bound 1.05, so lambda runs to its cap); with 2 it
    scores the newest states only (about 1: the bound binds and holds, as at s = 0 alone)."""
    learner = _learner(cost_limit=1.05)
    learner.cfg = dataclasses.replace(learner.cfg, estep_recent=recent, dual_max=20.0)
    for target in (learner.critics, learner.target):
        with torch.no_grad():
            target.q_cost.heads[0][0].weight.copy_(torch.tensor([[1.0, 1.0]]))
    old, new = np.full((30, 1), 10.0, np.float32), np.zeros((2, 1), np.float32)
    for s in (old, new):
        z = np.zeros(len(s), np.float32)
        learner.replay.add(s, np.zeros_like(s), z, z, s, z)
    batch = {**_batch(), "obs": np.full((32, 1), 10.0, np.float32)}
    m = learner.update(batch, torch.Generator().manual_seed(0))
    assert m["q_cost"] == pytest.approx(q_cost, abs=0.05)
    if recent:
        assert m["q_cost_estep"] == pytest.approx(1.05, abs=1e-3)
        assert 0.1 < learner.multiplier < 20.0
    else:
        assert learner.multiplier == 20.0
