"""The PID Lagrange multiplier (Stooke et al., 2020), as used by the paper's PPO-Lagrangian.

The controller is fed once per epoch with the epoch's mean episode cost J_c and returns the
multiplier lambda. Without smoothing it is exactly the original implementation
(the authors' code):

    e = J_c - d;  I = max(0, I + e);  D = max(0, e - e_prev)
    lambda = max(0, KP * max(0, e) + KI * I + KD * D)

Stooke et al.'s P term, KP * e with e unclamped (it pulls lambda down in an epoch under the
limit), is ``p_on_excess=False``. Their other refinements are settings: an exponential moving
average of the error for the P term (``p_ema``) and of the cost for the D term (``d_ema``),
and a derivative delay (``d_delay``, compare with the smoothed cost ``d_delay`` epochs ago).

``fall_ema`` (ours, not Stooke et al.'s) smooths the multiplier only on its way down: it rises
to the controller's value at once and falls as an exponential moving average,
lambda_t = max(u_t, fall_ema * lambda_{t-1} + (1 - fall_ema) * u_t) for the controller's output
u_t. A safe epoch right after an unsafe one then lowers lambda by a fraction of the gap, not
all of it, which damps a period-two swing without slowing the reaction to a breach.

``lambda_max`` (optional, off in the paper) caps lambda; with a cap the integral is clamped
too, to lambda_max / KI, so that it cannot wind up while lambda sits at the cap: lambda falls
below the cap at the first epoch under the limit (the P and D terms are then 0), not only once
every unsafe epoch's excess has been paid back.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class PIDConfig:
    kp: float = 0.1
    ki: float = 0.003
    kd: float = 0.001
    cost_limit: float = 5.0
    p_ema: float = 0.0  # weight of the previous smoothed error; 0 = no smoothing (the paper)
    d_ema: float = 0.0  # weight of the previous smoothed cost; 0 = no smoothing (the paper)
    d_delay: int = 1  # epochs between the two costs whose difference is the D term
    lambda_max: float | None = None  # optional cap on lambda
    fall_ema: float = 0.0  # weight of the previous lambda when lambda falls; 0 = none (the paper)
    # P term on the excess only, KP * max(0, e) (the authors' code); False: KP * e (Stooke et al.)
    p_on_excess: bool = True

    def __post_init__(self) -> None:
        for name in ("kp", "ki", "kd"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0 (a PID gain), got {getattr(self, name)}")
        if self.cost_limit < 0:  # episode costs are >= 0: a negative limit is never met
            raise ValueError(f"cost_limit must be >= 0, got {self.cost_limit}")
        for name in ("p_ema", "d_ema", "fall_ema"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {getattr(self, name)}")
        if self.d_delay < 1:
            raise ValueError(f"d_delay must be >= 1, got {self.d_delay}")
        if self.lambda_max is not None and not self.lambda_max >= 0:
            raise ValueError(f"lambda_max must be >= 0 or None, got {self.lambda_max}")


@dataclass(frozen=True)
class PIDState:
    integral: float = 0.0
    smoothed_error: float | None = None
    cost_history: tuple[float, ...] = field(default_factory=tuple)  # smoothed costs, newest last
    multiplier: float = 0.0


def pid_step(state: PIDState, episode_cost: float, cfg: PIDConfig) -> PIDState:
    """One controller update from the epoch's mean episode cost. Pure: returns a new state."""
    error = episode_cost - cfg.cost_limit
    integral = max(0.0, state.integral + error)
    if cfg.lambda_max is not None and cfg.ki > 0:  # anti-windup: KI * I never exceeds the cap
        integral = min(integral, cfg.lambda_max / cfg.ki)
    if state.smoothed_error is None:
        smoothed_error = error
    else:
        smoothed_error = cfg.p_ema * state.smoothed_error + (1.0 - cfg.p_ema) * error
    previous_cost = state.cost_history[-1] if state.cost_history else None
    if previous_cost is None:
        smoothed_cost = episode_cost
    else:
        smoothed_cost = cfg.d_ema * previous_cost + (1.0 - cfg.d_ema) * episode_cost
    history = (state.cost_history + (smoothed_cost,))[-(cfg.d_delay + 1) :]
    # The first update has no previous cost; the original code starts e_prev at 0, i.e. the
    # previous cost at the limit d.
    reference = history[0] if len(history) > cfg.d_delay else cfg.cost_limit
    derivative = max(0.0, smoothed_cost - reference)
    proportional = max(0.0, smoothed_error) if cfg.p_on_excess else smoothed_error
    multiplier = max(0.0, cfg.kp * proportional + cfg.ki * integral + cfg.kd * derivative)
    if multiplier < state.multiplier:  # falling: smoothed by fall_ema (0: not at all)
        multiplier = cfg.fall_ema * state.multiplier + (1.0 - cfg.fall_ema) * multiplier
    if cfg.lambda_max is not None:
        multiplier = min(multiplier, cfg.lambda_max)
    return replace(
        state,
        integral=integral,
        smoothed_error=smoothed_error,
        cost_history=history,
        multiplier=multiplier,
    )


class PIDLagrangian:
    """Holds the controller state between epochs; ``update`` returns the new multiplier."""

    def __init__(self, cfg: PIDConfig) -> None:
        self.cfg = cfg
        self.state = PIDState()

    @property
    def multiplier(self) -> float:
        return self.state.multiplier

    def update(self, episode_cost: float) -> float:
        self.state = pid_step(self.state, float(episode_cost), self.cfg)
        return self.state.multiplier

    def state_dict(self) -> dict:
        return {
            "integral": self.state.integral,
            "smoothed_error": self.state.smoothed_error,
            "cost_history": list(self.state.cost_history),
            "multiplier": self.state.multiplier,
        }

    def load_state_dict(self, d: dict) -> None:
        self.state = PIDState(
            integral=float(d["integral"]),
            smoothed_error=None if d["smoothed_error"] is None else float(d["smoothed_error"]),
            cost_history=tuple(float(x) for x in d["cost_history"]),
            multiplier=float(d["multiplier"]),
        )
