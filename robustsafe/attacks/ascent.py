"""Batched projected gradient ascent over perturbations: the loop every gradient attack shares.

All states of a batch are optimised together, one autograd call per iteration on the sum of the
per-state objectives (states are independent, so the gradient of the sum with respect to row i is
the gradient of objective i). The loop is stateless: each call draws its own start and builds its
own optimiser moments. It returns, for every state, the best iterate it evaluated, the clean
observation included, so an attack never ends below no attack.

Restarts (``config.restarts``) run the same loop from several starts at once, as one stacked
batch of ``restarts * batch`` rows: the first start is the clean observation (or a random point
with ``random_start``), the others are uniform draws in the ball; every state keeps the best
objective over all its starts. Every rule is per row (early stopping included), so with a
``RowGenerators`` a state's result does not depend on the other states of its batch.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from robustsafe.attacks.ball import project, sample_uniform
from robustsafe.attacks.config import AttackConfig
from robustsafe.attacks.rng import RNG, randn, select_rows, tile_rows

# objective(perturbed_obs (n, d), context rows) -> per-state values to MAXIMISE, shape (n,).
# The context holds per-state tensors (clean observations, clean action distribution, ...), each
# with n rows; the loop keeps it aligned with the states still being optimised.
Objective = Callable[[Tensor, dict[str, Tensor]], Tensor]

_ADAM_BETA1 = 0.9
_ADAM_BETA2 = 0.999
_ADAM_EPS = 1e-12  # gradients of critics w.r.t. observations can be small; keep Adam sign-like


NO_GRADIENT = (
    "a gradient attack found no gradient of the policy's action with respect to the "
    "observation: the policy computes it outside autograd (torch.no_grad, numpy, .detach), so "
    "MAD / AMAD / MC / MR cannot move it and their rows would show only their starting points. "
    "Make its forward differentiable, or attack it as a black box (random)"
)


def sgld_noise(like: Tensor, lr: float, beta: float, generator: RNG) -> Tensor:
    """Langevin noise for one gradient, ``N(0, 2 / (beta * lr))`` per entry (paper Algorithm 4).

    ``lr`` is the step size of the update the noisy gradient feeds, ``beta`` the inverse
    temperature: the larger ``beta``, the closer the search is to plain gradient ascent.
    """
    std = math.sqrt(2.0 / (beta * lr))
    noise = randn(like.shape, generator, like.dtype, like.device)
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
    generator: RNG,
    scale: Tensor | None = None,
) -> Tensor:
    """Maximise ``objective(obs + scale * u, context)`` over ``u`` in the epsilon-ball, per row.

    Returns the best ``u`` found for every row, shape ``(batch, d)``, in the scaled space, over
    ``config.restarts`` starts. Gradients are taken with ``torch.autograd.grad`` with respect to
    the perturbed observations only, so no ``.grad`` is ever written on network parameters.
    ``generator`` is a ``torch.Generator`` or a ``RowGenerators`` (see ``robustsafe.attacks.rng``).
    """
    n = obs.shape[0]
    starts = config.restarts
    random_rows = torch.full((n * starts,), config.random_start, dtype=torch.bool)
    random_rows[n:] = True  # every start after the first is a random point
    if starts == 1:
        return _ascend(objective, obs, context, epsilon, config, generator, scale, random_rows)[0]
    stacked_ctx = {key: torch.cat([value] * starts) for key, value in context.items()}
    u, f = _ascend(
        objective,
        torch.cat([obs] * starts),
        stacked_ctx,
        epsilon,
        config,
        tile_rows(generator, starts),
        scale,
        random_rows,
    )
    best = f.view(starts, n).argmax(dim=0)  # the first start among equals
    return u.view(starts, n, -1)[best, torch.arange(n, device=obs.device)]


def _ascend(
    objective: Objective,
    obs: Tensor,
    context: dict[str, Tensor],
    epsilon: float,
    config: AttackConfig,
    generator: RNG,
    scale: Tensor | None,
    random_rows: Tensor,
) -> tuple[Tensor, Tensor]:
    """One start per row (random where ``random_rows``): the best ``u`` and its objective."""
    n = obs.shape[0]
    lr = config.step_size * epsilon
    tol_delta = config.tol_delta * epsilon
    early_stop = config.tol_obj > 0 and tol_delta > 0

    result = torch.zeros_like(obs)
    result_f = torch.zeros(n, dtype=obs.dtype, device=obs.device)
    rows = torch.arange(n, device=obs.device)
    best_u = torch.zeros_like(obs)
    u = torch.zeros_like(obs)
    if bool(random_rows.any()):
        picked = random_rows.to(obs.device)
        u[picked] = sample_uniform(
            (int(picked.sum()), obs.shape[1]),
            epsilon,
            config.norm,
            select_rows(generator, random_rows),
            obs.dtype,
            obs.device,
        )
        with torch.no_grad():
            best_f = objective(obs, context)  # the clean observation is a candidate too
    else:
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
                if not f_graph.requires_grad:  # zeros would "attack" with the start alone
                    raise TypeError(NO_GRADIENT)
                (grad,) = torch.autograd.grad(f_graph.sum(), x, allow_unused=True)
                if grad is None:  # differentiable, but the action ignores the observation
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
                    result_f[rows[done]] = best_f[done]
                    keep = ~done
                    if not bool(keep.any()):
                        return result, result_f
                    rows, obs, u, grad = rows[keep], obs[keep], u[keep], grad[keep]
                    m, v, best_u, best_f, f = m[keep], v[keep], best_u[keep], best_f[keep], f[keep]
                    context = {key: value[keep] for key, value in context.items()}
                    generator = select_rows(generator, keep)

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
    result_f[rows] = best_f
    return result, result_f
