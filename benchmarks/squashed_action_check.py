"""Is a SAC-Lag / CVPO agent's natural cost a property of its evaluation action?

The evaluation protocol executes the squashed mean ``squash(mu(s))``. The policy trained (and
constrained) is the stochastic one, ``squash(u)``, ``u ~ N(mu(s), sigma(s)^2)``. This plays 50
paired natural episodes of each agent three ways and prints reward / cost per way:

- ``squashed mean``: the protocol's action;
- ``E[squash(u)]``: the expected executed action, by 16-point Gauss-Hermite quadrature
  (deterministic; the squashed actors' analogue of PPOL's ``expected`` action);
- ``sampled``: actions drawn from the policy (torch seed 0), the policy training ran.

If the three agree, the cost comes from the policy itself, not from the choice of action.

    python benchmarks/squashed_action_check.py runs/A runs/B --out results.md
"""

from __future__ import annotations

import argparse
import types
from pathlib import Path

import numpy as np
import torch

from robustsafe.agent import load_agent
from robustsafe.envs import VectorEnv, env_id_from_file
from robustsafe.evaluate import evaluate_agent

_NODES, _WEIGHTS = np.polynomial.hermite.hermgauss(16)


def expected_squashed(actor, obs: torch.Tensor) -> torch.Tensor:
    """E[squash(u)], u ~ N(mu, sigma^2), per action dimension: sum_i w_i tanh(mu + sqrt(2) sigma
    x_i) / sqrt(pi) over the Gauss-Hermite nodes x_i and weights w_i, then the box scaling."""
    mu, log_std = actor.gaussian(obs)
    nodes = torch.as_tensor(_NODES, dtype=mu.dtype)
    weights = torch.as_tensor(_WEIGHTS / np.sqrt(np.pi), dtype=mu.dtype)
    u = mu.unsqueeze(-1) + np.sqrt(2.0) * log_std.exp().unsqueeze(-1) * nodes
    y = (torch.tanh(u) * weights).sum(-1)
    return actor.act_low + (actor.act_high - actor.act_low) * (y + 1.0) / 2.0


def sampler(seed: int):
    generator = torch.Generator().manual_seed(seed)

    def sampled(actor, obs: torch.Tensor) -> torch.Tensor:
        return actor.sample(obs, generator)[0]

    return sampled


def natural(
    run: str, action, episodes: int, actor_state: dict | None = None
) -> tuple[float, float]:
    """The protocol's natural reward / cost of the run's agent (its actor replaced by
    ``actor_state`` if given), with ``action`` in place of the deterministic action if given."""
    agent = load_agent(run)
    if actor_state is not None:
        agent.actor.load_state_dict(actor_state)
    if not hasattr(agent.actor, "gaussian"):
        raise SystemExit(f"{run}: not a squashed-Gaussian (sac-lag / cvpo) agent")
    if action is not None:
        agent.actor.deterministic_action = types.MethodType(action, agent.actor)
    vec = VectorEnv(
        env_id_from_file(agent.config.env_id, "the agent file"),
        10,
        seed=0,
        workers=0,
        env_kwargs=agent.config.env_kwargs,
    )
    try:
        with torch.no_grad():
            (result,) = evaluate_agent(agent, vec, episodes=episodes, seed=0, attacks=["none"])
    finally:
        vec.close()
    d = result.to_dict()
    return d["reward_mean"], d["cost_mean"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("runs", nargs="+", help="run directories (or agent .pt files)")
    p.add_argument("--episodes", type=int, default=50)
    p.add_argument("--out", type=Path, help="also write the table to this Markdown file")
    args = p.parse_args()
    torch.set_num_threads(1)
    ways = {"squashed mean": None, "E[squash(u)]": expected_squashed, "sampled": sampler(0)}
    lines = [
        f"Command: `python benchmarks/squashed_action_check.py {' '.join(args.runs)} "
        f"--episodes {args.episodes}`",
        "",
        f"Natural reward / cost, {args.episodes} paired episodes (evaluation seed 0).",
        "",
        "| run | " + " | ".join(ways) + " |",
        "|---|" + "---:|" * len(ways),
    ]
    for run in args.runs:
        cells = []
        for action in ways.values():
            reward, cost = natural(run, action, args.episodes)
            cells.append(f"{reward:.1f} / {cost:.2f}")
        lines.append(f"| {run} | " + " | ".join(cells) + " |")
        print(lines[-1], flush=True)
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
