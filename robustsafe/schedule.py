"""Epsilon schedules for adversarial training (paper section 4.2 and appendix C.3).

A strong adversary from the first epoch stops the learner from exploring, so the budget grows
from 0 to ``epsilon`` after a start epoch. Two forms:

- ``linear`` (the paper): eps_n = epsilon * min(1, (n - start) / length) for n >= start;
- ``exp`` (the original code's form): eps_n = epsilon * (1 - exp(-5 (n - start) / length));
- ``constant``: epsilon from the first epoch.

Before ``start`` the budget is 0. Epochs are counted from 1. The original code sets each
budget after the epoch before (counting from 0), two epochs behind this numbering; the ``paper``
presets add those two epochs to its starts (``robustsafe.presets``).
"""

from __future__ import annotations

import math

import numpy as np

SCHEDULES = ("linear", "exp", "constant")
_BUDGET_STREAM = 0x45505331  # keeps the budget draws apart from other (seed, epoch) streams


def epsilon_at(epoch: int, epsilon: float, schedule: str, start: int, length: int) -> float:
    """The perturbation budget of training epoch ``epoch`` (pure)."""
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown epsilon schedule {schedule!r}; accepted: {SCHEDULES}")
    if epsilon < 0 or length < 1 or start < 0:
        raise ValueError(
            f"need epsilon >= 0, length >= 1, start >= 0; got {epsilon}, {length}, {start}"
        )
    if schedule == "constant":
        return epsilon
    if epoch < start:
        return 0.0
    progress = (epoch - start) / length
    if schedule == "linear":
        return epsilon * min(1.0, progress)
    return epsilon * (1.0 - math.exp(-5.0 * progress))


def drawn_fraction(seed: int, epoch: int, low: float) -> float:
    """One epoch's fraction of the scheduled budget, uniform on [low, 1] (pure: a function of
    the run's seed and the epoch, apart from every other random stream of the run)."""
    if not 0.0 <= low <= 1.0:
        raise ValueError(f"need 0 <= low <= 1, got {low}")
    u = np.random.default_rng(np.random.SeedSequence([seed, epoch, _BUDGET_STREAM])).random()
    return low + (1.0 - low) * float(u)
