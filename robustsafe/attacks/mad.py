"""MAD and AMAD: the policy-divergence attacks (paper appendix C.4 and C.6).

MAD maximises ``KL(pi(.|s) || pi(.|s~))`` with the clean distribution held fixed, by stochastic
gradient Langevin dynamics (Algorithm 4): gradient ascent whose every gradient carries Gaussian
noise of std ``sqrt(2 / (beta * lr))``. AMAD applies MAD only to the risky states, those whose
cost value ``Q_c(s, mu(s))`` is at or above a threshold set from natural episodes (Algorithm 6).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from robustsafe.attacks.ascent import gradient_ascent
from robustsafe.attacks.base import Attacker, _as_actor_input
from robustsafe.attacks.config import MAD_DEFAULTS, AttackConfig
from robustsafe.attacks.rng import RNG, select_rows
from robustsafe.critics import QCritics
from robustsafe.policy import Policy

_CHUNK = 65536


def gaussian_kl(loc0: Tensor, std0: Tensor, loc1: Tensor, std1: Tensor) -> Tensor:
    """KL(N(loc0, std0^2) || N(loc1, std1^2)) of diagonal Gaussians, summed over the last dim."""
    ratio = (std0 / std1) ** 2
    return 0.5 * (ratio + ((loc1 - loc0) / std1) ** 2 - 1.0 - ratio.log()).sum(dim=-1)


class MADAttacker(Attacker):
    """Maximal Action Difference: push pi(.|s~) away from pi(.|s) in KL."""

    name = "mad"
    needs_critics = False

    def __init__(self, config: AttackConfig = MAD_DEFAULTS) -> None:
        self.config = config
        self.norm = config.norm

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
            clean = actor.distribution(obs)
            context = {"loc": clean.loc.detach(), "std": clean.scale.detach()}

        def objective(x: Tensor, ctx: dict[str, Tensor]) -> Tensor:
            adv = actor.distribution(x)
            return gaussian_kl(ctx["loc"], ctx["std"], adv.loc, adv.scale)

        return gradient_ascent(objective, obs, context, epsilon, self.config, generator, scale)


@torch.no_grad()
def cost_values(actor: Policy, critics: QCritics, obs: Tensor) -> Tensor:
    """``Q_c(s, mu(s))`` per observation, shape ``(batch,)``, computed in chunks."""
    parts = [
        critics.q_cost(chunk, actor.deterministic_action(chunk))
        for chunk in obs.split(_CHUNK, dim=0)
    ]
    return torch.cat(parts) if parts else obs.new_zeros(0)


def amad_threshold(actor: Policy, critics: QCritics, natural_obs: Tensor, xi: float = 0.1) -> float:
    """AMAD's threshold: the (1 - xi) quantile of ``Q_c(s, mu(s))`` over natural observations.

    ``natural_obs`` are observations met in unattacked episodes, shape ``(n, obs_dim)``. The
    quantile interpolates linearly between order statistics (numpy's default), so of ``n``
    distinct values, ``n - ceil((1 - xi) (n - 1))`` are at or above it: 10 of 100 for xi = 0.1.
    """
    if not 0.0 <= xi <= 1.0:
        raise ValueError(f"xi must be in [0, 1], got {xi}")
    if critics is None:
        raise ValueError("amad_threshold needs the agent's Q critics (Q_c), got None")
    natural_obs = torch.as_tensor(natural_obs)  # numpy too, as the attackers take it
    if natural_obs.dim() != 2 or natural_obs.shape[0] == 0:
        raise ValueError(
            f"natural_obs must be a non-empty (n, obs_dim) tensor, got {tuple(natural_obs.shape)}"
        )
    natural_obs = _as_actor_input(actor, natural_obs)  # width checked, the actor's dtype
    values = cost_values(actor, critics, natural_obs).double()
    return float(torch.quantile(values, 1.0 - xi))


class AMADAttacker(Attacker):
    """Adaptive MAD: MAD on the states with ``Q_c(s, mu(s)) >= threshold``; others untouched."""

    name = "amad"
    needs_critics = True

    def __init__(self, threshold: float, config: AttackConfig = MAD_DEFAULTS) -> None:
        threshold = float(threshold)
        if math.isnan(threshold):
            raise ValueError("threshold must not be NaN")
        self.threshold = threshold
        self.config = config
        self.norm = config.norm
        self._mad = MADAttacker(config)

    def risky(self, actor: Policy, critics: QCritics, obs: Tensor) -> Tensor:
        """Boolean mask of the states AMAD attacks, shape ``(batch,)``."""
        return cost_values(actor, critics, obs).double() >= self.threshold

    def perturbation(
        self,
        actor: Policy,
        critics: QCritics | None,
        obs: Tensor,
        epsilon: float,
        generator: RNG,
        scale: Tensor | None,
    ) -> Tensor:
        mask = self.risky(actor, critics, obs)
        u = torch.zeros_like(obs)
        if bool(mask.any()):
            u[mask] = self._mad.perturbation(
                actor, critics, obs[mask], epsilon, select_rows(generator, mask), scale
            )
        return u
