"""Observational attacks on a safe-RL agent (paper section 3.3 and appendix C).

Every attacker is called as ``attacker(actor, critics, obs, epsilon, generator, scale=None)`` and
returns the perturbed ``(batch, obs_dim)`` observations; build one by name with
``make_attacker``. ``generator`` is a ``torch.Generator`` or a ``RowGenerators`` (one random
stream per row, so that a row's result does not depend on its batch).
"""

from robustsafe.attacks.ascent import gradient_ascent, sgld_noise
from robustsafe.attacks.ball import apply_perturbation, project, sample_uniform, scaled_distance
from robustsafe.attacks.base import Attacker, NoAttacker
from robustsafe.attacks.config import (
    CRITIC_ATTACK_DEFAULTS,
    MAD_DEFAULTS,
    NORMS,
    OPTIMIZERS,
    AttackConfig,
)
from robustsafe.attacks.critic_attacks import (
    CriticAttacker,
    critic_objective,
    max_cost_attack,
    max_reward_attack,
    min_reward_attack,
    mixed_attack,
)
from robustsafe.attacks.mad import (
    AMADAttacker,
    MADAttacker,
    amad_threshold,
    cost_values,
    gaussian_kl,
)
from robustsafe.attacks.registry import (
    ATTACKER_NAMES,
    default_config,
    make_attacker,
    register_attacker,
    registered_attackers,
)
from robustsafe.attacks.rng import RowGenerators, episode_generator
from robustsafe.attacks.uniform import RandomAttacker

__all__ = [
    "AMADAttacker",
    "ATTACKER_NAMES",
    "AttackConfig",
    "Attacker",
    "CRITIC_ATTACK_DEFAULTS",
    "CriticAttacker",
    "MADAttacker",
    "MAD_DEFAULTS",
    "NORMS",
    "NoAttacker",
    "OPTIMIZERS",
    "RandomAttacker",
    "RowGenerators",
    "amad_threshold",
    "apply_perturbation",
    "cost_values",
    "critic_objective",
    "default_config",
    "episode_generator",
    "gaussian_kl",
    "gradient_ascent",
    "make_attacker",
    "max_cost_attack",
    "max_reward_attack",
    "min_reward_attack",
    "mixed_attack",
    "project",
    "register_attacker",
    "registered_attackers",
    "sample_uniform",
    "scaled_distance",
    "sgld_noise",
]
