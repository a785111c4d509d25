"""The perturbation set B_p^eps(s) of the paper (section 3.1) as pure tensor functions.

A perturbation is handled in a possibly *scaled* space: ``delta = scale * u`` with ``u`` in the
epsilon-ball of the chosen norm (``scale`` is ``None`` or a positive ``(d,)`` tensor, e.g. the
std of an observation normaliser, so that epsilon is measured in normalised units). Functions
here work on ``u``, row by row: every row of a batch is its own ball.
"""

from __future__ import annotations

import torch
from torch import Tensor

_TINY = 1e-30
# Rows that need more nudges than this (never seen in practice) fall back to no perturbation.
_MAX_NUDGES = 16
# Relative margin for the l_2 check: a sum of squares is rounded, a maximum is not.
_L2_MARGIN = 1e-9


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
    generator: torch.Generator,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str = "cpu",
) -> Tensor:
    """Rows drawn uniformly (by volume) from the epsilon-ball of ``norm`` in ``d`` dimensions."""
    n, d = shape
    if norm == "linf":
        r = torch.rand(shape, generator=generator, dtype=dtype, device=device)
        return (2.0 * r - 1.0) * epsilon
    if norm == "l2":
        # A Gaussian direction is uniform on the sphere; radius eps * U^(1/d) fills the volume.
        direction = torch.randn(shape, generator=generator, dtype=dtype, device=device)
        direction = direction / torch.linalg.vector_norm(direction, dim=-1, keepdim=True).clamp_min(
            _TINY
        )
        radius = torch.rand((n, 1), generator=generator, dtype=dtype, device=device) ** (1.0 / d)
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

    Adding the perturbation rounds to the observation's precision, which can land a hair outside
    the ball (a corner of the l_inf box by half a unit in the last place). Offending coordinates
    are moved one representable value towards ``obs`` until the row passes an exact float64 test,
    so callers can rely on ``scaled_distance(obs, out) <= epsilon`` without a tolerance.
    """
    out = obs + (u if scale is None else u * scale)
    limit = epsilon if norm == "linf" else epsilon * (1.0 - _L2_MARGIN)
    for _ in range(_MAX_NUDGES):
        diff = out.double() - obs.double()
        if scale is not None:
            diff = diff / scale.double()
        if norm == "linf":
            move = diff.abs() > epsilon
        else:
            bad_rows = torch.linalg.vector_norm(diff, dim=-1) > limit
            move = bad_rows[:, None] & (diff != 0)
        if not bool(move.any()):
            return out
        out = torch.where(move, torch.nextafter(out, obs), out)
    bad = scaled_distance(obs, out, norm, scale) > limit
    return torch.where(bad[:, None], obs, out)
