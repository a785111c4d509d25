"""How much does an off-policy agent's cost move from one gradient step to the next?

The evaluation protocol plays the last snapshot of the actor. An off-policy learner changes its
actor after every few env steps, so that snapshot is one draw from the policies the epoch went
through. This resumes a copy of a finished SAC-Lag or CVPO run for ``--epochs`` more epochs
(default 1), keeps the actor as it is after each gradient step named in ``--steps`` (0: the
saved agent, before any; counted from the resume), and plays each kept actor: by default its
stochastic policy on the training seeds (the training collector, in this process); with
``--protocol`` the evaluation protocol's natural episodes (evaluation seeds, the agent's
deterministic action), the numbers a verdict is made of. The run itself is not touched.

``--average RHO`` also keeps, at the same steps, a Polyak average of the actor's weights
started at the saved actor (after every gradient step: avg <- RHO avg + (1 - RHO) actor), and
plays it beside the raw actor: does averaging narrow the spread?

    python benchmarks/snapshot_spread.py runs/A --steps 0,1,5,20,50,100,150,199 --episodes 20
    python benchmarks/snapshot_spread.py runs/A --epochs 10 --average 0.995 --protocol \\
        --steps 1000,1100,1200,1300,1400,1500,1600,1700,1800,1900,2000 --episodes 50
"""

from __future__ import annotations

import argparse
import copy
import shutil
import tempfile
from pathlib import Path

import torch
from squashed_action_check import natural
from train_eval_gap import collector_episodes, write_table

from robustsafe.agent import load_agent
from robustsafe.cli import main as cli_main
from robustsafe.learners.cvpo import CVPO
from robustsafe.learners.sac_lag import SACLagrangian
from robustsafe.rundir import run_status


def play(run: Path, actor_state: dict, episodes: int, protocol: bool) -> tuple[float, float]:
    """Mean reward / cost of ``episodes`` episodes of the run's agent with ``actor_state``: the
    evaluation protocol's natural episodes (``protocol``) or the first training-seeded episodes
    of sampled actions."""
    if protocol:
        return natural(str(run), None, episodes, actor_state)
    agent = load_agent(run)
    agent.actor.load_state_dict(actor_state)
    with torch.no_grad():
        return collector_episodes(agent, 0, episodes, 0)


def snapshots(
    run: Path, steps: set[int], epochs: int = 1, average: float | None = None
) -> tuple[dict[int, dict], dict[int, dict], int]:
    """Resume a copy of ``run`` for ``epochs`` epochs: the actor after each gradient step in
    ``steps``, the Polyak average of its weights at those steps (empty without ``average``), and
    the number of gradient steps taken."""
    learner_cls = {"sac-lag": SACLagrangian, "cvpo": CVPO}.get(load_agent(run).config.algo)
    if learner_cls is None:
        raise SystemExit(f"{run}: not an off-policy (sac-lag / cvpo) run")
    kept: dict[int, dict] = {}
    averaged: dict[int, dict] = {}
    mean: dict[str, torch.Tensor] = {}
    taken = [0]
    update = learner_cls.update

    def keeping(self, batch, generator):
        actor = self.actor
        if average is not None and not mean:
            mean.update({n: p.detach().clone() for n, p in actor.named_parameters()})
        if taken[0] in steps:
            kept[taken[0]] = copy.deepcopy(actor.state_dict())
            if average is not None:
                state = copy.deepcopy(actor.state_dict())
                state.update({n: t.clone() for n, t in mean.items()})
                averaged[taken[0]] = state
        taken[0] += 1
        out = update(self, batch, generator)
        if average is not None:
            with torch.no_grad():
                for n, p in actor.named_parameters():
                    mean[n].mul_(average).add_(p.detach(), alpha=1.0 - average)
        return out

    with tempfile.TemporaryDirectory() as tmp:
        copy_dir = Path(tmp) / "run"
        shutil.copytree(run, copy_dir, ignore=shutil.ignore_patterns("eval*.json", "tb"))
        status = run_status(copy_dir)
        if status is None:
            raise SystemExit(f"{run}: no finished epoch to resume from")
        learner_cls.update = keeping
        try:
            cli_main(
                [
                    "train",
                    "--resume",
                    "--out",
                    str(copy_dir),
                    "--epochs",
                    str(status[0] + epochs),
                    "--no-progress",
                ]
            )
        finally:
            learner_cls.update = update
    return kept, averaged, taken[0]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("run", type=Path, help="a finished sac-lag or cvpo run directory")
    p.add_argument("--steps", default="0,1,5,20,50,100,150,199")
    p.add_argument("--epochs", type=int, default=1, help="epochs to resume for (default 1)")
    p.add_argument("--average", type=float, help="also play a Polyak average with this RHO")
    p.add_argument("--protocol", action="store_true", help="play the evaluation protocol")
    p.add_argument("--episodes", type=int, default=20)
    p.add_argument("--out", type=Path, help="also write the table to this Markdown file")
    args = p.parse_args()
    if args.average is not None and not 0.0 < args.average < 1.0:
        raise SystemExit(f"--average must be in (0, 1), got {args.average}")
    steps = {int(s) for s in args.steps.split(",")}
    kept, averaged, taken = snapshots(args.run, steps, args.epochs, args.average)
    torch.set_num_threads(1)
    options = "".join(
        [
            f" --epochs {args.epochs}" if args.epochs != 1 else "",
            f" --average {args.average}" if args.average is not None else "",
            " --protocol" if args.protocol else "",
        ]
    )
    episodes = (
        f"{args.episodes} natural episodes of the evaluation protocol"
        if args.protocol
        else f"its stochastic policy, {args.episodes} training-seeded episodes"
    )
    header = "| gradient steps into the resume | actor: reward | actor: cost |"
    rule = "|---:|---:|---:|"
    if averaged:
        header += f" average ({args.average}): reward | average: cost |"
        rule += "---:|---:|"
    lines = [
        f"Command: `python benchmarks/snapshot_spread.py {args.run} --steps {args.steps}"
        f"{options} --episodes {args.episodes}`",
        "",
        f"{args.epochs} more epoch(s) of the run ({taken} gradient steps); each kept actor, "
        f"{episodes}:",
        "",
        header,
        rule,
    ]
    for k in sorted(kept):
        row = [*play(args.run, kept[k], args.episodes, args.protocol)]
        if averaged:
            row += play(args.run, averaged[k], args.episodes, args.protocol)
        cells = " | ".join(f"{v:.1f}" if i % 2 == 0 else f"{v:.2f}" for i, v in enumerate(row))
        lines.append(f"| {k} | {cells} |")
    write_table(lines, args.out)


if __name__ == "__main__":
    main()
