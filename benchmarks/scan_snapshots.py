"""The first per-epoch snapshot of a run that meets a reward / cost target.

Evaluates ``RUN/checkpoints/agent_epoch_NNNN.pt`` for the given epochs in order: a 10-episode
screen first (skipped below 0.9 x the target reward or above 2 x the cost limit + 1, as in
``benchmarks/ppol_benchmark.py``), then ``--episodes`` paired deterministic episodes; stops at
the first snapshot with mean reward >= target and mean cost <= limit. Prints one line per
evaluation.

    python benchmarks/scan_snapshots.py runs/carcircle-ki01 --target-reward 350 --epochs 50:150:5
"""

from __future__ import annotations

import argparse
from pathlib import Path

from robustsafe.agent import load_agent
from robustsafe.envs import VectorEnv
from robustsafe.evaluate import evaluate_agent
from robustsafe.rundir import load_run_config


def epoch_list(spec: str) -> list[int]:
    """``"50:150:5"`` (first:last:step, inclusive) or ``"6,7,8"``."""
    if ":" in spec:
        first, last, step = (int(x) for x in spec.split(":"))
        return list(range(first, last + 1, step))
    return [int(x) for x in spec.split(",")]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("run", type=Path)
    p.add_argument("--target-reward", type=float, required=True)
    p.add_argument("--cost-limit", type=float, default=5.0)
    p.add_argument("--epochs", required=True, help="first:last:step or a comma-separated list")
    p.add_argument("--episodes", type=int, default=50)
    args = p.parse_args()
    env_id = load_run_config(args.run).env_id
    with VectorEnv(env_id, 10, seed=0, workers=0) as vec:
        for epoch in epoch_list(args.epochs):
            agent = load_agent(args.run / "checkpoints" / f"agent_epoch_{epoch:04d}.pt")
            s = evaluate_agent(agent, vec, 10, seed=0)[0].summary()
            print(f"epoch {epoch} screen {s['reward_mean']:.1f} / {s['cost_mean']:.2f}", flush=True)
            hopeless = s["reward_mean"] < 0.9 * args.target_reward
            if hopeless or s["cost_mean"] > 2 * args.cost_limit + 1:
                continue
            s = evaluate_agent(agent, vec, args.episodes, seed=0)[0].summary()
            print(f"epoch {epoch} full {s['reward_mean']:.1f} / {s['cost_mean']:.2f}", flush=True)
            if s["reward_mean"] >= args.target_reward and s["cost_mean"] <= args.cost_limit:
                print(f"first meeting the target: epoch {epoch}")
                return
    print("no snapshot met the target")


if __name__ == "__main__":
    main()
