"""The names a user picks from (learners, training modes, SA regularisers, deterministic
actions) and their checks. Light on purpose: the command line imports it before anything heavy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

# The learners of ``robustsafe train --algo``: on-policy (ppol, focops), off-policy (sac-lag,
# cvpo).
ALGOS = ("ppol", "focops", "sac-lag", "cvpo")
OFF_POLICY_ALGOS = ("sac-lag", "cvpo")


def check_algo(algo: str) -> None:
    if algo not in ALGOS:
        hint = ""
        if algo.startswith("sac-lag:"):  # the grid's form given to one run
            alpha = algo.partition(":")[2]
            hint = (
                f" (one run's entropy weight: --algo sac-lag --set sac.alpha={alpha}; "
                "sac-lag:ALPHA is the grid's --algos form)"
            )
        raise ValueError(f"unknown learner (--algo) {algo!r}; accepted: {', '.join(ALGOS)}" + hint)


def spelling_key(entry: str) -> str:
    """``NAME:NUMBER`` with its number in one spelling (``mix:.5`` and ``mix:0.50`` ->
    ``mix:0.5``; ``sac-lag:1`` and ``sac-lag:1.0`` -> ``sac-lag:1.0``); other entries as they
    are. Two entries of a list (learners, modes, attackers) name the same thing iff their keys
    match."""
    name, sep, value = entry.partition(":")
    if sep:
        try:
            return f"{name}:{float(value)!r}"
        except ValueError:
            pass
    return entry


def unique_entries(entries: Sequence[str]) -> list[str]:
    """``entries`` in order, each thing named once (the first spelling kept; ``spelling_key``)."""
    kept: dict[str, str] = {}
    for entry in entries:
        kept.setdefault(spelling_key(entry), entry)
    return list(kept.values())


def split_algo(entry: str) -> tuple[str, tuple[str, ...]]:
    """A learner of the grid and the table: a name of ``ALGOS``, or ``sac-lag:ALPHA``, SAC-Lag
    with entropy weight ALPHA (the appendix's sweep), i.e. ``--algo sac-lag --set
    sac.alpha=ALPHA``. Returns the ``--algo`` and the ``--set`` items; raises ValueError."""
    algo, sep, alpha = entry.partition(":")
    if not sep:
        check_algo(algo)
        return algo, ()
    if algo != "sac-lag":
        raise ValueError(f"learner {entry!r}: only sac-lag takes a variant (sac-lag:ALPHA)")
    try:
        value = float(alpha)
    except ValueError:
        value = float("nan")
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"learner {entry!r}: ALPHA must be a number >= 0")
    return algo, (f"sac.alpha={alpha}",)


MODES = ("vanilla", "random", "adv-mc", "adv-mr", "adv-mix:W", "sa-mad", "sa-mc", "sa-mr")


def check_mode(mode: str) -> None:
    """Raise a clear error unless ``mode`` is a training mode (``adv-mix:W``, W in [0, 1])."""
    if mode in MODES and mode != "adv-mix:W":
        return
    if mode.startswith("adv-mix:"):
        try:
            w = float(mode.split(":", 1)[1])
        except ValueError:
            w = float("nan")
        if 0.0 <= w <= 1.0:
            return
    raise ValueError(f"unknown training mode {mode!r}; accepted: {', '.join(MODES)} (W in [0, 1])")


SA_REGULARIZERS = ("mse", "kl")

# The deterministic actions an agent can be evaluated with (``robustsafe.nets``): E[clip(a)],
# the expected executed action, or the Gaussian's mean
DETERMINISTIC_ACTIONS = ("expected", "mean")
