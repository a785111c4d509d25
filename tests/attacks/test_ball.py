"""Ball math: projection, uniform sampling and the exact placement inside the ball."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from robustsafe.attacks.ball import apply_perturbation, project, sample_uniform, scaled_distance


def test_project_linf_clamps_each_coordinate():
    u = torch.tensor([[0.3, -0.05, -2.0], [0.0, 0.1, 0.09]])
    expected = torch.tensor([[0.1, -0.05, -0.1], [0.0, 0.1, 0.09]])
    assert torch.equal(project(u, 0.1, "linf"), expected)


def test_project_l2_rescales_only_rows_outside():
    u = torch.tensor([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    out = project(u, 1.0, "l2")
    assert torch.allclose(out, torch.tensor([[0.6, 0.8], [0.3, 0.4], [0.0, 0.0]]))


def test_project_rejects_unknown_norm():
    with pytest.raises(ValueError, match="norm"):
        project(torch.zeros(1, 2), 1.0, "l1")


@pytest.mark.parametrize("norm", ["linf", "l2"])
def test_sample_uniform_stays_inside_and_is_seeded(norm):
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    a = sample_uniform((500, 4), 0.2, norm, g1)
    b = sample_uniform((500, 4), 0.2, norm, g2)
    assert torch.equal(a, b)
    length = a.abs().amax(-1) if norm == "linf" else torch.linalg.vector_norm(a, dim=-1)
    assert float(length.max()) <= 0.2 + 1e-7


def test_sample_uniform_linf_fills_the_box():
    u = sample_uniform((20000, 3), 1.0, "linf", torch.Generator().manual_seed(0))
    # uniform on [-1, 1]: mean 0, variance 1/3
    assert abs(float(u.mean())) < 0.02
    assert abs(float(u.var()) - 1.0 / 3.0) < 0.01


def test_sample_uniform_l2_is_uniform_by_volume():
    d = 3
    u = sample_uniform((20000, d), 1.0, "l2", torch.Generator().manual_seed(0))
    r = torch.linalg.vector_norm(u, dim=-1)
    # P(r <= 1/2) = (1/2)^d for a uniform ball; a uniform radius would give 1/2
    assert abs(float((r <= 0.5).float().mean()) - 0.5**d) < 0.01
    # directions are uniform on the sphere: in 3-d each coordinate of a uniform direction is
    # uniform on [-1, 1] (Archimedes), so its deciles are -0.8, -0.6, ..., 0.8 in every axis
    # (directions drawn from the axes only, or from a cube's corners, would fail this)
    direction = u / r[:, None]
    deciles = torch.quantile(direction, torch.linspace(0.1, 0.9, 9, dtype=u.dtype), dim=0)
    assert torch.allclose(deciles, torch.linspace(-0.8, 0.8, 9, dtype=u.dtype)[:, None], atol=0.03)


def test_apply_perturbation_fixes_rounding_at_the_corners():
    # Large observations: obs + eps rounds to float32 and can land outside the box.
    g = torch.Generator().manual_seed(0)
    obs = (torch.rand(4000, 5, generator=g) * 2000 - 1000).float()
    eps = 1e-3
    u = torch.where(torch.rand(4000, 5, generator=g) < 0.5, -eps, eps)
    naive = obs + u
    assert float(scaled_distance(obs, naive, "linf").max()) > eps  # the problem is real
    out = apply_perturbation(obs, u, eps, "linf")
    assert float(((out.double() - obs.double()).abs()).max()) <= eps
    # and it moves by one float step only: still practically at the corner
    assert torch.allclose(out - obs, u, atol=1e-4)


def test_apply_perturbation_l2_and_scale_exact():
    g = torch.Generator().manual_seed(1)
    obs = (torch.randn(3000, 6, generator=g) * 300).float()
    scale = torch.rand(6, generator=g) * 10 + 0.01
    eps = 0.01
    u = project(torch.randn(3000, 6, generator=g), eps, "l2") * 1.0000001
    out = apply_perturbation(obs, u, eps, "l2", scale)
    dist = torch.linalg.vector_norm((out.double() - obs.double()) / scale.double(), dim=-1)
    assert float(dist.max()) <= eps
    assert torch.allclose((out - obs) / scale, u, atol=1e-3)


def test_scaled_distance_hand_computed():
    obs = torch.tensor([[1.0, 2.0]])
    out = torch.tensor([[1.5, 1.0]])
    scale = torch.tensor([0.5, 2.0])
    assert float(scaled_distance(obs, out, "linf", scale)) == 1.0
    assert math.isclose(float(scaled_distance(obs, out, "l2", scale)), math.sqrt(1.25))


@settings(max_examples=150, deadline=None)
@given(
    norm=st.sampled_from(["linf", "l2"]),
    epsilon=st.floats(1e-4, 1.0),
    magnitude=st.sampled_from([0.0, 1.0, 50.0]),
    use_scale=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
)
def test_apply_perturbation_keeps_the_perturbation(norm, epsilon, magnitude, use_scale, seed):
    # Observations right next to -delta make the sum cross zero, where float steps are tiny:
    # the perturbation must survive (a former version dropped such rows to no perturbation).
    g = torch.Generator().manual_seed(seed)
    n, d = 64, 5
    scale = torch.rand(d, generator=g) * 3 + 0.1 if use_scale else None
    u = project(torch.randn(n, d, generator=g) * epsilon * 2, epsilon, norm)
    if norm == "linf":
        u = epsilon * u.sign()  # corners, the hardest case
    delta = u if scale is None else u * scale
    obs = torch.randn(n, d, generator=g) * magnitude
    near_zero = -delta + torch.randn(n, d, generator=g) * 1e-7
    obs = torch.where(torch.rand(n, d, generator=g) < 0.5, near_zero, obs)
    out = apply_perturbation(obs, u, epsilon, norm, scale)
    assert float(scaled_distance(obs, out, norm, scale).max()) <= epsilon
    tol = 1e-6 * (obs.abs() + delta.abs() + 1.0)
    assert bool(((out - obs - delta).abs() <= tol).all())
