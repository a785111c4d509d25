"""Measurements the compute model (``robustsafe.experiments.compute``) needs beside the committed
runs' metrics, all taken in one process, one after the other, so that they share the machine's
load:

- the raw random-action env rate of each task (20 envs, 2 subprocess workers, the presets'
  layout), interleaved over ``--rounds`` rounds: kept for reference (the model no longer uses
  it: the per-task trainings below replaced it);
- a few epochs of ``vanilla`` on the reference task under ``fast`` and under ``paper``: the
  ratio of their update time per env step is the paper preset's update factor (full-batch,
  80-pass updates on 40,000-80,000-step epochs against fast's 10 minibatch passes);
- a few epochs of ``vanilla`` under ``fast`` on every task, one after the other (``--train-only``
  measures these alone and keeps the file's other values): each part's time per env step (env
  stepping, policy, updates) relative to the reference task's prices the tasks without a
  committed training run (their own epoch sizes, networks and physics, not only the raw env);
- an evaluation of the fast run's agent as ``robustsafe evaluate`` runs it (10 envs in 2
  worker processes, float64), timed per attacker: its seconds per env step over the fast
  training's env + policy seconds per step are the evaluation factors, natural / random and
  gradient attackers (``--eval-only`` measures these alone and keeps the file's other values).

    python benchmarks/compute_calibration.py --out benchmarks/results/compute/calibration.json

Absolute rates here depend on the load at the time; the model uses only ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from robustsafe.envs import VectorEnv, env_id_from_file
from robustsafe.experiments.machine_speed import train_split
from robustsafe.files import write_text_atomic

TASKS = (
    "SafetyCarRun-v0",
    "SafetyCarCircle-v0",
    "SafetyDroneRun-v0",
    "SafetyDroneCircle-v0",
    "SafetyAntRun-v0",
    "SafetyAntCircle-v0",
)


def raw_rate(env_id: str, seconds: float, num_envs: int = 20, workers: int = 2) -> float:
    rng = np.random.default_rng(0)
    with VectorEnv(env_id, num_envs, seed=0, workers=workers) as vec:
        vec.reset()
        lo, hi = vec.act_low, vec.act_high
        for _ in range(10):
            vec.step(rng.uniform(lo, hi, (num_envs, vec.act_dim)))
        steps, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            vec.step(rng.uniform(lo, hi, (num_envs, vec.act_dim)))
            steps += num_envs
        return steps / (time.perf_counter() - t0)


CHEAP_ATTACKS = ("none", "random")
GRADIENT_ATTACKS = ("mad", "amad", "mc", "mr")


TRAIN_PARTS = {"env": "time_env", "policy": "time_policy", "update": "time_update"}


def task_trainings(reference: str, epochs: int) -> dict[str, object]:
    """Each task's fast vanilla training, a few epochs each, one after the other: its seconds
    per env step by part, and each part relative to the reference task's."""
    split = {}
    for task in TASKS:
        split[task] = train_split(task, "fast", epochs, 1)
        print(task, {k: f"{1e6 * v:.0f} us" for k, v in split[task].items()}, flush=True)
    return {
        "train_epochs": epochs,
        "train_seconds_per_step": split,
        "train_over_reference": {
            t: {k: split[t][col] / split[reference][col] for k, col in TRAIN_PARTS.items()}
            for t in TASKS
        },
    }


def eval_split(run: Path, episodes: int) -> dict[str, float]:
    """Seconds per env step of evaluating ``run``'s agent the way ``robustsafe evaluate`` does
    (10 envs in 2 worker processes), per attacker. An attacker's time is that of a natural +
    attacked evaluation less the natural one's (every evaluation runs natural episodes first)."""
    import torch

    from robustsafe.agent import load_agent
    from robustsafe.evaluate import evaluate_agent

    torch.set_num_threads(1)  # as robustsafe evaluate runs
    agent = load_agent(run / "agent.pt")
    with VectorEnv(
        env_id_from_file(agent.config.env_id, "the agent file"),
        min(10, episodes),
        seed=0,
        workers=2,
    ) as vec:

        def timed(attacks: tuple[str, ...]) -> tuple[float, int]:
            t0 = time.perf_counter()
            results = evaluate_agent(agent, vec, episodes, attacks=attacks)
            return time.perf_counter() - t0, sum(e.length for e in results[-1].episodes)

        t_natural, steps = timed(("none",))
        out = {"none": t_natural / steps}
        for attack in (*CHEAP_ATTACKS[1:], *GRADIENT_ATTACKS):
            seconds, steps = timed(("none", attack))
            out[attack] = max(seconds - t_natural, 0.0) / steps
            print(attack, f"{1e6 * out[attack]:.0f} us/step", flush=True)
    return out


def eval_factors(run: Path, fast: dict[str, float], episodes: int) -> dict[str, object]:
    per_step = eval_split(run, episodes)
    base = fast["time_env"] + fast["time_policy"]
    return {
        "eval_seconds_per_step": per_step,
        "eval_episodes": episodes,
        "eval_cheap_factor": float(np.mean([per_step[a] for a in CHEAP_ATTACKS])) / base,
        "eval_gradient_factor": float(np.mean([per_step[a] for a in GRADIENT_ATTACKS])) / base,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", default="benchmarks/results/compute/calibration.json")
    p.add_argument("--reference", default="SafetyCarCircle-v0")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=4.0)
    p.add_argument("--eval-episodes", type=int, default=10)
    p.add_argument("--train-epochs", type=int, default=8, help="epochs per task (first skipped)")
    p.add_argument(
        "--train-only",
        action="store_true",
        help="measure the per-task vanilla trainings alone and update them in --out",
    )
    p.add_argument(
        "--eval-only",
        action="store_true",
        help="measure the evaluation factors alone and update them in --out",
    )
    args = p.parse_args()
    out = Path(args.out)
    if args.train_only:
        result = json.loads(out.read_text())
        result |= task_trainings(result["reference"], args.train_epochs)
        result["train_command"] = "python benchmarks/compute_calibration.py " + " ".join(
            sys.argv[1:]
        )
        result["train_load_average_at_end"] = os.getloadavg()[0]
        write_text_atomic(out, json.dumps(result, indent=2) + "\n")
        print(json.dumps(result["train_over_reference"], indent=2))
        return
    if args.eval_only:
        result = json.loads(out.read_text())
        with tempfile.TemporaryDirectory() as tmp:
            run = Path(tmp) / "run"
            fast = train_split(result["reference"], "fast", 4, 1, out=run)
            result |= eval_factors(run, fast, args.eval_episodes)
        result["eval_command"] = "python benchmarks/compute_calibration.py " + " ".join(
            sys.argv[1:]
        )
        result["eval_load_average_at_end"] = os.getloadavg()[0]
        write_text_atomic(out, json.dumps(result, indent=2) + "\n")
        print(json.dumps({k: v for k, v in result.items() if k.startswith("eval")}, indent=2))
        return
    rates: dict[str, list[float]] = {t: [] for t in TASKS}
    for _ in range(args.rounds):
        for task in TASKS:
            rates[task].append(raw_rate(task, args.seconds))
            print(task, f"{rates[task][-1]:.0f} steps/s", flush=True)
    raw = {t: float(np.median(v)) for t, v in rates.items()}
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        fast = train_split(args.reference, "fast", 4, 1, out=run)
        evaluation = eval_factors(run, fast, args.eval_episodes)
    paper = train_split(args.reference, "paper", 2, 1)
    trainings = task_trainings(args.reference, args.train_epochs)
    result = {
        "command": "python benchmarks/compute_calibration.py " + " ".join(sys.argv[1:]),
        "machine": {
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "load_average_at_end": os.getloadavg()[0],
        },
        "reference": args.reference,
        "raw_steps_per_s": raw,
        "raw_steps_per_s_rounds": rates,
        "raw_over_reference": {t: raw[t] / raw[args.reference] for t in TASKS},
        "fast_seconds_per_step": fast,
        "paper_seconds_per_step": paper,
        "paper_update_factor": paper["time_update"] / fast["time_update"],
        **trainings,
        **evaluation,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out, json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
