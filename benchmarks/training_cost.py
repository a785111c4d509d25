"""Training-time episode cost of finished runs: what the Lagrangian constrained.

For each run directory (``metrics.csv``): the stochastic policy's mean episode reward and cost
over the last 10 epochs and the final multiplier, as a Markdown table.

    python benchmarks/training_cost.py benchmarks/results/table1/*/vanilla/seed* \\
        --out benchmarks/results/recipe/table1_training_cost.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from recipe_runs import LAST, training_summary  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    lines = [
        f"Command: `python benchmarks/training_cost.py {' '.join(map(str, args.runs))} "
        f"--out {args.out}`",
        "",
        f"Mean training episode reward / cost of the stochastic policy over the last {LAST} "
        "epochs.",
        "",
        "| run | epochs | train reward | train cost | final lambda |",
        "|---|---:|---:|---:|---:|",
    ]
    for run in args.runs:
        t = training_summary(run)
        lines.append(
            f"| {run} | {t['epochs']} | {t['train_reward_last10']:.1f} "
            f"| {t['train_cost_last10']:.2f} | {t['lambda_final']:.2f} |"
        )
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
