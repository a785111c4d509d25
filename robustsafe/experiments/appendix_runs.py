"""The runs behind the appendix's per-attacker tables (the minimum-reward table,
``robustsafe.experiments.minr_table``, and the MC/MR mixture table,
``robustsafe.experiments.mix_table``) and what those two tables share: their runs grouped by
method, the one epsilon of a method, a cell's mean ± std texts and their common long CSV format.

Where the evaluations come from: for every run directory, ``eval.json`` (Table 1's attackers,
what ``robustsafe table`` always read) merged with ``eval-appendix.json`` if present (what
``robustsafe grid --appendix`` writes: ``none``, ``minr`` and ``mix:W`` at the run's epsilon).
An attacker in both is taken from ``eval-appendix.json``, so the appendix tables pool episodes
of one evaluation (same episode count as its own natural cell). Pooling is Table 1's: all
episodes of all seeds, mean and population std. Errors as in Table 1: the seeds of one method
attacked at different epsilons, or a seed evaluated twice, raise ValueError naming the files.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from os import PathLike
from pathlib import Path

from robustsafe.experiments.eval_files import EvalFile, load_eval_file
from robustsafe.experiments.names import env_key, method_key, method_name
from robustsafe.experiments.table import Cell
from robustsafe.experiments.table_format import cell_numbers
from robustsafe.files import find_named

APPENDIX_EVAL_NAME = "eval-appendix.json"

# the long CSV format of the minr and mix tables: one line per (table, env, method, attacker)
APPENDIX_CSV_FIELDS = (
    "table",
    "env",
    "method",
    "mode",
    "attack",
    "weight",
    "epsilon",
    "reward_mean",
    "reward_std",
    "cost_mean",
    "cost_std",
    "reward_change",
    "cost_change",
    "n_episodes",
    "n_seeds",
)


# ----------------------------------------------------------------------------- reading


def merge_evals(main: EvalFile | None, extra: EvalFile | None) -> EvalFile:
    """One run's evaluations: ``main`` (eval.json) with ``extra``'s attackers on top."""
    if main is None or extra is None:
        out = main or extra
        if out is None:
            raise ValueError("merge_evals needs at least one evaluation")
        return out
    for name in ("env_id", "algo", "mode", "train_seed"):
        if getattr(main, name) != getattr(extra, name):
            raise ValueError(
                f"{extra.path}: {name} {getattr(extra, name)!r} differs from {main.path}'s "
                f"{getattr(main, name)!r}: they are not evaluations of the same run"
            )
    # the same agent on the same paired episodes (e.g. not an appendix evaluation left from
    # before the training was extended): mixture columns sit beside eval.json's MC and MR
    for name, what in (
        ("agent_epoch", "agent epoch"),
        ("episode_seed", "episode seed"),
        ("actions", "actions"),
    ):
        mine, theirs = getattr(extra, name), getattr(main, name)
        if mine is not None and theirs is not None and mine != theirs:
            raise ValueError(
                f"{extra.path}: its {what} {mine!r} differs from {main.path}'s {theirs!r}: "
                "not the same agent on the same episodes; evaluate it again (grid --appendix)"
            )
    return EvalFile(
        path=main.path,
        env_id=main.env_id,
        mode=main.mode,
        train_seed=main.train_seed,
        preset=main.preset,
        agent_epoch=main.agent_epoch,
        episodes={**main.episodes, **extra.episodes},
        epsilons={**main.epsilons, **extra.epsilons},
        algo=main.algo,
        actions=main.actions,
        cost_limit=main.cost_limit,
        episode_seed=main.episode_seed,
        train_epsilon=main.train_epsilon,
    )


def collect_appendix_runs(runs_dir: str | PathLike) -> tuple[list[EvalFile], list[str]]:
    """Every run under ``runs_dir`` with ``eval.json`` and / or ``eval-appendix.json``, merged
    per directory; files that cannot be used are left out with a note."""
    root = Path(runs_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a directory")
    names = ("eval.json", APPENDIX_EVAL_NAME)
    dirs = sorted({p.parent for p in find_named(root, *names)})
    runs, notes = [], []
    for d in dirs:
        loaded: dict[str, EvalFile | None] = {}
        for name in ("eval.json", APPENDIX_EVAL_NAME):
            loaded[name] = None
            if (d / name).exists():
                try:
                    loaded[name] = load_eval_file(d / name)
                except ValueError as err:
                    notes.append(f"left out {err}")
        if loaded["eval.json"] is None and loaded[APPENDIX_EVAL_NAME] is None:
            continue
        try:
            run = merge_evals(loaded["eval.json"], loaded[APPENDIX_EVAL_NAME])
        except ValueError as err:
            notes.append(f"left out {err}")
            continue
        if run.algo != "ppol":  # these tables are PPO-Lagrangian's (``robustsafe table``: all)
            notes.append(f"left out {run.path}: a {run.algo} run; these tables show PPOL's")
            continue
        runs.append(run)
    return runs, notes


# ----------------------------------------------------------------------------- grouping


def group_by_method(files: Iterable[EvalFile]) -> dict[tuple[str, str], list[EvalFile]]:
    """Runs by (env, mode), in the paper's order; ValueError if a seed appears twice."""
    groups: dict[tuple[str, str], list[EvalFile]] = {}
    for f in files:
        groups.setdefault((f.env_id, f.mode), []).append(f)
    out = {}
    for key in sorted(groups, key=lambda k: (env_key(k[0]), method_key(k[1]))):
        members = sorted(
            groups[key], key=lambda f: (f.train_seed is None, f.train_seed or 0, f.path)
        )
        seen: dict[int, Path] = {}
        for f in members:
            if f.train_seed is not None and f.train_seed in seen:
                raise ValueError(
                    f"{method_name(key[1])} on {key[0]}: seed {f.train_seed} is evaluated twice "
                    f"({seen[f.train_seed]} and {f.path}); pooling both would count that seed "
                    "twice: remove one"
                )
            if f.train_seed is not None:
                seen[f.train_seed] = f.path
        out[key] = members
    return out


def method_epsilon(name: str, runs: Sequence[EvalFile], attacks: Iterable[str]) -> float | None:
    """The one epsilon of ``attacks`` over ``runs`` (``name``: the method, for the error);
    ValueError if they disagree."""
    attacks = tuple(attacks)
    values: dict[float, Path] = {}
    for f in runs:
        for a in attacks:
            if f.episodes.get(a) and a != "none":
                values.setdefault(f.epsilons[a], f.path)
    if len(values) > 1:
        detail = "; ".join(f"{p}: {e:g}" for e, p in values.items())
        raise ValueError(
            f"{name}: attacked at different epsilons ({detail}); the table needs one epsilon "
            "per method: re-evaluate at one epsilon, or table them separately"
        )
    return next(iter(values), None)


# ----------------------------------------------------------------------------- formatting


def mean_std_pair(c: Cell | None) -> list[str]:
    """A cell's reward and cost as Markdown ``mean ± std`` texts (``—`` for no cell)."""
    if c is None:
        return ["—", "—"]
    return [f"{c.reward_mean:.2f} ± {c.reward_std:.2f}", f"{c.cost_mean:.2f} ± {c.cost_std:.2f}"]


def appendix_csv_row(
    table: str,
    env: str,
    mode: str,
    attack: str,
    weight: float | None,
    eps: float | None,
    cell: Cell | None,
    changes: tuple[float | None, float | None] = (None, None),
) -> dict[str, object]:
    """One line of the long CSV format (``APPENDIX_CSV_FIELDS``): ``table`` is ``minr`` or
    ``mix``; ``changes``: the reward and cost changes from the natural means, if any."""
    row: dict[str, object] = {
        "table": table,
        "env": env,
        "method": method_name(mode),
        "mode": mode,
        "attack": attack,
        "weight": "" if weight is None else repr(weight),
        "epsilon": "" if eps is None or attack == "none" else repr(eps),
        "n_episodes": 0 if cell is None else cell.n_episodes,
        "n_seeds": 0 if cell is None else cell.n_seeds,
        "reward_change": "" if changes[0] is None else repr(changes[0]),
        "cost_change": "" if changes[1] is None else repr(changes[1]),
    }
    if cell is not None:
        row.update(cell_numbers(cell))
    return row


def format_appendix_csv(rows: Iterable[dict[str, object]]) -> str:
    """The long CSV format: its header, then ``rows`` (from ``appendix_csv_row``)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=APPENDIX_CSV_FIELDS, lineterminator="\n")
    w.writeheader()
    for row in rows:
        w.writerow(row)
    return buf.getvalue()
