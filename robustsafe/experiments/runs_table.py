"""One row per evaluated run: the per-seed numbers behind Table 1's pooled cells.

Table 1 pools the episodes of every seed of a method; whether a method holds on *every* seed
(the targets of a reproduction) needs the runs one by one. For each ``eval.json`` under a
directory: the natural reward and cost, the mean cost under each of the five attackers, the
worst of them and whether it is within the cost limit the run was evaluated against (robust),
and, from the run's ``metrics.csv`` beside it, the training-time episode reward and cost of the
stochastic policy over its last epochs (the cost is what the Lagrangian constrained) and the
training's wall time.
"""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import NamedTuple

from robustsafe.experiments.eval_files import find_eval_files, load_eval_file
from robustsafe.experiments.names import algo_key, env_key, method_key, method_name
from robustsafe.experiments.table import AVERAGED_ATTACKS, ResultsTable, collect_table
from robustsafe.experiments.table_format import write_prefixed
from robustsafe.files import read_csv_rows, read_text_file
from robustsafe.provenance import PROVENANCE_NAME
from robustsafe.rundir import load_run_config

TRAIN_EPOCHS = 10  # the training cost averages the last this many epochs
_TITLES = {"random": "Random", "mad": "MAD", "amad": "AMAD", "mc": "MC", "mr": "MR"}
CSV_FIELDS = (
    "env",
    "method",
    "seed",
    "epsilon",
    "natural_reward",
    "natural_cost",
    *(f"{a}_cost" for a in AVERAGED_ATTACKS),
    "worst_attack",
    "worst_cost",
    "cost_limit",
    "robust",
    "train_reward",
    "train_cost",
    "train_wall_s",
    "failing",
    "code",
    "path",
)


@dataclass(frozen=True)
class RunRow:
    """One evaluated run. Costs are episode means; ``None``: not evaluated / not recorded."""

    env_id: str
    method: str
    seed: int | None
    epsilon: float | None
    natural_reward: float
    natural_cost: float
    attack_costs: dict[str, float]  # attacker -> mean cost, for the attackers evaluated
    cost_limit: float | None
    train_cost: float | None
    path: Path
    train_reward: float | None = None  # the same epochs' mean training episode return
    train_wall_s: float | None = None  # the last epoch's wall_time: training, resumes included
    failing: bool = False  # Table 1's failing agent (its method's row is starred there)
    code: str | None = None  # the commits that trained it (provenance.json), None: not recorded

    @property
    def worst(self) -> tuple[str, float] | None:
        """The attacker with the highest mean cost and that cost (the first on a tie)."""
        if not self.attack_costs:
            return None
        name = max(self.attack_costs, key=lambda a: self.attack_costs[a])
        return name, self.attack_costs[name]

    @property
    def robust(self) -> bool | None:
        """Cost within the limit without attack and under all five attackers: False as soon as
        the natural cost or an evaluated attacker's is above the limit (a run unsafe without
        attack is not robust, whatever the attackers do), even where an attacker is missing;
        None if no limit is known or a missing attacker could still decide it."""
        if self.cost_limit is None:
            return None
        costs = [self.natural_cost, *self.attack_costs.values()]
        if max(costs) > self.cost_limit:
            return False
        if len(self.attack_costs) < len(AVERAGED_ATTACKS):
            return None
        return True


class TrainingTail(NamedTuple):
    """What a run's ``metrics.csv`` says of its end; ``None``: not recorded."""

    reward: float | None  # mean ``ep_return`` over the last epochs that finished an episode
    cost: float | None  # the same for ``ep_cost``
    wall_s: float | None  # ``wall_time`` of the last epoch (seconds since the run started)


def finite_mean(rows: Sequence[dict[str, str]], key: str) -> float | None:
    """Mean of the column ``key`` over ``rows``, leaving out blanks and NaN (an epoch that
    finished no episode); None if nothing is left or a cell is not a number."""
    try:
        values = [float(r[key]) for r in rows if r.get(key) not in (None, "")]
    except ValueError:
        return None
    values = [v for v in values if not math.isnan(v)]
    return statistics.mean(values) if values else None


def training_tail(metrics_csv: Path, epochs: int = TRAIN_EPOCHS) -> TrainingTail:
    """The training episode reward and cost of the last ``epochs`` rows of a run's
    ``metrics.csv`` (epochs that finished no episode left out) and its last wall time; every
    field None if the file is missing or unreadable."""
    try:
        rows = read_csv_rows(metrics_csv)
    except (OSError, csv.Error, UnicodeDecodeError):
        return TrainingTail(None, None, None)
    tail = rows[-epochs:]
    wall = finite_mean(rows[-1:], "wall_time")
    return TrainingTail(finite_mean(tail, "ep_return"), finite_mean(tail, "ep_cost"), wall)


def config_cost_limit(run_dir: Path) -> float | None:
    """The cost limit a run trained under, from its ``config.yaml`` (for evaluation files
    written before they recorded the limit); None where the run has no readable config."""
    try:
        return load_run_config(run_dir).cost_limit
    except (OSError, ValueError):
        return None


def training_code(provenance: Path) -> str | None:
    """The short commits a run was trained with, in the order of its starts and resumes
    (``abc1234``, ``abc1234 + def5678``; ``+mod``: the package differed from the commit;
    ``?``: no commit known), or None where the run has no readable ``provenance.json``."""
    try:
        starts = json.loads(read_text_file(provenance))["starts"]
        labels = [
            (s.get("commit") or "?")[:7] + ("+mod" if s.get("modified") else "") for s in starts
        ]
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None
    return " + ".join(dict.fromkeys(labels)) or None


def collect_runs(
    runs_dir: str | PathLike, table: ResultsTable | None = None
) -> tuple[list[RunRow], list[str]]:
    """Every evaluated run under ``runs_dir`` with a natural evaluation, in Table 1's order
    (env, learner, method, seed), and notes on the files left out. A run of a method that
    Table 1 (``table``, default ``collect_table(runs_dir)``) stars as failing is marked so."""
    table = table if table is not None else collect_table(runs_dir)
    failing = {(r.env_id, r.algo, r.mode) for r in table.rows if r.failing}
    notes: list[str] = []
    keyed: list[tuple[tuple, RunRow]] = []
    for path in find_eval_files(runs_dir):
        try:
            ev = load_eval_file(path)
        except ValueError as err:
            notes.append(f"left out {err}")
            continue
        if "none" not in ev.episodes or not ev.episodes["none"]:
            notes.append(f"left out {path}: no natural evaluation")
            continue
        natural = ev.episodes["none"]
        tail = training_tail(path.parent / "metrics.csv")
        row = RunRow(
            env_id=ev.env_id,
            method=method_name(ev.mode, ev.algo),
            seed=ev.train_seed,
            epsilon=max((ev.epsilons[a] for a in ev.epsilons if a != "none"), default=None),
            natural_reward=statistics.mean([r for r, _ in natural]),
            natural_cost=statistics.mean([c for _, c in natural]),
            attack_costs={
                a: statistics.mean([c for _, c in ev.episodes[a]])
                for a in AVERAGED_ATTACKS
                if ev.episodes.get(a)
            },
            cost_limit=ev.cost_limit
            if ev.cost_limit is not None
            else config_cost_limit(path.parent),
            train_cost=tail.cost,
            train_reward=tail.reward,
            train_wall_s=tail.wall_s,
            code=training_code(path.parent / PROVENANCE_NAME),
            path=path.parent,
            failing=(ev.env_id, ev.algo, ev.mode) in failing,
        )
        seed_key = (0, ev.train_seed) if ev.train_seed is not None else (1, 0)
        keyed.append(((env_key(ev.env_id), algo_key(ev.algo), method_key(ev.mode), seed_key), row))
    keyed.sort(key=lambda kr: (kr[0], str(kr[1].path)))
    return [row for _, row in keyed], notes


def _num(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _worst_text(row: RunRow, where: str = "") -> str:
    """``12.30 (MR)``; the attackers tied at the highest cost, or ``all`` where every one is;
    ``where`` is added inside the brackets (``12.30 (MR, seed 1)``)."""
    worst = row.worst
    if worst is None:
        return "-"
    tied = [a for a in AVERAGED_ATTACKS if row.attack_costs.get(a) == worst[1]]
    names = "all" if len(tied) == len(AVERAGED_ATTACKS) else ", ".join(_TITLES[a] for a in tied)
    return f"{worst[1]:.2f} ({names}{where})"


def format_runs_markdown(rows: Sequence[RunRow], root: str | PathLike | None = None) -> str:
    """A Markdown table, one line per run; paths relative to ``root`` where given."""
    head = ["Env", "Method", "Seed", "Natural reward", "Natural cost"]
    head += [f"{_TITLES[a]} cost" for a in AVERAGED_ATTACKS]
    head += ["Worst cost", "Robust", f"Train reward (last {TRAIN_EPOCHS})"]
    head += [f"Train cost (last {TRAIN_EPOCHS})", "Train wall (min)"]
    with_code = any(r.code is not None for r in rows)
    head += ["Code", "Run"] if with_code else ["Run"]
    lines = ["| " + " | ".join(head) + " |", "|---|---|---" + "|---:" * (len(head) - 4) + "|---|"]
    for r in rows:
        robust = {True: "yes", False: "**no**", None: "-"}[r.robust]
        over = r.train_cost is not None and r.cost_limit is not None and r.train_cost > r.cost_limit
        cells = [
            r.env_id,
            r.method + ("*" if r.failing else ""),
            "-" if r.seed is None else str(r.seed),
            _num(r.natural_reward, 1),
            _num(r.natural_cost),
            *(_num(r.attack_costs.get(a)) for a in AVERAGED_ATTACKS),
            _worst_text(r),
            robust,
            _num(r.train_reward, 1),
            (f"**{r.train_cost:.2f}**" if over else _num(r.train_cost)),
            _num(None if r.train_wall_s is None else r.train_wall_s / 60, 0),
            *([r.code or "-"] if with_code else []),
            str(r.path.relative_to(root)) if root is not None else str(r.path),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    legend = (
        "One run per line: episode means of its evaluation (natural, then the cost under each "
        "attacker at its epsilon). Robust: cost within the run's cost limit without attack and "
        'under all five attackers ("-": one not evaluated). Train reward, train cost: the '
        "stochastic policy's "
        f"mean training episode return and cost over the last {TRAIN_EPOCHS} epochs of its "
        "metrics.csv (epochs that finished no episode left out; under attack for the ADV and "
        "random modes); bold: a cost above the cost limit. Train wall: the last epoch's "
        "wall_time, minutes since the run started (resumes included; a shared machine's clock, "
        "not a timing). Code: the commits that "
        "trained the run (its provenance.json; + joins a resume under other code). * a method "
        "Table 1 stars as failing (natural reward below 30% of its learner's vanilla agent's on "
        "the env): its low costs are no robustness."
    )
    return "\n".join(lines) + "\n\n" + legend + "\n"


def _seed_list(rows: Sequence[RunRow]) -> str:
    return ", ".join("-" if r.seed is None else str(r.seed) for r in rows)


def _count(rows: Sequence[RunRow], verdicts: Sequence[bool | None]) -> str:
    """``2 of 3 (0, 2)``: how many runs hold, of those judged, and their seeds."""
    judged = [(r, v) for r, v in zip(rows, verdicts, strict=True) if v is not None]
    if not judged:
        return "-"
    held = [r for r, v in judged if v]
    seeds = f" ({_seed_list(held)})" if held and len(held) < len(judged) else ""
    return f"{len(held)} of {len(judged)}{seeds}"


def format_seeds_markdown(rows: Sequence[RunRow]) -> str:
    """One line per (env, method): over its runs, how many are safe without attack, how many
    robust (safe without attack and under every attacker), the range of natural rewards and the
    highest attacked cost, with its seed and attacker. The per-seed verdicts of
    ``format_runs_markdown``, counted: whether a method holds on every seed, which the pooled
    Table 1 cannot say."""
    groups: dict[tuple[str, str], list[RunRow]] = {}
    for r in rows:
        groups.setdefault((r.env_id, r.method), []).append(r)
    head = ["Env", "Method", "Seeds", "Safe without attack", "Robust", "Natural reward"]
    head += ["Highest attacked cost"]
    lines = ["| " + " | ".join(head) + " |", "|---|---|---|---|---|---:|---|"]
    for (env_id, method), runs in groups.items():
        safe = [None if r.cost_limit is None else r.natural_cost <= r.cost_limit for r in runs]
        rewards = [r.natural_reward for r in runs]
        span = f"{min(rewards):.1f}"
        if len(runs) > 1:
            span += f" to {max(rewards):.1f}"
        judged = [r for r in runs if r.worst is not None]
        highest = "-"
        if judged:
            at = max(judged, key=lambda r: r.worst[1])  # the first seed on a tie
            highest = _worst_text(at, f", seed {'-' if at.seed is None else at.seed}")
        star = "*" if any(r.failing for r in runs) else ""
        cells = [env_id, method + star, _seed_list(runs), _count(runs, safe)]
        cells += [_count(runs, [r.robust for r in runs]), span, highest]
        lines.append("| " + " | ".join(cells) + " |")
    legend = (
        "Per method, its runs counted: safe without attack (natural cost within the run's cost "
        "limit), robust (cost within the limit without attack and under all five attackers; runs "
        "missing one are not counted), with the seeds that hold where not all do; the natural "
        "reward's range over the seeds; the highest mean cost under any attacker, and where. * a "
        "method Table 1 stars as failing: its low costs are no robustness."
    )
    return "\n".join(lines) + "\n\n" + legend + "\n"


def format_runs_csv(rows: Sequence[RunRow], root: str | PathLike | None = None) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_FIELDS)
    for r in rows:
        worst = r.worst
        w.writerow(
            [
                r.env_id,
                r.method,
                "" if r.seed is None else r.seed,
                "" if r.epsilon is None else r.epsilon,
                repr(r.natural_reward),
                repr(r.natural_cost),
                *(
                    "" if a not in r.attack_costs else repr(r.attack_costs[a])
                    for a in AVERAGED_ATTACKS
                ),
                "" if worst is None else worst[0],
                "" if worst is None else repr(worst[1]),
                "" if r.cost_limit is None else r.cost_limit,
                "" if r.robust is None else int(r.robust),
                "" if r.train_reward is None else repr(r.train_reward),
                "" if r.train_cost is None else repr(r.train_cost),
                "" if r.train_wall_s is None else repr(r.train_wall_s),
                int(r.failing),
                r.code or "",
                str(r.path.relative_to(root)) if root is not None else str(r.path),
            ]
        )
    return buf.getvalue()


def write_runs_tables(
    runs_dir: str | PathLike, out_prefix: str | PathLike, table: ResultsTable | None = None
) -> list[Path]:
    """Write ``<prefix>-runs.md``, ``<prefix>-runs.csv`` and ``<prefix>-seeds.md`` (the runs
    counted per method); returns the paths (none if no run). ``table``: Table 1 of the same
    runs, if already built."""
    rows, _ = collect_runs(runs_dir, table)
    if not rows:
        return []
    return write_prefixed(
        out_prefix,
        (
            ("-runs.md", format_runs_markdown(rows, root=runs_dir)),
            ("-runs.csv", format_runs_csv(rows, root=runs_dir)),
            ("-seeds.md", format_seeds_markdown(rows)),
        ),
    )
