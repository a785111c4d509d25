"""Float32 batch-size effects, and the deterministic vs the mean action in the critic objective.

    python benchmarks/batch_invariance.py [--out DIR]   # DIR/{README.md,results.json}
                                                        # (default results/batch_invariance)

On the zoo PPOL-vanilla agents, with observations of each agent's own natural episodes
(``attack_convergence.natural_observations``, 256 per agent), it measures:

1. ``objective`` (SafetyCarCircle-v0 and SafetyCarRun-v0): the MC / MR objective Q(s, a(s~)),
   critics at the clean state, with a the deterministic action (``actor.deterministic_action``,
   E[clip(a)] for these agents: what the attack maximises) and with a the mean action
   (``actor.mean_action``: what ``attack_strength.py`` scores), on the clean observations and on
   the default attack's perturbations: the relative difference of the mean objective over the
   states and of the mean gain (attacked minus clean).
2. ``actions`` (CarRun, float32, first 200 states): the largest difference of the mean and of the
   deterministic action between batches of 10, 20, 100 rows and the same rows one at a time.
3. ``attacks`` (the same states): default MAD and MC (8 starts, epsilon 0.05) with one random
   stream per state (``RowGenerators`` of ``episode_generator(0, i)``, as evaluation gives every
   episode): the states whose perturbation differs between those batches and one at a time.
4. ``episodes`` (CarRun): 10 paired natural and MAD episodes with ``num_envs`` 1, 3 and 4, in
   float32 (``float32_episodes`` below, the loop of ``robustsafe.evaluate.run_episodes`` without
   its float64 copy of the agent) and in float64 (``run_episodes`` itself): the largest
   per-episode difference in reward and cost between the ``num_envs``, and the mean cost.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

sys.path.insert(0, str(Path(__file__).resolve().parent))

from attack_convergence import natural_observations  # noqa: E402
from attack_strength import machine  # noqa: E402

from robustsafe.agent import Agent, load_agent  # noqa: E402
from robustsafe.attacks import (  # noqa: E402
    Attacker,
    RowGenerators,
    episode_generator,
    make_attacker,
)
from robustsafe.envs import VectorEnv, env_id_from_file, episode_seed  # noqa: E402
from robustsafe.evaluate import run_episodes  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "batch_invariance"
AGENTS = ("zoo/SafetyCarCircle-v0/vanilla", "zoo/SafetyCarRun-v0/vanilla")
EPS, STATES, BATCH_STATES, BATCHES = 0.05, 256, 200, (10, 20, 100)
NUM_ENVS, EPISODES = (1, 3, 4), 10
ACTIONS = ("deterministic_action", "mean_action")
EpisodeAttack = Callable[[Agent, Tensor, RowGenerators], Tensor]


def objective_gap(agent: Agent, obs: Tensor) -> list[dict]:
    """Item 1: the MC / MR objective with the deterministic and with the mean action."""
    rows = []
    for name in ("mc", "mr"):
        adv = make_attacker(name)(
            agent.actor, agent.critics, obs, EPS, torch.Generator().manual_seed(0)
        )
        critic = agent.critics.q_cost if name == "mc" else agent.critics.q_reward
        with torch.no_grad():
            value = {
                (kind, at): float(critic(obs, getattr(agent.actor, kind)(x)).mean())
                for kind in ACTIONS
                for at, x in (("clean", obs), ("attacked", adv))
            }
        det, mean = (value[(k, "attacked")] for k in ACTIONS)
        gain_det, gain_mean = (value[(k, "attacked")] - value[(k, "clean")] for k in ACTIONS)
        rows.append(
            {
                "attacker": name,
                "clean_deterministic": value[("deterministic_action", "clean")],
                "clean_mean": value[("mean_action", "clean")],
                "attacked_deterministic": det,
                "attacked_mean": mean,
                "objective_relative_difference": abs(mean - det) / abs(det),
                "gain_deterministic": gain_det,
                "gain_mean": gain_mean,
                "gain_relative_difference": abs(gain_mean - gain_det) / abs(gain_det),
            }
        )
    return rows


def in_batches(fn: Callable[[slice], Tensor], n: int, batch: int) -> Tensor:
    """``fn`` on consecutive slices of ``batch`` of ``n`` rows, concatenated."""
    return torch.cat([fn(slice(i, min(i + batch, n))) for i in range(0, n, batch)])


def action_rows(agent: Agent, kind: str, obs: Tensor, rows: slice) -> Tensor:
    with torch.no_grad():
        return getattr(agent.actor, kind)(obs[rows])


def attack_rows(attacker: Attacker, agent: Agent, obs: Tensor, rows: slice) -> Tensor:
    gens = RowGenerators([episode_generator(0, i) for i in range(rows.start, rows.stop)])
    return attacker(agent.actor, agent.critics, obs[rows], EPS, gens).detach()


def batch_gaps(fn: Callable[[slice], Tensor], n: int) -> dict[str, dict]:
    """Items 2 and 3: per batch size, the rows that differ from one-at-a-time and by how much."""
    single = in_batches(fn, n, 1)
    out = {}
    for batch in BATCHES:
        diff = (in_batches(fn, n, batch) - single).abs().amax(dim=1)
        out[str(batch)] = {"rows_differing": int((diff > 0).sum()), "max": float(diff.max())}
    return out


def float32_episodes(agent: Agent, num_envs: int, attack: EpisodeAttack | None) -> list[list]:
    """``run_episodes``' paired episodes (seed 0, attack seed 0), computed in float32."""
    vec = VectorEnv(env_id_from_file(agent.config.env_id, "the agent file"), num_envs)
    current = np.arange(num_envs)
    obs = vec.reset([episode_seed(0, int(i)) for i in current])
    upcoming = np.array([episode_seed(0, int(i)) for i in current + num_envs], dtype=np.uint64)
    streams = [episode_generator(0, int(i)) for i in current]
    records: dict[int, list] = {}
    while len(records) < EPISODES:
        x = torch.from_numpy(obs)
        if attack is not None:
            x = attack(agent, x, RowGenerators(streams))
        with torch.no_grad():
            act = agent.actor.deterministic_action(x)
        step = vec.step(act.numpy(), reset_seeds=upcoming)
        for ep in step.episodes:
            k = ep.env_index
            if current[k] < EPISODES:
                records[int(current[k])] = [ep.ret, ep.cost, ep.length]
            current[k] += num_envs
            upcoming[k] = episode_seed(0, int(current[k] + num_envs))
            streams[k] = episode_generator(0, int(current[k]))
        obs = step.obs
    vec.close()
    return [records[i] for i in range(EPISODES)]


def float64_episodes(agent: Agent, num_envs: int, attack: EpisodeAttack | None) -> list[list]:
    with VectorEnv(env_id_from_file(agent.config.env_id, "the agent file"), num_envs) as vec:
        recs = run_episodes(agent, vec, EPISODES, 0, attack)
    return [[r.reward, r.cost, r.length] for r in recs]


def episode_spread(agent: Agent) -> list[dict]:
    """Item 4: per precision and attack, how the episodes move with ``num_envs``."""
    mad = make_attacker("mad")

    def attack(ag: Agent, obs: Tensor, gens: RowGenerators) -> Tensor:
        return mad(ag.actor, ag.critics, obs, EPS, gens).detach()

    rows = []
    for precision, play in (("float32", float32_episodes), ("float64", float64_episodes)):
        for name, fn in (("none", None), ("mad", attack)):
            runs = np.array([play(agent, n, fn) for n in NUM_ENVS])  # (num_envs, episode, 3)
            spread = runs.max(axis=0) - runs.min(axis=0)
            rows.append(
                {
                    "precision": precision,
                    "attack": name,
                    "max_reward_difference": float(spread[:, 0].max()),
                    "max_cost_difference": float(spread[:, 1].max()),
                    "max_length_difference": int(spread[:, 2].max()),
                    "mean_reward": dict(
                        zip(map(str, NUM_ENVS), runs[:, :, 0].mean(1).tolist(), strict=True)
                    ),
                    "mean_cost": dict(
                        zip(map(str, NUM_ENVS), runs[:, :, 1].mean(1).tolist(), strict=True)
                    ),
                }
            )
            print(rows[-1], flush=True)
    return rows


def markdown(r: dict) -> str:
    m, load = r["machine"], r["load_average"]
    lines = [
        "# Float32 batch effects, and the deterministic vs the mean action in MC / MR",
        "",
        f"Command: `{r['command']}`",
        "",
        f"Commit {m['commit']}; {m['cpu_model']}, {m['nproc']} CPUs, torch {m['torch']}, Python "
        f"{m['python']}, {m['torch_threads']} intra-op thread; 1-min load average "
        f"{load[0]:.2f} at the start, {load[1]:.2f} at the end ({r['seconds']:.0f} s). Nothing "
        "here is a timing: the load does not change the numbers.",
        "",
        f"Epsilon {EPS} (l_inf, raw observations); zoo PPOL-vanilla agents, observations of their "
        "own natural episodes (deterministic actions, every other step, reset seed 0). See the "
        "module docstring of `benchmarks/batch_invariance.py` for each item.",
        "",
        f"## 1. MC / MR objective: deterministic vs mean action ({STATES} states)",
        "",
        "| task | attacker | clean, det. | clean, mean | attacked, det. | attacked, mean "
        "| objective rel. diff. | gain, det. | gain, mean | gain rel. diff. |",
        "|---|---|" + "---:|" * 8,
    ]
    for o in r["objective"]:
        lines.append(
            f"| {o['task']} | {o['attacker'].upper()} | {o['clean_deterministic']:.4f} | "
            f"{o['clean_mean']:.4f} | {o['attacked_deterministic']:.4f} | "
            f"{o['attacked_mean']:.4f} | {o['objective_relative_difference']:.2%} | "
            f"{o['gain_deterministic']:.4f} | {o['gain_mean']:.4f} | "
            f"{o['gain_relative_difference']:.1%} |"
        )
    lines += [
        "",
        f"## 2-3. Float32, batches of B rows vs one row at a time ({BATCH_STATES} CarRun states)",
        "",
        "| quantity | B | rows differing | largest difference |",
        "|---|---:|---:|---:|",
    ]
    for what, gaps in (*r["actions"].items(), *r["attacks"].items()):
        for batch, g in gaps.items():
            lines.append(f"| {what} | {batch} | {g['rows_differing']} | {g['max']:.2g} |")
    lines += [
        "",
        f"## 4. SafetyCarRun-v0 episodes with num_envs {', '.join(map(str, NUM_ENVS))} "
        f"({EPISODES} paired episodes)",
        "",
        "| precision | attack | max reward diff. | max cost diff. | max length diff. "
        "| mean cost per num_envs |",
        "|---|---|---:|---:|---:|---|",
    ]
    for e in r["episodes"]:
        costs = ", ".join(f"{c:.1f}" for c in e["mean_cost"].values())
        lines.append(
            f"| {e['precision']} | {e['attack']} | {e['max_reward_difference']:.3g} | "
            f"{e['max_cost_difference']:.3g} | {e['max_length_difference']} | {costs} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help="folder for the results")
    out = parser.parse_args().out
    torch.set_num_threads(1)
    start, load_start = time.perf_counter(), os.getloadavg()[0]
    command = "python benchmarks/batch_invariance.py"
    if out.resolve() != OUT.resolve():
        command += f" --out {out}"
    report: dict = {"command": command, "machine": machine()}
    agents = {path: load_agent(ROOT / path).eval() for path in AGENTS}
    report["deterministic"] = {p: a.actor.deterministic for p, a in agents.items()}
    report["objective"] = []
    for agent in agents.values():
        obs = natural_observations(agent, STATES, seed=0)
        for row in objective_gap(agent, obs):
            report["objective"].append({"task": agent.config.env_id, **row})
    run = agents[AGENTS[1]]
    obs = natural_observations(run, STATES, seed=0)[:BATCH_STATES]
    report["actions"] = {
        k: batch_gaps(partial(action_rows, run, k, obs), len(obs)) for k in ACTIONS
    }
    report["attacks"] = {
        name: batch_gaps(partial(attack_rows, make_attacker(name), run, obs), len(obs))
        for name in ("mad", "mc")
    }
    print(json.dumps(report, indent=1), flush=True)
    report["episodes"] = episode_spread(run)
    report["load_average"] = [load_start, os.getloadavg()[0]]
    report["seconds"] = time.perf_counter() - start
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(report, indent=1) + "\n")
    (out / "README.md").write_text(markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
