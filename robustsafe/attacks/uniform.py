"""The ``random`` attacker: a perturbation drawn uniformly from the ball (paper section 5.1)."""

from __future__ import annotations

import torch
from torch import Tensor

from robustsafe.attacks.ball import sample_uniform
from robustsafe.attacks.base import Attacker
from robustsafe.attacks.config import NORMS
from robustsafe.attacks.rng import RNG
from robustsafe.critics import QCritics
from robustsafe.policy import Policy


class RandomAttacker(Attacker):
    """Uniform noise in the epsilon-ball: the l_inf box, or the l_2 ball by volume."""

    name = "random"
    needs_gradients = False

    def __init__(self, norm: str = "linf") -> None:
        if norm not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
        self.norm = norm

    def perturbation(
        self,
        actor: Policy,
        critics: QCritics | None,
        obs: Tensor,
        epsilon: float,
        generator: RNG,
        scale: Tensor | None,
    ) -> Tensor:
        with torch.no_grad():
            return sample_uniform(obs.shape, epsilon, self.norm, generator, obs.dtype, obs.device)
