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
- failing agents, whose natural reward is below 30% of their learner's vanilla agent's
  (PPOL-vanilla's for PPO-Lagrangian, FOCOPS-vanilla's for FOCOPS) natural reward on the same
  env, are starred (``*`` after the name) and never marked. Without such a vanilla row on an
  env, or when its natural reward is not positive, no agent is treated as failing (a note says
  so);
- in every column the two lowest-cost agents of each env and learner (SAC-Lagrangian's entropy
  weights together) are marked (``Cell.marked``; ``table_format`` shows them in bold in
  Markdown, ``\\textbf`` in LaTeX); costs are compared as displayed (2 decimals) and ties go to
  the higher reward (the paper's rule);
- a cell no run has is None (``table_format`` shows "—", "--" in LaTeX); a cell that pools
  fewer seeds or episodes than the row's natural cell gets a note.

Errors rather than silently wrong numbers: the seeds of one method attacked at different
epsilons, one run's attackers at different epsilons, and two evaluations of the same seed of
the same method raise ValueError naming the files. Files that cannot be read, that lack the
``env_id`` / ``train_mode`` fields, or that list an attacker twice (a sweep over epsilons) are
left out with a note. Notes also say where a method pools runs of different presets, actions,
agent epochs or numbers of episodes, evaluations without a training seed, or runs trained at
another budget than the one they are attacked at (``train_epsilon``, which evaluations record
for the robust modes).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from os import PathLike
from pathlib import Path

import numpy as np

from robustsafe.experiments.eval_files import EvalFile, find_eval_files, load_eval_file
from robustsafe.experiments.names import (
    algo_key,
    env_key,
    method_key,
    method_name,
    paper_attacker,
)
from robustsafe.experiments.table_pooling import pooling_notes

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
    own_attacks: tuple[str, ...] = ()  # users' own attackers shown as columns (after MR)

    @property
    def columns(self) -> tuple[tuple[str, str], ...]:
        """(key, title) of every column: the paper's, a user's own attackers, Average."""
        return own_columns(self.own_attacks)

    @property
    def envs(self) -> list[str]:
        return list(dict.fromkeys(r.env_id for r in self.rows))

    def env_epsilon(self, env_id: str) -> float | None:
        """The env's attack epsilon, or None if its methods disagree (or none was attacked)."""
        values = {r.epsilon for r in self.rows if r.env_id == env_id and r.epsilon is not None}
        return values.pop() if len(values) == 1 else None


def _display_cost(cell: Cell) -> float:
    """The cost as the formats show it (2 decimals: ``table_format._pm``)."""
    return float(f"{cell.cost_mean:.2f}")


def own_columns(own_attacks: Sequence[str] = ()) -> tuple[tuple[str, str], ...]:
    """The table's columns with users' own attackers (``register_attacker``) after MR: the
    Average stays the paper's."""
    return (*ATTACK_COLUMNS, *((a, a) for a in own_attacks), (AVERAGE, "Average"))


def build_table(
    files: Sequence[EvalFile],
    notes: Iterable[str] = (),
    source: str = "",
    average: str = "paper",
    own_attacks: Sequence[str] = (),
) -> ResultsTable:
    """Group, pool, mark and star (see the module docstring). ValueError on inconsistent input.
    ``average``: what the Average cell pools, ``"paper"`` (Natural and the five attackers) or
    ``"attackers"`` (the five). ``own_attacks``: users' own attackers, each a column of its
    own (in no Average)."""
    if average not in AVERAGE_POOLS:
        raise ValueError(f"average must be one of {sorted(AVERAGE_POOLS)}, got {average!r}")
    own_attacks = _checked_own_attacks(own_attacks)
    notes = list(notes)
    rows = [
        _method_row(key, members, own_attacks, AVERAGE_POOLS[average], notes)
        for key, members in _group_files(files).items()
    ]
    rows.sort(key=lambda r: (env_key(r.env_id), algo_key(r.algo), method_key(r.mode)))
    columns = own_columns(own_attacks)
    final: list[MethodRow] = []
    for env_id in dict.fromkeys(r.env_id for r in rows):
        final += _env_rows(env_id, [r for r in rows if r.env_id == env_id], columns, notes)
    return ResultsTable(tuple(final), tuple(notes), source, average, own_attacks)


def _checked_own_attacks(own_attacks: Sequence[str]) -> tuple[str, ...]:
    """Users' own attackers, each once; ValueError for a paper attacker's name."""
    own_attacks = tuple(dict.fromkeys(own_attacks))
    paper = [a for a in own_attacks if paper_attacker(a)]
    if paper:
        raise ValueError(f"{', '.join(paper)}: the paper's attackers have their columns already")
    return own_attacks


def _group_files(files: Iterable[EvalFile]) -> dict[tuple[str, str, str], list[EvalFile]]:
    """The evaluations by (env id, learner, training mode), groups in first-seen order."""
    groups: dict[tuple[str, str, str], list[EvalFile]] = {}
    for f in files:
        groups.setdefault((f.env_id, f.algo, f.mode), []).append(f)
    return groups


def _method_row(
    key: tuple[str, str, str],
    members: Sequence[EvalFile],
    own_attacks: Sequence[str],
    pooled: Sequence[str],
    notes: list[str],
) -> MethodRow:
    """One (env id, learner, mode) group's row, unstarred and unmarked; its notes to ``notes``."""
    env_id, algo, mode = key
    members = sorted(members, key=lambda f: (f.train_seed is None, f.train_seed or 0, f.path))
    name = f"{method_name(mode, algo)} on {env_id}"
    _check_seeds_once(name, members)
    epsilon = _group_epsilon(name, members)
    notes.extend(pooling_notes(name, members, epsilon, own_attacks))
    return MethodRow(
        env_id=env_id,
        mode=mode,
        failing=False,
        epsilon=epsilon,
        seeds=tuple(f.train_seed for f in members),
        cells=_pooled_cells(members, own_attacks, pooled),
        algo=algo,
    )


def _check_seeds_once(name: str, members: Sequence[EvalFile]) -> None:
    """ValueError if two of a method's evaluations are of the same training seed."""
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


def _pooled_cells(
    members: Sequence[EvalFile], own_attacks: Sequence[str], pooled: Sequence[str]
) -> dict[str, Cell | None]:
    """A row's cells: each attacker's episodes pooled, and the Average of the complete runs."""
    cells: dict[str, Cell | None] = {}
    for key, _ in own_columns(own_attacks)[:-1]:
        runs = [f.episodes[key] for f in members if f.episodes.get(key)]
        cells[key] = Cell.pool(runs) if runs else None
    complete = [f for f in members if all(f.episodes.get(a) for a in pooled)]
    cells[AVERAGE] = (
        Cell.pool([[ep for a in pooled for ep in f.episodes[a]] for f in complete])
        if complete
        else None
    )
    return cells


def _env_rows(
    env_id: str, rows: Sequence[MethodRow], columns: Sequence[tuple[str, str]], notes: list[str]
) -> list[MethodRow]:
    """An env's rows starred and marked; its epsilon and coverage notes to ``notes``."""
    starred: list[MethodRow] = []
    for algo in dict.fromkeys(r.algo for r in rows):
        starred += _star_failing(env_id, [r for r in rows if r.algo == algo], notes)
    env_rows = []  # marks per learner; SAC-Lag's entropy weights compete as one learner
    for learner in dict.fromkeys(_learner(r.algo) for r in starred):
        learner_rows = [r for r in starred if _learner(r.algo) == learner]
        env_rows += _mark_lowest_costs(learner_rows, columns)
    notes.extend(_epsilon_notes(env_id, env_rows))
    for r in env_rows:
        notes.extend(_coverage_notes(r, columns))
    return env_rows


def _epsilon_notes(env_id: str, env_rows: Sequence[MethodRow]) -> list[str]:
    """A note if an env's methods were attacked at different epsilons."""
    eps = {r.method: r.epsilon for r in env_rows if r.epsilon is not None}
    if len(set(eps.values())) <= 1:
        return []
    return [
        f"on {env_id} the methods were attacked at different epsilons: "
        + ", ".join(f"{m} {e:g}" for m, e in eps.items())
        + "."
    ]


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


def _mark_lowest_costs(
    rows: list[MethodRow], columns: Sequence[tuple[str, str]]
) -> list[MethodRow]:
    marked: dict[tuple[int, str], bool] = {}
    for key, _ in columns:
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


def _coverage_notes(row: MethodRow, columns: Sequence[tuple[str, str]]) -> list[str]:
    natural = row.cells.get("none")
    if natural is None:
        return []
    out = []
    for key, title in columns[1:-1]:
        c = row.cells.get(key)
        if c is not None and (c.n_seeds, c.n_episodes) != (natural.n_seeds, natural.n_episodes):
            out.append(
                f"{row.method} on {row.env_id}, {title}: {c.n_episodes} episodes of "
                f"{c.n_seeds} seed(s) (Natural: {natural.n_episodes} of {natural.n_seeds})."
            )
    avg = row.cells.get(AVERAGE)
    if avg is not None and avg.n_seeds < natural.n_seeds:
        out.append(
            f"{row.method} on {row.env_id}, Average: {avg.n_seeds} of the {natural.n_seeds} "
            "seeds (only runs evaluated under all five attackers)."
        )
    elif avg is not None and avg.n_seeds > natural.n_seeds:  # (the attackers' average)
        out.append(
            f"{row.method} on {row.env_id}, Average: {avg.n_seeds} seeds, Natural: "
            f"{natural.n_seeds} (the Average pools every run evaluated under all five "
            "attackers, with or without a natural evaluation)."
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


def collect_table(
    runs_dir: str | PathLike, average: str = "paper", own_attacks: Sequence[str] = ()
) -> ResultsTable:
    """The table of every ``eval.json`` under ``runs_dir`` (``average``, ``own_attacks``: see
    ``build_table``).

    FileNotFoundError if ``runs_dir`` is not a directory, ValueError if it holds no usable
    evaluation or the evaluations are inconsistent (see the module docstring).
    """
    paths = find_eval_files(runs_dir)
    files, notes = [], []
    for p in paths:
        try:
            files.append(_with_training_budget(load_eval_file(p)))
        except ValueError as err:
            notes.append(f"left out {err}")
    if not files:
        why = f" ({'; '.join(notes)})" if notes else ""
        raise ValueError(f"no usable eval.json under {runs_dir}{why}")
    return build_table(files, notes, source=str(runs_dir), average=average, own_attacks=own_attacks)


def _with_training_budget(f: EvalFile) -> EvalFile:
    """``f`` with its robust training's budget: as the evaluation recorded it, else from the
    run's ``config.yaml`` beside it (evaluations written before they recorded it); vanilla runs
    and runs without a readable config keep None."""
    if f.train_epsilon is not None or f.mode == "vanilla":
        return f
    from robustsafe.rundir import load_run_config

    try:
        cfg = load_run_config(f.path.parent)
    except (OSError, ValueError):
        return f
    if cfg.robust.mode != f.mode:  # the config of another run
        return f
    return replace(f, train_epsilon=cfg.robust.training_epsilon)
