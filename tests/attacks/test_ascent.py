"""The shared gradient-ascent loop and the SGLD noise, tested on objectives with known optima."""

from __future__ import annotations

import math

import pytest
import torch

from robustsafe.attacks.ascent import gradient_ascent, sgld_noise
from robustsafe.attacks.config import AttackConfig


def test_sgld_noise_has_the_specified_std():
    like = torch.empty(400_000)
    lr, beta = 0.02, 250.0
    noise = sgld_noise(like, lr, beta, torch.Generator().manual_seed(0))
    expected = math.sqrt(2.0 / (beta * lr))  # = 0.632...
    assert noise.shape == like.shape
    assert abs(float(noise.std()) / expected - 1.0) < 0.01
    assert abs(float(noise.mean())) < 0.01 * expected
    again = sgld_noise(like, lr, beta, torch.Generator().manual_seed(0))
    assert torch.equal(noise, again)


def test_the_sgld_noise_moves_the_search():
    # One sign step of eps from the clean point on f(u) = u: without noise every row ends at
    # +eps. With Langevin noise of std 2 (beta = 2 / (4 lr)) the step's sign is that of
    # 1 + noise, so the rows whose draw is below -1 step to -eps, are worse than the clean
    # point and keep 0; the draws are the generator's first (no random start).
    n, eps = 400, 0.1
    obs = torch.zeros(n, 1)
    cfg = AttackConfig(steps=1, step_size=1.0, optimizer="pgd", random_start=False, sgld_beta=None)
    plain = gradient_ascent(_linear(torch.ones(1)), obs, {"obs": obs}, eps, cfg, torch.Generator())
    assert torch.equal(plain, torch.full((n, 1), eps))
    lr = cfg.step_size * eps
    noisy_cfg = AttackConfig(**{**cfg.__dict__, "sgld_beta": 2.0 / (4.0 * lr)})
    gen = torch.Generator().manual_seed(5)
    noisy = gradient_ascent(_linear(torch.ones(1)), obs, {"obs": obs}, eps, noisy_cfg, gen)
    draws = torch.randn((n, 1), generator=torch.Generator().manual_seed(5)) * 2.0
    expected = torch.where(1.0 + draws > 0, eps, 0.0)
    assert torch.equal(noisy, expected)
    assert 0.2 < float((noisy == 0).float().mean()) < 0.4  # P(N(0, 4) < -1) = 0.309


def _linear(w):
    def objective(x, ctx):
        return (x - ctx["obs"]) @ w

    return objective


# Adam moves every coordinate by about the same amount, so under l_2 it does not converge to
# the gradient's direction; pgd (normalised gradient) does.
@pytest.mark.parametrize(("optimizer", "norm"), [("pgd", "linf"), ("adam", "linf"), ("pgd", "l2")])
def test_linear_objective_reaches_the_ball_boundary(optimizer, norm):
    w = torch.tensor([2.0, -1.0, 0.5])
    obs = torch.randn(5, 3)
    cfg = AttackConfig(steps=10, step_size=0.25, optimizer=optimizer, norm=norm)
    u = gradient_ascent(_linear(w), obs, {"obs": obs}, 0.1, cfg, torch.Generator())
    best = 0.1 * (w.sign() if norm == "linf" else w / w.norm())
    assert torch.allclose(u, best.expand_as(u), atol=1e-5)


def test_concave_objective_finds_the_interior_maximum():
    target = torch.tensor([[0.03, -0.02], [-0.01, 0.04]])

    def objective(x, ctx):
        return -((x - ctx["obs"] - target) ** 2).sum(-1)

    obs = torch.zeros(2, 2)
    cfg = AttackConfig(steps=200, step_size=0.02, optimizer="adam", tol_obj=0.0)
    u = gradient_ascent(objective, obs, {"obs": obs}, 0.05, cfg, torch.Generator())
    assert torch.allclose(u, target, atol=2e-3)


def test_returns_the_best_iterate_not_the_last():
    # Sign steps of 1.5 eps bounce between the faces of the box; the objective is maximal at
    # the clean point, so the only right answer is no perturbation at all.
    def objective(x, ctx):
        return -((x - ctx["obs"]) ** 2).sum(-1)

    obs = torch.randn(6, 3)
    cfg = AttackConfig(steps=7, step_size=1.5, random_start=True, tol_obj=0.0)
    u = gradient_ascent(objective, obs, {"obs": obs}, 0.1, cfg, torch.Generator().manual_seed(1))
    assert torch.equal(u, torch.zeros_like(u))


def test_early_stopping_freezes_converged_states_only():
    sizes = []

    def objective(x, ctx):
        sizes.append(x.shape[0])
        # row 0 is flat (zero gradient: converges at once), row 1 keeps climbing a slope
        return (x - ctx["obs"])[:, 0] * ctx["slope"]

    obs = torch.zeros(2, 2)
    ctx = {"obs": obs, "slope": torch.tensor([0.0, 1.0])}
    cfg = AttackConfig(steps=8, step_size=0.01, optimizer="pgd")
    u = gradient_ascent(objective, obs, ctx, 1.0, cfg, torch.Generator())
    assert sizes[:2] == [2, 2] and set(sizes[2:]) == {1}
    assert len(sizes) == cfg.steps + 1
    assert torch.equal(u[0], torch.zeros(2))
    assert math.isclose(float(u[1, 0]), 0.08, rel_tol=1e-5)


def test_without_tolerances_every_step_runs():
    calls = []

    def objective(x, ctx):
        calls.append(x.shape[0])
        return (0.0 * x).sum(dim=-1)  # flat: every step's objective ties the last one

    obs = torch.zeros(3, 2)
    cfg = AttackConfig(steps=6, tol_obj=0.0)
    gradient_ascent(objective, obs, {"obs": obs}, 0.1, cfg, torch.Generator())
    assert calls == [3] * 7


def test_an_objective_cut_from_the_observation_is_refused():
    """A policy computed outside autograd gives no gradient: the ascent refuses, where zeros
    would report its starting points as an attack."""

    def objective(x, ctx):
        with torch.no_grad():
            return x.sum(dim=-1)

    obs = torch.zeros(3, 2)
    with pytest.raises(TypeError, match="outside autograd"):
        gradient_ascent(objective, obs, {"obs": obs}, 0.1, AttackConfig(), torch.Generator())


def test_scale_changes_the_geometry():
    # With scale, the perturbation is scale * u: a linear objective pushes u to the corner,
    # i.e. each coordinate moves by eps * scale_i.
    w = torch.tensor([1.0, 1.0])
    obs = torch.zeros(1, 2)
    scale = torch.tensor([1.0, 10.0])
    cfg = AttackConfig(steps=5, step_size=0.5)
    u = gradient_ascent(_linear(w), obs, {"obs": obs}, 0.1, cfg, torch.Generator(), scale)
    assert torch.allclose(u, torch.tensor([[0.1, 0.1]]))


def test_l2_pgd_follows_the_scaled_gradient():
    w = torch.tensor([1.0, 1.0])
    obs = torch.zeros(1, 2)
    scale = torch.tensor([1.0, 3.0])
    cfg = AttackConfig(steps=20, step_size=0.25, norm="l2")
    u = gradient_ascent(_linear(w), obs, {"obs": obs}, 1.0, cfg, torch.Generator(), scale)
    # maximise w . (scale * u) over ||u|| <= 1: u = scale * w / ||scale * w||
    expected = (scale * w) / (scale * w).norm()
    assert torch.allclose(u[0], expected, atol=1e-5)


def test_config_validation():
    for bad in (
        {"steps": -1},
        {"step_size": 0.0},
        {"optimizer": "sgd"},
        {"norm": "l1"},
        {"tol_obj": -1.0},
        {"sgld_beta": 0.0},
        {"restarts": 0},
        {"restarts": 2.0},
    ):
        with pytest.raises(ValueError):
            AttackConfig(**bad)
    with pytest.raises(AttributeError):
        AttackConfig().steps = 3  # frozen


def test_restarts_keep_each_states_best_start():
    # f(u) = -u + 30 relu(u - 0.05) on [-0.1, 0.1]: from the clean point sign steps go to the
    # local maximum u = -0.1 (f = 0.1); the global one is u = 0.1 (f = 1.4), reached only from
    # starts above 0.05. Row 0 is flat (f = 0): every start is as good as the clean point, and
    # the first start (clean, u = 0) is kept.
    def objective(x, ctx):
        u = x - ctx["obs"]
        f = -u[:, 0] + 30.0 * torch.relu(u[:, 0] - 0.05)
        return f * ctx["active"]

    obs = torch.zeros(3, 1)
    ctx = {"obs": obs, "active": torch.tensor([0.0, 1.0, 1.0])}
    one = AttackConfig(steps=10, step_size=0.25)
    u1 = gradient_ascent(objective, obs, ctx, 0.1, one, torch.Generator().manual_seed(0))
    assert torch.allclose(u1, torch.tensor([[0.0], [-0.1], [-0.1]]))
    many = AttackConfig(steps=10, step_size=0.25, restarts=12)
    u = gradient_ascent(objective, obs, ctx, 0.1, many, torch.Generator().manual_seed(0))
    assert torch.allclose(u, torch.tensor([[0.0], [0.1], [0.1]]))


def test_one_clean_start_draws_no_random_number():
    g = torch.Generator().manual_seed(3)
    state = g.get_state()
    obs = torch.randn(4, 2)
    gradient_ascent(_linear(torch.tensor([1.0, -1.0])), obs, {"obs": obs}, 0.1, AttackConfig(), g)
    assert torch.equal(g.get_state(), state)
