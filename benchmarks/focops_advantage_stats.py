"""FOCOPS: the raw advantages' spread per epoch, beside the epoch's training cost and nu.

Trains ``robustsafe train --algo focops ...`` (every argument after ``--`` goes to it) in this
process, recording for every epoch's update the std of the raw GAE cost advantage A_C (before
any centring or scaling), the std of the raw reward advantage A, and the share of the rollout's
steps with a cost; then writes them as a Markdown table with the run's ``metrics.csv``
(training reward and cost, nu). What it answers: how large A_C's spread is in the epochs
without cost (V_c's error) against the epochs near the cost limit, i.e. whether any fixed
floor on the scale of A_C could tell the two apart.

    python benchmarks/focops_advantage_stats.py --out stats.md -- --env SafetyCarRun-v0 --seed 2 \\
        --epochs 30 --set focops.normalize_cost_advantage=true --out runs/focops-stats --force
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import numpy as np


def record_advantages(rows: list[dict[str, float]]) -> None:
    """Wrap the FOCOPS module's ``rollout_advantages`` so that each call appends its stats."""
    import robustsafe.learners.focops as focops

    original = focops.rollout_advantages

    def recorded(ro, *args, **kwargs):
        data = original(ro, *args, **kwargs)
        rows.append(
            {
                "adv_c_std": float(data["adv_c"].std()),
                "adv_r_std": float(data["adv_r"].std()),
                "costly_share": float(np.mean(ro.cost > 0)),
            }
        )
        return data

    focops.rollout_advantages = recorded


def table(stats: list[dict[str, float]], metrics: Path) -> str:
    epochs = list(csv.DictReader(metrics.open()))
    lines = [
        "| epoch | training reward | training cost | nu (after the epoch) | costly steps "
        "| std of raw A_C | std of raw A |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row, s in zip(epochs, stats, strict=True):
        lines.append(
            f"| {row['epoch']} | {float(row['ep_return']):.1f} | {float(row['ep_cost']):.2f} "
            f"| {float(row['nu']):.3f} | {100 * s['costly_share']:.2f}% "
            f"| {s['adv_c_std']:.3f} | {s['adv_r_std']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the Markdown table")
    args = parser.parse_args(argv[:cut])
    train_args = argv[cut + 1 :]
    if "--out" not in train_args:
        parser.error("give the training's run directory after --: -- ... --out RUN")
    run = Path(train_args[train_args.index("--out") + 1])

    stats: list[dict[str, float]] = []
    record_advantages(stats)
    from robustsafe.cli import main as cli

    status = cli(["train", "--algo", "focops", "--no-progress", *train_args])
    if status != 0:
        return status
    command = " ".join(["python benchmarks/focops_advantage_stats.py", *sys.argv[1:]])
    args.out.write_text(f"Command: `{command}`\n\n" + table(stats, run / "metrics.csv"))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":  # the env workers re-import this file
    sys.exit(main())
