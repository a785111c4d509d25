"""Reading and writing settings: ``TrainConfig`` as a plain dict (YAML's form) and back,
checked, with ``--set KEY=VALUE`` overrides and the dotted keys that name each setting.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import types
import typing
from dataclasses import fields
from typing import Any

from robustsafe.config import TrainConfig

# The settings that name a run (its directory and table row), each with the option that sets it:
# ``--set`` refuses them, so that a run's name and its settings cannot disagree.
NAMING_SETTINGS = {
    "env_id": "env",
    "seed": "seed",
    "preset": "preset",
    "algo": "algo",
    "robust.mode": "mode",
}

_GRID_NAMING_OPTIONS = {
    "env": "envs",
    "seed": "seeds",
    "preset": "preset",
    "algo": "algos",
    "mode": "modes",
}


# ----------------------------------------------------------------------------- dict / YAML


def to_dict(cfg: Any) -> dict[str, Any]:
    """A plain, YAML-friendly dict (tuples become lists)."""

    def convert(x: Any) -> Any:
        if dataclasses.is_dataclass(x):
            return {f.name: convert(getattr(x, f.name)) for f in fields(x)}
        if isinstance(x, tuple | list):
            return [convert(v) for v in x]
        return x

    return convert(cfg)


def from_dict(cls: type, data: dict[str, Any], where: str = "") -> Any:
    """Build dataclass ``cls`` from a dict, rejecting unknown keys with a clear error.

    Errors name the setting by its dotted key (``ppo.actor_lr``); ``where`` is the prefix.
    """
    if not isinstance(data, dict):
        what = where.rstrip(".") or cls.__name__
        raise ValueError(f"expected a mapping for {what}, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    known = {f.name for f in fields(cls)}
    unknown = set(data) - known
    if unknown:
        raise ValueError(
            f"unknown {cls.__name__} setting(s) {sorted(unknown)}; accepted: {sorted(known)}"
        )
    kwargs = {}
    for name, value in data.items():
        kwargs[name] = _coerce(hints[name], value, f"{where}{name}")
    try:
        return cls(**kwargs)
    except ValueError as err:  # the dataclass's own check: say which group it is in
        message = str(err)
        if where and message.split(" ", 1)[0] in known:  # "lr must be > 0" -> "sac.lr must..."
            message = f"{where}{message}"
        elif where:
            message = f"{where.rstrip('.')}: {message}"
        raise ValueError(message) from None


def _coerce(hint: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if dataclasses.is_dataclass(hint):
        return from_dict(hint, value, f"{where}.")
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _coerce(inner[0], value, where)
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise ValueError(f"{where} must be a list, got {value!r}")
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:  # tuple[X, ...]: check every item
            return tuple(_coerce(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
        return tuple(value)
    if hint is float:
        return _as_number(value, where, float)
    if hint is int:
        return _as_number(value, where, int)
    if hint in (str, bool) and not isinstance(value, hint):
        raise ValueError(f"{where} must be {_TYPE_WORDS[hint]}, got {value!r}")
    return value


_TYPE_WORDS = {float: "a number", int: "an integer", str: "a string", bool: "true or false"}


def _as_number(value: Any, where: str, kind: type) -> Any:
    """``value`` as an int or a finite float. YAML 1.1 reads ``1e-3`` (no dot) as a string,
    so numeric strings are parsed here; NaN and infinity are never valid settings."""
    number: Any = value
    if isinstance(value, str):
        try:
            number = int(value.strip())
        except ValueError:
            try:
                number = float(value.strip())
            except ValueError:
                number = None
    if isinstance(number, bool) or not isinstance(number, int | float):
        raise ValueError(f"{where} must be {_TYPE_WORDS[kind]}, got {value!r}")
    if not math.isfinite(number):
        raise ValueError(f"{where} must be a finite number, got {value!r}")
    if kind is int:
        if isinstance(number, float) and not number.is_integer():
            raise ValueError(f"{where} must be an integer, got {value!r}")
        return int(number)
    return float(number)


def set_key(item: str) -> str:
    """The dotted setting a ``--set KEY=VALUE`` item names (``ppo.actor_lr``)."""
    return item.split("=", 1)[0].strip()


def apply_sets(cfg: TrainConfig, sets: list[str] | tuple[str, ...]) -> TrainConfig:
    """Apply ``KEY=VALUE`` overrides (``ppo.actor_lr=1e-3``; values read as YAML scalars)."""
    return checked_config(merge_sets(to_dict(cfg), sets))


def checked_config(data: dict[str, Any]) -> TrainConfig:
    """The settings in ``data`` (``to_dict``'s form), checked together; ValueError."""
    try:
        return from_dict(TrainConfig, data)
    except TypeError as err:
        raise ValueError(str(err)) from None


def merge_sets(data: dict[str, Any], sets: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """``data`` (``to_dict``'s form) with ``KEY=VALUE`` overrides, each checked on its own (a
    known key, a value YAML reads); the settings are checked together by ``checked_config``,
    so that an override may depend on a later one (``num_envs`` and ``steps_per_epoch``)."""
    import yaml

    data = copy.deepcopy(data)
    for item in sets:
        if "=" not in item:
            raise ValueError(
                f"--set expects KEY=VALUE (for example ppo.actor_lr=1e-3), got {item!r}"
            )
        key, raw = item.split("=", 1)
        if key in NAMING_SETTINGS:
            option = NAMING_SETTINGS[key]
            raise ValueError(
                f"--set {key}: this setting names the run; give --{option} instead (grid: "
                f"--{_GRID_NAMING_OPTIONS[option]})"
            )
        node = data
        parts = key.split(".")
        for p in parts[:-1]:
            if not isinstance(node.get(p), dict):
                raise ValueError(f"--set {key}: {p!r} is not a settings group")
            node = node[p]
        if parts[-1] not in node:
            raise ValueError(f"--set {key}: unknown setting; known here: {sorted(node)}")
        if isinstance(node[parts[-1]], dict):  # a whole group would reset its other settings
            raise ValueError(
                f"--set {key}: a group of settings; set one of them, e.g. "
                f"{key}.{next(iter(node[parts[-1]]))}=VALUE"
            )
        try:
            node[parts[-1]] = yaml.safe_load(raw)
        except yaml.YAMLError as err:
            problem = getattr(err, "problem", None) or type(err).__name__
            raise ValueError(f"--set {key}: not a valid value ({problem}): {raw!r}") from None
    return data


def flat_settings(cfg: TrainConfig) -> dict[str, Any]:
    """Every setting of ``cfg`` under its dotted key (``ppo.actor_lr``)."""

    def flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
        items: dict[str, Any] = {}
        for k, v in d.items():
            if isinstance(v, dict):
                items.update(flat(v, f"{prefix}{k}."))
            else:
                items[f"{prefix}{k}"] = v
        return items

    return flat(to_dict(cfg))
