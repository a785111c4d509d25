"""Critic attacks: MC, MR, minimum reward and their mix (paper section 3.3, appendix C.1).

Each maximises ``w_c Q_c(s, mu(s~)) + w_r Q_r(s, mu(s~))`` over s~ in the ball around s, with the
critics evaluated at the CLEAN state s and mu the agent's deterministic action, the one it
executes when evaluated (the paper's mean action, or E[clip(a)] under the default
``deterministic_action: expected``; docs/deviations.md). The paper differentiates
``Q(s0, pi(s^k))`` rather than ``Q(s^k, pi(s^k))`` because the critics generalise poorly to
states they never saw. MC is (1, 0), MR (0, 1), minimum reward (0, -1), ``mix:W`` (W, 1 - W).
"""

from __future__ import annotations

import math

from torch import Tensor

from robustsafe.attacks.ascent import gradient_ascent
from robustsafe.attacks.base import Attacker
from robustsafe.attacks.config import CRITIC_ATTACK_DEFAULTS, AttackConfig
from robustsafe.attacks.rng import RNG
from robustsafe.critics import ATTACKER_COST_SCALE, QCritics
from robustsafe.policy import Policy


def critic_objective(
    actor: Policy,
    critics: QCritics,
    clean_obs: Tensor,
    perturbed_obs: Tensor,
    cost_weight: float,
    reward_weight: float,
) -> Tensor:
    """``w_c Q_c(s, mu(s~)) + w_r Q_r(s, mu(s~))`` per state, shape ``(batch,)``.

    A critic whose weight is zero is not evaluated, so ``mix:1`` computes exactly what ``mc``
    computes (and ``mix:0`` what ``mr`` computes). In a sum of both, Q_c is read in the
    attackers' critics' units (costs / 5, the original code's): an off-policy learner's own
    critics (raw costs) are scaled to them, so W weighs the same on every agent.
    """
    action = actor.deterministic_action(perturbed_obs)
    value: Tensor | None = None
    if cost_weight != 0.0:
        value = cost_weight * critics.q_cost(clean_obs, action)
        if reward_weight != 0.0:  # a sum: Q_c in the attackers' units (x 1.0 is exact)
            value = value * (critics.cost_scale / ATTACKER_COST_SCALE)
    if reward_weight != 0.0:
        term = reward_weight * critics.q_reward(clean_obs, action)
        value = term if value is None else value + term
    assert value is not None  # the constructor rejects (0, 0)
    return value


class CriticAttacker(Attacker):
    """Maximise a weighted sum of the agent's own Q critics over the ball."""

    needs_critics = True

    def __init__(
        self,
        name: str,
        cost_weight: float,
        reward_weight: float,
        config: AttackConfig = CRITIC_ATTACK_DEFAULTS,
    ) -> None:
        if not (math.isfinite(cost_weight) and math.isfinite(reward_weight)):
            raise ValueError("critic weights must be finite")
        if cost_weight == 0.0 and reward_weight == 0.0:
            raise ValueError("at least one critic weight must be non-zero")
        self.name = name
        self.cost_weight = float(cost_weight)
        self.reward_weight = float(reward_weight)
        self.config = config
        self.norm = config.norm

    def objective(self, actor: Policy, critics: QCritics, clean_obs, perturbed_obs):
        """The attack objective of each state (what the attack maximises)."""
        return critic_objective(
            actor, critics, clean_obs, perturbed_obs, self.cost_weight, self.reward_weight
        )

    def perturbation(
        self,
        actor: Policy,
        critics: QCritics | None,
        obs: Tensor,
        epsilon: float,
        generator: RNG,
        scale: Tensor | None,
    ) -> Tensor:
        def objective(x: Tensor, ctx: dict[str, Tensor]) -> Tensor:
            return self.objective(actor, critics, ctx["obs"], x)

        return gradient_ascent(objective, obs, {"obs": obs}, epsilon, self.config, generator, scale)


def max_cost_attack(config: AttackConfig = CRITIC_ATTACK_DEFAULTS) -> CriticAttacker:
    """MC: maximise Q_c(s, mu(s~))."""
    return CriticAttacker("mc", 1.0, 0.0, config)


def max_reward_attack(config: AttackConfig = CRITIC_ATTACK_DEFAULTS) -> CriticAttacker:
    """MR: maximise Q_r(s, mu(s~))."""
    return CriticAttacker("mr", 0.0, 1.0, config)


def min_reward_attack(config: AttackConfig = CRITIC_ATTACK_DEFAULTS) -> CriticAttacker:
    """Minimum reward: minimise Q_r(s, mu(s~))."""
    return CriticAttacker("minr", 0.0, -1.0, config)


def mixed_attack(weight: float, config: AttackConfig = CRITIC_ATTACK_DEFAULTS) -> CriticAttacker:
    """``mix:W``: maximise W Q_c + (1 - W) Q_r, W in [0, 1]."""
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"mix weight must be in [0, 1], got {weight}")
    return CriticAttacker(f"mix:{weight:g}", weight, 1.0 - weight, config)
