"""Issue 2 benchmark: a learner's quality, time-to-target and throughput on one task.

For each seed: train the learner (``--algo``, PPO-Lagrangian by default) with the chosen preset
(keeping an agent snapshot every ``checkpoint_every`` epochs), evaluate the final agent on 50
episodes, and evaluate the snapshots in order until the first one that meets the target
(reward >= target, cost <= limit, 50 episodes each; snapshots failing a loose 10-episode
screen, reward < 0.9 x target or cost > 2 x limit + 1, are skipped; only the ``--scan-seeds``,
seed 0 by default, are scanned).
Before training, measure the raw random-action throughput of the same vector env layout (both
cores) in the same process (``--raw-seconds 0`` skips it).

Wall times are the training's own clock (``metrics.csv``, from the start of training, env
start-up included) and, for runs trained from scratch in this process, the time since the
process was launched (``wall_from_launch_s``: interpreter start and imports included, the raw
throughput measurement and the start of the evaluation envs excluded; a later seed in the same
process counts the first one's launch overhead), the clock of the FSRL comparison
(``benchmarks/speed_vs_fsrl.py``). ``train_cpu_s``: CPU seconds of the training, its env
workers included (less sensitive to the machine's load than wall time).

    python benchmarks/ppol_benchmark.py --env SafetyCarRun-v0 --target-reward 500 --seeds 0 1 2
    python benchmarks/ppol_benchmark.py --algo focops --target-reward 500 --seeds 0

Writes ``benchmarks/results/<algo>_<env>.json`` and ``.md``; runs go to
``runs/bench/<env>/`` (finished runs are reused, interrupted ones resumed). ``--zoo zoo``
also copies seed 0's agent to ``zoo/<env>/vanilla/`` (``zoo/<env>/<algo>-vanilla/`` for another
learner than ppol, the grid's directory names), replacing the zoo's vanilla agent.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from speed_common import cpu_seconds, load_average, process_age  # noqa: E402
from speed_common import machine as _machine  # noqa: E402

LOAD_AT_START = load_average()

from robustsafe.choices import ALGOS  # noqa: E402
from robustsafe.presets import preset  # noqa: E402
from robustsafe.settings_io import apply_sets  # noqa: E402

# The env workers (spawned processes) import this file again as __mp_main__, the user's script's
# way: they need none of the training's imports, which would cost each of them torch's start-up
# (about a second), time a user's `robustsafe train` does not spend.
if __name__ != "__mp_main__":
    import numpy as np
    import torch

    from robustsafe.agent import load_agent
    from robustsafe.envs import VectorEnv
    from robustsafe.evaluate import evaluate_agent
    from robustsafe.rundir import run_status, train_metrics
    from robustsafe.train import train


def machine() -> dict:
    return {**_machine(), "torch": torch.__version__}


def raw_throughput(env_id: str, num_envs: int, workers: int, seconds: float) -> float:
    """Env steps per second with uniform random actions, the same vector layout."""
    rng = np.random.default_rng(0)
    with VectorEnv(env_id, num_envs, seed=0, workers=workers) as vec:
        vec.reset()
        lo, hi = vec.act_low, vec.act_high
        for _ in range(20):  # warm-up
            vec.step(rng.uniform(lo, hi, (num_envs, vec.act_dim)))
        steps, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            vec.step(rng.uniform(lo, hi, (num_envs, vec.act_dim)))
            steps += num_envs
        return steps / (time.perf_counter() - t0)


def meets(summary: dict, target_reward: float, cost_limit: float) -> bool:
    return summary["reward_mean"] >= target_reward and summary["cost_mean"] <= cost_limit


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--env", default="SafetyCarRun-v0")
    p.add_argument("--algo", choices=ALGOS, default="ppol", help="the learner")
    p.add_argument("--preset", default="fast")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--target-reward", type=float, required=True)
    p.add_argument("--cost-limit", type=float, default=5.0)
    p.add_argument("--episodes", type=int, default=50)
    p.add_argument("--epochs", type=int, help="override the preset's epochs")
    p.add_argument("--raw-seconds", type=float, default=20.0, help="0: skip the raw rate")
    p.add_argument(
        "--scan-seeds",
        type=int,
        nargs="*",
        default=[0],
        help="seeds whose snapshots are scanned for the first one meeting the target",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a setting of the preset, as robustsafe train --set (recorded)",
    )
    p.add_argument("--runs", default="runs/bench")
    p.add_argument("--results", default="benchmarks/results")
    p.add_argument(
        "--zoo",
        default="",
        help="copy seed 0's agent to ZOO/<env>/vanilla/ (ZOO/<env>/<algo>-vanilla/ for another "
        "learner than ppol; default: no copy)",
    )
    args = p.parse_args()
    torch.set_num_threads(1)

    overrides = {} if args.epochs is None else {"epochs": args.epochs}
    try:
        cfg0 = apply_sets(preset(args.env, args.preset, algo=args.algo, **overrides), args.set)
    except ValueError as err:
        p.error(str(err))
    t_excluded = time.perf_counter()
    raw = raw_one = None
    if args.raw_seconds > 0:
        raw = raw_throughput(args.env, cfg0.num_envs, cfg0.workers, args.raw_seconds)
        raw_one = raw_throughput(args.env, 1, 0, args.raw_seconds / 2)
        print(
            f"raw random-action throughput: {raw:.0f} steps/s ({cfg0.num_envs} envs, "
            f"{cfg0.workers} workers); one env in-process {raw_one:.0f} steps/s",
            flush=True,
        )
    eval_vec = VectorEnv(args.env, 10, seed=0, workers=2)
    t_excluded = time.perf_counter() - t_excluded  # no training: out of the launch overhead
    launch_overhead = None  # process launch to the first train() call, t_excluded not counted

    per_seed = []
    try:
        for seed in args.seeds:
            cfg = preset(args.env, args.preset, algo=args.algo, seed=seed, **overrides)
            cfg = apply_sets(cfg, args.set)
            name = f"{args.preset}-seed{seed}"
            run = (
                Path(args.runs)
                / args.env
                / (name if args.algo == "ppol" else f"{args.algo}-{name}")
            )
            status = run_status(run)
            fresh = status is None
            if launch_overhead is None:
                launch_overhead = process_age() - t_excluded
            cpu0 = cpu_seconds()
            if status is None:  # a folder without state: train() refuses one holding data
                train(cfg, run, progress=False)
            elif status[0] < status[1]:
                train(cfg, run, resume=True, progress=False)
            load_after_training = load_average()
            train_cpu = cpu_seconds() - cpu0  # this process and its joined env workers
            # the training's clock starts at its train() call; a fresh run adds the launch
            launched = launch_overhead if fresh else None
            rows = train_metrics(run)
            last = rows[-1]
            wall = float(last["wall_time"])
            steps = int(last["env_steps"])
            final = evaluate_agent(load_agent(run), eval_vec, args.episodes, seed=0)[0]
            fs = final.summary()
            first = None
            for row in rows if seed in args.scan_seeds else []:
                ckpt = run / "checkpoints" / f"agent_epoch_{int(row['epoch']):04d}.pt"
                if not ckpt.exists():  # snapshots every ``checkpoint_every`` epochs only
                    continue
                agent = load_agent(ckpt)
                # a 10-episode screen with a loose threshold skips hopeless snapshots cheaply
                screen = evaluate_agent(agent, eval_vec, 10, seed=0)[0].summary()
                if not meets(screen, 0.9 * args.target_reward, 2 * args.cost_limit + 1):
                    continue
                s = evaluate_agent(agent, eval_vec, args.episodes, seed=0)[0].summary()
                if meets(s, args.target_reward, args.cost_limit):
                    first = {
                        "epoch": int(row["epoch"]),
                        "env_steps": int(row["env_steps"]),
                        "wall_time_s": float(row["wall_time"]),
                        "wall_from_launch_s": (
                            None if launched is None else launched + float(row["wall_time"])
                        ),
                        "reward": s["reward_mean"],
                        "cost": s["cost_mean"],
                    }
                    break
            split = {
                k: float(np.sum([float(r[k]) for r in rows]))
                for k in ("time_env", "time_policy", "time_update")
            }
            entry = {
                "seed": seed,
                "final": fs,
                "meets_target": meets(fs, args.target_reward, args.cost_limit),
                "first_meeting_target": first,
                "train_wall_time_s": wall,
                "launch_overhead_s": launched,
                "train_cpu_s": train_cpu,
                "trained_in_this_process": fresh,
                "train_env_steps": steps,
                "train_steps_per_s": steps / wall,
                "time_split_s": split,
                "load_average_after_training": load_after_training,
            }
            per_seed.append(entry)
            print(json.dumps(entry), flush=True)
            if seed == args.seeds[0] and args.zoo:
                zoo_dir = "vanilla" if args.algo == "ppol" else f"{args.algo}-vanilla"
                dest = Path(args.zoo) / args.env / zoo_dir
                dest.mkdir(parents=True, exist_ok=True)
                shutil.copy(run / "agent.pt", dest / "agent.pt")
                shutil.copy(run / "config.yaml", dest / "config.yaml")
                shutil.copy(run / "metrics.csv", dest / "metrics.csv")
    finally:
        eval_vec.close()

    pooled_tp = float(np.mean([e["train_steps_per_s"] for e in per_seed]))
    result = {
        "command": "python benchmarks/ppol_benchmark.py "
        + " ".join(
            ([f"--algo {args.algo}"] if args.algo != "ppol" else [])
            + [
                f"--env {args.env}",
                f"--preset {args.preset}",
                "--seeds " + " ".join(map(str, args.seeds)),
                f"--target-reward {args.target_reward:g}",
            ]
            + ([f"--epochs {args.epochs}"] if args.epochs else [])
            + [f"--set {item}" for item in args.set]
            + ([f"--episodes {args.episodes}"] if args.episodes != 50 else [])
            + ([f"--raw-seconds {args.raw_seconds:g}"] if args.raw_seconds != 20 else [])
            + (
                ["--scan-seeds " + " ".join(map(str, args.scan_seeds))]
                if args.scan_seeds != [0]
                else []
            )
            + ([f"--runs {args.runs}"] if args.runs != "runs/bench" else [])
            + ([f"--results {args.results}"] if args.results != "benchmarks/results" else [])
            + ([f"--zoo {args.zoo}"] if args.zoo else [])
        ),
        "machine": machine(),
        "git_commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),
        "algo": args.algo,
        "env_id": args.env,
        "preset": args.preset,
        "settings": args.set,
        # what the speed report states of ours' side (envs, epoch size, snapshot spacing)
        "layout": {
            "num_envs": cfg0.num_envs,
            "workers": cfg0.workers,
            "steps_per_epoch": cfg0.steps_per_epoch,
            "checkpoint_every": max(1, cfg0.checkpoint_every),
        },
        "target": {"reward": args.target_reward, "cost": args.cost_limit},
        "episodes": args.episodes,
        "raw_steps_per_s_two_cores": raw,
        "raw_steps_per_s_one_env": raw_one,
        "train_steps_per_s_mean": pooled_tp,
        "train_over_raw": None if raw is None else pooled_tp / raw,
        "seeds": per_seed,
        "load_average": {"start": LOAD_AT_START, "end": load_average()},
    }
    out = Path(args.results)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.algo}_{args.env}.json").write_text(json.dumps(result, indent=2))
    (out / f"{args.algo}_{args.env}.md").write_text(report(result))
    print(report(result))


NAMES = {"ppol": "PPO-Lagrangian", "focops": "FOCOPS", "sac-lag": "SAC-Lagrangian", "cvpo": "CVPO"}


def report(r: dict) -> str:
    m = r["machine"]
    algo = r.get("algo", "ppol")
    lines = [
        f"# {NAMES.get(algo, algo)} on {r['env_id']} (preset `{r['preset']}`)",
        "",
        f"Command: `{r['command']}` (commit {r['git_commit']})",
        f"Machine: {m['cores']} cores, {m['cpu']}, Python {m['python']}, torch {m['torch']}",
        f"Target: reward >= {r['target']['reward']:g} with cost <= {r['target']['cost']:g}, "
        f"{r['episodes']} deterministic episodes per evaluation.",
        "",
        "| seed | final reward | final cost | meets | first snapshot meeting target "
        "(epoch / env steps / wall s of training / wall s from launch) | train steps/s |",
        "|---|---|---|---|---|---|",
    ]
    for e in r["seeds"]:
        f = e["final"]
        first = e["first_meeting_target"]
        launch = first and first.get("wall_from_launch_s")
        first_s = (
            f"{first['epoch']} / {first['env_steps']:,} / {first['wall_time_s']:.1f} / "
            + ("n/a" if launch is None else f"{launch:.1f}")
            if first
            else "never"
        )
        lines.append(
            f"| {e['seed']} | {f['reward_mean']:.1f} ± {f['reward_std']:.1f} | "
            f"{f['cost_mean']:.2f} ± {f['cost_std']:.2f} | {'yes' if e['meets_target'] else 'no'}"
            f" | {first_s} | {e['train_steps_per_s']:.0f} |"
        )
    all_r = [x for e in r["seeds"] for x in [e["final"]["reward_mean"]]]
    all_c = [x for e in r["seeds"] for x in [e["final"]["cost_mean"]]]
    lines += [
        "",
        f"Mean over seeds: reward {np.mean(all_r):.1f}, cost {np.mean(all_c):.2f}.",
        "",
    ]
    if r.get("train_over_raw") is None:
        lines += [
            f"Throughput: training {r['train_steps_per_s_mean']:.0f} env steps/s (updates "
            "included, start-up included); raw rate not measured (`--raw-seconds 0`).",
            "",
        ]
    else:
        lines += [
            f"Throughput: training {r['train_steps_per_s_mean']:.0f} env steps/s (updates "
            f"included, start-up included) vs raw random-action "
            f"{r['raw_steps_per_s_two_cores']:.0f} steps/s on both cores (same layout, same "
            f"run): **{r['train_over_raw']:.2f}x**. One env in one process: "
            f"{r['raw_steps_per_s_one_env']:.0f} steps/s.",
            "",
        ]
    load = r.get("load_average")
    if load:
        lines += [f"Load average (1/5/15 min): start {load['start']}, end {load['end']}.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
