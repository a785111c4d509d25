"""Why does an agent's evaluation cost differ from its training cost?

The training cost (``metrics.csv``) is the mean cost of the stochastic policy's training
episodes: ``num_envs`` envs spread over ``workers`` subprocesses, reset from the training
seeds, episodes continuing across epochs. The evaluation cost (``eval.json``) is the mean over 50
paired episodes from the evaluation seeds, 10 envs in one process, deterministic actions. This
replays a SAC-Lag or CVPO agent's stochastic policy under each combination, one change at a
time:

- ``train``: the training collector as training ran it (its env count, workers, seeds);
- ``train, in-process``: the same seeds and envs with no subprocesses;
- ``eval seeds, sampled``: the evaluation protocol's episodes with sampled actions;
- ``eval seeds, deterministic``: the evaluation protocol itself.

A gap between rows names its cause (the seeds, the processes or the action).

    python benchmarks/train_eval_gap.py runs/A --episodes 50 --out gap.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch
from squashed_action_check import natural, sampler

from robustsafe.agent import load_agent
from robustsafe.envs import VectorEnv, env_id_from_file
from robustsafe.rollout import Collector


def collector_episodes(agent, workers: int, episodes: int, seed: int) -> tuple[float, float]:
    """Mean reward / cost of the first ``episodes`` training-seeded episodes of sampled actions."""
    cfg = agent.config
    env_id = env_id_from_file(cfg.env_id, "the agent file")
    vec = VectorEnv(env_id, cfg.num_envs, seed=cfg.seed, workers=workers, env_kwargs=cfg.env_kwargs)
    try:
        collector = Collector(vec, cfg.seed)
        generator = torch.Generator().manual_seed(seed)
        done = []
        while len(done) < episodes:
            done.extend(collector.collect(agent.actor, 100, generator).episodes)
    finally:
        vec.close()
    done = done[:episodes]
    return float(np.mean([e.ret for e in done])), float(np.mean([e.cost for e in done]))


def write_table(lines: list[str], out: Path | None) -> None:
    """Print a Markdown table (and write it to ``out``)."""
    text = "\n".join(lines) + "\n"
    print(text)
    if out:
        out.write_text(text)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("run", help="run directory")
    p.add_argument("--episodes", type=int, default=50)
    p.add_argument("--out", type=Path, help="also write the table to this Markdown file")
    args = p.parse_args()
    torch.set_num_threads(1)
    cfg = load_agent(args.run).config
    rows = []
    with torch.no_grad():
        r, c = collector_episodes(load_agent(args.run), cfg.workers, args.episodes, 0)
        rows.append((f"train ({cfg.num_envs} envs, {cfg.workers} workers, training seeds)", r, c))
        r, c = collector_episodes(load_agent(args.run), 0, args.episodes, 0)
        rows.append(("train, in-process", r, c))
    r, c = natural(args.run, sampler(0), args.episodes)
    rows.append(("eval seeds, sampled", r, c))
    r, c = natural(args.run, None, args.episodes)
    rows.append(("eval seeds, deterministic (the protocol)", r, c))
    lines = [
        f"Command: `python benchmarks/train_eval_gap.py {args.run} --episodes {args.episodes}`",
        "",
        "| episodes | reward | cost |",
        "|---|---:|---:|",
        *[f"| {name} | {r:.1f} | {c:.2f} |" for name, r, c in rows],
    ]
    write_table(lines, args.out)


if __name__ == "__main__":
    main()
