"""The saved weight average against the last actor of the same SAC-Lag runs.

A run trained with ``--set sac.actor_average=RHO`` saves a Polyak average of its actor's
weights in ``agent.pt``; its ``state.pt`` still holds the last actor. This plays both under the
evaluation protocol (natural episodes, evaluation seeds, the deterministic action): one
training, two final policies, so the difference is the averaging alone.

    python benchmarks/saved_vs_last_actor.py runs/A runs/B --episodes 50 --out table.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from squashed_action_check import natural
from train_eval_gap import write_table

from robustsafe.agent import load_agent
from robustsafe.runstate import load_state


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("runs", nargs="+", type=Path, help="sac-lag run directories")
    p.add_argument("--episodes", type=int, default=50)
    p.add_argument("--out", type=Path, help="also write the table to this Markdown file")
    args = p.parse_args()
    torch.set_num_threads(1)
    lines = [
        f"Command: `python benchmarks/saved_vs_last_actor.py {' '.join(map(str, args.runs))} "
        f"--episodes {args.episodes}`",
        "",
        f"Natural reward / cost, {args.episodes} episodes of the evaluation protocol.",
        "",
        "| run | average RHO | the saved average | the last actor |",
        "|---|---:|---|---|",
    ]
    for run in args.runs:
        rho = load_agent(run).config.sac.actor_average
        if rho <= 0:
            raise SystemExit(f"{run}: trained without sac.actor_average: nothing to compare")
        last = load_state(run / "state.pt")["learner"]["actor"]
        saved = natural(str(run), None, args.episodes)
        final = natural(str(run), None, args.episodes, last)
        cells = " | ".join(f"{r:.1f} / {c:.2f}" for r, c in (saved, final))
        lines.append(f"| {run} | {rho} | {cells} |")
    write_table(lines, args.out)


if __name__ == "__main__":
    main()
