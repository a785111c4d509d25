"""Attackers by name: the strings the command line and the configs use, the paper's and those
registered with ``register_attacker`` (a user's own attack, evaluated under the same protocol)."""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Callable

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
# A registered name: lower case, digits, '_', '-' and '.', no ',' or ':' (lists on the command
# line are comma-separated, and ':' marks mix:W).
_REGISTERED_NAME = re.compile(r"[a-z][a-z0-9_.-]{0,39}")
_registered: dict[str, Callable[[], Attacker]] = {}


def register_attacker(name: str, factory: Callable[[], Attacker], replace: bool = False) -> None:
    """Make ``name`` an attacker everywhere attackers are named: ``make_attacker``,
    ``evaluate_agent`` / ``evaluate_policy``, and ``robustsafe evaluate --attacks`` (with
    ``--attacker-module`` naming the module that registers it). ``factory()`` builds it: an
    ``Attacker`` (subclass it and implement ``perturbation``). Its results are recorded under
    ``name``. The factory runs each time the attacker is built (a few times per evaluation): keep
    it cheap, and keep state out of the attacker (randomness from its ``generator`` argument).
    ValueError for a paper attacker's name, a malformed one, or one registered before (unless
    ``replace``)."""
    if not isinstance(name, str) or not _REGISTERED_NAME.fullmatch(name):
        raise ValueError(
            f"attacker name {name!r}: use 1-40 lower-case letters, digits, '_', '-' or '.', "
            "beginning with a letter"
        )
    if name in ATTACKER_NAMES or name == "mix":
        raise ValueError(f"attacker name {name!r} is one of the paper's attackers: choose another")
    if isinstance(factory, Attacker):
        raise TypeError(
            f"register_attacker({name!r}, ...): give the factory that builds the attacker (its "
            "class, or a function), not an attacker: it is built anew for each evaluation"
        )
    if name in _registered and not replace:
        raise ValueError(f"attacker {name!r} is registered already (replace=True to replace it)")
    if not callable(factory):
        raise TypeError(f"register_attacker({name!r}, ...): the factory must be callable")
    _registered[name] = factory


def registered_attackers() -> tuple[str, ...]:
    """The names ``register_attacker`` added, in the order they were registered."""
    return tuple(_registered)


def _bad_name(name: object) -> ValueError:
    own = f"; registered: {', '.join(_registered)}" if _registered else ""
    own += " (your own: robustsafe.attacks.register_attacker)"
    return ValueError(
        f"unknown attacker {name!r}; accepted names: {', '.join(ATTACKER_NAMES)} "
        f"(mix:W with W a number in [0, 1], e.g. mix:0.5){own}"
    )


def _registered_attacker(name: str) -> Attacker:
    try:
        attacker = _registered[name]()
    except Exception as err:
        why = f"{type(err).__name__}: {err}".splitlines()[0]
        raise ValueError(f"attacker {name!r}: its factory raised {why}") from None
    if not isinstance(attacker, Attacker):
        raise TypeError(
            f"attacker {name!r}: its factory returned a {type(attacker).__name__}, not an "
            "Attacker (subclass robustsafe.attacks.Attacker and implement perturbation)"
        )
    if attacker.name != name:  # the name its results are recorded under (a copy: a factory may
        attacker = copy.copy(attacker)  # hand out one shared instance under several names)
        attacker.name = name
    return attacker


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
    if name in _registered:
        if config is not None or kwargs:
            raise TypeError(
                f"attacker {name!r} is registered: its settings are its factory's, not "
                "make_attacker's"
            )
        return _registered_attacker(name)
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
