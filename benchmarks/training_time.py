"""Wall-clock per training run and its split (env stepping, attacking, policy, learning).

Reads the ``metrics.csv`` of every run under a grid directory (as written by ``robustsafe
grid``) and writes a Markdown table.

    python benchmarks/training_time.py runs/grid --out benchmarks/results/training_time.md
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from robustsafe.files import read_csv_rows


def summarise(metrics: Path) -> dict[str, float]:
    rows = read_csv_rows(metrics)
    total = {
        k: sum(float(r[k]) for r in rows)
        for k in ("time_env", "time_attack", "time_policy", "time_update")
    }
    total["wall"] = float(rows[-1]["wall_time"])
    total["epochs"] = len(rows)
    total["env_steps"] = int(rows[-1]["env_steps"])
    return total


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("grid_dir")
    p.add_argument("--out", default="benchmarks/results/training_time.md")
    args = p.parse_args()
    root = Path(args.grid_dir)
    lines = [
        f"# Training time per run ({os.cpu_count()} cores)",
        "",
        f"Command: `python benchmarks/training_time.py {args.grid_dir}`",
        "",
        "Wall time counts env start-up; the parts are summed over epochs: env = stepping the "
        "vector env (2 subprocess workers), attack = computing perturbed observations in "
        "rollouts (and SA-PPOL's adversarial states), policy = sampling actions, update = "
        "the PPO-Lagrangian update plus the Q-critic update.",
        "",
        "| run | epochs | env steps | wall (s) | env | attack | policy | update |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for metrics in sorted(root.glob("*/*/seed*/metrics.csv")):
        s = summarise(metrics)
        run = metrics.parent.relative_to(root)
        w = s["wall"]
        lines.append(
            f"| {run} | {s['epochs']} | {s['env_steps']:,} | {w:.0f} | "
            f"{s['time_env']:.0f} ({100 * s['time_env'] / w:.0f}%) | "
            f"{s['time_attack']:.0f} ({100 * s['time_attack'] / w:.0f}%) | "
            f"{s['time_policy']:.0f} ({100 * s['time_policy'] / w:.0f}%) | "
            f"{s['time_update']:.0f} ({100 * s['time_update'] / w:.0f}%) |"
        )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
