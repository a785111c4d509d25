"""Training-time episode reward and cost of runs: what the Lagrangian constrained.

For each run directory (``metrics.csv``): the stochastic policy's mean episode reward and cost
over the last 10 epochs, the final multiplier and the grid's jobs in the run (its
``timings.json``: each training's epochs and seconds, each evaluation's seconds; "-" for runs
trained before the grid recorded them), as a Markdown table. With ``--bands N``,
instead the mean reward, cost, episode length and multiplier over each band of N epochs (how
a run learned, for comparing calibration runs of unequal length).

    python benchmarks/training_cost.py benchmarks/results/table1/*/vanilla/seed* \\
        --out benchmarks/results/recipe/table1_training_cost.md
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from recipe_runs import LAST, finite_mean, multiplier_key, training_summary  # noqa: E402

from robustsafe.rundir import train_metrics  # noqa: E402


def band_rows(run: Path, band: int) -> list[str]:
    """One Markdown row per ``band`` epochs of ``run``: epochs, mean reward / cost / length /
    multiplier (lambda; FOCOPS's nu) of the training episodes (epochs that finished no episode
    are left out)."""
    rows = train_metrics(run)

    out = []
    keys = ("ep_return", "ep_cost", "ep_length", multiplier_key(rows))
    for i in range(0, len(rows), band):
        chunk = rows[i : i + band]
        reward, cost, length, lam = (finite_mean(chunk, key) for key in keys)
        epochs = f"{chunk[0]['epoch']}-{chunk[-1]['epoch']}"
        out.append(f"| {run} | {epochs} | {reward:.1f} | {cost:.2f} | {length:.0f} | {lam:.2f} |")
    return out


def grid_jobs(run: Path) -> str:
    """The jobs of ``run``'s ``timings.json``, e.g. ``train 0-400 7422 s, evaluate 210 s``
    (a job that did not end normally says how it ended; "?" for what its record lacks: the
    end of one still running, the seconds of one interrupted before it saved an epoch); "-"
    where the file is absent."""
    path = run / "timings.json"
    if not path.exists():
        return "-"
    parts = []
    for job in json.loads(path.read_text()):
        text = job["job"]
        if "from_epoch" in job:
            text += f" {job['from_epoch']}-{_or_unknown(job['to_epoch'])}"
        seconds = job["seconds"]
        text += f" {_or_unknown(None if seconds is None else round(seconds))} s"
        if job["exit_status"] != 0:
            text += f" (exit {job['exit_status']})"
        parts.append(text)
    return ", ".join(parts)


def _or_unknown(value: object) -> str:
    return "?" if value is None else str(value)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--bands", type=int, default=0, help="epochs per band (0: last 10 only)")
    args = ap.parse_args()
    if args.bands < 0:
        raise SystemExit(f"--bands {args.bands}: must be >= 0")
    command = f"python benchmarks/training_cost.py {' '.join(map(str, args.runs))}"
    command += f" --out {args.out}" + (f" --bands {args.bands}" if args.bands else "")
    lines = [f"Command: `{command}`", ""]
    if args.bands:
        lines += [
            f"Mean training episode reward / cost / length and multiplier per {args.bands} "
            "epochs (the stochastic policy; rewards are the env's).",
            "",
            "| run | epochs | train reward | train cost | episode length | lambda |",
            "|---|---|---:|---:|---:|---:|",
        ]
        for run in args.runs:
            lines += band_rows(run, args.bands)
    else:
        lines += [
            f"Mean training episode reward / cost of the stochastic policy over the last {LAST} "
            "epochs.",
            "",
            "| run | epochs | train reward | train cost | final lambda | grid jobs |",
            "|---|---:|---:|---:|---:|---|",
        ]
        for run in args.runs:
            t = training_summary(run)
            lines.append(
                f"| {run} | {t['epochs']} | {t['train_reward_last10']:.1f} "
                f"| {t['train_cost_last10']:.2f} | {t['lambda_final']:.2f} | {grid_jobs(run)} |"
            )
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
