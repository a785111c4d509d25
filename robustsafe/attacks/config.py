"""Typed settings of the gradient attackers (MC, MR, minimum reward, mix, MAD, AMAD).

Lengths are expressed relative to the ball: ``step_size`` and ``tol_delta`` are fractions of
epsilon, so one set of defaults serves every budget (0.05 on Car tasks, 0.025 on Drone and Ant).
The defaults below were chosen from measurements, not guessed: see
``benchmarks/results/attack_speed.md`` (``python benchmarks/attack_speed.py --sweep``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

NORMS = ("linf", "l2")
OPTIMIZERS = ("adam", "pgd")


@dataclass(frozen=True)
class AttackConfig:
    """How a gradient attacker searches its ball.

    steps: gradient iterations at most (one batched autograd call each).
    step_size: step length as a fraction of epsilon. With ``pgd`` every step moves each
        coordinate by exactly ``step_size * epsilon`` (sign of the gradient, l_inf) or the whole
        perturbation by that length along the normalised gradient (l_2); with ``adam`` it is
        Adam's learning rate.
    optimizer: ``"pgd"`` (sign-gradient projected ascent) or ``"adam"`` (Adam's moments start
        at zero on every call). Adam moves all coordinates by similar amounts, so under l_2 it
        does not settle on the gradient's direction: prefer ``pgd`` there.
    tol_obj, tol_delta: per-state early stopping (paper Algorithms 2 and 4). A state is frozen
        (it keeps its best iterate and leaves the batch still being optimised) once one step
        changed its objective by less than ``tol_obj`` AND moved no coordinate of its
        perturbation by ``tol_delta * epsilon`` or more. Set either to 0 to always run
        ``steps`` iterations.
    random_start: start from a uniform draw in the ball instead of the clean observation.
    restarts: number of starts per state (>= 1). The first start is the clean observation (a
        uniform draw with ``random_start``), every other one a uniform draw in the ball; each
        state keeps the best objective over all its starts (and the clean observation). The
        starts run together as one stacked batch, so a call costs about ``restarts`` times one
        start.
    norm: ``"linf"`` (the paper's box) or ``"l2"``.
    sgld_beta: inverse temperature of the Langevin noise added to every gradient, of standard
        deviation ``sqrt(2 / (sgld_beta * step_size * epsilon))`` (paper Algorithm 4);
        ``None`` adds no noise.
    """

    steps: int = 10
    step_size: float = 0.25
    optimizer: str = "pgd"
    tol_obj: float = 1e-4
    tol_delta: float = 1e-3
    random_start: bool = False
    restarts: int = 1
    norm: str = "linf"
    sgld_beta: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.steps, int) or isinstance(self.steps, bool) or self.steps < 0:
            raise ValueError(f"steps must be a non-negative int, got {self.steps!r}")
        if (
            not isinstance(self.restarts, int)
            or isinstance(self.restarts, bool)
            or self.restarts < 1
        ):
            raise ValueError(f"restarts must be an int >= 1, got {self.restarts!r}")
        if not (math.isfinite(self.step_size) and self.step_size > 0):
            raise ValueError(f"step_size must be finite and > 0, got {self.step_size!r}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        if self.norm not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}, got {self.norm!r}")
        for field in ("tol_obj", "tol_delta"):
            value = getattr(self, field)
            if not value >= 0:
                raise ValueError(f"{field} must be >= 0, got {value!r}")
        if self.sgld_beta is not None and not (self.sgld_beta > 0):
            raise ValueError(f"sgld_beta must be > 0 or None, got {self.sgld_beta!r}")


# Critic attacks (mc, mr, minr, mix): 10 sign steps of eps/4 from 8 starts (the clean
# observation and 7 uniform points). One start from the clean observation reaches >= 0.99 of the
# best known objective gain on vanilla agents but only 0.67-0.78 on the zoo's CarRun ADV-PPOL
# agents, whose critics have local optima that more steps do not escape (20 steps: 0.69-0.78);
# 8 starts reach >= 0.97 on every zoo ADV agent (6: 0.956) at about 2.6x the time of one start
# per call. benchmarks/results/attack_strength.md (python benchmarks/attack_strength.py), and
# benchmarks/results/attack_speed.md for the step size and optimiser.
CRITIC_ATTACK_DEFAULTS = AttackConfig(restarts=8)

# MAD / AMAD. The KL objective is flat (zero gradient) at the clean observation, so every start
# is a uniform draw in the ball. The Langevin noise of Algorithm 4 is kept but cold: with
# beta = 1e12 its std is about 1.3e-5 at epsilon 0.05, far below the KL gradient of a policy
# that reacts to the perturbation. Hotter noise (beta <= 1e8) lowered the KL reached on the
# synthetic agents and never raised it; set sgld_beta=None for none. The KL has many local
# maxima (corners of the box): one start reaches 0.54-0.85 of the best known KL gain on the zoo
# agents, 4 starts 0.90-1.00, 8 starts >= 0.995 (attack_strength.md), at about 1.8x the time of
# one start per call.
MAD_DEFAULTS = AttackConfig(random_start=True, sgld_beta=1e12, restarts=8)
