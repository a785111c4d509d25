"""Issue 13 benchmark: PPO-Lagrangian on a Safety-Gymnasium-style velocity task, then attacked.

Trains with ``robustsafe train --preset fast`` (short), evaluates the agent with
``robustsafe evaluate --attacks none,mc,mr`` on paired episodes, and writes
``benchmarks/results/velocity_task.{json,md}`` with the commands, the wall times and the machine's
load (the 1-minute load average before and after each step), so that a number measured on a
shared machine says so.

    python benchmarks/velocity_task.py --env RobustSafe/SafetyHopperVelocity-v1 --total-steps 300000
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from robustsafe.rundir import train_metrics


def timed(cmd: list[str]) -> dict[str, Any]:
    """Run ``cmd``; its wall time and the load average around it."""
    print("+", " ".join(cmd), flush=True)
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True)
    return {
        "command": " ".join(["robustsafe", *cmd[3:]]),
        "wall_s": round(time.perf_counter() - t0, 1),
        "load1_before": round(load_before, 2),
        "load1_after": round(os.getloadavg()[0], 2),
    }


def last_epoch(run: Path) -> dict[str, str]:
    return train_metrics(run)[-1]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--env", default="RobustSafe/SafetyHopperVelocity-v1")
    p.add_argument("--total-steps", type=int, default=300_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--attacks", default="none,mc,mr")
    p.add_argument("--eps", default="0.05")
    p.add_argument("--episodes", type=int, default=10)
    p.add_argument("--run", default="runs/velocity_task")
    p.add_argument("--results", default="benchmarks/results")
    args = p.parse_args()
    cli = [sys.executable, "-m", "robustsafe.cli"]
    run = Path(args.run)
    out = Path(args.results)
    out.mkdir(parents=True, exist_ok=True)
    evaluation = run / "eval.json"

    train = timed(
        [
            *cli,
            "train",
            "--env",
            args.env,
            "--preset",
            "fast",
            "--seed",
            str(args.seed),
            "--total-steps",
            str(args.total_steps),
            "--out",
            str(run),
            "--no-progress",
        ]
    )
    attack = timed(
        [
            *cli,
            "evaluate",
            "--run",
            str(run),
            "--attacks",
            args.attacks,
            "--eps",
            args.eps,
            "--episodes",
            str(args.episodes),
            "--out",
            str(evaluation),
            "--no-progress",
        ]
    )
    data = json.loads(evaluation.read_text())
    epoch = last_epoch(run)
    result = {
        "env_id": args.env,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "note": "shared machine: see the load averages",
        },
        "train": {**train, "last_epoch": epoch},
        "evaluate": {**attack, "episodes": args.episodes, "epsilon": args.eps},
        "results": [
            {k: v for k, v in r.items() if not isinstance(v, list)} for r in data["results"]
        ],
    }
    (out / "velocity_task.json").write_text(json.dumps(result, indent=2) + "\n")

    lines = [
        f"# PPO-Lagrangian on {args.env}, attacked",
        "",
        f"`python benchmarks/velocity_task.py --env {args.env} --total-steps {args.total_steps}`"
        f" ran:",
        "",
        "```",
        train["command"],
        attack["command"],
        "```",
        "",
        f"Training: {train['wall_s']:.0f} s for {epoch['env_steps']} steps "
        f"({float(epoch['steps_per_s']):.0f} steps/s in the last epoch); last epoch: episode "
        f"return {float(epoch['ep_return']):.1f}, cost {float(epoch['ep_cost']):.1f}, lambda "
        f"{float(epoch['lambda']):.3f}. Evaluation: {attack['wall_s']:.0f} s. Load average (1 min) "
        f"{train['load1_before']:.1f} -> {train['load1_after']:.1f} during training and "
        f"{attack['load1_before']:.1f} -> {attack['load1_after']:.1f} during evaluation, on "
        f"{os.cpu_count()} cores.",
        "",
        f"{args.episodes} paired episodes per attacker, deterministic actions, epsilon "
        f"{args.eps} (l_inf, raw observation units).",
        "",
        "| attacker | reward | cost | length |",
        "|---|---|---|---|",
    ]
    for r in data["results"]:
        lines.append(
            f"| {r['attack']} | {r['reward_mean']:.1f} ± {r['reward_std']:.1f} | "
            f"{r['cost_mean']:.1f} ± {r['cost_std']:.1f} | {r['length_mean']:.0f} |"
        )
    (out / "velocity_task.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
