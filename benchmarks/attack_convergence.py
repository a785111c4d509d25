"""How fast the MC and MR attacks converge: the appendix's figure of Q_c / Q_r over attack steps.

    python benchmarks/attack_convergence.py          # results/attack_convergence.{md,json,...}
    python benchmarks/attack_convergence.py --quick  # a smoke run (few states, two agents)

The paper (appendix B.1, Algorithm "MC and MR attacker" and its figure "An example of updating
the MR and MC during training") reports that the gradient attack converges in a few iterations
and within 10 ms. For every zoo agent given (default: PPOL-vanilla and ADV-PPOL(MC) on both Car
tasks) this script takes observations of the agent's own natural episodes and runs the MC and MR
attackers with the defaults (``robustsafe.attacks.default_config``) cut at k = 0, 1, ..., K sign
steps, with one start and with the default number of starts. The attack is deterministic given
its seed and returns the best iterate per state, so the k-step result is the curve's k-th point.
Reported per k: the mean objective over the states, MC's Q_c(s, a(s~)) and MR's Q_r(s, a(s~)),
where a is the agent's deterministic action (``actor.deterministic_action``, what the attack
optimises and the evaluation executes) and the critics are the agent's own at the clean state,
and its fraction of the k = K gain. The episodes that give the observations are driven by the
same deterministic action. Time: the median wall time of one full default call on one state
and on a batch of 20 (the training and evaluation batch), one intra-op thread, with the load
average.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import io
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from attack_strength import attack, machine  # noqa: E402

from robustsafe.agent import load_agent  # noqa: E402
from robustsafe.attacks import default_config  # noqa: E402
from robustsafe.attacks.critic_attacks import critic_objective  # noqa: E402
from robustsafe.envs import env_id_from_file, make  # noqa: E402
from robustsafe.figure_files import save_figure  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results"
AGENTS = (
    "zoo/SafetyCarRun-v0/vanilla",
    "zoo/SafetyCarRun-v0/adv-mc",
    "zoo/SafetyCarCircle-v0/vanilla",
    "zoo/SafetyCarCircle-v0/adv-mc",
)
ATTACKERS = (("mc", "Q_c"), ("mr", "Q_r"))


def natural_observations(agent, count: int, seed: int) -> torch.Tensor:
    """``count`` observations of the agent's own natural episodes (deterministic actions),
    every other step."""
    env = make(env_id_from_file(agent.config.env_id, "the agent file"), seed=seed)
    obs, rows = env.reset(), []
    with torch.no_grad():
        while len(rows) < 2 * count:
            rows.append(obs)
            x = torch.as_tensor(obs, dtype=torch.float32)[None]
            obs, _, _, terminated, truncated, _ = env.step(
                agent.actor.deterministic_action(x)[0].numpy()
            )
            if terminated or truncated:
                obs = env.reset()
    env.close()
    return torch.as_tensor(np.stack(rows[1::2]), dtype=torch.float32)


def objective(name: str, agent, clean: torch.Tensor, adv: torch.Tensor) -> torch.Tensor:
    """The attack's own objective per state: MC's Q_c(s, a(s~)) or MR's Q_r(s, a(s~))."""
    weights = (1.0, 0.0) if name == "mc" else (0.0, 1.0)
    with torch.no_grad():
        return critic_objective(agent.actor, agent.critics, clean, adv, *weights)


def curve(name: str, agent, obs: torch.Tensor, max_steps: int, restarts: int) -> list[float]:
    """Mean objective after k = 0..max_steps steps (k = 0: the clean observation)."""
    base = dataclasses.replace(default_config(name), restarts=restarts)
    values = []
    for k in range(max_steps + 1):
        adv = (
            obs
            if k == 0
            else attack(
                name, dataclasses.replace(base, steps=k), agent.actor, agent.critics, obs, 0
            )
        )
        values.append(float(objective(name, agent, obs, adv).mean()))
    return values


def call_time(name: str, agent, obs: torch.Tensor, batch: int, calls: int) -> float:
    cfg = default_config(name)
    times = []
    for i in range(calls):
        chunk = obs[(i * batch + torch.arange(batch)) % len(obs)]
        start = time.perf_counter()
        attack(name, cfg, agent.actor, agent.critics, chunk, i)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(path: Path, agent, args) -> list[dict]:
    obs = natural_observations(agent, args.states, seed=0)
    rows = []
    for name, _ in ATTACKERS:
        default = default_config(name)
        for restarts in sorted({1, default.restarts}):
            values = curve(name, agent, obs, args.max_steps, restarts)
            gain = values[-1] - values[0]
            for k, v in enumerate(values):
                rows.append(
                    {
                        "task": agent.config.env_id,
                        "agent": path.name,
                        "attacker": name,
                        "restarts": restarts,
                        "steps": k,
                        "objective": v,
                        "fraction_of_final_gain": (v - values[0]) / gain if gain > 0 else 1.0,
                    }
                )
        print(f"{agent.config.env_id} {path.name} {name}: done", flush=True)
    return rows


def times(path: Path, agent, args) -> list[dict]:
    obs = natural_observations(agent, max(args.states, 20), seed=1)
    out = []
    for name, _ in ATTACKERS:
        cfg = default_config(name)
        for batch in (1, 20):
            call_time(name, agent, obs, batch, 3)  # warm-up
            out.append(
                {
                    "task": agent.config.env_id,
                    "agent": path.name,
                    "attacker": name,
                    "batch": batch,
                    "steps": cfg.steps,
                    "restarts": cfg.restarts,
                    "ms_per_call": 1000 * call_time(name, agent, obs, batch, args.calls),
                }
            )
    return out


def first_k(rows: list[dict], fraction: float) -> dict[tuple, int]:
    """Per (task, agent, attacker, restarts): the first k with ``fraction`` of the final gain."""
    out: dict[tuple, int] = {}
    for r in rows:
        key = (r["task"], r["agent"], r["attacker"], r["restarts"])
        if key not in out and r["fraction_of_final_gain"] >= fraction - 1e-12:
            out[key] = r["steps"]
    return out


def figure(rows: list[dict], prefix: Path) -> list[Path]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4))
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 2)
    for ax, (name, q) in zip(axes, ATTACKERS, strict=True):
        keys = dict.fromkeys((r["task"], r["agent"], r["restarts"]) for r in rows)
        for task, agent, restarts in keys:
            pts = [
                r
                for r in rows
                if (r["task"], r["agent"], r["attacker"], r["restarts"])
                == (task, agent, name, restarts)
            ]
            ax.plot(
                [r["steps"] for r in pts],
                [r["fraction_of_final_gain"] for r in pts],
                marker="o" if restarts > 1 else ".",
                ls="-" if restarts > 1 else ":",
                label=f"{task[6:-3]} {agent}, {restarts} start(s)",  # SafetyCarRun-v0 -> CarRun
            )
        ax.set_title(f"{name.upper()}: {q}(s, mu(s~)) over attack steps")
        ax.set_xlabel("sign steps k")
        ax.set_ylabel("fraction of the final gain over no attack")
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=7, loc="lower right")
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return save_figure(fig, prefix, buf.getvalue())


def markdown(report: dict) -> str:
    m, rows, tm = report["machine"], report["rows"], report["times"]
    lines = [
        "# MC / MR attack convergence over steps (the appendix's MC/MR update figure)",
        "",
        f"Command: `{report['command']}`",
        "",
        f"Commit {m['commit']}; {m['cpu_model']}, {m['nproc']} CPUs, torch {m['torch']}, "
        f"Python {m['python']}, {m['torch_threads']} intra-op thread. 1-min load average "
        f"{report['load_start']:.2f} at the start, {report['load_end']:.2f} at the end"
        + (
            " (the machine was shared: the times are indicative)."
            if max(report["load_start"], report["load_end"]) > 1.5
            else "."
        ),
        "",
        f"Epsilon 0.05 (l_inf), {report['states']} observations per agent from its own natural "
        "episodes. Attacks: the defaults (sign steps of eps/4, early stopping, first start the "
        "clean observation, others random), cut at k steps; objective at the clean state.",
        "",
        f"## Steps to reach a fraction of the final (k = {report['max_steps']}) gain",
        "",
        "| task | agent | attacker | starts | clean | final | k for 90% | k for 99% |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    k90, k99 = first_k(rows, 0.9), first_k(rows, 0.99)
    for key in dict.fromkeys((r["task"], r["agent"], r["attacker"], r["restarts"]) for r in rows):
        pts = [r for r in rows if (r["task"], r["agent"], r["attacker"], r["restarts"]) == key]
        lines.append(
            f"| {key[0]} | {key[1]} | {key[2].upper()} | {key[3]} | {pts[0]['objective']:.3f} | "
            f"{pts[-1]['objective']:.3f} | {k90[key]} | {k99[key]} |"
        )
    lines += [
        "",
        "## Time per call (default settings, median)",
        "",
        "| task | agent | attacker | steps x starts | states per call | ms per call |",
        "|---|---|---|---|---:|---:|",
    ]
    for t in tm:
        lines.append(
            f"| {t['task']} | {t['agent']} | {t['attacker'].upper()} | {t['steps']} x "
            f"{t['restarts']} | {t['batch']} | {t['ms_per_call']:.1f} |"
        )
    lines += ["", "![convergence](attack_convergence.png)", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", nargs="+", default=list(AGENTS))
    parser.add_argument("--states", type=int, default=256)
    parser.add_argument("--max-steps", type=int, default=20)
    parser.add_argument("--calls", type=int, default=21)
    parser.add_argument("--out", type=Path, default=OUT / "attack_convergence")
    parser.add_argument("--quick", action="store_true", help="few states, two agents, 5 steps")
    args = parser.parse_args()
    if args.quick:
        args.agents, args.states, args.max_steps, args.calls = args.agents[:2], 16, 5, 3
    torch.set_num_threads(1)
    load_start = os.getloadavg()[0]
    agents = {ROOT / a: load_agent(ROOT / a).eval() for a in args.agents}
    rows = [r for path, agent in agents.items() for r in measure(path, agent, args)]
    tm = [t for path, agent in agents.items() for t in times(path, agent, args)]
    report = {
        "command": "python benchmarks/attack_convergence.py " + " ".join(sys.argv[1:]),
        "machine": machine(),
        "load_start": load_start,
        "load_end": os.getloadavg()[0],
        "states": args.states,
        "max_steps": args.max_steps,
        "rows": rows,
        "times": tm,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(report, indent=1))
    figure(rows, args.out)
    args.out.with_suffix(".md").write_text(markdown(report))
    print(args.out.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
