"""Strength of the gradient attacks against a multi-restart reference, and what restarts cost.

    python benchmarks/attack_strength.py                    # results/attack_strength.{md,json}
    python benchmarks/attack_strength.py --quick            # a smoke run (few states, small ref)

For every zoo agent (``zoo/<task>/<mode>``, default modes vanilla, adv-mc, adv-mr on
SafetyCarRun-v0 and SafetyCarCircle-v0) the script collects observations of the agent's own
natural episodes (mean actions, no attack) and, for every gradient attacker, measures

    gain = mean over states of objective(attack) - objective(clean)

where the objective is the attacker's own (MAD: KL(pi(.|s) || pi(.|s~)); AMAD: the same on
the states whose Q_c(s, mu(s)) is in the top xi = 10% of the collected ones; MC: Q_c(s,
mu(s~)); MR: Q_r; minr: -Q_r; mix:0.5: (Q_c + Q_r) / 2, critics at the clean state). It is
reported as a fraction of the gain of the best perturbation known for each state: the per-state
maximum over a reference search (``--ref-restarts`` starts x ``--ref-steps`` steps, both sign
steps of eps/20 and Adam with lr eps/20, no noise, no early stopping) and over every setting
tried. A fraction of 1 means the attack found, on average, as much as anything we know.

Time per call is the median wall time of one call on ``--call-batch`` states (20: the training
and evaluation batch), single intra-op thread.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from robustsafe.agent import load_agent
from robustsafe.attacks import (
    AttackConfig,
    amad_threshold,
    cost_values,
    default_config,
    gaussian_kl,
    make_attacker,
)
from robustsafe.envs import env_id_from_file, make

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results"
EPSILON = 0.05
ATTACKERS = ("mad", "amad", "mc", "mr", "minr", "mix:0.5")


def natural_observations(agent, count: int, seed: int) -> Tensor:
    """``count`` observations of the agent's own natural episodes, every other step."""
    env = make(env_id_from_file(agent.config.env_id, "the agent file"), seed=seed)
    obs, rows = env.reset(), []
    with torch.no_grad():
        while len(rows) < 2 * count:
            rows.append(obs)
            action = agent.actor.mean_action(torch.as_tensor(obs)[None])[0].numpy()
            obs, _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                obs = env.reset()
    env.close()
    return torch.as_tensor(np.stack(rows[1::2]), dtype=torch.float32)


def objective(name: str, actor, critics, clean: Tensor, adv: Tensor) -> Tensor:
    """The attacker's own objective per state (higher = stronger attack)."""
    with torch.no_grad():
        if name in ("mad", "amad"):
            p, q = actor.distribution(clean), actor.distribution(adv)
            return gaussian_kl(p.loc, p.scale, q.loc, q.scale)
        a = actor.mean_action(adv)
        qc = critics.q_cost(clean, a)
        qr = critics.q_reward(clean, a)
        return {"mc": qc, "mr": qr, "minr": -qr, "mix:0.5": 0.5 * qc + 0.5 * qr}[name]


def attack(name: str, config: AttackConfig, actor, critics, obs: Tensor, seed: int) -> Tensor:
    # AMAD's states are selected beforehand: attacking them with MAD is what AMAD does there.
    attacker = make_attacker("mad" if name == "amad" else name, config)
    return attacker(actor, critics, obs, EPSILON, torch.Generator().manual_seed(seed))


def reference_configs(restarts: int, steps: int) -> dict[str, AttackConfig]:
    common = {"steps": steps, "restarts": restarts, "tol_obj": 0.0, "sgld_beta": None}
    return {
        f"pgd eps/20 x{steps}, {restarts} starts": AttackConfig(
            optimizer="pgd", step_size=0.05, **common
        ),
        f"adam lr eps/20 x{steps}, {restarts} random starts": AttackConfig(
            optimizer="adam", step_size=0.05, random_start=True, **common
        ),
    }


def candidate_configs(name: str, restarts: list[int], steps: list[int]) -> dict[str, AttackConfig]:
    base = default_config("mad" if name == "amad" else name)
    return {
        f"{s} steps x {r}": dataclasses.replace(base, steps=s, restarts=r)
        for s in steps
        for r in restarts
    }


def time_per_call(name, config, actor, critics, obs: Tensor, batch: int, calls: int) -> float:
    times = []
    for i in range(calls):
        chunk = obs[(i * batch) % len(obs) :][:batch]
        start = time.perf_counter()
        attack(name, config, actor, critics, chunk, i)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure_agent(path: Path, args) -> list[dict]:
    agent = load_agent(path).eval()
    actor, critics = agent.actor, agent.critics
    obs = natural_observations(agent, args.states, seed=0)
    rows = []
    for name in args.attackers:
        states = obs
        if name == "amad":
            threshold = amad_threshold(actor, critics, obs, xi=0.1)
            states = obs[cost_values(actor, critics, obs).double() >= threshold]
        clean = objective(name, actor, critics, states, states)
        values: dict[str, Tensor] = {}
        seconds: dict[str, float] = {}
        for label, cfg in reference_configs(args.ref_restarts, args.ref_steps).items():
            start = time.perf_counter()
            adv = attack(name, cfg, actor, critics, states, 1)
            seconds[label] = time.perf_counter() - start
            values[label] = objective(name, actor, critics, states, adv)
        candidates = candidate_configs(name, args.restarts, args.steps)
        for label, cfg in candidates.items():
            values[label] = objective(
                name, actor, critics, states, attack(name, cfg, actor, critics, states, 2)
            )
        best = torch.stack(list(values.values())).amax(dim=0)
        best_gain = float((best - clean).mean())
        reference_only = torch.stack([v for k, v in values.items() if k not in candidates]).amax(
            dim=0
        )
        for label, value in values.items():
            gain = float((value - clean).mean())
            row = {
                "task": agent.config.env_id,
                "agent": path.name,
                "attacker": name,
                "setting": label,
                "reference": label not in candidates,
                "states": int(len(states)),
                "clean": float(clean.mean()),
                "objective": float(value.mean()),
                "gain_fraction": gain / best_gain if best_gain > 0 else float("nan"),
                "states_below_0.95_of_best": float(
                    ((value - clean) < 0.95 * (best - clean) - 1e-9).float().mean()
                ),
            }
            if label in candidates:
                cfg = candidates[label]
                row["restarts"], row["steps"] = cfg.restarts, cfg.steps
                row["seconds_per_call"] = time_per_call(
                    name, cfg, actor, critics, obs, args.call_batch, args.calls
                )
            else:
                row["seconds_total"] = seconds[label]
            rows.append(row)
        rows.append(
            {
                "task": agent.config.env_id,
                "agent": path.name,
                "attacker": name,
                "setting": "reference searches alone (fraction of best known)",
                "reference": True,
                "gain_fraction": float((reference_only - clean).mean()) / best_gain
                if best_gain > 0
                else float("nan"),
            }
        )
        print(
            f"{agent.config.env_id} {path.name} {name}: best gain {best_gain:.4g}, "
            + ", ".join(
                f"{r['setting']}={r['gain_fraction']:.3f}"
                for r in rows[-len(values) - 1 :]
                if not r["reference"]
            ),
            flush=True,
        )
    return rows


def machine() -> dict:
    model = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "robustsafe"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return {
        "commit": commit + ("+dirty" if dirty else ""),
        "nproc": os.cpu_count(),
        "cpu_model": model,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "torch_threads": torch.get_num_threads(),
    }


def summary_table(rows: list[dict], settings: list[str]) -> list[str]:
    """Gain fraction per (task, agent, attacker) row and candidate setting column."""
    keys = list(dict.fromkeys((r["task"], r["agent"], r["attacker"]) for r in rows))
    head = "| task | agent | attacker | states | " + " | ".join(settings) + " |"
    lines = [head, "|" + "---|" * 4 + "---:|" * len(settings)]
    for key in keys:
        by = {r["setting"]: r for r in rows if (r["task"], r["agent"], r["attacker"]) == key}
        first = next(r for r in by.values() if "states" in r)
        cells = [f"{by[s]['gain_fraction']:.3f}" if s in by else "" for s in settings]
        task = key[0].replace("Safety", "").replace("-v0", "")
        lines.append(
            f"| {task} | {key[1]} | {key[2]} | {first['states']} | " + " | ".join(cells) + " |"
        )
    return lines


FAMILIES = {"MAD / AMAD": ("mad", "amad"), "critic attacks": ("mc", "mr", "minr", "mix:0.5")}


def family_summary(rows: list[dict]) -> list[str]:
    """Per attacker family and setting: the worst gain fraction over the ADV agents and over
    every agent, and the time per call relative to one start of 10 steps (median over rows)."""
    lines = [
        "| family | setting | min fraction, ADV agents | min fraction, all agents "
        "| time per call vs `10 steps x 1` |",
        "|---|---|---:|---:|---:|",
    ]
    for family, names in FAMILIES.items():
        mine = [r for r in rows if r["attacker"] in names and not r["reference"]]
        base = {
            (r["task"], r["agent"], r["attacker"]): r["seconds_per_call"]
            for r in mine
            if r["setting"] == "10 steps x 1"
        }
        for setting in dict.fromkeys(r["setting"] for r in mine):
            sel = [r for r in mine if r["setting"] == setting]
            adv = [r["gain_fraction"] for r in sel if r["agent"].startswith("adv")]
            ratio = statistics.median(
                r["seconds_per_call"] / base[(r["task"], r["agent"], r["attacker"])] for r in sel
            )
            lines.append(
                f"| {family} | {setting} | {min(adv) if adv else float('nan'):.3f} | "
                f"{min(r['gain_fraction'] for r in sel):.3f} | {ratio:.1f}x |"
            )
    return lines


def markdown(report: dict) -> str:
    rows, m = report["rows"], report["machine"]
    cand = list(dict.fromkeys(r["setting"] for r in rows if not r["reference"]))
    refs = list(dict.fromkeys(r["setting"] for r in rows if r["reference"]))
    out = [
        "# Attack strength: restarts against a multi-restart reference (issue 10 item 5)",
        "",
        f"Command: `{report['command']}`",
        "",
        f"Commit {m['commit']}; {m['cpu_model']}, {m['nproc']} CPUs, torch {m['torch']}, Python "
        f"{m['python']}, {m['torch_threads']} intra-op thread. 1-min load average "
        f"{report['load_average_start'][0]:.2f} at the start, {report['load_average_end'][0]:.2f} "
        f"at the end (1/5/15-min: start {report['load_average_start']}, end "
        f"{report['load_average_end']}). The machine is shared with other jobs, so the timings "
        "are indicative only (relative costs between settings are more reliable than the "
        "absolute numbers); the gain fractions do not depend on the load.",
        "",
        f"Epsilon {EPSILON} (l_inf, raw observations). {report['states']} observations per agent "
        "from its own natural episodes (every other step of consecutive episodes, reset seed 0). "
        "gain = mean over states of objective(attack) - objective(clean); the fraction divides it "
        "by the gain of the best perturbation known per state: the per-state maximum over the "
        f"reference searches ({'; '.join(refs[:2])}) and over every setting below. The AMAD "
        "rows are MAD on AMAD's states (top 10% of Q_c(s, mu(s)) among the observations).",
        "",
        "Settings: `S steps x R` = the family's defaults (`robustsafe.attacks.default_config`) "
        "with `steps=S, restarts=R`. MAD/AMAD: sign steps of eps/4, every start random, cold "
        "SGLD noise; critic attacks: sign steps of eps/4, first start the clean observation, the "
        "others random, per-state early stopping.",
        "",
        "## Summary per family",
        "",
        *family_summary(rows),
        "",
        "## Gain fraction",
        "",
        *summary_table(rows, cand + ["reference searches alone (fraction of best known)"]),
        "",
        f"## Time per call ({report['call_batch']} states, median of {report['calls']} calls, ms)",
        "",
    ]
    keys = list(dict.fromkeys((r["task"], r["agent"], r["attacker"]) for r in rows))
    out += [
        "| task | agent | attacker | " + " | ".join(cand) + " |",
        "|" + "---|" * 3 + "---:|" * len(cand),
    ]
    for key in keys:
        by = {r["setting"]: r for r in rows if (r["task"], r["agent"], r["attacker"]) == key}
        cells = [f"{1000 * by[s]['seconds_per_call']:.1f}" for s in cand]
        task = key[0].replace("Safety", "").replace("-v0", "")
        out.append(f"| {task} | {key[1]} | {key[2]} | " + " | ".join(cells) + " |")
    out += ["", report.get("conclusions", ""), ""]
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=["SafetyCarRun-v0", "SafetyCarCircle-v0"])
    parser.add_argument("--modes", nargs="+", default=["vanilla", "adv-mc", "adv-mr"])
    parser.add_argument("--attackers", nargs="+", default=list(ATTACKERS))
    parser.add_argument("--states", type=int, default=512)
    parser.add_argument("--ref-restarts", type=int, default=16)
    parser.add_argument("--ref-steps", type=int, default=200)
    parser.add_argument("--restarts", type=int, nargs="+", default=[1, 2, 3, 4, 6, 8])
    parser.add_argument("--steps", type=int, nargs="+", default=[10, 20])
    parser.add_argument("--call-batch", type=int, default=20)
    parser.add_argument("--calls", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="64 states, 4 x 50 reference")
    parser.add_argument("--out", type=Path, default=OUT / "attack_strength")
    parser.add_argument("--conclusions", type=Path, help="a markdown file appended to the md")
    parser.add_argument(
        "--rewrite", type=Path, help="only rewrite the md from this json (with --conclusions)"
    )
    args = parser.parse_args()
    if args.rewrite is not None:
        report = json.loads(args.rewrite.read_text())
        if args.conclusions is not None:
            report["conclusions"] = args.conclusions.read_text()
            args.rewrite.write_text(json.dumps(report, indent=1))
        args.rewrite.with_suffix(".md").write_text(markdown(report))
        return
    if args.quick:
        args.states, args.ref_restarts, args.ref_steps, args.calls = 64, 4, 50, 3
    torch.set_num_threads(1)
    report = {
        "command": "python " + " ".join([os.path.relpath(sys.argv[0], ROOT), *sys.argv[1:]]),
        "machine": machine(),
        "load_average_start": os.getloadavg(),
        "epsilon": EPSILON,
        "states": args.states,
        "call_batch": args.call_batch,
        "calls": args.calls,
        "reference": {"restarts": args.ref_restarts, "steps": args.ref_steps},
    }
    started = time.perf_counter()
    rows = []
    for task in args.tasks:
        for mode in args.modes:
            rows += measure_agent(ROOT / "zoo" / task / mode, args)
    report["rows"] = rows
    report["load_average_end"] = os.getloadavg()
    report["wall_seconds"] = time.perf_counter() - started
    if args.conclusions is not None:
        report["conclusions"] = args.conclusions.read_text()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(report, indent=1))
    args.out.with_suffix(".md").write_text(markdown(report))
    print(f"wrote {args.out}.{{json,md}} in {report['wall_seconds']:.0f} s")


if __name__ == "__main__":
    main()
