"""The perturbation set B_p^eps(s) of the paper (section 3.2) as pure tensor functions.

A perturbation is handled in a possibly *scaled* space: ``delta = scale * u`` with ``u`` in the
epsilon-ball of the chosen norm (``scale`` is ``None`` or a positive ``(d,)`` tensor, e.g. the
std of an observation normaliser, so that epsilon is measured in normalised units). Functions
here work on ``u``, row by row: every row of a batch is its own ball.
"""

from __future__ import annotations

import torch
from torch import Tensor

from robustsafe.attacks.rng import RNG, rand, randn

_TINY = 1e-30
# Relative shrinkage of the ball before rounding (see apply_perturbation): about one float32 ulp.
_MARGIN = 1e-7


def project(u: Tensor, epsilon: float, norm: str) -> Tensor:
    """Euclidean projection of each row of ``u`` onto the ball {||u||_norm <= epsilon}."""
    if norm == "linf":
        return u.clamp(-epsilon, epsilon)
    if norm == "l2":
        length = torch.linalg.vector_norm(u, dim=-1, keepdim=True)
        return u * (epsilon / length.clamp_min(_TINY)).clamp(max=1.0)
    raise ValueError(f"unknown norm {norm!r}")


def sample_uniform(
    shape: tuple[int, int],
    epsilon: float,
    norm: str,
    generator: RNG,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str = "cpu",
) -> Tensor:
    """Rows drawn uniformly (by volume) from the epsilon-ball of ``norm`` in ``d`` dimensions.

    ``generator`` is a ``torch.Generator`` or a ``RowGenerators`` (one per row).
    """
    n, d = shape
    if norm == "linf":
        r = rand(shape, generator, dtype, device)
        return (2.0 * r - 1.0) * epsilon
    if norm == "l2":
        # A Gaussian direction is uniform on the sphere; radius eps * U^(1/d) fills the volume.
        direction = randn(shape, generator, dtype, device)
        direction = direction / torch.linalg.vector_norm(direction, dim=-1, keepdim=True).clamp_min(
            _TINY
        )
        radius = rand((n, 1), generator, dtype, device) ** (1.0 / d)
        return direction * radius * epsilon
    raise ValueError(f"unknown norm {norm!r}")


def scaled_distance(obs: Tensor, out: Tensor, norm: str, scale: Tensor | None = None) -> Tensor:
    """``|| (out - obs) / scale ||_norm`` per row, computed in float64: shape ``(batch,)``."""
    diff = out.double() - obs.double()
    if scale is not None:
        diff = diff / scale.double()
    if norm == "linf":
        return diff.abs().amax(dim=-1)
    return torch.linalg.vector_norm(diff, dim=-1)


def apply_perturbation(
    obs: Tensor, u: Tensor, epsilon: float, norm: str, scale: Tensor | None = None
) -> Tensor:
    """``obs + scale * u``, guaranteed inside the ball despite float rounding.

    ``obs + delta`` rounded to the observation's precision can land a hair outside the ball:
    float32(0.05) is itself larger than 0.05, and a sum is rounded to the nearest float. So the
    perturbation is projected in float64 onto a ball shrunk by a relative ``_MARGIN`` (far below
    anything an attack can notice), and every coordinate of the sum is rounded TOWARDS ``obs``
    instead of to the nearest float. No coordinate then moves further than the float64
    perturbation asks, and callers can rely on ``scaled_distance(obs, out) <= epsilon`` with no
    tolerance. Rows that still fail that exact test (only conceivable when ``|obs|`` is some
    1e9 times epsilon) are returned unperturbed.
    """
    obs64 = obs.double()
    scale64 = None if scale is None else scale.double()
    u64 = project(u.double(), epsilon * (1.0 - _MARGIN), norm)
    delta64 = u64 if scale64 is None else u64 * scale64
    out = (obs64 + delta64).to(obs.dtype)
    overshoot = (out.double() - obs64).abs() > delta64.abs()
    out = torch.where(overshoot, torch.nextafter(out, obs), out)
    bad = scaled_distance(obs, out, norm, scale) > epsilon
    if bool(bad.any()):
        out = torch.where(bad[:, None], obs, out)
    return out
