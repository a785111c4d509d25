"""Batched projected gradient ascent over perturbations: the loop every gradient attack shares.

All states of a batch are optimised together, one autograd call per iteration on the sum of the
per-state objectives (states are independent, so the gradient of the sum with respect to row i is
the gradient of objective i). The loop is stateless: each call draws its own start and builds its
own optimiser moments. It returns, for every state, the best iterate it evaluated, the clean
observation included, so an attack never ends below no attack.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from robustsafe.attacks.ball import project, sample_uniform
from robustsafe.attacks.config import AttackConfig

# objective(perturbed_obs (n, d), context rows) -> per-state values to MAXIMISE, shape (n,).
# The context holds per-state tensors (clean observations, clean action distribution, ...), each
# with n rows; the loop keeps it aligned with the states still being optimised.
Objective = Callable[[Tensor, dict[str, Tensor]], Tensor]

_ADAM_BETA1 = 0.9
_ADAM_BETA2 = 0.999
_ADAM_EPS = 1e-12  # gradients of critics w.r.t. observations can be small; keep Adam sign-like


def sgld_noise(like: Tensor, lr: float, beta: float, generator: torch.Generator) -> Tensor:
    """Langevin noise for one gradient, ``N(0, 2 / (beta * lr))`` per entry (paper Algorithm 4).

    ``lr`` is the step size of the update the noisy gradient feeds, ``beta`` the inverse
    temperature: the larger ``beta``, the closer the search is to plain gradient ascent.
    """
    std = math.sqrt(2.0 / (beta * lr))
    noise = torch.randn(like.shape, generator=generator, dtype=like.dtype, device=like.device)
    return noise * std


def _pgd_direction(grad: Tensor, norm: str) -> Tensor:
    """Steepest-ascent direction of unit length in ``norm``: sign for l_inf, g/||g|| for l_2."""
    if norm == "linf":
        return grad.sign()
    length = torch.linalg.vector_norm(grad, dim=-1, keepdim=True)
    return torch.where(length > 0, grad / length.clamp_min(1e-30), torch.zeros_like(grad))


def gradient_ascent(
    objective: Objective,
    obs: Tensor,
    context: dict[str, Tensor],
    epsilon: float,
    config: AttackConfig,
    generator: torch.Generator,
    scale: Tensor | None = None,
) -> Tensor:
    """Maximise ``objective(obs + scale * u, context)`` over ``u`` in the epsilon-ball, per row.

    Returns the best ``u`` found for every row, shape ``(batch, d)``, in the scaled space.
    Gradients are taken with ``torch.autograd.grad`` with respect to the perturbed observations
    only, so no ``.grad`` is ever written on network parameters.
    """
    n = obs.shape[0]
    lr = config.step_size * epsilon
    tol_delta = config.tol_delta * epsilon
    early_stop = config.tol_obj > 0 and tol_delta > 0

    result = torch.zeros_like(obs)
    rows = torch.arange(n, device=obs.device)
    best_u = torch.zeros_like(obs)
    if config.random_start:
        u = sample_uniform(obs.shape, epsilon, config.norm, generator, obs.dtype, obs.device)
        with torch.no_grad():
            best_f = objective(obs, context)  # the clean observation is a candidate too
    else:
        u = torch.zeros_like(obs)
        best_f = torch.full((n,), -math.inf, dtype=obs.dtype, device=obs.device)
    m = torch.zeros_like(obs)
    v = torch.zeros_like(obs)
    f_prev: Tensor | None = None
    u_prev: Tensor | None = None

    with torch.enable_grad():
        for k in range(config.steps + 1):
            x = obs + (u if scale is None else u * scale)
            if k == config.steps:
                with torch.no_grad():
                    f = objective(x, context)
            else:
                x.requires_grad_(True)
                f_graph = objective(x, context)
                if f_graph.requires_grad:
                    (grad,) = torch.autograd.grad(f_graph.sum(), x, allow_unused=True)
                else:  # an objective that ignores the observation
                    grad = None
                if grad is None:
                    grad = torch.zeros_like(x)
                f = f_graph.detach()
                del f_graph, x

            better = f > best_f
            best_f = torch.where(better, f, best_f)
            best_u = torch.where(better[:, None], u, best_u)
            if k == config.steps:
                break

            if early_stop and f_prev is not None:
                done = ((f - f_prev).abs() < config.tol_obj) & (
                    (u - u_prev).abs().amax(dim=-1) < tol_delta
                )
                if bool(done.any()):
                    result[rows[done]] = best_u[done]
                    keep = ~done
                    if not bool(keep.any()):
                        return result
                    rows, obs, u, grad = rows[keep], obs[keep], u[keep], grad[keep]
                    m, v, best_u, best_f, f = m[keep], v[keep], best_u[keep], best_f[keep], f[keep]
                    context = {key: value[keep] for key, value in context.items()}

            if scale is not None:
                grad = grad * scale  # d objective / d u
            if config.sgld_beta is not None:
                grad = grad + sgld_noise(grad, lr, config.sgld_beta, generator)

            u_prev, f_prev = u, f
            if config.optimizer == "pgd":
                u = u + lr * _pgd_direction(grad, config.norm)
            else:
                t = k + 1
                m = _ADAM_BETA1 * m + (1.0 - _ADAM_BETA1) * grad
                v = _ADAM_BETA2 * v + (1.0 - _ADAM_BETA2) * grad * grad
                m_hat = m / (1.0 - _ADAM_BETA1**t)
                v_hat = v / (1.0 - _ADAM_BETA2**t)
                u = u + lr * m_hat / (v_hat.sqrt() + _ADAM_EPS)
            u = project(u, epsilon, config.norm)

    result[rows] = best_u
    return result
