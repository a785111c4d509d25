"""Does the off-policy cost critic's estimate go negative, and do those runs fail more often?

Costs are non-negative, so a negative ``q_cost`` (the batch mean of Q_c logged in each epoch's
row of ``metrics.csv``) is critic error. For every vanilla run under the given roots whose
``metrics.csv`` logs ``q_cost`` (SAC-Lagrangian, CVPO) and that has an ``eval.json``, this
writes its lowest ``q_cost`` after a warm-up, how many epochs ended below zero, and whether the
evaluated agent met issue 11's vanilla target (natural cost <= 5; reward >= 500 on CarRun,
>= 350 on CarCircle), then counts the runs that met, split by whether ``q_cost`` ever went
negative. A run committed in two places (a probe's run copied into a table's folder) counts
once, under the first path in sorted order.

    python benchmarks/qcost_sign.py benchmarks/results \
        --out benchmarks/results/sac_multiplier/qcost_sign.md
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from pathlib import Path

from robustsafe.files import read_yaml
from robustsafe.rundir import train_metrics

REWARD_TARGET = {"SafetyCarRun-v0": 500.0, "SafetyCarCircle-v0": 350.0}
COST_TARGET = 5.0


@dataclass(frozen=True)
class QCostRun:
    path: str
    algo: str
    alpha: float | None
    floor: bool
    epochs: int
    q_cost_min: float
    negative_epochs: int
    reward: float
    cost: float
    met: bool


def q_cost_series(run: Path, warmup: int) -> list[float] | None:
    """The finite ``q_cost`` values of the epochs after ``warmup``; ``None``: not logged (or
    no epoch logged)."""
    rows = train_metrics(run)
    if not rows or "q_cost" not in rows[0]:
        return None
    values = []
    for row in rows:
        if int(row["epoch"]) <= warmup or row["q_cost"] in ("", "nan"):
            continue
        value = float(row["q_cost"])
        if math.isfinite(value):
            values.append(value)
    return values


def read_run(run: Path, root: Path, warmup: int) -> QCostRun | None:
    """One run's row; ``None`` where it logs no ``q_cost``, has no natural evaluation or is on a
    task without a target."""
    series = q_cost_series(run, warmup)
    if not series or not (run / "eval.json").is_file() or not (run / "config.yaml").is_file():
        return None
    cfg = read_yaml(run / "config.yaml")
    evaluation = json.loads((run / "eval.json").read_text())
    if evaluation.get("env_id") not in REWARD_TARGET or evaluation.get("train_mode") != "vanilla":
        return None
    natural = next((r for r in evaluation["results"] if r["attack"] == "none"), None)
    if natural is None:
        return None
    algo = str(cfg["algo"])
    sac = cfg.get("sac") or {}
    reward, cost = float(natural["reward_mean"]), float(natural["cost_mean"])
    return QCostRun(
        path=str(run.relative_to(root)),
        algo=algo,
        alpha=float(sac["alpha"]) if algo == "sac-lag" else None,
        floor=bool(sac.get("floor_cost_targets", False)) if algo == "sac-lag" else False,
        epochs=int(cfg["epochs"]),
        q_cost_min=min(series),
        negative_epochs=sum(v < 0 for v in series),
        reward=reward,
        cost=cost,
        met=cost <= COST_TARGET and reward >= REWARD_TARGET[evaluation["env_id"]],
    )


def collect(roots: list[Path], warmup: int) -> list[QCostRun]:
    runs = []
    seen: set[tuple[bytes, bytes]] = set()
    for root in roots:
        for metrics in sorted(root.rglob("metrics.csv")):
            row = read_run(metrics.parent, root, warmup)
            if row is None:
                continue
            key = (metrics.read_bytes(), (metrics.parent / "eval.json").read_bytes())
            if key not in seen:  # a copy of a run already counted
                seen.add(key)
                runs.append(row)
    return runs


def format_markdown(runs: list[QCostRun], warmup: int) -> str:
    lines = [
        f"Evaluated vanilla runs that log `q_cost`; `q_cost` after epoch {warmup}.",
        "",
        "| run | learner | alpha | floor | epochs | min q_cost | epochs < 0 | reward | cost "
        "| met |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        alpha = "" if r.alpha is None else f"{r.alpha:g}"
        lines.append(
            f"| {r.path} | {r.algo} | {alpha} | {'yes' if r.floor else 'no'} | {r.epochs} | "
            f"{r.q_cost_min:.3f} | {r.negative_epochs} | {r.reward:.1f} | {r.cost:.2f} | "
            f"{'yes' if r.met else 'no'} |"
        )
    lines += ["", "| learner | q_cost went < 0 | runs | met |", "|---|---|---|---|"]
    for algo in sorted({r.algo for r in runs}):
        for negative in (True, False):
            group = [r for r in runs if r.algo == algo and (r.negative_epochs > 0) == negative]
            if group:
                met = sum(r.met for r in group)
                lines.append(f"| {algo} | {'yes' if negative else 'no'} | {len(group)} | {met} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="+", type=Path, help="folders searched for runs")
    parser.add_argument("--warmup", type=int, default=10, help="epochs left out at the start")
    parser.add_argument("--out", type=Path, help="markdown file to write (default: print)")
    args = parser.parse_args()
    text = format_markdown(collect(args.roots, args.warmup), args.warmup)
    if args.out:
        args.out.write_text(text)
    else:
        print(text, end="")


if __name__ == "__main__":
    main()
