"""CVPO: the E-step's mean Q_c over a run's replay, by the age of the states.

Loads a CVPO run's ``state.pt`` (its replay, target critics and pi_old) and scores every stored
state as the E-step does: actions drawn from pi_old (``--draws`` per state), Q_c from the target
cost critic. Writes, per block of ``--block`` transitions in the order they were stored, the
mean Q_c and the mean stored cost per transition, then the mean Q_c over the newest N
transitions for a few N, beside qc_thres. What it answers: whether the whole replay's mean Q_c,
the quantity the E-step bounds by qc_thres, is held up by old states the current policy no
longer visits.

    python benchmarks/cvpo_qc_by_age.py RUN_DIR --out qc_by_age.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from robustsafe.critics import QCritics
from robustsafe.envs import make
from robustsafe.learners.sac_lag import qc_threshold
from robustsafe.nets import SquashedGaussianActor
from robustsafe.rundir import load_run_config
from robustsafe.runstate import load_state


def mean_qc(run: Path, draws: int, seed: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Per stored state (oldest first) the mean Q_c of pi_old's actions, the stored costs, and
    the run's qc_thres."""
    cfg = load_run_config(run)
    learner = load_state(run / "state.pt")["learner"]
    replay = learner["replay"]
    size, pos = int(replay["size"]), int(replay["pos"])
    order = np.roll(np.arange(size), -pos) if size == cfg.cvpo.replay_size else np.arange(size)
    obs = torch.as_tensor(replay["obs"][order])
    obs_dim, act_dim = obs.shape[1], replay["act"].shape[1]
    hidden = tuple(cfg.ppo.hidden)
    actor = SquashedGaussianActor(obs_dim, act_dim, hidden)
    actor.load_state_dict(learner["target_actor"])
    critics = QCritics(obs_dim, act_dim, hidden)
    critics.load_state_dict(learner["target"])
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        mu, log_std = actor.gaussian(obs)
        total = torch.zeros(len(obs))
        for _ in range(draws):
            u = mu + log_std.exp() * torch.randn(mu.shape, generator=generator)
            total += critics.q_cost(obs, actor.squash(u))
    env = make(cfg.env_id)
    steps = cfg.episode_steps or env.max_episode_steps or 1_000  # as the learner's
    env.close()
    thres = qc_threshold(cfg.cvpo.cost_limit, cfg.cvpo.gamma, steps)
    return (total / draws).numpy(), replay["cost"][order], thres


def report(run: Path, draws: int, block: int, seed: int) -> str:
    qc, cost, thres = mean_qc(run, draws, seed)
    n = len(qc)
    lines = [
        f"Run `{run.name}`: {n} stored transitions, qc_thres {thres:.3f}, {draws} draws of pi_old "
        f"per state (seed {seed}).",
        "",
        "| transitions (oldest first) | mean Q_c | mean stored cost |",
        "|---|---:|---:|",
    ]
    for a in range(0, n, block):
        b = min(a + block, n)
        lines.append(f"| {a}-{b} | {qc[a:b].mean():.3f} | {cost[a:b].mean():.3f} |")
    lines += ["", "| newest N | mean Q_c |", "|---|---:|"]
    for w in sorted({block, 2 * block, n // 2, n}):
        if 0 < w <= n:
            lines.append(f"| {w} | {qc[n - w :].mean():.3f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path, help="CVPO run directories (with state.pt)")
    ap.add_argument("--draws", type=int, default=8, help="pi_old actions per state")
    ap.add_argument("--block", type=int, default=10_000, help="transitions per table row")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    text = "\n".join(report(r, args.draws, args.block, args.seed) for r in args.runs)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
