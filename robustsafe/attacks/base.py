"""The attacker interface shared by every attack, and the identity attacker ``none``.

An attacker is a pure function object: called as

    attacker(actor, critics, obs, epsilon, generator, scale=None) -> perturbed obs

it returns a new ``(batch, d)`` tensor, every row inside the epsilon-ball of its clean row, drawn
only from ``generator``'s randomness, and keeps nothing between calls. ``generator`` is a
``torch.Generator`` (one stream for the batch) or a ``RowGenerators`` (one stream per row: a
row's result then does not depend on the rest of its batch; see ``robustsafe.attacks.rng``).
It never changes the networks: no parameter, no ``.grad``, no train/eval mode. Observations of
another float dtype (float64: numpy's default) are cast to the actor's first, and the ball is
around that cast row, the clean input the actor sees (a float64 row's float32 copy can sit half a
float32 step, some 1e-7 at |obs| ~ 1, from it); a width other than the actor's is an error.
``actor`` is any ``robustsafe.policy.Policy``; attackers with ``needs_gradients`` refuse a
black-box one (``differentiable`` False).
"""

from __future__ import annotations

import contextlib
import math
from abc import ABC, abstractmethod

import torch
from torch import Tensor

from robustsafe.attacks.ball import apply_perturbation
from robustsafe.attacks.rng import RNG, RowGenerators
from robustsafe.critics import QCritics
from robustsafe.policy import Policy, black_box_error, policy_dtype


class Attacker(ABC):
    """Base class: input checks and the final, exact placement inside the ball.

    Subclasses set ``name``, ``needs_critics`` and ``norm`` and implement ``perturbation``, which
    returns ``u`` (the perturbation in the scaled space, rows inside the epsilon-ball).
    """

    name: str = ""
    needs_critics: bool = False
    needs_gradients: bool = True  # False: works on a black-box (non-differentiable) policy
    norm: str = "linf"

    def __call__(
        self,
        actor: Policy,
        critics: QCritics | None,
        obs: Tensor,
        epsilon: float,
        generator: RNG,
        scale: Tensor | None = None,
    ) -> Tensor:
        epsilon = self._check(critics, obs, epsilon, generator, scale)
        if self.needs_gradients and not getattr(actor, "differentiable", True):
            raise black_box_error(self.name, actor)
        obs = _as_actor_input(actor, obs)
        if epsilon == 0.0 or obs.shape[0] == 0:
            return obs.detach().clone()
        # Inference tensors cannot enter autograd; leave inference mode for this call only.
        mode = (
            torch.inference_mode(False)
            if torch.is_inference_mode_enabled()
            else contextlib.nullcontext()
        )
        with mode:
            clean = obs.detach()
            if clean.is_inference():
                clean = clean.clone()
            if scale is not None:
                scale = scale.detach().to(dtype=clean.dtype)
                if scale.is_inference():
                    scale = scale.clone()
            u = self.perturbation(actor, critics, clean, epsilon, generator, scale)
            with torch.no_grad():
                return apply_perturbation(clean, u.detach(), epsilon, self.norm, scale)

    @abstractmethod
    def perturbation(
        self,
        actor: Policy,
        critics: QCritics | None,
        obs: Tensor,
        epsilon: float,
        generator: RNG,
        scale: Tensor | None,
    ) -> Tensor:
        """The perturbation ``u`` (rows in the epsilon-ball) for a checked, detached batch."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"

    def _check(
        self,
        critics: QCritics | None,
        obs: Tensor,
        epsilon: float,
        generator: RNG,
        scale: Tensor | None,
    ) -> float:
        if not isinstance(obs, Tensor) or obs.dim() != 2 or not obs.is_floating_point():
            raise ValueError(
                f"obs must be a floating (batch, obs_dim) tensor, got "
                f"{type(obs).__name__} {getattr(obs, 'shape', '')}"
            )
        epsilon = float(epsilon)
        if not (math.isfinite(epsilon) and epsilon >= 0.0):
            raise ValueError(f"epsilon must be finite and >= 0, got {epsilon}")
        if isinstance(generator, RowGenerators):
            if len(generator) != obs.shape[0]:
                raise ValueError(
                    f"{len(generator)} row generators for a batch of {obs.shape[0]} observations"
                )
        elif not isinstance(generator, torch.Generator):
            raise TypeError(
                "generator must be a torch.Generator or a RowGenerators, "
                f"got {type(generator).__name__}"
            )
        if self.needs_critics and critics is None:
            raise ValueError(f"attacker {self.name!r} needs the agent's Q critics, got None")
        if scale is not None:
            if not isinstance(scale, Tensor) or scale.shape != (obs.shape[1],):
                raise ValueError(
                    f"scale must be a tensor of shape ({obs.shape[1]},), "
                    f"got {getattr(scale, 'shape', type(scale).__name__)}"
                )
            if not bool(torch.all(torch.isfinite(scale) & (scale > 0))):
                raise ValueError("scale must be finite and > 0 in every dimension")
        if obs.numel() and not bool(torch.isfinite(obs).all()):
            raise ValueError("obs contains NaN or infinite values")
        return epsilon


def _as_actor_input(actor: Policy, obs: Tensor) -> Tensor:
    """``obs`` in the actor's dtype (float64 observations are common: numpy's default), after
    checking its width against the policy's ``obs_dim`` when it states one."""
    width = getattr(actor, "obs_dim", None)
    if width is not None and obs.shape[1] != width:
        raise ValueError(
            f"obs has {obs.shape[1]} columns but the actor takes observations of size {width}"
        )
    dtype = policy_dtype(actor)
    if dtype is not None and obs.dtype != dtype:
        return obs.to(dtype)
    return obs


class NoAttacker(Attacker):
    """``none``: the identity (the clean observations, copied)."""

    name = "none"
    needs_gradients = False

    def perturbation(
        self,
        actor: Policy,
        critics: QCritics | None,
        obs: Tensor,
        epsilon: float,
        generator: RNG,
        scale: Tensor | None,
    ) -> Tensor:
        return torch.zeros_like(obs)
