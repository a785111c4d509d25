"""Speed and strength of the batched attacks against the original per-state loop.

    python benchmarks/attack_speed.py            # table + results/attack_speed.{md,json}
    python benchmarks/attack_speed.py --sweep    # also the settings grid behind the defaults
    python benchmarks/attack_speed.py --agent zoo/SafetyCarRun-v0/vanilla   # adds a trained agent

The networks are built in-script, so the script runs without a trained agent: SafetyCarRun-v0
sizes (obs 7, act 2, hidden 128x128), observations ~ N(0, 1), and critics regressed for a few
hundred Adam steps onto smooth nonlinear functions of (s, a), so the attack landscapes are
curved rather than linear. Two actors are used:

- ``random-actor``: a randomly initialised GaussianActor, as the issue asks. Its mean action
  barely moves inside a 0.05 box, so every attack objective is nearly linear there.
- ``steep-actor``: the same architecture regressed onto a steep target policy
  ``tanh(3 K s)``; inside the box its action moves by tenths, closer to what a trained policy
  does, and the search problem stops being one sign step.

``--agent`` adds a trained agent (a ``robustsafe train`` run directory or agent file), attacked
on observations of its own natural episodes; the speed table is then measured on it as well.

The baseline is our re-implementation of the original attacker (the authors' code): one
state at a time in a Python loop, ``torch.optim.Adam`` with lr 0.1 on delta, at most 60
iterations, delta clamped to [-eps, eps] after every step, early stop when the loss changed by
less than 1e-4 and no coordinate of delta by 1e-4 or more; it returns the last iterate. It takes
gradients with ``torch.autograd.grad`` on delta only (the original called ``backward``, which
also computed parameter gradients), so it is if anything faster than the original.
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
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from robustsafe.attacks import (
    CRITIC_ATTACK_DEFAULTS,
    MAD_DEFAULTS,
    AttackConfig,
    Attacker,
    gaussian_kl,
    make_attacker,
    scaled_distance,
)
from robustsafe.critics import QCritics
from robustsafe.nets import GaussianActor

OBS_DIM, ACT_DIM, HIDDEN = 7, 2, (128, 128)
EPSILON = 0.05
BATCH_SIZES = (1, 64, 1024)
POOL = 1024  # states attacked at batch 64 and 1024
POOL_B1 = 256  # states attacked one call each at batch 1 (keeps the 200-step run short)
RESULTS = Path(__file__).resolve().parent / "results"

# --------------------------------------------------------------------------------------------
# Networks


def _fit(module_params, loss_fn: Callable[[Tensor, Tensor], Tensor], steps: int, gen) -> float:
    opt = torch.optim.Adam(module_params, lr=1e-3)
    loss = torch.zeros(())
    for _ in range(steps):
        s = torch.randn(512, OBS_DIM, generator=gen)
        a = torch.rand(512, ACT_DIM, generator=gen) * 2 - 1
        loss = loss_fn(s, a)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return float(loss.detach())


def synthetic_agent(seed: int, steep_actor: bool) -> tuple[GaussianActor, QCritics, dict]:
    """Actor and critics of SafetyCarRun-v0 sizes, the critics fit to known smooth targets."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    P = torch.randn(ACT_DIM, OBS_DIM, generator=gen) / OBS_DIM**0.5
    K = torch.randn(ACT_DIM, OBS_DIM, generator=gen) / OBS_DIM**0.5
    w_a = torch.randn(ACT_DIM, generator=gen)
    w_s = torch.randn(OBS_DIM, generator=gen) / OBS_DIM**0.5

    def reward(s: Tensor, a: Tensor) -> Tensor:
        # peaked at a target action: MR's optimum can lie inside the box
        target = torch.tanh(s @ P.T)
        return 2.0 - 2.0 * ((a - target) ** 2).sum(-1) + 0.3 * torch.sin(3.0 * a[:, 0] + s[:, 1])

    def cost(s: Tensor, a: Tensor) -> Tensor:
        # rising with a direction of the action, with a ripple: not a linear function of a
        lin = a @ w_a + s @ w_s
        return nn.functional.softplus(2.0 * lin - 0.5) + 0.5 * torch.sin(2.5 * a[:, 1] + s[:, 2])

    actor = GaussianActor(OBS_DIM, ACT_DIM, HIDDEN)
    critics = QCritics(OBS_DIM, ACT_DIM, HIDDEN)
    info: dict[str, float] = {}
    if steep_actor:
        info["actor_fit_mse"] = _fit(
            actor.parameters(),
            lambda s, a: ((actor.mean_action(s) - torch.tanh(3.0 * s @ K.T)) ** 2).mean(),
            400,
            gen,
        )

    def critic_loss(s: Tensor, a: Tensor) -> Tensor:
        heads_r = critics.q_reward.all_heads(s, a)
        loss_r = ((heads_r - reward(s, a)) ** 2).mean()
        loss_c = ((critics.q_cost(s, a) - cost(s, a)) ** 2).mean()
        return loss_r + loss_c

    info["critic_fit_mse"] = _fit(critics.parameters(), critic_loss, 600, gen)
    for p in list(actor.parameters()) + list(critics.parameters()):
        p.grad = None
    return actor.eval(), critics.eval(), info


def natural_observations(
    path: Path, steps: int, seed: int
) -> tuple[GaussianActor, QCritics, Tensor]:
    """A saved agent (``robustsafe train`` output) and ``steps`` observations of its own natural
    episodes: deterministic actions, no attack, resets where an episode ends."""
    from robustsafe.agent import load_agent
    from robustsafe.envs import env_id_from_file, make

    agent = load_agent(path).eval()
    env = make(env_id_from_file(agent.config.env_id, str(path)), seed=seed)
    obs, rows = env.reset(), []
    with torch.no_grad():
        while len(rows) < steps:
            rows.append(obs)
            action = agent.actor.mean_action(torch.as_tensor(obs)[None])[0].numpy()
            obs, _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                obs = env.reset()
    env.close()
    return agent.actor, agent.critics, torch.as_tensor(np.stack(rows), dtype=torch.float32)


# --------------------------------------------------------------------------------------------
# Objectives and the baseline


@torch.no_grad()
def mc_objective(actor, critics, clean: Tensor, adv: Tensor) -> Tensor:
    return critics.q_cost(clean, actor.mean_action(adv))


@torch.no_grad()
def mr_objective(actor, critics, clean: Tensor, adv: Tensor) -> Tensor:
    return critics.q_reward(clean, actor.mean_action(adv))


@torch.no_grad()
def minr_objective(actor, critics, clean: Tensor, adv: Tensor) -> Tensor:
    return -critics.q_reward(clean, actor.mean_action(adv))


@torch.no_grad()
def mad_objective(actor, critics, clean: Tensor, adv: Tensor) -> Tensor:
    p, q = actor.distribution(clean), actor.distribution(adv)
    return gaussian_kl(p.loc, p.scale, q.loc, q.scale)


OBJECTIVES = {
    "mc": mc_objective,
    "mr": mr_objective,
    "minr": minr_objective,
    "mad": mad_objective,
}


def per_state_reference(actor, critics, obs: Tensor, epsilon: float) -> tuple[Tensor, float]:
    """The original MC attacker, one state at a time (see the module docstring)."""
    out = torch.empty_like(obs)
    iterations = 0
    for i in range(obs.shape[0]):
        s0 = obs[i : i + 1]
        delta = torch.zeros_like(s0, requires_grad=True)
        opt = torch.optim.Adam([delta], lr=0.1)
        prev_loss = None
        for _ in range(60):
            iterations += 1
            loss = -critics.q_cost(s0, actor.mean_action(s0 + delta)).mean()
            (delta.grad,) = torch.autograd.grad(loss, delta)
            before = delta.detach().clone()
            opt.step()
            with torch.no_grad():
                delta.clamp_(-epsilon, epsilon)
            value = loss.item()
            moved = float((delta.detach() - before).abs().max())
            if prev_loss is not None and abs(value - prev_loss) < 1e-4 and moved < 1e-4:
                break
            prev_loss = value
        out[i] = (s0 + delta.detach())[0]
    return out, iterations / obs.shape[0]


# --------------------------------------------------------------------------------------------
# Measurement


def run_batched(attacker: Attacker, actor, critics, obs: Tensor, batch: int, seed: int) -> Tensor:
    gen = torch.Generator().manual_seed(seed)
    parts = [attacker(actor, critics, chunk, EPSILON, gen) for chunk in obs.split(batch)]
    return torch.cat(parts)


def timed(fn: Callable[[], object], repeats: int) -> tuple[object, list[float]]:
    """Run ``fn`` ``repeats`` times (after one warm-up); return its result and the times."""
    result = fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return result, times


def gain_fraction(value: float, clean: float, reference: float) -> float:
    """Share of the reference's improvement over no attack that ``value`` achieves."""
    return (value - clean) / (reference - clean) if reference != clean else 1.0


def reference_200(name: str, actor, critics, obs: Tensor, seed: int) -> dict[str, Tensor]:
    """200-step runs without early stopping: the defaults' own settings, and the per-state best
    over a grid of optimisers, step sizes and starts (a strong stand-in for the optimum)."""
    base = MAD_DEFAULTS if name == "mad" else CRITIC_ATTACK_DEFAULTS
    objective = OBJECTIVES[name]

    def value(cfg: AttackConfig) -> Tensor:
        adv = run_batched(make_attacker(name, cfg), actor, critics, obs, len(obs), seed)
        return objective(actor, critics, obs, adv)

    same = value(dataclasses.replace(base, steps=200, tol_obj=0.0))
    best = same.clone()
    for optimizer in ("pgd", "adam"):
        for step_size in (0.02, 0.1, 0.5):
            for random_start in (False, True):
                cfg = dataclasses.replace(
                    base,
                    steps=200,
                    tol_obj=0.0,
                    optimizer=optimizer,
                    step_size=step_size,
                    random_start=random_start,
                )
                best = torch.maximum(best, value(cfg))
    return {"same_settings": same, "best_of_grid": best}


def strength_of_defaults(setups: dict, seed: int) -> list[dict]:
    """Fraction of the 200-step objective that the default settings reach, per attack."""
    rows = []
    for setup, (actor, critics, obs) in setups.items():
        for name in ("mc", "mr", "minr", "mad"):
            objective = OBJECTIVES[name]
            ref = reference_200(name, actor, critics, obs, seed)
            clean = float(objective(actor, critics, obs, obs).mean())
            adv = run_batched(make_attacker(name), actor, critics, obs, len(obs), seed)
            got = float(objective(actor, critics, obs, adv).mean())
            with torch.no_grad():
                shift = (actor.mean_action(adv) - actor.mean_action(obs)).abs().amax(-1)
            same = float(ref["same_settings"].mean())
            best = float(ref["best_of_grid"].mean())
            rows.append(
                {
                    "setup": setup,
                    "attack": name,
                    "clean": clean,
                    "default": got,
                    "steps200_same": same,
                    "steps200_best": best,
                    "gain_vs_same": gain_fraction(got, clean, same),
                    "gain_vs_best": gain_fraction(got, clean, best),
                    "ratio_vs_best": got / best if best > 0 else float("nan"),
                    "action_shift": float(shift.mean()),
                }
            )
            print(
                f"  {setup:13s} {name:5s} clean {clean:9.4g}  default {got:9.4g}  "
                f"200-step {same:9.4g} / best {best:9.4g}  gain {rows[-1]['gain_vs_best']:.4f}"
            )
    return rows


def speed_table(actor, critics, obs: Tensor, seed: int, repeats: int, threads: int) -> list[dict]:
    """States/s and the MC objective reached, per method and batch size."""
    torch.set_num_threads(threads)
    load_before = os.getloadavg()[0]
    methods = {
        "batched, defaults": make_attacker("mc"),
        "batched, 200 steps": make_attacker("mc", steps=200, tol_obj=0.0),
    }
    clean_all = mc_objective(actor, critics, obs, obs)
    rows = []
    # The per-state loop does not depend on the batch size: run it once per state set.
    ref_cache: dict[int, tuple[Tensor, list[float], float]] = {}
    for batch in BATCH_SIZES:
        n = POOL_B1 if batch == 1 else POOL
        states = obs[:n]
        clean = float(clean_all[:n].mean())
        for label, attacker in methods.items():
            reps = 1 if "200" in label and batch == 1 else repeats
            adv, times = timed(
                lambda a=attacker, s=states, b=batch: run_batched(a, actor, critics, s, b, seed),
                reps,
            )
            assert float(scaled_distance(states, adv, "linf").max()) <= EPSILON
            rows.append(_row(label, batch, n, times, adv, actor, critics, states, clean))
        if n not in ref_cache:
            (adv, iters), times = timed(
                lambda s=states: per_state_reference(actor, critics, s, EPSILON), 1
            )
            ref_cache[n] = (adv, times, iters)
        adv, times, iters = ref_cache[n]
        row = _row("per-state loop (original)", batch, n, times, adv, actor, critics, states, clean)
        row["mean_iterations"] = iters
        rows.append(row)
    for row in rows:
        base = next(
            r
            for r in rows
            if r["batch"] == row["batch"] and r["method"] == "per-state loop (original)"
        )
        row["speedup_vs_loop"] = row["states_per_s"] / base["states_per_s"]
        row["threads"] = threads
        row["load_average_1min"] = (load_before, os.getloadavg()[0])
    return rows


def _row(label, batch, n, times, adv, actor, critics, states, clean) -> dict:
    t = min(times)  # least disturbed by other processes on the shared machine
    value = float(mc_objective(actor, critics, states, adv).mean())
    return {
        "method": label,
        "batch": batch,
        "states": n,
        "seconds_min": t,
        "seconds_median": statistics.median(times),
        "repeats": len(times),
        "states_per_s": n / t,
        "objective": value,
        "clean_objective": clean,
    }


def sweep(setups: dict, seed: int) -> list[dict]:
    """Gain fraction (vs the best-of-grid 200-step objective) and time for a settings grid."""
    rows = []
    for setup, (actor, critics, obs) in setups.items():
        for name in ("mc", "mr"):
            objective = OBJECTIVES[name]
            best = float(reference_200(name, actor, critics, obs, seed)["best_of_grid"].mean())
            clean = float(objective(actor, critics, obs, obs).mean())
            for optimizer in ("pgd", "adam"):
                for step_size in (0.1, 0.25, 0.5, 1.0):
                    for random_start in (False, True):
                        for steps in (1, 2, 3, 5, 10, 20):
                            cfg = AttackConfig(
                                steps=steps,
                                step_size=step_size,
                                optimizer=optimizer,
                                random_start=random_start,
                            )
                            attacker = make_attacker(name, cfg)
                            adv, times = timed(
                                lambda a=attacker, o=obs, ac=actor, cr=critics: run_batched(
                                    a, ac, cr, o, len(o), seed
                                ),
                                2,
                            )
                            got = float(objective(actor, critics, obs, adv).mean())
                            rows.append(
                                {
                                    "setup": setup,
                                    "attack": name,
                                    **dataclasses.asdict(cfg),
                                    "gain_vs_best": gain_fraction(got, clean, best),
                                    "seconds_min": min(times),
                                }
                            )
    return rows


def sweep_mad(setups: dict, seed: int, restarts: int = 8) -> list[dict]:
    """MAD: KL reached per noise temperature and start, against the per-state best of
    ``2 * restarts`` noiseless 200-step runs from random starts (the KL has local maxima)."""
    rows = []
    objective = OBJECTIVES["mad"]
    for setup, (actor, critics, obs) in setups.items():
        best = torch.zeros(obs.shape[0])
        for r in range(restarts):
            for step_size in (0.05, 0.25):
                cfg = AttackConfig(steps=200, step_size=step_size, random_start=True, tol_obj=0.0)
                adv = run_batched(make_attacker("mad", cfg), actor, critics, obs, len(obs), r)
                best = torch.maximum(best, objective(actor, critics, obs, adv))
        best_mean = float(best.mean())
        for beta in (None, 1e6, 1e8, 1e10, 1e12):
            for random_start in (False, True):
                for steps in (5, 10, 20):
                    cfg = AttackConfig(steps=steps, random_start=random_start, sgld_beta=beta)
                    adv = run_batched(
                        make_attacker("mad", cfg), actor, critics, obs, len(obs), seed
                    )
                    rows.append(
                        {
                            "setup": setup,
                            "sgld_beta": beta,
                            "random_start": random_start,
                            "steps": steps,
                            "kl": float(objective(actor, critics, obs, adv).mean()),
                            "best_restarts_kl": best_mean,
                        }
                    )
    return rows


# --------------------------------------------------------------------------------------------
# Reporting


def machine() -> dict:
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    except OSError:
        nproc = str(os.cpu_count())
    return {
        "nproc": nproc,
        "cpu_model": model,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "load_average_start": os.getloadavg(),
    }


def markdown(report: dict) -> str:
    m = report["machine"]
    lines = [
        "# Attack speed: batched attacks vs the original per-state loop",
        "",
        f"Command: `{report['command']}`",
        "",
        f"Machine: {m['cpu_model']}, `nproc` = {m['nproc']}, torch {m['torch']}, "
        f"Python {m['python']}, {m['platform']}. The machine is shared with other jobs (1-min "
        f"load average {m['load_average_start'][0]:.2f} at the start, "
        f"{m['load_average_end'][0]:.2f} at the end, per table below), so times are the MINIMUM "
        f"over {report['repeats']} repeats after a warm-up (medians are in the JSON).",
        "",
        f"Epsilon {EPSILON} (l_inf, raw observations), seed {report['seed']}. "
        f"Networks: {report['networks']}.",
        "",
        "## Setup",
        "",
        report["setup_text"],
        "",
        "## MC attack: throughput and objective",
        "",
        "Objective: mean Q_c(s, mu(s~)) over the attacked states (higher is a stronger attack); "
        "`clean` is Q_c(s, mu(s)). Batch 1 attacks the first "
        f"{POOL_B1} states one call each; batches 64 and 1024 attack {POOL} states.",
        "",
        "| setup | threads | batch | method | states/s | speed-up vs loop | objective | clean |",
        "|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    for r in report["speed"]:
        lines.append(
            f"| {r['setup']} | {r['threads']} | {r['batch']} | {r['method']} | "
            f"{r['states_per_s']:,.0f} | "
            f"{r['speedup_vs_loop']:.1f}x | {r['objective']:.5f} | {r['clean_objective']:.5f} |"
        )
    loads = {(r["setup"], r["threads"]): r["load_average_1min"] for r in report["speed"]}
    lines += [
        "",
        "Load average (1 min) before / after each table: "
        + "; ".join(f"{k[0]} {k[1]} threads {a:.2f} / {b:.2f}" for k, (a, b) in loads.items())
        + ".",
        "",
        "Two-thread times swing with the machine's other jobs: both threads of every operation "
        "wait for each other, so one descheduled thread stalls the whole batch, and a busy "
        "machine can cut two-thread throughput several-fold. Compare the load averages above; "
        "the one-thread rows are the steadier comparison.",
        "",
        "Against the issue's goal (20x the per-state loop at an equal or higher objective):",
    ]
    for r in report["speed"]:
        if r["method"] != "batched, defaults":
            continue
        loop = next(
            x
            for x in report["speed"]
            if x["setup"] == r["setup"]
            and x["threads"] == r["threads"]
            and x["batch"] == r["batch"]
            and x["method"].startswith("per-state")
        )
        met = r["speedup_vs_loop"] >= 20 and r["objective"] >= loop["objective"]
        lines.append(
            f"- {r['setup']}, {r['threads']} threads, batch {r['batch']}: "
            f"{r['speedup_vs_loop']:.1f}x, "
            f"objective {r['objective']:.5f} vs {loop['objective']:.5f}: "
            + ("met" if met else "NOT met")
        )
    loop_iters = [r["mean_iterations"] for r in report["speed"] if "mean_iterations" in r]
    lines += [
        "",
        f"The per-state loop ran {loop_iters[0]:.1f} Adam iterations per state on average "
        "(its lr 0.1 is twice epsilon: the first step reaches a corner of the box, and the "
        "early stop fires once the corner stops changing).",
        "",
        "## Strength of the default settings",
        "",
        "Defaults: critic attacks "
        f"`{report['defaults']['critic']}`; MAD/AMAD `{report['defaults']['mad']}`. "
        "10 steps is a cap: early stopping ends most states sooner.",
        "",
        "`gain` = (default - clean) / (200-step - clean), measured at batch "
        f"{POOL} against two 200-step references without early stopping: the defaults' own "
        "settings with 200 steps, and the per-state best over 12 runs (pgd and adam, step "
        "sizes 0.02, 0.1, 0.5 eps, zero and random start). `ratio` = default / best. "
        "`action shift`: mean over states of max_j |mu_j(s~) - mu_j(s)| under the default attack, "
        "how far the attack can move the policy's action.",
        "",
        "| setup | attack | clean | default | 200 steps (same) | 200 steps (best) "
        "| gain vs same | gain vs best | ratio vs best | action shift |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in report["strength"]:
        lines.append(
            f"| {r['setup']} | {r['attack']} | {r['clean']:.6g} | {r['default']:.6g} | "
            f"{r['steps200_same']:.6g} | {r['steps200_best']:.6g} | {r['gain_vs_same']:.4f} | "
            f"{r['gain_vs_best']:.4f} | {r['ratio_vs_best']:.4f} | {r['action_shift']:.4f} |"
        )
    if report.get("sweep"):
        lines += [
            "",
            "## Settings sweep (`--sweep`)",
            "",
            f"Gain vs the best 200-step objective at batch {POOL}, per setting, and the minimum "
            "time of one batch in ms (one thread, 2 repeats: indicative only on this shared "
            "machine). Early stopping at the default tolerances.",
            "",
            "| setup | attack | optimizer | step size | random start | "
            + " | ".join(f"{s} steps" for s in (1, 2, 3, 5, 10, 20))
            + " |",
            "|---|---|---|---:|---|" + "---:|" * 6,
        ]
        groups: dict[tuple, list[dict]] = {}
        for r in report["sweep"]:
            key = (r["setup"], r["attack"], r["optimizer"], r["step_size"], r["random_start"])
            groups.setdefault(key, []).append(r)
        for key, rs in groups.items():
            cells = [f"{r['gain_vs_best']:.4f} ({1e3 * r['seconds_min']:.0f})" for r in rs]
            head = " | ".join(str(k) for k in key)
            lines.append(f"| {head} | " + " | ".join(cells) + " |")
    if report.get("sweep_mad"):
        lines += [
            "",
            "## MAD: noise temperature and start (`--sweep`)",
            "",
            "Mean KL reached as a fraction of the per-state best of 16 noiseless 200-step runs "
            "from random starts (step sizes 0.05 and 0.25 eps, 8 seeds each). A single 200-step "
            "run with the default settings stays near the 10-step value: the gap is local "
            "maxima of the KL, which only restarts close.",
            "",
            "| setup | sgld_beta | random start | 5 steps | 10 steps | 20 steps |",
            "|---|---:|---|---:|---:|---:|",
        ]
        groups = {}
        for r in report["sweep_mad"]:
            key = (r["setup"], r["sgld_beta"], r["random_start"])
            groups.setdefault(key, []).append(r)
        for key, rs in groups.items():
            cells = " | ".join(f"{r['kl'] / r['best_restarts_kl']:.4f}" for r in rs)
            lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {cells} |")
    lines.append("")
    return "\n".join(lines)


SETUP_TEXT = """The script does not need a trained agent: it makes its own networks, with
SafetyCarRun-v0 sizes (obs 7, act 2, hidden 128x128) and observations drawn from N(0, 1):

- Critics: a `QCritics` whose Q_r heads and Q_c are fit by 600 Adam steps (lr 1e-3, batch 512,
  s ~ N(0, 1), a ~ U(-1, 1)) to known smooth functions: Q_r peaks at an action tanh(P s) (so the
  MR optimum can lie inside the box) with a sinusoidal ripple, Q_c is a softplus of a linear
  function of (s, a) plus a ripple in a. These are not values of any policy: they are smooth,
  nonlinear surfaces of the right sizes, which is all the attack optimiser sees.
- `random-actor`: a randomly initialised `GaussianActor` (PyTorch's default init), as the issue
  asks. Its mean action hardly moves inside the 0.05 box (see `action shift` below), so the
  objectives are almost linear there: a speed test more than a search test.
- `steep-actor`: the same architecture fit by 400 Adam steps to the steep policy tanh(3 K s).
  Its action moves several times further across the box, and the objectives curve inside it.
- `agent` (only with `--agent`): a trained agent with its own critics, attacked on 1024
  observations of its own natural episodes (mean actions, consecutive steps, so neighbouring
  states are correlated).

The throughput table uses `steep-actor` and, when given, `agent`."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agent", type=Path, help="saved agent (dict with actor and critics)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats per measurement")
    parser.add_argument("--sweep", action="store_true", help="also run the settings grid")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for the results")
    parser.add_argument(
        "--threads", type=int, nargs="+", default=[2], help="torch threads; one table each"
    )
    args = parser.parse_args()

    torch.set_num_threads(args.threads[0])
    info = machine()
    gen = torch.Generator().manual_seed(args.seed + 1)
    obs = torch.randn(POOL, OBS_DIM, generator=gen)
    setups: dict[str, tuple] = {}
    fits = {}
    for setup, steep in (("random-actor", False), ("steep-actor", True)):
        actor, critics, fit = synthetic_agent(args.seed, steep)
        setups[setup] = (actor, critics, obs)
        fits[setup] = fit
    networks = f"built in-script (see Setup; final fit MSEs {fits})"
    speed_setups = ["steep-actor"]
    if args.agent is not None:
        setups["agent"] = natural_observations(args.agent, POOL, args.seed)
        networks += f"; `agent` is {args.agent}, on {POOL} observations of its natural episodes"
        speed_setups.append("agent")

    print(f"machine: {info['cpu_model']}, nproc {info['nproc']}, torch {info['torch']}")
    speed = []
    for setup in speed_setups:
        actor, critics, obs = setups[setup]
        for threads in args.threads:
            rows = speed_table(actor, critics, obs, args.seed, args.repeats, threads)
            speed += [{"setup": setup, **r} for r in rows]
    head = f"{'setup':12s} thr batch  {'method':28s} {'states/s':>10} {'speed-up':>9}"
    print(head + f" {'objective':>10}")
    for r in speed:
        print(
            f"{r['setup']:12s} {r['threads']:>3} {r['batch']:>5}  {r['method']:28s} "
            f"{r['states_per_s']:>10,.0f} {r['speedup_vs_loop']:>8.1f}x {r['objective']:>10.5f}"
        )
    # Objectives do not depend on the thread count; one thread keeps the long, untimed part
    # from stalling on a busy machine (the sweep's times are therefore one-thread times).
    torch.set_num_threads(1)
    print("strength of the defaults (batch 1024):")
    strength = strength_of_defaults(setups, args.seed)
    sweep_rows = sweep(setups, args.seed) if args.sweep else []
    sweep_mad_rows = sweep_mad(setups, args.seed) if args.sweep else []
    info["load_average_end"] = os.getloadavg()

    report = {
        "command": "python " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
        "machine": info,
        "seed": args.seed,
        "repeats": args.repeats,
        "epsilon": EPSILON,
        "networks": networks,
        "setup_text": SETUP_TEXT,
        "defaults": {"critic": repr(CRITIC_ATTACK_DEFAULTS), "mad": repr(MAD_DEFAULTS)},
        "speed": speed,
        "strength": strength,
        "sweep": sweep_rows,
        "sweep_mad": sweep_mad_rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "attack_speed.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / "attack_speed.md").write_text(markdown(report))
    print(f"wrote {args.out / 'attack_speed.md'} and .json")


if __name__ == "__main__":
    main()
