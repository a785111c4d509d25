"""Attackers by name: the strings the command line and the configs use."""

from __future__ import annotations

import dataclasses

from robustsafe.attacks.base import Attacker, NoAttacker
from robustsafe.attacks.config import CRITIC_ATTACK_DEFAULTS, MAD_DEFAULTS, AttackConfig
from robustsafe.attacks.critic_attacks import (
    max_cost_attack,
    max_reward_attack,
    min_reward_attack,
    mixed_attack,
)
from robustsafe.attacks.mad import AMADAttacker, MADAttacker
from robustsafe.attacks.uniform import RandomAttacker

ATTACKER_NAMES = ("none", "random", "mad", "amad", "mc", "mr", "minr", "mix:W")
_CONFIG_FIELDS = frozenset(f.name for f in dataclasses.fields(AttackConfig))


def _bad_name(name: object) -> ValueError:
    return ValueError(
        f"unknown attacker {name!r}; accepted names: {', '.join(ATTACKER_NAMES)} "
        "(mix:W with W a number in [0, 1], e.g. mix:0.5)"
    )


def _mix_weight(name: str) -> float:
    text = name[len("mix:") :]
    try:
        weight = float(text)
    except ValueError:
        raise _bad_name(name) from None
    if not 0.0 <= weight <= 1.0:  # also rejects nan
        raise ValueError(f"attacker {name!r}: the mix weight W must be in [0, 1], got {text}")
    return weight


def default_config(name: str) -> AttackConfig:
    """The measured default settings of the attacker family ``name`` belongs to."""
    return MAD_DEFAULTS if name in ("mad", "amad") else CRITIC_ATTACK_DEFAULTS


def make_attacker(name: str, config: AttackConfig | None = None, **kwargs: object) -> Attacker:
    """Build the attacker called ``name``.

    ``config`` replaces the family's defaults; keyword arguments named like ``AttackConfig``
    fields override single settings (``make_attacker("mc", steps=20)``). ``amad`` also needs
    ``threshold=`` (see ``amad_threshold``). ``random`` uses only ``norm`` of the settings.
    """
    if not isinstance(name, str):
        raise _bad_name(name)
    if name.startswith("mix:"):
        weight = _mix_weight(name)
    elif name not in ATTACKER_NAMES:
        raise _bad_name(name)

    threshold = kwargs.pop("threshold", None)
    unknown = set(kwargs) - _CONFIG_FIELDS
    if unknown:
        raise TypeError(
            f"unknown settings {sorted(unknown)}; accepted: {sorted(_CONFIG_FIELDS)}"
            + (" and threshold (amad only)" if name == "amad" else "")
        )
    if threshold is not None and name != "amad":
        raise TypeError(f"threshold applies to amad only, not {name!r}")
    settings = config if config is not None else default_config(name)
    if kwargs:
        settings = dataclasses.replace(settings, **kwargs)

    if name == "none":
        return NoAttacker()
    if name == "random":
        return RandomAttacker(settings.norm)
    if name == "mad":
        return MADAttacker(settings)
    if name == "amad":
        if threshold is None:
            raise ValueError(
                "amad needs threshold=...: compute it with "
                "amad_threshold(actor, critics, natural_obs, xi=0.1)"
            )
        return AMADAttacker(float(threshold), settings)
    if name == "mc":
        return max_cost_attack(settings)
    if name == "mr":
        return max_reward_attack(settings)
    if name == "minr":
        return min_reward_attack(settings)
    return mixed_attack(weight, settings)
