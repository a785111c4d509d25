"""Milliseconds per CVPO gradient step (``robustsafe.learners.cvpo.CVPO.update``), with SAC-Lag's
for scale, on a synthetic replay of SafetyCarRun-v0's shapes.

    python benchmarks/cvpo_update_speed.py                  # results/cvpo_update_speed.md
    python benchmarks/cvpo_update_speed.py --profile 50     # also cProfile's top functions
    python benchmarks/cvpo_update_speed.py --digest         # a hash of the learner after N steps

The learner is the one ``robustsafe train --algo cvpo --preset fast`` builds for
SafetyCarRun-v0 (obs 7, act 2, the task's network, batch 300, K = 32), without the env: its
replay holds 20,000 transitions with observations ~ N(0, 1) scaled per dimension, rewards and
costs from fixed functions of (s, a) (the preset does not normalise observations; where a
normaliser exists it sees them). Each timed step samples its batch from the replay (as
``train._off_policy_epoch`` does) and calls ``update``; the number is the median over
``--steps`` steps after ``--warmup`` steps, in wall-clock and in this thread's CPU time (less
sensitive to other processes on a busy machine; torch runs single-threaded by default), with
the time per phase (critic step, E-step sampling and scoring, the dual solve, the M-step,
polyak) from wrappers around the learner's methods (their overhead is a few microseconds).
``torch.set_num_threads`` is the training default (``TrainConfig.torch_threads``)
unless ``--threads`` says otherwise.

The machine this runs on may be busy: the results file records the load average, and the
numbers are indicative, to be compared within one run (CVPO against SAC-Lag), not across runs.

``--digest`` prints the SHA-256 of the learner's parameters and duals after the timed steps, to
check that a change to the learner keeps its numbers bit-identical.

``--dual-check`` records the E-step dual problems of the timed CVPO steps, adds two variants of
each with a binding cost bound (the threshold 90% and 97% of the way from the states' best Q_c
to their mean Q_c under pi_old), and compares ``cvpo.solve_estep`` (projected Newton) with
SciPy's L-BFGS-B at its default tolerances (the solver used before) and with a tightly
converged L-BFGS-B (ftol 1e-15, gtol 1e-12, 1,000 iterations): the largest relative gaps in eta
and lambda, |KL(q || pi_old) - eps| / eps, and |E_q[Q_c] - threshold| where lambda > 0.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import os
import platform
import pstats
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
from scipy.optimize import minimize

from robustsafe.agent import build_networks
from robustsafe.learners import cvpo as cvpo_module
from robustsafe.learners import make_learner
from robustsafe.presets import preset

ENV_ID, OBS_DIM, ACT_DIM, EPISODE_STEPS = "SafetyCarRun-v0", 7, 2, 200
RESULTS = Path(__file__).resolve().parent / "results"


def build(algo: str, seed: int, replay_n: int = 20_000):
    """The learner of the fast preset on a synthetic replay; returns (learner, cfg)."""
    cfg = preset(ENV_ID, "fast", algo=algo, seed=seed)
    torch.manual_seed(seed)
    actor, v_r, v_c, critics, norm = build_networks(cfg, OBS_DIM, ACT_DIM)
    learner = make_learner(cfg, actor, v_r, v_c, critics, OBS_DIM, ACT_DIM, EPISODE_STEPS)
    rng = np.random.default_rng(seed)
    scale = np.linspace(0.5, 3.0, OBS_DIM, dtype=np.float32)
    obs = (rng.standard_normal((replay_n + 1, OBS_DIM)) * scale).astype(np.float32)
    act = rng.uniform(-1, 1, (replay_n, ACT_DIM)).astype(np.float32)
    reward = (np.tanh(obs[:-1, 0]) + act[:, 0] - 0.5 * act[:, 1] ** 2).astype(np.float32)
    cost = (obs[:-1, 1] + 0.5 * act[:, 0] > 1.5).astype(np.float32)
    done = np.zeros(replay_n, np.float32)
    learner.replay.add(obs[:-1], act, reward, cost, obs[1:], done)
    if norm is not None:
        norm.update(torch.from_numpy(obs))
    return learner, cfg


class PhaseTimer:
    """Seconds spent in the learner's phases, by wrapping its methods and the module's
    functions that ``CVPO.update`` calls."""

    def __init__(self, learner, algo: str) -> None:
        self.totals: dict[str, float] = {}
        if algo != "cvpo":
            return
        for name in ("_critic_step", "_estep", "_mstep"):
            setattr(learner, name, self._wrap(name.strip("_"), getattr(learner, name)))
        for name in ("solve_estep", "_polyak"):
            setattr(cvpo_module, name, self._wrap(name.strip("_"), getattr(cvpo_module, name)))
        self._restore = {n: getattr(cvpo_module, n).__wrapped__ for n in ("solve_estep", "_polyak")}

    def _wrap(self, label: str, fn):
        def timed(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                self.totals[label] = self.totals.get(label, 0.0) + time.perf_counter() - t0

        timed.__wrapped__ = fn  # type: ignore[attr-defined]
        return timed

    def restore(self) -> None:
        for name, fn in getattr(self, "_restore", {}).items():
            setattr(cvpo_module, name, fn)


def measure(algo: str, steps: int, warmup: int, seed: int, record: list | None = None) -> dict:
    """Median ms per update of ``algo``; the E-step dual problems go to ``record``."""
    learner, cfg = build(algo, seed)
    sc = cfg.cvpo if algo == "cvpo" else cfg.sac
    generator = torch.Generator().manual_seed(seed + 1)
    np_rng = np.random.default_rng(seed)
    for _ in range(warmup):
        learner.update(learner.replay.sample(sc.batch_size, np_rng), generator)
    if record is not None and algo == "cvpo":
        solve = cvpo_module.solve_estep

        def recording(*a):
            record.append(tuple(np.array(v, copy=True) if i < 2 else v for i, v in enumerate(a)))
            return solve(*a)

        cvpo_module.solve_estep = recording
    timer = PhaseTimer(learner, algo)
    times, cpu = [], []
    try:
        for _ in range(steps):
            batch = learner.replay.sample(sc.batch_size, np_rng)
            t0, c0 = time.perf_counter(), time.thread_time()
            learner.update(batch, generator)
            times.append(time.perf_counter() - t0)
            cpu.append(time.thread_time() - c0)
    finally:
        timer.restore()
        if record is not None and algo == "cvpo":
            cvpo_module.solve_estep = solve
    phases = {k: 1e3 * v / steps for k, v in timer.totals.items()}
    if "estep" in phases and "solve_estep" in phases:  # the dual solve is inside the E-step
        phases["estep_sampling_scoring"] = phases["estep"] - phases["solve_estep"]
    return {
        "algo": algo,
        "median_ms": 1e3 * statistics.median(times),
        "p10_ms": 1e3 * float(np.percentile(times, 10)),
        "p90_ms": 1e3 * float(np.percentile(times, 90)),
        "median_cpu_ms": 1e3 * statistics.median(cpu),
        "phases_ms": phases,
        "learner": learner,
        "settings": {
            "batch_size": sc.batch_size,
            "hidden": list(cfg.ppo.hidden),
            **(
                {
                    "K": sc.sample_actions,
                    "dual_iters": sc.dual_iters,
                    "mstep_iters": sc.mstep_iters,
                }
                if algo == "cvpo"
                else {}
            ),
        },
    }


def digest(learner) -> str:
    h = hashlib.sha256()
    for module in (learner.actor, learner.critics, learner.target, learner.target_actor):
        for t in module.state_dict().values():
            h.update(t.detach().numpy().tobytes())
    h.update(np.array([learner.eta, learner.lam, learner.alpha_mean, learner.alpha_std]).tobytes())
    return h.hexdigest()


def lbfgsb(q_r, q_c, eps, thres, init, dual_max, iters, **options) -> tuple[float, float]:
    """The E-step dual by SciPy's L-BFGS-B (the solver ``solve_estep`` used before)."""
    lo = cvpo_module.ETA_MIN
    res = minimize(
        cvpo_module.estep_dual,
        np.clip(np.asarray(init, np.float64), [lo, 0.0], [dual_max, dual_max]),
        args=(q_r, q_c, eps, thres),
        jac=True,
        method="L-BFGS-B",
        bounds=[(lo, dual_max), (0.0, dual_max)],
        options={"maxiter": iters, **options},
    )
    return float(res.x[0]), float(res.x[1])


def dual_check(problems: list[tuple]) -> dict[str, float]:
    """Largest gaps over the recorded problems and their binding variants (module docstring)."""
    cases = []
    for q_r, q_c, eps, thres, init, dual_max, iters in problems:
        cases.append((q_r, q_c, eps, thres, init, dual_max, iters))
        best, mean = float(q_c.min(axis=0).mean()), float(q_c.mean())
        for f in (0.9, 0.97):
            cases.append((q_r, q_c, eps, best + f * (mean - best), (0.1, 0.1), dual_max, iters))
    gaps = dict.fromkeys(
        ("eta_vs_tight", "lam_vs_tight", "eta_old_vs_tight", "lam_old_vs_tight"), 0.0
    )
    gaps.update(kl=0.0, kl_old=0.0, cost_bound=0.0, binding=0)
    t_new = t_old = 0.0

    def rel(a: float, b: float) -> float:
        return abs(a - b) / max(abs(b), 1e-12) if max(abs(a), abs(b)) > 0 else 0.0

    for q_r, q_c, eps, thres, init, dual_max, iters in cases:
        t0 = time.thread_time()
        new = cvpo_module.solve_estep(q_r, q_c, eps, thres, init, dual_max, iters)
        t1 = time.thread_time()
        old = lbfgsb(q_r, q_c, eps, thres, init, dual_max, iters)
        t_new, t_old = t_new + t1 - t0, t_old + time.thread_time() - t1
        tight = lbfgsb(q_r, q_c, eps, thres, init, dual_max, 1000, ftol=1e-15, gtol=1e-12)
        for name, sol in (("", new), ("_old", old)):
            gaps[f"eta{name}_vs_tight"] = max(gaps[f"eta{name}_vs_tight"], rel(sol[0], tight[0]))
            gaps[f"lam{name}_vs_tight"] = max(gaps[f"lam{name}_vs_tight"], rel(sol[1], tight[1]))
            w = cvpo_module.estep_weights(q_r, q_c, *sol)
            gaps[f"kl{name}"] = max(gaps[f"kl{name}"], abs(cvpo_module.sample_kl(w) - eps) / eps)
        if new[1] > 0:
            w = cvpo_module.estep_weights(q_r, q_c, *new)
            gaps["binding"] += 1
            gaps["cost_bound"] = max(
                gaps["cost_bound"], abs(float((w * q_c).sum(0).mean()) - thres)
            )
    gaps.update(
        problems=len(cases),
        cpu_ms_newton=1e3 * t_new / len(cases),
        cpu_ms_lbfgsb=1e3 * t_old / len(cases),
    )
    return gaps


def profile(steps: int, seed: int, top: int = 25) -> str:
    learner, cfg = build("cvpo", seed)
    generator = torch.Generator().manual_seed(seed + 1)
    np_rng = np.random.default_rng(seed)
    batches = [learner.replay.sample(cfg.cvpo.batch_size, np_rng) for _ in range(steps + 5)]
    for b in batches[:5]:
        learner.update(b, generator)
    pr = cProfile.Profile()
    pr.enable()
    for b in batches[5:]:
        learner.update(b, generator)
    pr.disable()
    out = io.StringIO()
    pstats.Stats(pr, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=100, help="timed gradient steps per learner")
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None, help="default: TrainConfig's")
    p.add_argument("--algos", nargs="+", default=["cvpo", "sac-lag"])
    p.add_argument("--profile", type=int, default=0, help="cProfile this many CVPO steps")
    p.add_argument("--digest", action="store_true", help="print the CVPO learner's hash")
    p.add_argument("--dual-check", action="store_true", help="compare the E-step solvers")
    p.add_argument("--out", type=Path, default=RESULTS / "cvpo_update_speed.md")
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args(argv)

    threads = args.threads or preset(ENV_ID, "fast", algo="cvpo").torch_threads
    torch.set_num_threads(threads)
    load_start = os.getloadavg()
    problems: list[tuple] = []
    record = problems if args.dual_check else None
    rows = [measure(a, args.steps, args.warmup, args.seed, record) for a in args.algos]
    load_end = os.getloadavg()
    check = dual_check(problems) if problems else None
    if check:
        print("dual check:", {k: float(f"{v:.3g}") for k, v in check.items()})
    for r in rows:
        phases = ", ".join(f"{k} {v:.2f}" for k, v in sorted(r["phases_ms"].items()))
        print(
            f"{r['algo']}: median {r['median_ms']:.2f} ms/update, "
            f"{r['median_cpu_ms']:.2f} CPU ms ({phases})"
        )
        if args.digest and r["algo"] == "cvpo":
            print(f"cvpo digest after {args.warmup + args.steps} steps: {digest(r['learner'])}")
    prof = profile(args.profile, args.seed) if args.profile else ""
    if prof:
        print(prof)
    if args.no_write:
        return 0
    cmd = "python benchmarks/cvpo_update_speed.py " + " ".join(argv or sys.argv[1:])
    lines = [
        "# CVPO: milliseconds per gradient step",
        "",
        f"Command: `{cmd.strip()}`",
        "",
        f"Synthetic replay of {ENV_ID}'s shapes (obs {OBS_DIM}, act {ACT_DIM}), fast preset "
        f"settings; median of {args.steps} updates after {args.warmup} warm-up updates; "
        f"torch {torch.__version__}, {threads} torch thread(s), Python "
        f"{platform.python_version()}, {os.cpu_count()} CPUs.",
        "",
        f"1/5/15-min load average: {load_start[0]:.2f}/{load_start[1]:.2f}/{load_start[2]:.2f}"
        f" at the start, {load_end[0]:.2f}/{load_end[1]:.2f}/{load_end[2]:.2f} at the end. The "
        "machine was shared with other jobs, so the numbers are indicative: compare the rows "
        "of one run, not runs with each other.",
        "",
        "| learner | settings | median ms/update | p10 | p90 | median CPU ms/update |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        s = ", ".join(f"{k} {v}" for k, v in r["settings"].items())
        lines.append(
            f"| {r['algo']} | {s} | {r['median_ms']:.2f} | {r['p10_ms']:.2f} | "
            f"{r['p90_ms']:.2f} | {r['median_cpu_ms']:.2f} |"
        )
    cv = next((r for r in rows if r["algo"] == "cvpo"), None)
    if cv:
        lines += ["", "CVPO's phases, mean ms per update:", "", "| phase | ms |", "|---|---:|"]
        for k in ("critic_step", "estep", "estep_sampling_scoring", "solve_estep", "mstep"):
            if k in cv["phases_ms"]:
                lines.append(f"| {k} | {cv['phases_ms'][k]:.2f} |")
        if "polyak" in cv["phases_ms"]:
            lines.append(f"| polyak (both targets) | {cv['phases_ms']['polyak']:.2f} |")
    if check:
        lines += [
            "",
            f"E-step dual (`--dual-check`): {check['problems']} problems (the timed steps' and "
            f"two binding variants of each; the bound binds in {check['binding']}). Largest "
            "gaps to a tightly converged L-BFGS-B (ftol 1e-15, gtol 1e-12):",
            "",
            "| solver | eta, relative | lambda, relative | \\|KL - eps\\| / eps | CPU ms / solve |",
            "|---|---:|---:|---:|---:|",
            f"| projected Newton (`solve_estep`) | {check['eta_vs_tight']:.1e} | "
            f"{check['lam_vs_tight']:.1e} | {check['kl']:.1e} | {check['cpu_ms_newton']:.2f} |",
            f"| L-BFGS-B, SciPy defaults (before) | {check['eta_old_vs_tight']:.1e} | "
            f"{check['lam_old_vs_tight']:.1e} | {check['kl_old']:.1e} | "
            f"{check['cpu_ms_lbfgsb']:.2f} |",
            "",
            f"Where the cost bound binds, the Newton solution meets it to "
            f"{check['cost_bound']:.1e} (\\|E_q[Q_c] - threshold\\|). CPU ms are this "
            "process's thread time: SciPy's L-BFGS-B also keeps OpenBLAS threads busy.",
        ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
