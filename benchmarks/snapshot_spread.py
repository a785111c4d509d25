"""How much does an off-policy agent's cost move from one gradient step to the next?

The evaluation protocol plays the last snapshot of the actor. An off-policy learner changes its
actor after every few env steps, so that snapshot is one draw from the policies the epoch went
through. This resumes a copy of a finished SAC-Lag or CVPO run for one more epoch, keeps the
actor as it is after each gradient step named in ``--steps`` (0: the saved agent, before any),
and plays each kept actor's stochastic policy on the training seeds (the training collector, in
this process): reward / cost per snapshot. The run itself is not touched.

    python benchmarks/snapshot_spread.py runs/A --steps 0,1,5,20,50,100,150,199 --episodes 20
"""

from __future__ import annotations

import argparse
import copy
import shutil
import tempfile
from pathlib import Path

import torch
from train_eval_gap import collector_episodes, write_table

from robustsafe.agent import load_agent
from robustsafe.cli import main as cli_main
from robustsafe.learners.cvpo import CVPO
from robustsafe.learners.sac_lag import SACLagrangian
from robustsafe.rundir import run_status


def play(run: Path, actor_state: dict, episodes: int) -> tuple[float, float]:
    """Mean reward / cost of the first ``episodes`` training-seeded episodes, sampled actions."""
    agent = load_agent(run)
    agent.actor.load_state_dict(actor_state)
    with torch.no_grad():
        reward, cost = collector_episodes(agent, 0, episodes, 0)
    return reward, cost


def snapshots(run: Path, steps: set[int]) -> tuple[dict[int, dict], int]:
    """Resume a copy of ``run`` for one epoch; the actor after each gradient step in ``steps``."""
    learner_cls = {"sac-lag": SACLagrangian, "cvpo": CVPO}.get(load_agent(run).config.algo)
    if learner_cls is None:
        raise SystemExit(f"{run}: not an off-policy (sac-lag / cvpo) run")
    kept: dict[int, dict] = {}
    taken = [0]
    update = learner_cls.update

    def keeping(self, batch, generator):
        if taken[0] in steps:
            kept[taken[0]] = copy.deepcopy(self.actor.state_dict())
        taken[0] += 1
        return update(self, batch, generator)

    with tempfile.TemporaryDirectory() as tmp:
        copy_dir = Path(tmp) / "run"
        shutil.copytree(run, copy_dir, ignore=shutil.ignore_patterns("eval*.json", "tb"))
        status = run_status(copy_dir)
        if status is None:
            raise SystemExit(f"{run}: no finished epoch to resume from")
        epochs = status[0] + 1
        learner_cls.update = keeping
        try:
            cli_main(
                [
                    "train",
                    "--resume",
                    "--out",
                    str(copy_dir),
                    "--epochs",
                    str(epochs),
                    "--no-progress",
                ]
            )
        finally:
            learner_cls.update = update
    return kept, taken[0]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("run", type=Path, help="a finished sac-lag or cvpo run directory")
    p.add_argument("--steps", default="0,1,5,20,50,100,150,199")
    p.add_argument("--episodes", type=int, default=20)
    p.add_argument("--out", type=Path, help="also write the table to this Markdown file")
    args = p.parse_args()
    steps = {int(s) for s in args.steps.split(",")}
    kept, taken = snapshots(args.run, steps)
    torch.set_num_threads(1)
    lines = [
        f"Command: `python benchmarks/snapshot_spread.py {args.run} --steps {args.steps} "
        f"--episodes {args.episodes}`",
        "",
        f"One more epoch of the run ({taken} gradient steps); the stochastic policy after each "
        f"kept step, {args.episodes} training-seeded episodes each:",
        "",
        "| gradient steps into the epoch | reward | cost |",
        "|---:|---:|---:|",
    ]
    for k in sorted(kept):
        reward, cost = play(args.run, kept[k], args.episodes)
        lines.append(f"| {k} | {reward:.1f} | {cost:.2f} |")
    write_table(lines, args.out)


if __name__ == "__main__":
    main()
