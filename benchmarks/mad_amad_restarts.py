"""MAD and AMAD episodes with one start and with the default starts, on the zoo vanilla agents.

    python benchmarks/mad_amad_restarts.py        # results/mad_amad_restarts.{json,md}

Restarts make MAD/AMAD much stronger in KL (attack_strength.md); this asks what that does to
the episodes: paired evaluation (``evaluate_agent``, deterministic actions, epsilon 0.05) of the
PPOL-vanilla zoo agent of each Car task under MAD and AMAD, with ``restarts=1`` (the previous
default) and with the default. Not Table 1: one agent per task, ``--episodes`` episodes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import torch

import robustsafe.attacks.registry as registry
from robustsafe.agent import load_agent
from robustsafe.attacks import CRITIC_ATTACK_DEFAULTS, MAD_DEFAULTS
from robustsafe.envs import VectorEnv
from robustsafe.evaluate import evaluate_agent

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "mad_amad_restarts"

# The paper's appendix table (PPOL-vanilla under MAD, epsilon 0.05): reward, cost.
PAPER_MAD = {"SafetyCarRun-v0": (500.72, 0.04), "SafetyCarCircle-v0": (181.03, 4.91)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--num-envs", type=int, default=10)
    args = parser.parse_args()
    torch.set_num_threads(1)
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    report = {
        "command": "python " + " ".join([os.path.relpath(sys.argv[0], ROOT), *sys.argv[1:]]),
        "commit": commit,
        "load_average_start": os.getloadavg(),
        "rows": [],
    }
    original = registry.default_config
    try:
        for task in PAPER_MAD:
            agent = load_agent(ROOT / "zoo" / task / "vanilla")
            for restarts in (1, MAD_DEFAULTS.restarts):
                mad = dataclasses.replace(MAD_DEFAULTS, restarts=restarts)
                registry.default_config = lambda name, _m=mad: (
                    _m if name in ("mad", "amad") else CRITIC_ATTACK_DEFAULTS
                )
                start = time.perf_counter()
                with VectorEnv(task, args.num_envs, seed=0) as vec:
                    results = evaluate_agent(
                        agent, vec, episodes=args.episodes, attacks=["mad", "amad"]
                    )
                seconds = time.perf_counter() - start
                for r in results:
                    report["rows"].append(
                        {"task": task, "restarts": restarts, "attack": r.attack, **r.summary()}
                    )
                print(task, restarts, f"{seconds:.0f} s", flush=True)
    finally:
        registry.default_config = original
    report["load_average_end"] = os.getloadavg()
    OUT.with_suffix(".json").write_text(json.dumps(report, indent=1))
    lines = [
        "# MAD and AMAD with one start and with the default starts (zoo PPOL-vanilla agents)",
        "",
        f"Command: `{report['command']}` at commit {commit}. {args.episodes} paired episodes, "
        "seed 0, epsilon 0.05, deterministic actions. One agent per task (the zoo's "
        "PPOL-vanilla), so this is an indication, not Table 1.",
        "",
        "| task | restarts | attacker | reward | cost | paper (PPOL-vanilla, MAD) |",
        "|---|---:|---|---:|---:|---|",
    ]
    for row in report["rows"]:
        paper = PAPER_MAD[row["task"]] if row["attack"] == "mad" else None
        lines.append(
            f"| {row['task']} | {row['restarts']} | {row['attack']} | "
            f"{row['reward_mean']:.1f} ± {row['reward_std']:.1f} | "
            f"{row['cost_mean']:.2f} ± {row['cost_std']:.2f} | "
            + (f"{paper[0]} / {paper[1]}" if paper else "")
            + " |"
        )
    OUT.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT}.{{json,md}}")


if __name__ == "__main__":
    main()
