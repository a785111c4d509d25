"""Why SafetyAntCircle-v0 is hard for an exploring policy: how long the ant stays up.

Plays fixed simple policies (zero actions; Gaussian noise at the std of PPOL's initial and
late-training policy and at smaller stds; uniform actions) on SafetyAntCircle-v0 and
SafetyAntRun-v0, episodes cut at 300 steps, and prints per policy the mean episode length, how
many episodes ended by a fall (termination before the cut), the mean return and cost, and the
mean distance from the arena's centre at the start. Bullet-Safety-Gym ends an Ant episode when
its torso drops to 0.26 m.

    python benchmarks/antcircle_falls.py --episodes 10 --out benchmarks/results/antcircle_falls.md
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np

from robustsafe import envs

STEPS = 300


def policies(rng: np.random.Generator, act_dim: int) -> dict[str, Callable[[], np.ndarray]]:
    return {
        "zero actions": lambda: np.zeros(act_dim),
        "N(0, 0.61), PPOL's initial std": lambda: rng.normal(0.0, math.exp(-0.5), act_dim),
        "N(0, 0.35), std after 470 epochs": lambda: rng.normal(0.0, math.exp(-1.04), act_dim),
        "uniform in [-1, 1]": lambda: rng.uniform(-1.0, 1.0, act_dim),
        # appended last, so that the rows above keep their random draws
        "N(0, 0.2)": lambda: rng.normal(0.0, 0.2, act_dim),
        "N(0, 0.14), std at init_log_std -2.0": lambda: rng.normal(0.0, math.exp(-2.0), act_dim),
        "N(0, 0.1)": lambda: rng.normal(0.0, 0.1, act_dim),
    }


def play(env_id: str, episodes: int, seed: int) -> list[str]:
    env = envs.make(env_id, seed=seed, index=0, max_episode_steps=STEPS)
    agent = env.env.unwrapped.agent
    rng = np.random.default_rng(seed)
    rows = []
    for name, act in policies(rng, env.act_dim).items():
        lengths, returns, costs, starts = [], [], [], []
        for _ in range(episodes):
            env.reset()
            starts.append(float(np.linalg.norm(agent.get_position()[:2])))
            ret = cost = 0.0
            length, done = 0, False
            while not done:
                _, r, c, terminated, truncated, _ = env.step(act())
                ret, cost, length = ret + r, cost + c, length + 1
                done = terminated or truncated
            lengths.append(length)
            returns.append(ret)
            costs.append(cost)
        fell = sum(n < STEPS for n in lengths)
        rows.append(
            f"| {env_id} | {name} | {np.mean(lengths):.1f} | {fell}/{episodes} | "
            f"{np.mean(returns):.2f} | {np.mean(costs):.2f} | {np.mean(starts):.2f} |"
        )
    env.close()
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--episodes", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, help="write the table to this Markdown file")
    args = p.parse_args()
    lines = [
        f"Command: `python benchmarks/antcircle_falls.py --episodes {args.episodes}` "
        f"(seed {args.seed}; episodes cut at {STEPS} steps).",
        "",
        "| env | policy | mean length | fell | mean return | mean cost | start distance |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for env_id in ("SafetyAntCircle-v0", "SafetyAntRun-v0"):
        lines += play(env_id, args.episodes, args.seed)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text("# How long the ant stays up under simple policies\n\n" + text)


if __name__ == "__main__":
    main()
