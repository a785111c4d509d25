"""Reading ``eval.json`` files (written by ``robustsafe evaluate`` and the grid runner) for the
tables: ``find_eval_files`` under a directory tree, ``load_eval_file`` one of them into an
``EvalFile``, with a ValueError naming the file for anything the tables cannot use.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from os import PathLike
from pathlib import Path

from robustsafe.experiments.names import known_algo_form, learner_group
from robustsafe.files import find_named, read_json


@dataclass(frozen=True)
class EvalFile:
    """One evaluated run: per attacker, the (reward, cost) of every episode, and its epsilon."""

    path: Path
    env_id: str
    mode: str
    train_seed: int | None
    preset: str | None
    agent_epoch: int | None
    episodes: dict[str, tuple[tuple[float, float], ...]]
    epsilons: dict[str, float]
    algo: str = "ppol"  # the learner; evaluations without ``train_algo`` are PPOL's
    actions: str | None = None  # the deterministic action the evaluation ran, as it records it
    cost_limit: float | None = None  # the limit the evaluation recorded
    episode_seed: int | None = None  # the evaluation's --seed: its episodes' start states
    train_epsilon: float | None = None  # the robust training's budget (None: vanilla, unknown)


def find_eval_files(runs_dir: str | PathLike) -> list[Path]:
    """Every ``eval.json`` under ``runs_dir`` (recursively), sorted."""
    root = Path(runs_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a directory")
    return find_named(root, "eval.json")


def _episode(record: dict) -> tuple[float, float]:
    """(reward, cost) of one episode record; ValueError unless both are finite numbers (not
    booleans) and the cost is >= 0."""
    reward, cost = record["reward"], record["cost"]
    if not (_is_number(reward) and _is_number(cost)):
        raise ValueError("not numbers")
    reward, cost = float(reward), float(cost)
    if not (math.isfinite(reward) and math.isfinite(cost) and cost >= 0):
        raise ValueError("not finite, or a negative cost")
    length = record.get("length", 1)
    if not (isinstance(length, int) and not isinstance(length, bool) and length >= 1):
        raise ValueError("an episode of no step")
    return reward, cost


@dataclass(frozen=True)
class Result:
    """One entry of an evaluation's ``results``: an attacker at one epsilon (and, for an AMAD
    of a xi sweep, its xi), with the (reward, cost) of each episode."""

    attack: str
    epsilon: float
    episodes: tuple[tuple[float, float], ...]
    xi: float | None = None


def parse_results(data: object, where: str | PathLike) -> list[Result]:
    """The ``results`` of an evaluation's JSON object (``eval.json``, a sweep, ``eval-xi.json``):
    the one reader of its entries for the tables and figures. ValueError beginning with
    ``where`` unless a non-empty list of entries, each with an attacker name, an epsilon that
    is a finite number >= 0 (natural episodes may leave it out: 0), a xi in (0, 1] where it
    has one, and episodes as ``episode_records`` wants them."""
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, list) or not results:
        raise ValueError(f"{where}: no 'results' list, or an empty one")
    parsed = []
    for entry in results:
        attack = entry.get("attack") if isinstance(entry, dict) else None
        if not isinstance(attack, str):
            raise ValueError(f"{where}: a result without an attack name")
        eps = entry.get("epsilon", 0.0 if attack == "none" else None)
        if not (_is_number(eps) and math.isfinite(eps) and eps >= 0):
            raise ValueError(f"{where}: attacker {attack!r} has epsilon {eps!r}, not a number >= 0")
        xi = entry.get("xi")
        if xi is not None and not (_is_number(xi) and 0 < xi <= 1):
            raise ValueError(f"{where}: attacker {attack!r} has xi {xi!r}, not in (0, 1]")
        episodes = episode_records(entry.get("episodes"), f"{where}: attacker {attack!r}")
        parsed.append(Result(attack, float(eps), episodes, None if xi is None else float(xi)))
    return parsed


def load_eval_file(path: str | PathLike) -> EvalFile:
    """Read one ``eval.json``; ValueError (naming the file) if it cannot be used."""
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not an evaluation (expected a JSON object)")
    for key in ("env_id", "train_mode"):
        if not isinstance(data.get(key), str):
            raise ValueError(
                f"{path}: no {key!r} field (written by an older robustsafe evaluate? "
                "evaluate the run again)"
            )
    episodes: dict[str, tuple[tuple[float, float], ...]] = {}
    epsilons: dict[str, float] = {}
    for result in parse_results(data, path):
        attack = result.attack
        if attack in episodes:
            raise ValueError(
                f"{path}: attacker {attack!r} appears more than once (epsilons "
                f"{epsilons[attack]} and {result.epsilon}); the table needs one epsilon per run "
                "(evaluate with a single --eps)"
            )
        episodes[attack], epsilons[attack] = result.episodes, result.epsilon
    seed = data.get("train_seed")
    epoch = data.get("agent_epoch")
    algo = evaluated_learner(data, path)
    limit = data.get("cost_limit")
    if limit is not None and not (_is_number(limit) and math.isfinite(limit) and limit >= 0):
        raise ValueError(f"{path}: cost_limit {limit!r} is not a finite number >= 0")
    train_eps = data.get("train_epsilon")
    if train_eps is not None and not (_is_number(train_eps) and math.isfinite(train_eps)):
        raise ValueError(f"{path}: train_epsilon {train_eps!r} is not a finite number")
    episode_seed = data.get("seed")
    return EvalFile(
        algo=algo,
        path=path,
        env_id=data["env_id"],
        mode=data["train_mode"],
        train_seed=seed if isinstance(seed, int) else None,
        preset=data.get("train_preset") if isinstance(data.get("train_preset"), str) else None,
        agent_epoch=epoch if isinstance(epoch, int) else None,
        episodes=episodes,
        epsilons=epsilons,
        actions=data.get("actions") if isinstance(data.get("actions"), str) else None,
        cost_limit=None if limit is None else float(limit),
        episode_seed=episode_seed if isinstance(episode_seed, int) else None,
        train_epsilon=None if train_eps is None else float(train_eps),
    )


def evaluated_learner(data: dict, path: str | PathLike) -> str:
    """The learner of an evaluation as the tables and figures group it: its name, and SAC-Lag's
    entropy weight (``sac-lag:0.1``, ``sac-lag:learned``: one group per weight); ValueError."""
    algo = data.get("train_algo", "ppol")
    if not isinstance(algo, str) or not known_algo_form(algo):
        raise ValueError(f"{path}: 'train_algo' must be a learner name, got {algo!r}")
    return learner_group(algo, data.get("train_alpha"), data.get("train_alpha_learned"))


def episode_records(records: object, where: str) -> tuple[tuple[float, float], ...]:
    """The (reward, cost) of each episode record of a result; ValueError beginning with
    ``where`` unless a non-empty list of records, each with a finite reward, a finite cost
    >= 0 and, where it records one, a length of at least one step."""
    if not isinstance(records, list) or not records:
        raise ValueError(f"{where} has no per-episode records")
    try:
        return tuple(_episode(e) for e in records)
    except (KeyError, TypeError, ValueError):
        raise ValueError(
            f"{where} has malformed episodes (each needs a finite 'reward', a finite "
            "'cost' >= 0 and, if it has one, a 'length' >= 1)"
        ) from None


def _is_number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)
