"""The finite constrained MDP of Section 3.1 and input validation.

A safe RL problem M^kappa_Pi is the CMDP (S, A, P, r, c, gamma, mu_0) with a cost threshold kappa.
Here S = {0, ..., S-1} and A = {0, ..., A-1}; rewards and costs depend on (s, a, s') as in the
paper, and every cost lies in [0, C_m].

Policies are arrays ``pi[s, a] = pi(a|s)`` of shape (S, A) whose rows are distributions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

#: Absolute tolerance on "sums to 1" for probability vectors.
PROB_ATOL = 1e-8

FloatArray = NDArray[np.float64]


def _frozen(a: FloatArray) -> FloatArray:
    a = np.array(a, dtype=np.float64, copy=True)
    a.flags.writeable = False
    return a


def _float_array(name: str, value: ArrayLike) -> FloatArray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be an array of real numbers; got {value!r}") from exc
    if not np.all(np.isfinite(arr)):
        idx = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
        raise ValueError(f"{name} must be finite; entry {idx} is {arr[idx]}")
    return arr


def _scalar(name: str, value: float) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a real number; got {value!r}") from exc
    if not np.isfinite(x):
        raise ValueError(f"{name} must be finite; got {value!r}")
    return x


def check_distributions(name: str, arr: FloatArray, axis_names: tuple[str, ...]) -> None:
    """Raise ValueError unless the last axis of ``arr`` holds probability distributions.

    ``axis_names`` names the leading axes for the error message, e.g. ``("s", "a")``; a 1-D
    ``arr`` (no leading axes) is a single distribution.
    """
    if np.any(arr < 0):
        idx = tuple(int(i) for i in np.argwhere(arr < 0)[0])
        where = ", ".join(f"{n}={i}" for n, i in zip((*axis_names, "entry"), idx, strict=True))
        raise ValueError(
            f"{name} has a negative probability {arr[idx]:.6g} at ({where}); "
            "probabilities must be >= 0"
        )
    sums = np.asarray(arr.sum(axis=-1))
    bad = np.abs(sums - 1.0) > PROB_ATOL
    if np.any(bad):
        idx = tuple(int(i) for i in np.argwhere(bad)[0]) if sums.ndim else ()
        where = ", ".join(f"{n}={i}" for n, i in zip(axis_names, idx, strict=True))
        label = f"{name}[{where}, :]" if where else name
        raise ValueError(
            f"{label} sums to {float(sums[idx]):.10g}; each distribution must sum to 1 "
            f"(tolerance {PROB_ATOL:g})"
        )


@dataclass(frozen=True, eq=False)
class CMDP:
    """A finite CMDP with cost threshold: the safe RL problem M^kappa_Pi of Section 3.1.

    Arguments (all validated; arrays are copied and made read-only):

    * ``transitions``: P(s'|s,a), shape (S, A, S), rows non-negative and summing to 1.
    * ``reward``: r(s,a,s'), shape (S, A, S), finite.
    * ``cost``: c(s,a,s'), shape (S, A, S), in [0, C_m].
    * ``gamma``: discount in [0, 1).
    * ``initial``: mu_0, shape (S,), a distribution.
    * ``kappa``: cost threshold, finite and >= 0.
    * ``cost_max``: C_m; defaults to the largest cost entry.
    """

    transitions: FloatArray
    reward: FloatArray
    cost: FloatArray
    gamma: float
    initial: FloatArray
    kappa: float
    cost_max: float | None = None

    def __post_init__(self) -> None:
        p = _float_array("transitions", self.transitions)
        if p.ndim != 3 or p.shape[0] != p.shape[2] or p.shape[0] < 1 or p.shape[1] < 1:
            raise ValueError(
                "transitions must have shape (S, A, S) with S, A >= 1 "
                f"(P[s, a, s'] = P(s'|s,a)); got shape {p.shape}"
            )
        n_s = p.shape[0]
        check_distributions("transitions", p, ("s", "a"))
        r = _float_array("reward", self.reward)
        c = _float_array("cost", self.cost)
        for name, arr in (("reward", r), ("cost", c)):
            if arr.shape != p.shape:
                raise ValueError(
                    f"{name} must have shape (S, A, S) = {p.shape} like transitions "
                    f"({name}[s, a, s'] = {name[0]}(s,a,s')); got shape {arr.shape}"
                )
        gamma = _scalar("gamma", self.gamma)
        if not 0.0 <= gamma < 1.0:
            raise ValueError(f"gamma must be in [0, 1); got {gamma}")
        mu0 = _float_array("initial", self.initial)
        if mu0.shape != (n_s,):
            raise ValueError(
                f"initial (mu_0) must have shape (S,) = ({n_s},); got shape {mu0.shape}"
            )
        check_distributions("initial (mu_0)", mu0, ())
        kappa = _scalar("kappa", self.kappa)
        if kappa < 0:
            raise ValueError(f"kappa must be >= 0; got {kappa}")
        if np.any(c < 0):
            s, a, s2 = (int(i) for i in np.argwhere(c < 0)[0])
            raise ValueError(
                f"cost[s={s}, a={a}, s'={s2}] = {c[s, a, s2]:.6g} is negative; costs must "
                "satisfy 0 <= c(s,a,s') <= C_m"
            )
        c_m = (
            max(0.0, float(c.max()))
            if self.cost_max is None
            else _scalar("cost_max", self.cost_max)
        )
        if c_m < 0:
            raise ValueError(f"cost_max (C_m) must be >= 0; got {c_m}")
        out = c > c_m
        if np.any(out):
            s, a, s2 = (int(i) for i in np.argwhere(out)[0])
            raise ValueError(
                f"cost[s={s}, a={a}, s'={s2}] = {c[s, a, s2]:.6g} is outside [0, C_m] = "
                f"[0, {c_m:g}]; costs must satisfy 0 <= c(s,a,s') <= C_m"
            )
        object.__setattr__(self, "transitions", _frozen(p))
        object.__setattr__(self, "reward", _frozen(r))
        object.__setattr__(self, "cost", _frozen(c))
        object.__setattr__(self, "gamma", gamma)
        object.__setattr__(self, "initial", _frozen(mu0))
        object.__setattr__(self, "kappa", kappa)
        object.__setattr__(self, "cost_max", c_m)

    @property
    def c_m(self) -> float:
        """C_m, the maximum cost (Section 3.1): every c(s,a,s') lies in [0, C_m]."""
        assert self.cost_max is not None  # set in __post_init__
        return self.cost_max

    @property
    def n_states(self) -> int:
        return int(self.transitions.shape[0])

    @property
    def n_actions(self) -> int:
        return int(self.transitions.shape[1])

    def expected(self, signal: str) -> FloatArray:
        """E_{s'~P(.|s,a)}[f(s,a,s')] for f = reward or cost, shape (S, A)."""
        f = _signal_array(self, signal)
        return np.einsum("ijk,ijk->ij", self.transitions, f)

    def with_kappa(self, kappa: float) -> CMDP:
        """The same CMDP with another cost threshold (the temptation status depends on it)."""
        return CMDP(
            self.transitions,
            self.reward,
            self.cost,
            self.gamma,
            self.initial,
            kappa,
            self.cost_max,
        )


def _signal_array(cmdp: CMDP, signal: str) -> FloatArray:
    if signal == "reward":
        return cmdp.reward
    if signal == "cost":
        return cmdp.cost
    raise ValueError(f"signal must be 'reward' or 'cost'; got {signal!r}")


def validate_policy(policy: ArrayLike, n_states: int, n_actions: int) -> FloatArray:
    """Return ``policy`` as a float array after checking it is a stochastic policy pi(a|s)."""
    pi = _float_array("policy", policy)
    if pi.shape != (n_states, n_actions):
        raise ValueError(
            f"policy must have shape (S, A) = ({n_states}, {n_actions}) with "
            f"policy[s, a] = pi(a|s); got shape {pi.shape}"
        )
    check_distributions("policy", pi, ("s",))
    return pi


def deterministic_policy(actions: ArrayLike, n_actions: int) -> FloatArray:
    """The one-hot policy pi(a|s) = 1[a = actions[s]]."""
    acts = np.asarray(actions)
    if acts.ndim != 1 or not np.issubdtype(acts.dtype, np.integer):
        raise ValueError(f"actions must be a 1-D integer array; got {acts!r}")
    if np.any((acts < 0) | (acts >= n_actions)):
        raise ValueError(f"actions must lie in [0, {n_actions}); got {acts.tolist()}")
    pi = np.zeros((acts.size, n_actions))
    pi[np.arange(acts.size), acts] = 1.0
    return pi


def uniform_policy(n_states: int, n_actions: int) -> FloatArray:
    """pi(a|s) = 1/|A|."""
    return np.full((n_states, n_actions), 1.0 / n_actions)
