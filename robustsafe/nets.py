"""Networks: the Gaussian actors (PPO's and SAC's squashed one), the value critics V_r / V_c
and the attackers' Q critics.

All modules take and return batched float32 tensors: observations are ``(batch, obs_dim)``,
actions ``(batch, act_dim)``; values are ``(batch,)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn
from torch.distributions import Normal

from robustsafe.choices import DETERMINISTIC_ACTIONS


class ObsNormalizer(nn.Module):
    """Running mean / variance of observations, applied as ``clip((obs - mean) / std)``.

    Shared by reference between the actor and the critics of one agent so that every network
    takes RAW observations; attackers therefore perturb raw observations by default. The
    statistics change only through ``update`` (training rollouts) and are saved with the agent,
    frozen at evaluation.
    """

    mean: torch.Tensor  # buffers (register_buffer below)
    var: torch.Tensor
    count: torch.Tensor

    def __init__(self, obs_dim: int, clip: float = 10.0, eps: float = 1e-8) -> None:
        super().__init__()
        self.clip = clip
        self.eps = eps
        self.register_buffer("mean", torch.zeros(obs_dim, dtype=torch.float64))
        self.register_buffer("var", torch.ones(obs_dim, dtype=torch.float64))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))

    @torch.no_grad()
    def update(self, batch: torch.Tensor) -> None:
        """Merge a batch's moments into the running moments (Chan et al.'s parallel formula)."""
        b = batch.reshape(-1, batch.shape[-1]).to(torch.float64)
        n = b.shape[0]
        if n == 0:
            return
        b_mean = b.mean(0)
        b_var = b.var(0, unbiased=False)
        total = self.count + n
        delta = b_mean - self.mean
        self.mean += delta * n / total
        m2 = self.var * self.count + b_var * n + delta**2 * self.count * n / total
        self.var.copy_(m2 / total)
        self.count.copy_(total)

    @property
    def std(self) -> torch.Tensor:
        return torch.sqrt(self.var + self.eps).to(torch.float32)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        z = (obs - self.mean.to(obs.dtype)) / self.std.to(obs.dtype)
        return z.clamp(-self.clip, self.clip)


def _prepare(normalizer: ObsNormalizer | None, obs: torch.Tensor) -> torch.Tensor:
    return obs if normalizer is None else normalizer(obs)


def all_finite(module: nn.Module) -> bool:
    """Whether every parameter of ``module``, and the statistics of any observation normaliser
    in it, are finite (no NaN, no inf; action bounds, also buffers, may be infinite)."""
    stats = [t for m in module.modules() if isinstance(m, ObsNormalizer) for t in (m.mean, m.var)]
    return all(bool(torch.isfinite(t).all()) for t in (*module.parameters(), *stats))


def mlp(in_dim: int, hidden: Sequence[int], out_dim: int) -> nn.Sequential:
    """A ReLU multilayer perceptron with a linear output layer."""
    layers: list[nn.Module] = []
    last = in_dim
    for width in hidden:
        layers += [nn.Linear(last, width), nn.ReLU()]
        last = width
    layers.append(nn.Linear(last, out_dim))
    return nn.Sequential(*layers)


def mlp_in_features(net: nn.Sequential) -> int:
    """The input width of a network built by ``mlp`` (its first layer's)."""
    first = net[0]
    if not isinstance(first, nn.Linear):
        raise TypeError(f"expected an mlp starting with nn.Linear, got {type(first).__name__}")
    return first.in_features


def expected_clipped_action(
    mean: torch.Tensor, std: torch.Tensor, low: torch.Tensor, high: torch.Tensor
) -> torch.Tensor:
    """E[clip(a, low, high)] for a ~ N(mean, std^2), per dimension (pure, differentiable).

    With alpha = (low - mean) / std, beta = (high - mean) / std, Phi / phi the standard normal
    cdf / pdf:  low Phi(alpha) + high (1 - Phi(beta)) + mean (Phi(beta) - Phi(alpha))
    + std (phi(alpha) - phi(beta)).
    """
    unit = Normal(torch.zeros((), dtype=mean.dtype), torch.ones((), dtype=mean.dtype))
    alpha, beta = (low - mean) / std, (high - mean) / std
    cdf_a, cdf_b = unit.cdf(alpha), unit.cdf(beta)
    pdf_a, pdf_b = unit.log_prob(alpha).exp(), unit.log_prob(beta).exp()
    return low * cdf_a + high * (1 - cdf_b) + mean * (cdf_b - cdf_a) + std * (pdf_a - pdf_b)


class GaussianActor(nn.Module):
    """Gaussian policy with a state-independent log-std (paper, appendix C.7).

    The mean is squashed into the action box, ``low + (high - low) * sigmoid(MLP(obs))``.

    The deterministic action (evaluation, attackers) is by default the EXPECTED EXECUTED action
    E[clip(a)] of the stochastic policy, not its mean: Bullet-Safety-Gym 1.4.0 clips actions
    to [-1, 1] (the paper's copy did not clip Car actions), so where the mean saturates at a
    bound the trained stochastic policy executes less than it (CarCircle's throttle: mean 1.0,
    executed 0.89 on average) and the mean action drives faster than the policy the Lagrangian
    constrained. ``deterministic="mean"`` gives the mean (the paper's protocol text).

    It satisfies ``robustsafe.policy.Policy``.
    """

    differentiable = True
    act_low: torch.Tensor  # buffers (register_buffer below)
    act_high: torch.Tensor

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        hidden: Sequence[int] = (128, 128),
        act_low: float = -1.0,
        act_high: float = 1.0,
        init_log_std: float = -0.5,
        obs_normalizer: ObsNormalizer | None = None,
        deterministic: str = "expected",
    ) -> None:
        super().__init__()
        if deterministic not in DETERMINISTIC_ACTIONS:
            raise ValueError(
                f"deterministic must be one of {DETERMINISTIC_ACTIONS}, got {deterministic!r}"
            )
        self.deterministic = deterministic
        self.obs_normalizer = obs_normalizer
        self.net = mlp(obs_dim, hidden, act_dim)
        self.log_std = nn.Parameter(torch.full((act_dim,), float(init_log_std)))
        self.register_buffer("act_low", torch.full((act_dim,), float(act_low)))
        self.register_buffer("act_high", torch.full((act_dim,), float(act_high)))

    @property
    def obs_dim(self) -> int:
        return mlp_in_features(self.net)

    @property
    def act_dim(self) -> int:
        return int(self.log_std.shape[0])

    def mean_action(self, obs: torch.Tensor) -> torch.Tensor:
        """The deterministic action mu(s), differentiable with respect to ``obs``."""
        return self.act_low + (self.act_high - self.act_low) * torch.sigmoid(
            self.net(_prepare(self.obs_normalizer, obs))
        )

    def deterministic_action(self, obs: torch.Tensor) -> torch.Tensor:
        """The action of the deterministic policy (see the class docstring), differentiable."""
        mean = self.mean_action(obs)
        if self.deterministic == "mean":
            return mean
        std = self.log_std.exp().to(mean.dtype)
        low, high = self.act_low.to(mean.dtype), self.act_high.to(mean.dtype)
        return expected_clipped_action(mean, std, low, high)

    def distribution(self, obs: torch.Tensor) -> Normal:
        """pi(.|s) as a diagonal Gaussian."""
        return Normal(self.mean_action(obs), self.log_std.exp().expand(obs.shape[0], -1))

    def log_prob(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        """log pi(a|s), summed over action dimensions: shape ``(batch,)``."""
        return self.distribution(obs).log_prob(act).sum(-1)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.deterministic_action(obs)


def tanh_log_det(u: torch.Tensor) -> torch.Tensor:
    """log(1 - tanh(u)^2) per element, in the stable form 2 (log 2 - u - softplus(-2u)).

    The change of variables a = tanh(u) gives log pi(a|s) = log N(u; mu, sigma) - sum_i
    log(1 - tanh(u_i)^2) (Haarnoja et al. 2018, SAC, appendix C).
    """
    return 2.0 * (math.log(2.0) - u - nn.functional.softplus(-2.0 * u))


LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0


class SquashedGaussianActor(nn.Module):
    """SAC's policy: a Gaussian with a state-dependent std, squashed by tanh into the box.

    a = low + (high - low) (tanh(u) + 1) / 2, u ~ N(mu(s), sigma(s)^2); one MLP gives mu and
    log sigma (clamped to [-20, 2]). The deterministic action (evaluation, attackers) is the
    squashed mean, ``low + (high - low) (tanh(mu) + 1) / 2``; ``distribution`` is the
    pre-tanh Gaussian N(mu, sigma), the one MAD's KL is computed on (the KL of two squashed
    Gaussians equals that of their pre-tanh Gaussians, tanh being a bijection).
    """

    act_low: torch.Tensor  # buffers (register_buffer below)
    act_high: torch.Tensor

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        hidden: Sequence[int] = (128, 128),
        act_low: float = -1.0,
        act_high: float = 1.0,
        obs_normalizer: ObsNormalizer | None = None,
    ) -> None:
        super().__init__()
        self.obs_normalizer = obs_normalizer
        self.net = mlp(obs_dim, hidden, 2 * act_dim)
        self.register_buffer("act_low", torch.full((act_dim,), float(act_low)))
        self.register_buffer("act_high", torch.full((act_dim,), float(act_high)))

    differentiable = True  # robustsafe.policy.Policy

    @property
    def obs_dim(self) -> int:
        return mlp_in_features(self.net)

    @property
    def act_dim(self) -> int:
        return int(self.act_low.shape[0])

    def gaussian(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(mu, log sigma) of the pre-tanh Gaussian."""
        mu, log_std = self.net(_prepare(self.obs_normalizer, obs)).chunk(2, dim=-1)
        return mu, log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)

    def squash(self, u: torch.Tensor) -> torch.Tensor:
        return self.act_low + (self.act_high - self.act_low) * (torch.tanh(u) + 1.0) / 2.0

    def _log_prob_u(self, u: torch.Tensor, mu: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
        """log pi(squash(u)|s), summed over action dimensions (the box scaling included)."""
        gauss = Normal(mu, log_std.exp()).log_prob(u)
        scale = torch.log((self.act_high - self.act_low) / 2.0)
        return (gauss - tanh_log_det(u) - scale).sum(-1)

    def mean_action(self, obs: torch.Tensor) -> torch.Tensor:
        """The squashed mean, differentiable with respect to ``obs``."""
        return self.squash(self.gaussian(obs)[0])

    def deterministic_action(self, obs: torch.Tensor) -> torch.Tensor:
        return self.mean_action(obs)

    def distribution(self, obs: torch.Tensor) -> Normal:
        """The pre-tanh Gaussian N(mu(s), sigma(s)^2) (for MAD's KL)."""
        mu, log_std = self.gaussian(obs)
        return Normal(mu, log_std.exp())

    def sample(
        self, obs: torch.Tensor, generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """A reparameterised action (differentiable in the parameters) and its log-probability,
        the noise drawn from ``generator`` (reproducible)."""
        mu, log_std = self.gaussian(obs)
        noise = torch.randn(mu.shape, generator=generator, dtype=mu.dtype)
        u = mu + log_std.exp() * noise
        return self.squash(u), self._log_prob_u(u, mu, log_std)

    def log_prob(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        """log pi(a|s) of actions inside the box (clamped off its edges), shape ``(batch,)``."""
        mu, log_std = self.gaussian(obs)
        y = 2.0 * (act - self.act_low) / (self.act_high - self.act_low) - 1.0
        u = torch.atanh(y.clamp(-1.0 + 1e-6, 1.0 - 1e-6))
        return self._log_prob_u(u, mu, log_std)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.deterministic_action(obs)


# the policy a learner trains: GaussianActor (on-policy), SquashedGaussianActor (off-policy)
Actor = GaussianActor | SquashedGaussianActor


class ValueCritic(nn.Module):
    """State value V(s) for the reward or the cost."""

    def __init__(
        self,
        obs_dim: int,
        hidden: Sequence[int] = (128, 128),
        obs_normalizer: ObsNormalizer | None = None,
    ) -> None:
        super().__init__()
        self.obs_normalizer = obs_normalizer
        self.net = mlp(obs_dim, hidden, 1)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(_prepare(self.obs_normalizer, obs)).squeeze(-1)


class QCritic(nn.Module):
    """State-action value Q(s, a) with ``n_heads`` independent heads, reduced by the minimum.

    Two heads (clipped double Q) for the reward critic Q_r, one for the cost critic Q_c, as in
    the authors' implementation.
    """

    heads: nn.ModuleList  # of mlp(...) networks, nn.Sequential each

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        hidden: Sequence[int] = (128, 128),
        n_heads: int = 1,
        obs_normalizer: ObsNormalizer | None = None,
    ) -> None:
        super().__init__()
        self.obs_normalizer = obs_normalizer
        if n_heads < 1:
            raise ValueError(f"n_heads must be >= 1, got {n_heads}")
        self.heads = nn.ModuleList(mlp(obs_dim + act_dim, hidden, 1) for _ in range(n_heads))

    def all_heads(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        """Every head's value: shape ``(n_heads, batch)``."""
        x = torch.cat([_prepare(self.obs_normalizer, obs), act], dim=-1)
        return torch.stack([h(x).squeeze(-1) for h in self.heads])

    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        return self.all_heads(obs, act).min(dim=0).values
