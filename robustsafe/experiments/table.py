"""The paper's Table 1 from the ``eval.json`` files of a directory tree (``robustsafe table``).

Every ``eval.json`` under a directory (recursively, as written by ``robustsafe evaluate`` or the
grid runner) is one evaluated run. Runs are grouped by (env id, learner, training mode); each
group is a row of the table (PPO-Lagrangian's rows first, then FOCOPS's, named as in the paper's
appendix: ``FOCOPS-vanilla``, ``FOCOPS(MC)``, ``FOCOPS(MR)``; an evaluation without a
``train_algo`` field is PPO-Lagrangian's), each attacker a pair of columns (reward, cost):

    Natural | Random | MAD | AMAD | MC | MR | Average

Conventions (those of the paper, Table 1 and appendix Table 5, and the authors' code):

- a cell pools all episodes of all seeds of the method under that attacker and reports their
  mean and standard deviation (the population std, ddof = 0, as ``robustsafe evaluate`` does);
  the Average cell pools the episodes of Natural and the five attackers (the mean of the six
  columns: what the paper's numbers are, e.g. Car-Run PPOL-vanilla's cost 64.78 =
  (0.16 + 16.66 + 0.04 + 3.7 + 184.04 + 184.08) / 6; its captions say "over all 5 attackers",
  ``average="attackers"``) of the runs evaluated under all five (a run missing one is left out
  of it, with a note; no such run: "—"). Its std is the pooled episodes' (the paper's is not:
  its Average stds are smaller than its columns' means spread allows);
- failing agents, whose natural reward is below 30% of PPOL-vanilla's natural reward on the
  same env, are starred (``*`` after the name) and never marked. Without a PPOL-vanilla row on
  an env, or when its natural reward is not positive, no agent is treated as failing (a note
  says so). Other learners' agents are compared with their own vanilla agent (FOCOPS-vanilla);
- in every column the two lowest-cost agents of each env and learner (SAC-Lagrangian's entropy
  weights together) are marked (bold in Markdown,
  ``\\textbf`` in LaTeX); costs are compared as displayed (2 decimals) and ties go to the higher
  reward (the paper's rule);
- a cell no run has is shown as "—" ("--" in LaTeX); a cell that pools fewer seeds or episodes
  than the row's natural cell gets a note.

Errors rather than silently wrong numbers: the seeds of one method attacked at different
epsilons, one run evaluated at several epsilons (a sweep), and two evaluations of the same seed
of the same method raise ValueError naming the files. Files that cannot be read, or that lack
the ``env_id`` / ``train_mode`` fields, are left out with a note.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path

import numpy as np

# (key in eval.json, column title)
ATTACK_COLUMNS: tuple[tuple[str, str], ...] = (
    ("none", "Natural"),
    ("random", "Random"),
    ("mad", "MAD"),
    ("amad", "AMAD"),
    ("mc", "MC"),
    ("mr", "MR"),
)
AVERAGE = "average"
AVERAGED_ATTACKS: tuple[str, ...] = ("random", "mad", "amad", "mc", "mr")
# what the Average cell pools: the paper's numbers (Natural and the five attackers), or its
# captions' words (the five attackers only)
AVERAGE_POOLS: dict[str, tuple[str, ...]] = {
    "paper": ("none", *AVERAGED_ATTACKS),
    "attackers": AVERAGED_ATTACKS,
}
COLUMNS: tuple[tuple[str, str], ...] = (*ATTACK_COLUMNS, (AVERAGE, "Average"))
FAILING_FRACTION = 0.3
MARKED_PER_COLUMN = 2

_METHOD_NAMES = {
    "vanilla": "PPOL-vanilla",
    "random": "PPOL-random",
    "sa-mad": "SA-PPOL(MAD)",
    "sa-mc": "SA-PPOL(MC)",
    "sa-mr": "SA-PPOL(MR)",
    "adv-mc": "ADV-PPOL(MC)",
    "adv-mr": "ADV-PPOL(MR)",
}
_METHOD_ORDER = tuple(_METHOD_NAMES)  # then adv-mix:W by W, then anything else
# Other learners' rows, after PPO-Lagrangian's: the paper's appendix names (Table
# "exp-focops-append": FOCOPS-vanilla, FOCOPS(MC), FOCOPS(MR); "exp-cvpo-append": CVPO).
_ALGO_NAMES = {"ppol": "PPOL", "focops": "FOCOPS", "sac-lag": "SAC-Lag", "cvpo": "CVPO"}
_ALGO_ORDER = tuple(_ALGO_NAMES)
_PAPER_ENV_ORDER = tuple(
    f"Safety{robot}{task}-v0" for task in ("Run", "Circle") for robot in ("Car", "Drone", "Ant")
)
CSV_FIELDS = (
    "env",
    "method",
    "attack",
    "reward_mean",
    "reward_std",
    "cost_mean",
    "cost_std",
    "n_episodes",
    "n_seeds",
    "marked",
    "failing",
    "mode",
    "epsilon",
)


LEARNED_ALPHA = "learned"  # ``sac-lag:learned``: the group of SAC-Lag runs with sac.learn_alpha


def method_name(mode: str, algo: str = "ppol") -> str:
    """The paper's name of a learner's training mode (``adv-mix:0.5`` -> ``ADV-PPOL(mix 0.5)``;
    FOCOPS: ``vanilla`` -> ``FOCOPS-vanilla``, ``adv-mc`` -> ``FOCOPS(MC)``)."""
    if algo.startswith("sac-lag:"):  # the appendix's rows per entropy weight
        alpha = algo.split(":", 1)[1]
        learner = "SAC-Lag(alpha learned)" if alpha == LEARNED_ALPHA else f"SAC-Lag(alpha={alpha})"
        return learner if mode == "vanilla" else _other_method_name(mode, learner)
    if algo != "ppol":
        return _other_method_name(mode, _ALGO_NAMES.get(algo, algo))
    if mode in _METHOD_NAMES:
        return _METHOD_NAMES[mode]
    if mode.startswith("adv-mix:"):
        return f"ADV-PPOL(mix {mode.split(':', 1)[1]})"
    return mode


def _other_method_name(mode: str, learner: str) -> str:
    """FOCOPS-vanilla, FOCOPS-random, FOCOPS(MC), FOCOPS(MR), FOCOPS(mix 0.5), SA-FOCOPS(MC)."""
    if mode in ("vanilla", "random"):
        return f"{learner}-{mode}"
    if mode.startswith("adv-mix:"):
        return f"{learner}(mix {mode.split(':', 1)[1]})"
    if mode.startswith("adv-"):
        return f"{learner}({mode.split('-', 1)[1].upper()})"
    if mode.startswith("sa-"):
        return f"SA-{learner}({mode.split('-', 1)[1].upper()})"
    return f"{learner} {mode}"


def _known_algo_form(algo: str) -> bool:
    """A learner name, or ``sac-lag:<entropy weight>`` / ``sac-lag:learned`` (the table's own
    grouping of SAC-Lag runs)."""
    base, sep, alpha = algo.partition(":")
    if not sep:
        return bool(base)
    if base != "sac-lag":
        return False
    if alpha == LEARNED_ALPHA:
        return True
    try:
        return math.isfinite(float(alpha))
    except ValueError:
        return False


def _algo_key(algo: str) -> tuple:
    base, _, alpha = algo.partition(":")
    if base in _ALGO_ORDER:  # SAC-Lag's alphas from the largest down, as in the appendix
        if alpha == LEARNED_ALPHA:  # after the fixed weights
            return (_ALGO_ORDER.index(base), math.inf, "")
        return (_ALGO_ORDER.index(base), -float(alpha) if alpha else 0.0, "")
    return (len(_ALGO_ORDER), 0.0, algo)


def _method_key(mode: str) -> tuple:
    if mode in _METHOD_ORDER:
        return (0, _METHOD_ORDER.index(mode), 0.0, mode)
    if mode.startswith("adv-mix:"):
        try:
            w = float(mode.split(":", 1)[1])
        except ValueError:
            w = math.inf
        return (1, 0, w, mode)
    return (2, 0, 0.0, mode)


def _env_key(env_id: str) -> tuple:
    if env_id in _PAPER_ENV_ORDER:
        return (0, _PAPER_ENV_ORDER.index(env_id), env_id)
    return (1, 0, env_id)


# ----------------------------------------------------------------------------- reading


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


def find_eval_files(runs_dir: str | PathLike) -> list[Path]:
    """Every ``eval.json`` under ``runs_dir`` (recursively), sorted."""
    root = Path(runs_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a directory")
    return sorted(root.rglob("eval.json"))


def _episode(record: dict) -> tuple[float, float]:
    """(reward, cost) of one episode record; ValueError unless both are finite numbers (not
    booleans) and the cost is >= 0."""
    reward, cost = record["reward"], record["cost"]
    if not (_is_number(reward) and _is_number(cost)):
        raise ValueError("not numbers")
    reward, cost = float(reward), float(cost)
    if not (math.isfinite(reward) and math.isfinite(cost) and cost >= 0):
        raise ValueError("not finite, or a negative cost")
    return reward, cost


def load_eval_file(path: str | PathLike) -> EvalFile:
    """Read one ``eval.json``; ValueError (naming the file) if it cannot be used."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ValueError(f"{path}: cannot read it ({err})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not an evaluation (expected a JSON object)")
    for key in ("env_id", "train_mode"):
        if not isinstance(data.get(key), str):
            raise ValueError(
                f"{path}: no {key!r} field (written by an older robustsafe evaluate? "
                "evaluate the run again)"
            )
    results = data.get("results")
    if not isinstance(results, list) or not results:
        raise ValueError(f"{path}: no 'results' list, or an empty one")
    episodes: dict[str, tuple[tuple[float, float], ...]] = {}
    epsilons: dict[str, float] = {}
    for entry in results:
        attack = entry.get("attack") if isinstance(entry, dict) else None
        if not isinstance(attack, str):
            raise ValueError(f"{path}: a result without an attack name")
        eps = entry.get("epsilon", 0.0)
        if attack in episodes:
            raise ValueError(
                f"{path}: attacker {attack!r} appears more than once (epsilons "
                f"{epsilons[attack]} and {eps}); the table needs one epsilon per run "
                "(evaluate with a single --eps)"
            )
        eps_list = entry.get("episodes")
        if not isinstance(eps_list, list) or not eps_list:
            raise ValueError(f"{path}: attacker {attack!r} has no per-episode records")
        try:
            episodes[attack] = tuple(_episode(e) for e in eps_list)
        except (KeyError, TypeError, ValueError):
            raise ValueError(
                f"{path}: attacker {attack!r} has malformed episodes (each needs a finite "
                "'reward' and a finite 'cost' >= 0)"
            ) from None
        if not (_is_number(eps) and math.isfinite(eps) and eps >= 0):
            raise ValueError(f"{path}: attacker {attack!r} has epsilon {eps!r}, not a number >= 0")
        epsilons[attack] = float(eps)
    seed = data.get("train_seed")
    epoch = data.get("agent_epoch")
    algo = data.get("train_algo", "ppol")
    if not isinstance(algo, str) or not _known_algo_form(algo):
        raise ValueError(f"{path}: 'train_algo' must be a learner name, got {algo!r}")
    alpha = data.get("train_alpha")
    if algo == "sac-lag" and data.get("train_alpha_learned") is True:
        algo = f"sac-lag:{LEARNED_ALPHA}"  # not one of the appendix's fixed weights
    elif algo == "sac-lag" and _is_number(alpha):
        algo = f"sac-lag:{alpha:g}"  # one group of rows per entropy weight
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
        cost_limit=float(limit) if _is_number(limit := data.get("cost_limit")) else None,
    )


def _is_number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


# ----------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Cell:
    """Pooled episodes of one method under one attacker (or the five, for Average)."""

    reward_mean: float
    reward_std: float
    cost_mean: float
    cost_std: float
    n_episodes: int
    n_seeds: int
    marked: bool = False

    @staticmethod
    def pool(runs: Sequence[Sequence[tuple[float, float]]]) -> Cell:
        """Pool the (reward, cost) episodes of several runs (at least one episode)."""
        data = np.array([ep for run in runs for ep in run], dtype=np.float64).reshape(-1, 2)
        return Cell(
            reward_mean=float(data[:, 0].mean()),
            reward_std=float(data[:, 0].std()),
            cost_mean=float(data[:, 1].mean()),
            cost_std=float(data[:, 1].std()),
            n_episodes=len(data),
            n_seeds=sum(1 for run in runs if len(run)),
        )


@dataclass(frozen=True)
class MethodRow:
    """One method on one env: a cell per column key (None where no run has it)."""

    env_id: str
    mode: str
    failing: bool
    epsilon: float | None
    seeds: tuple[int | None, ...]
    cells: dict[str, Cell | None]
    algo: str = "ppol"

    @property
    def method(self) -> str:
        return method_name(self.mode, self.algo)

    @property
    def label(self) -> str:
        """The method's name, with ``*`` after it for a failing agent."""
        return self.method + ("*" if self.failing else "")


@dataclass(frozen=True)
class ResultsTable:
    rows: tuple[MethodRow, ...]
    notes: tuple[str, ...] = ()
    source: str = ""
    average: str = "paper"  # what the Average cell pools: a key of AVERAGE_POOLS

    @property
    def envs(self) -> list[str]:
        return list(dict.fromkeys(r.env_id for r in self.rows))

    def env_epsilon(self, env_id: str) -> float | None:
        """The env's attack epsilon, or None if its methods disagree (or none was attacked)."""
        values = {r.epsilon for r in self.rows if r.env_id == env_id and r.epsilon is not None}
        return values.pop() if len(values) == 1 else None


def _display_cost(cell: Cell) -> float:
    return float(f"{cell.cost_mean:.2f}")


def build_table(
    files: Sequence[EvalFile], notes: Iterable[str] = (), source: str = "", average: str = "paper"
) -> ResultsTable:
    """Group, pool, mark and star (see the module docstring). ValueError on inconsistent input.
    ``average``: what the Average cell pools, ``"paper"`` (Natural and the five attackers) or
    ``"attackers"`` (the five)."""
    if average not in AVERAGE_POOLS:
        raise ValueError(f"average must be one of {sorted(AVERAGE_POOLS)}, got {average!r}")
    pooled = AVERAGE_POOLS[average]
    notes = list(notes)
    groups: dict[tuple[str, str, str], list[EvalFile]] = {}
    for f in files:
        groups.setdefault((f.env_id, f.algo, f.mode), []).append(f)

    rows: list[MethodRow] = []
    for (env_id, algo, mode), members in groups.items():
        members = sorted(members, key=lambda f: (f.train_seed is None, f.train_seed or 0, f.path))
        name = f"{method_name(mode, algo)} on {env_id}"
        seen: dict[int, Path] = {}
        for f in members:
            if f.train_seed is None:
                continue
            if f.train_seed in seen:
                raise ValueError(
                    f"{name}: seed {f.train_seed} is evaluated twice ({seen[f.train_seed]} and "
                    f"{f.path}); pooling both would count that seed twice: remove one"
                )
            seen[f.train_seed] = f.path
        epsilon = _group_epsilon(name, members)
        presets = sorted({f.preset for f in members if f.preset})
        if len(presets) > 1:
            notes.append(f"{name} pools runs of different presets ({', '.join(presets)}).")
        actions = sorted({f.actions for f in members if f.actions})
        if len(actions) > 1:
            notes.append(f"{name} pools evaluations of different actions ({'; '.join(actions)}).")
        epochs = sorted({f.agent_epoch for f in members if f.agent_epoch is not None})
        if len(epochs) > 1:
            notes.append(
                f"{name} pools agents of different epochs ({', '.join(map(str, epochs))}): "
                "some runs may be unfinished."
            )
        cells: dict[str, Cell | None] = {}
        for key, _ in ATTACK_COLUMNS:
            runs = [f.episodes[key] for f in members if f.episodes.get(key)]
            cells[key] = Cell.pool(runs) if runs else None
        complete = [f for f in members if all(f.episodes.get(a) for a in pooled)]
        cells[AVERAGE] = (
            Cell.pool([[ep for a in pooled for ep in f.episodes[a]] for f in complete])
            if complete
            else None
        )
        rows.append(
            MethodRow(
                env_id=env_id,
                mode=mode,
                failing=False,
                epsilon=epsilon,
                seeds=tuple(f.train_seed for f in members),
                cells=cells,
                algo=algo,
            )
        )

    rows.sort(key=lambda r: (_env_key(r.env_id), _algo_key(r.algo), _method_key(r.mode)))
    final: list[MethodRow] = []
    for env_id in dict.fromkeys(r.env_id for r in rows):
        starred: list[MethodRow] = []
        for algo in dict.fromkeys(r.algo for r in rows if r.env_id == env_id):
            algo_rows = [r for r in rows if r.env_id == env_id and r.algo == algo]
            starred += _star_failing(env_id, algo_rows, notes)
        env_rows = []  # marks per learner; SAC-Lag's entropy weights compete as one learner
        for learner in dict.fromkeys(_learner(r.algo) for r in starred):
            env_rows += _mark_lowest_costs([r for r in starred if _learner(r.algo) == learner])
        final.extend(env_rows)
        eps = {r.method: r.epsilon for r in env_rows if r.epsilon is not None}
        if len(set(eps.values())) > 1:
            notes.append(
                f"on {env_id} the methods were attacked at different epsilons: "
                + ", ".join(f"{m} {e:g}" for m, e in eps.items())
                + "."
            )
        for r in env_rows:
            notes.extend(_coverage_notes(r))
    return ResultsTable(tuple(final), tuple(notes), source, average)


def _group_epsilon(name: str, members: Sequence[EvalFile]) -> float | None:
    """The single attack epsilon of a method's runs; ValueError if they disagree."""
    per_file: dict[Path, float] = {}
    for f in members:
        values = {e for a, e in f.epsilons.items() if a in AVERAGED_ATTACKS}
        if len(values) > 1:
            raise ValueError(
                f"{f.path}: its attackers were run at different epsilons "
                f"({', '.join(f'{v:g}' for v in sorted(values))}); the table needs one"
            )
        if values:
            per_file[f.path] = values.pop()
    distinct = set(per_file.values())
    if len(distinct) > 1:
        detail = "; ".join(f"{p}: {e:g}" for p, e in per_file.items())
        raise ValueError(
            f"{name}: its seeds were attacked at different epsilons ({detail}); pooling them "
            "would mix budgets: re-evaluate them at one epsilon, or table them separately"
        )
    return distinct.pop() if distinct else None


def _learner(algo: str) -> str:
    """The learner of a row group: ``sac-lag:0.01`` -> ``sac-lag``."""
    return algo.partition(":")[0]


def _star_failing(env_id: str, rows: list[MethodRow], notes: list[str]) -> list[MethodRow]:
    """Star the failing agents among one learner's ``rows`` of an env (against its vanilla)."""
    reference = method_name("vanilla", rows[0].algo)
    vanilla = next((r for r in rows if r.mode == "vanilla"), None)
    natural = vanilla.cells.get("none") if vanilla is not None else None
    if vanilla is None or natural is None:
        notes.append(
            f"no {reference} natural result on {env_id}: no agent is treated as failing there."
        )
        return rows
    if not natural.reward_mean > 0:
        notes.append(
            f"{reference}'s natural reward on {env_id} is not positive "
            f"({natural.reward_mean:.2f}): the 30% rule does not apply, no agent is treated as "
            "failing there."
        )
        return rows
    threshold = FAILING_FRACTION * natural.reward_mean
    out = []
    for r in rows:
        nat = r.cells.get("none")
        failing = r.mode != "vanilla" and nat is not None and nat.reward_mean < threshold
        out.append(_replace_row(r, failing=failing))
    return out


def _mark_lowest_costs(rows: list[MethodRow]) -> list[MethodRow]:
    marked: dict[tuple[int, str], bool] = {}
    for key, _ in COLUMNS:
        candidates = [
            (i, r.cells[key]) for i, r in enumerate(rows) if not r.failing and r.cells.get(key)
        ]
        candidates.sort(key=lambda ic: (_display_cost(ic[1]), -ic[1].reward_mean, ic[0]))
        for i, _cell in candidates[:MARKED_PER_COLUMN]:
            marked[(i, key)] = True
    out = []
    for i, r in enumerate(rows):
        cells = {
            k: (None if c is None else _replace_cell(c, marked.get((i, k), False)))
            for k, c in r.cells.items()
        }
        out.append(_replace_row(r, cells=cells))
    return out


def _coverage_notes(row: MethodRow) -> list[str]:
    natural = row.cells.get("none")
    if natural is None:
        return []
    out = []
    for key, title in ATTACK_COLUMNS[1:]:
        c = row.cells.get(key)
        if c is not None and (c.n_seeds, c.n_episodes) != (natural.n_seeds, natural.n_episodes):
            out.append(
                f"{row.method} on {row.env_id}, {title}: {c.n_episodes} episodes of "
                f"{c.n_seeds} seed(s) (Natural: {natural.n_episodes} of {natural.n_seeds})."
            )
    avg = row.cells.get(AVERAGE)
    if avg is not None and avg.n_seeds != natural.n_seeds:
        out.append(
            f"{row.method} on {row.env_id}, Average: {avg.n_seeds} of the {natural.n_seeds} "
            "seeds (only runs evaluated under all five attackers)."
        )
    return out


def _replace_row(row: MethodRow, **changes) -> MethodRow:
    data = {
        "env_id": row.env_id,
        "mode": row.mode,
        "failing": row.failing,
        "epsilon": row.epsilon,
        "seeds": row.seeds,
        "cells": row.cells,
        "algo": row.algo,
    }
    data.update(changes)
    return MethodRow(**data)


def _replace_cell(cell: Cell, marked: bool) -> Cell:
    return Cell(
        cell.reward_mean,
        cell.reward_std,
        cell.cost_mean,
        cell.cost_std,
        cell.n_episodes,
        cell.n_seeds,
        marked,
    )


def collect_table(runs_dir: str | PathLike, average: str = "paper") -> ResultsTable:
    """The table of every ``eval.json`` under ``runs_dir`` (``average``: see ``build_table``).

    FileNotFoundError if ``runs_dir`` is not a directory, ValueError if it holds no usable
    evaluation or the evaluations are inconsistent (see the module docstring).
    """
    paths = find_eval_files(runs_dir)
    files, notes = [], []
    for p in paths:
        try:
            files.append(load_eval_file(p))
        except ValueError as err:
            notes.append(f"left out {err}")
    if not files:
        why = f" ({'; '.join(notes)})" if notes else ""
        raise ValueError(f"no usable eval.json under {runs_dir}{why}")
    return build_table(files, notes, source=str(runs_dir), average=average)


def _as_table(table: ResultsTable | str | PathLike) -> ResultsTable:
    return table if isinstance(table, ResultsTable) else collect_table(table)


# ----------------------------------------------------------------------------- formats


def _pm(mean: float, std: float, sep: str) -> str:
    return f"{mean:.2f}{sep}{std:.2f}"


_AVERAGE_LEGEND = {
    "paper": " Average pools the episodes of Natural and the five attackers (the mean of the six"
    " columns, as the paper's numbers are).",
    "attackers": " Average pools the episodes of the five attackers (Random, MAD, AMAD, MC, MR).",
}


def _legend(
    columns: Sequence[tuple[str, str]], average: str, ascii_only: bool = False
) -> list[str]:
    eps, pm = ("epsilon", "+/-") if ascii_only else ("ε", "±")
    average = _AVERAGE_LEGEND[average] if any(key == AVERAGE for key, _ in columns) else ""
    return [
        f"Mean {pm} std over all episodes of all seeds (pooled).{average} Seeds: runs pooled; "
        "Episodes: natural episodes pooled over them (the same under each attacker unless a note "
        "says otherwise).",
        f"Attacks at each env's {eps} (training and test budgets are the same). Bold: the two "
        "lowest-cost agents of each env per column (ties to the higher reward), failing agents "
        "excluded. * failing agent: natural reward below 30% of PPOL-vanilla's on the same env.",
    ]


def _env_title(table: ResultsTable, env_id: str, eps_symbol: str) -> str:
    eps = table.env_epsilon(env_id)
    return env_id if eps is None else f"{env_id} ({eps_symbol} = {eps:g})"


def format_markdown(
    table: ResultsTable | str | PathLike,
    costs_only: bool = False,
    columns: Sequence[tuple[str, str]] = COLUMNS,
) -> str:
    """The table in Markdown (marked costs in bold), with its legend and notes.

    ``table`` is a ``ResultsTable`` or a directory to collect one from. ``costs_only`` keeps the
    natural reward and every column's cost (a narrower table, for a README). ``columns``: the
    (key, title) pairs shown (a subset of ``COLUMNS``, e.g. the appendix's Random/MAD/Average).
    """
    table = _as_table(table)
    head = ["Env", "Method", "Seeds", "Episodes"]
    for key, title in columns:
        if not costs_only or key == "none":
            head.append(f"{title} reward")
        head.append(f"{title} cost")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 4 + "---:|" * (len(head) - 4)]
    previous = None
    for r in table.rows:
        env = _env_title(table, r.env_id, "ε") if r.env_id != previous else ""
        previous = r.env_id
        natural = r.cells.get("none")
        cells = [env, r.label, str(len(r.seeds)), str(natural.n_episodes) if natural else "—"]
        for key, _ in columns:
            with_reward = not costs_only or key == "none"
            c = r.cells.get(key)
            if c is None:
                cells += ["—", "—"] if with_reward else ["—"]
                continue
            cost = _pm(c.cost_mean, c.cost_std, " ± ")
            if with_reward:
                cells.append(_pm(c.reward_mean, c.reward_std, " ± "))
            cells.append(f"**{cost}**" if c.marked else cost)
        lines.append("| " + " | ".join(cells) + " |")
    out = ["\n".join(lines), "", *_legend(columns, table.average)]
    if table.notes:
        out += ["", "Notes:", *(f"- {n}" for n in table.notes)]
    return "\n".join(out) + "\n"


def format_csv(
    table: ResultsTable | str | PathLike, columns: Sequence[tuple[str, str]] = COLUMNS
) -> str:
    """Long format: one line per (env, method, column); empty numbers for a missing cell."""
    table = _as_table(table)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n")
    w.writeheader()
    for r in table.rows:
        for key, _ in columns:
            c = r.cells.get(key)
            row = {
                "env": r.env_id,
                "method": r.method,
                "attack": key,
                "marked": "true" if c is not None and c.marked else "false",
                "failing": "true" if r.failing else "false",
                "mode": r.mode,
                "epsilon": "" if r.epsilon is None or key == "none" else repr(r.epsilon),
                "n_episodes": 0 if c is None else c.n_episodes,
                "n_seeds": 0 if c is None else c.n_seeds,
            }
            if c is not None:
                row.update(
                    reward_mean=repr(c.reward_mean),
                    reward_std=repr(c.reward_std),
                    cost_mean=repr(c.cost_mean),
                    cost_std=repr(c.cost_std),
                )
            w.writerow(row)
    return buf.getvalue()


_TEX_ESCAPES = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def _tex(text: str) -> str:
    return "".join(_TEX_ESCAPES.get(ch, ch) for ch in text)


def format_latex(
    table: ResultsTable | str | PathLike, columns: Sequence[tuple[str, str]] = COLUMNS
) -> str:
    """A plain-LaTeX ``tabular`` (no packages needed; marked costs in ``\\textbf``).

    The legend and notes come first as ``%`` comments, so the file can be ``\\input``.
    """
    table = _as_table(table)
    n = len(columns)
    spec = "|l|l|" + "rr|" * n
    lines = [f"% {line}" for line in _legend(columns, table.average, ascii_only=True)]
    lines += [f"% note: {note}" for note in table.notes]
    lines += [f"\\begin{{tabular}}{{{spec}}}", "\\hline"]
    titles = " & ".join(f"\\multicolumn{{2}}{{c|}}{{{title}}}" for _, title in columns)
    lines.append(f" &  & {titles} \\\\")
    lines.append(f"\\cline{{3-{2 + 2 * n}}}")
    lines.append("Env & Method & " + " & ".join(["Reward & Cost"] * n) + " \\\\")
    lines.append("\\hline")
    previous = None
    for r in table.rows:
        if previous is not None and r.env_id != previous:
            lines.append("\\hline")
        env = ""
        if r.env_id != previous:
            eps = table.env_epsilon(r.env_id)
            env = _tex(r.env_id) + ("" if eps is None else f" ($\\epsilon={eps:g}$)")
        previous = r.env_id
        cells = [env, _tex(r.label)]
        for key, _ in columns:
            c = r.cells.get(key)
            if c is None:
                cells += ["--", "--"]
                continue
            cost = _pm(c.cost_mean, c.cost_std, "$\\pm$")
            cells += [
                _pm(c.reward_mean, c.reward_std, "$\\pm$"),
                f"\\textbf{{{cost}}}" if c.marked else cost,
            ]
        lines.append(" & ".join(cells) + " \\\\")
    lines += ["\\hline", "\\end{tabular}"]
    return "\n".join(lines) + "\n"


def write_tables(
    runs_dir: str | PathLike, out_prefix: str | PathLike, table: ResultsTable | None = None
) -> list[Path]:
    """Write ``<prefix>.md``, ``<prefix>.csv``, ``<prefix>.tex`` and ``<prefix>-costs.md`` (the
    Markdown table with the natural reward and the costs only); returns the paths.

    ``table`` defaults to ``collect_table(runs_dir)``.
    """
    table = table if table is not None else collect_table(runs_dir)
    return write_prefixed(
        out_prefix,
        (
            (".md", format_markdown(table)),
            (".csv", format_csv(table)),
            (".tex", format_latex(table)),
            ("-costs.md", format_markdown(table, costs_only=True)),
        ),
    )


def write_prefixed(out_prefix: str | PathLike, texts: Iterable[tuple[str, str]]) -> list[Path]:
    """Write each (suffix, text) to ``<prefix><suffix>`` atomically; returns the paths."""
    prefix = Path(out_prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for suffix, text in texts:
        path = prefix.with_name(prefix.name + suffix)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(text)
        tmp.replace(path)
        paths.append(path)
    return paths
