"""Runs at a time on this machine: the same small grid with ``--parallel-runs`` 1, then 2, ...

Each pass trains the same runs (and with ``--episodes N`` evaluates each, the grid's default
attackers) into a fresh folder under ``--runs``, timed from
the grid's launch to its end; the table gives each pass's wall time, runs per hour and env
steps per second, the load average around it, and whether every run's training curve
(every metric of every epoch but the timings) is the same in every pass (it must be: a run's
numbers do not depend on what else runs). Time it on an otherwise idle machine.

    python benchmarks/grid_concurrency.py --envs SafetyCarCircle-v0 --modes adv-mc --seeds 10,11 \\
        --epochs 15 --set robust.schedule_start=0 --runs runs/grid_concurrency \\
        --out benchmarks/results/speed/grid_concurrency.md
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from same_training import metric_rows  # noqa: E402

from robustsafe.provenance import cpu_kind  # noqa: E402


def curves(root: Path) -> dict[str, list[dict]]:
    """Every run under ``root``: each epoch's metrics but the timings (``same_training``)."""
    return {
        str(m.parent.relative_to(root)): metric_rows(m.parent)
        for m in sorted(root.rglob("metrics.csv"))
    }


def evaluations(root: Path) -> dict[str, list]:
    """Every run's evaluation under ``root``: each attacker's mean reward and cost."""
    out = {}
    for path in sorted(root.rglob("eval.json")):
        results = json.loads(path.read_text())["results"]
        out[str(path.parent.relative_to(root))] = [
            (r["attack"], r["reward_mean"], r["cost_mean"]) for r in results
        ]
    return out


def env_steps(root: Path) -> int:
    return sum(json.loads(p.read_text())["env_steps"] for p in root.rglob("status.json"))


def one_pass(args: argparse.Namespace, parallel: int) -> dict:
    root = Path(args.runs) / f"parallel{parallel}"
    cmd = [sys.executable, "-m", "robustsafe.cli", "grid", "--envs", args.envs, "--modes"]
    cmd += [args.modes, "--seeds", args.seeds, "--preset", args.preset]
    cmd += ["--episodes", str(args.episodes)] if args.episodes else ["--no-eval"]
    cmd += ["--parallel-runs", str(parallel), "--out", str(root), "--epochs", str(args.epochs)]
    for setting in args.set:
        cmd += ["--set", setting]
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    return dict(
        parallel=parallel,
        wall=wall,
        runs=len(curves(root)),
        steps=env_steps(root),
        load=(load_before, os.getloadavg()[0]),
        curves=curves(root),
        evaluations=evaluations(root),
    )


def report(args: argparse.Namespace, passes: list[dict]) -> str:
    same = all(p["curves"] == passes[0]["curves"] for p in passes)
    same_eval = all(p["evaluations"] == passes[0]["evaluations"] for p in passes)
    evaluation = f"{args.episodes} evaluation episodes" if args.episodes else "no evaluation"
    lines = [
        "# Runs at a time: the same grid with --parallel-runs " + ", ".join(args.parallel),
        "",
        f"`python benchmarks/grid_concurrency.py {' '.join(sys.argv[1:])}`",
        "",
        f"Grid: {args.envs} x {args.modes} x seeds {args.seeds}, preset {args.preset}, "
        f"{args.epochs} epochs, settings {args.set or 'none'}, {evaluation}. "
        f"Machine: {os.cpu_count()} cores, {cpu_kind()}.",
        "",
        "| runs at a time | runs | wall s | runs per hour | env steps / s | load avg (1 min) |",
        "|---:|---:|---:|---:|---:|---|",
    ]
    for p in passes:
        per_hour = 3600 * p["runs"] / p["wall"]
        lines.append(
            f"| {p['parallel']} | {p['runs']} | {p['wall']:.1f} | {per_hour:.1f}"
            f" | {p['steps'] / p['wall']:.0f} | {p['load'][0]:.2f} -> {p['load'][1]:.2f} |"
        )
    lines += [
        "",
        "Every run's metrics (every epoch, timings aside) the same in every pass: "
        + ("yes." if same else "**no**."),
    ]
    if args.episodes:
        lines.append(
            "Every run's evaluation (each attacker's mean reward and cost) the same in every pass: "
            + ("yes." if same_eval else "**no**.")
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--envs", required=True)
    parser.add_argument("--modes", default="vanilla")
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--preset", default="fast")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument(
        "--episodes", type=int, default=0, help="evaluate each run on N episodes (0: no evaluation)"
    )
    parser.add_argument("--set", action="append", default=[], help="a train setting, repeatable")
    parser.add_argument("--parallel", default="1,2", help="comma-separated --parallel-runs")
    parser.add_argument("--runs", required=True, help="a folder that does not exist yet")
    parser.add_argument("--out", required=True, help="the Markdown report")
    args = parser.parse_args()
    args.parallel = args.parallel.split(",")
    if Path(args.runs).exists():
        parser.error(f"{args.runs} exists: give a new folder (its runs would be resumed)")
    passes = [one_pass(args, int(p)) for p in args.parallel]
    text = report(args, passes)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
