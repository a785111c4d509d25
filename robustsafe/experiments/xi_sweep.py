"""AMAD over xi (the fraction of most-costly states attacked) against MAD: the evaluation
behind the appendix figure "Reward and cost of AMAD and MAD attacker" (paper appendix C.9,
Figure 4).

``robustsafe xi-sweep --run RUN --xi 0.05,0.1,0.2`` writes ``RUN/eval-xi.json``: the natural
episodes, MAD, and AMAD at every xi, all at one epsilon, with the same paired episodes. AMAD's
threshold at xi is the (1 - xi) quantile of Q_c(s, mu(s)) over the natural episodes'
observations (``robustsafe.attacks.amad_threshold``), so xi = 1 attacks every state (MAD).

The file is not named ``eval.json`` on purpose: ``robustsafe table`` reads every ``eval.json``
and refuses one attacker listed twice, which a sweep over xi is. Its ``results`` list has the
same entries as ``eval.json``'s, each AMAD entry with its ``xi``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

from robustsafe.experiments.eval_files import evaluated_learner, parse_results
from robustsafe.files import find_named, read_json

XI_EVAL_NAME = "eval-xi.json"
XI_FORMAT = "amad-xi-sweep"
DEFAULT_XIS: tuple[float, ...] = (0.05, 0.1, 0.2, 0.3, 0.5, 0.75)


def parse_xis(text: str | Sequence[float]) -> list[float]:
    """``0.05,0.1,0.2`` (or a sequence) as sorted distinct values in (0, 1]."""
    try:
        values = (
            [float(x) for x in text.split(",") if x.strip()]
            if isinstance(text, str)
            else [float(x) for x in text]
        )
    except ValueError:
        raise ValueError(f"cannot read xi values {text!r}: numbers, e.g. 0.05,0.1,0.2") from None
    if not values or any(not 0.0 < v <= 1.0 for v in values):
        raise ValueError(f"xi values must be in (0, 1], got {text!r}")
    return sorted(set(values))


def evaluate_xi_sweep(
    agent: Any,
    vec: Any,
    xis: Sequence[float],
    epsilon: float,
    episodes: int = 50,
    seed: int = 0,
    attack_seed: int = 0,
    attack_space: str = "raw",
    on_step: Callable[[int], None] | None = None,
) -> list[dict[str, Any]]:
    """Natural, MAD and AMAD at each xi, as the ``results`` entries of ``eval-xi.json``: one
    ``evaluate_agent`` call, whose natural episodes give AMAD's threshold at every xi."""
    from robustsafe.evaluate import evaluate_agent

    xis = parse_xis(xis)
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon}")
    results = evaluate_agent(
        agent,
        vec,
        episodes=episodes,
        seed=seed,
        attacks=("mad", "amad"),
        epsilons=(epsilon,),
        attack_seed=attack_seed,
        attack_space=attack_space,
        xi=xis,
        on_step=on_step,
    )
    return [r.to_dict() for r in results]


# ----------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class XiSweep:
    """One run's sweep: per-episode (reward, cost) of natural, MAD and AMAD at each xi."""

    path: Path
    env_id: str
    mode: str
    train_seed: int | None
    epsilon: float
    natural: tuple[tuple[float, float], ...]
    mad: tuple[tuple[float, float], ...]
    amad: dict[float, tuple[tuple[float, float], ...]]
    algo: str = "ppol"  # the learner (``train_algo``; files without it are PPOL's)


def load_xi_sweep(path: str | PathLike) -> XiSweep:
    """Read one ``eval-xi.json``; ValueError naming the file if it cannot be used."""
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, dict) or data.get("format") != XI_FORMAT:
        raise ValueError(f"{path}: not an AMAD xi sweep (no 'format': {XI_FORMAT!r})")
    for key in ("env_id", "train_mode"):
        if not isinstance(data.get(key), str):
            raise ValueError(f"{path}: no {key!r} field")
    natural, mad, amad, eps = None, None, {}, set()
    for result in parse_results(data, path):
        if result.attack == "none":
            natural = result.episodes
            continue
        if result.attack not in ("mad", "amad"):
            continue
        eps.add(result.epsilon)
        if result.attack == "mad":
            if mad is not None:
                raise ValueError(f"{path}: MAD appears more than once")
            mad = result.episodes
        else:
            if result.xi is None:
                raise ValueError(f"{path}: an AMAD result without its xi")
            if result.xi in amad:
                raise ValueError(f"{path}: AMAD at xi {result.xi:g} appears more than once")
            amad[result.xi] = result.episodes
    if natural is None or not amad:
        raise ValueError(f"{path}: needs natural episodes and AMAD at one xi at least")
    if len(eps) != 1:
        raise ValueError(f"{path}: its attacks were run at different epsilons ({sorted(eps)})")
    seed = data.get("train_seed")
    return XiSweep(
        path=path,
        env_id=data["env_id"],
        mode=data["train_mode"],
        train_seed=seed if isinstance(seed, int) else None,
        epsilon=eps.pop(),
        natural=natural,
        mad=mad or (),
        amad=dict(sorted(amad.items())),
        algo=evaluated_learner(data, path),
    )


def collect_xi_sweeps(runs_dir: str | PathLike) -> tuple[list[XiSweep], list[str]]:
    """Every ``eval-xi.json`` under ``runs_dir``; unreadable ones are left out with a note."""
    root = Path(runs_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a directory")
    sweeps, notes = [], []
    for p in find_named(root, XI_EVAL_NAME):
        try:
            sweeps.append(load_xi_sweep(p))
        except ValueError as err:
            notes.append(f"left out {err}")
    return sweeps, notes
