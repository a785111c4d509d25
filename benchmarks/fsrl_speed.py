"""FSRL's side of the speed comparison (issue 11): time to the first 50-episode target.

Runs in FSRL's scratch venv, never in RobustSafe's (it imports nothing from ``robustsafe``;
``benchmarks/speed_vs_fsrl.py`` makes the venv and calls this script). For one learner and
seed it trains FSRL's agent (``fsrl.agent``) with the settings of FSRL's example script for
the task (``examples/mlp/train_<learner>_agent.py``: the task's config class of
``fsrl.config.<learner>_cfg``, FSRL's vector env class and env counts, the agent's
``learn``), keeping a snapshot of the policy and the wall time since this process was
launched each time training passes a multiple of ``--snapshot-every`` env steps (snapshots
are taken right after a policy update, FSRL's only hook inside an epoch: the logger's
``write_without_reset``). Then, as ``benchmarks/ppol_benchmark.py`` does for ours, it
evaluates the snapshots in order, deterministically (FSRL's eval mode), until the first whose
``--episodes`` episodes have mean reward >= ``--target-reward`` and mean cost <=
``--cost-limit`` (a 10-episode screen with reward >= 0.9 x target and cost <= 2 x limit + 1
first), and the final policy on ``--episodes`` episodes.

    .fsrl-venv/bin/python benchmarks/fsrl_speed.py --learner ppol --seed 0 \\
        --max-env-steps 400000 --out benchmarks/results/speed_vs_fsrl/fsrl

Writes ``OUT/<learner>-seed<seed>.json``; snapshots and FSRL's own logs go to
``--runs/<learner>-seed<seed>/`` (deleted first: every call trains afresh).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from speed_common import cpu_seconds, load_average, machine, process_age  # noqa: E402

LOAD_AT_START = load_average()

import argparse  # noqa: E402
import ast  # noqa: E402
import copy  # noqa: E402
import importlib  # noqa: E402
import inspect  # noqa: E402
import json  # noqa: E402
import shlex  # noqa: E402
import shutil  # noqa: E402
import warnings  # noqa: E402
from dataclasses import asdict  # noqa: E402
from importlib import metadata  # noqa: E402

# FSRL imports wandb (its example's logger); this script logs with FSRL's TensorBoard logger.
os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("WANDB_SILENT", "true")
os.environ.setdefault("WANDB_ERROR_REPORTING", "false")
warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", message=".*pkg_resources")

import bullet_safety_gym  # noqa: E402,F401  (registers the Safety*-v0 tasks)
import fsrl.agent  # noqa: E402
import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
import tianshou.env  # noqa: E402
import torch  # noqa: E402
from fsrl.utils import TensorboardLogger  # noqa: E402

# learner -> (FSRL agent class, FSRL config module, on-policy)
LEARNERS = {
    "ppol": ("PPOLagAgent", "fsrl.config.ppol_cfg", True),
    "focops": ("FOCOPSAgent", "fsrl.config.focosp_cfg", True),
    "sac-lag": ("SACLagAgent", "fsrl.config.sacl_cfg", False),
    "cvpo": ("CVPOAgent", "fsrl.config.cvpo_cfg", False),
}
# The config class FSRL's example scripts pick for each Bullet-Safety-Gym task (the same
# table in all four scripts).
TASK_CONFIG = {
    "SafetyCarRun-v0": "Bullet1MCfg",
    "SafetyBallRun-v0": "Bullet1MCfg",
    "SafetyBallCircle-v0": "Bullet1MCfg",
    "SafetyCarCircle-v0": "TrainCfg",
    "SafetyDroneRun-v0": "TrainCfg",
    "SafetyAntRun-v0": "TrainCfg",
    "SafetyDroneCircle-v0": "Bullet5MCfg",
    "SafetyAntCircle-v0": "Bullet10MCfg",
}
# Agent arguments whose config field has another name, as the example scripts pass them.
# FOCOPS' example passes norm_adv as reward_normalization too (kept: it is FSRL's default run).
RENAMED = {
    "advantage_normalization": "norm_adv",
    "recompute_advantage": "recompute_adv",
    "reward_normalization": "rew_norm",
}
RENAMED_FOCOPS = {**RENAMED, "reward_normalization": "norm_adv"}
# Snapshot spacing by default: the env steps of one epoch of ours for the same learner
# (fast preset, CarRun), so both sides are scanned at the same granularity.
DEFAULT_SNAPSHOT_EVERY = {"ppol": 4_000, "focops": 4_000, "sac-lag": 10_000, "cvpo": 10_000}


class StopTraining(Exception):
    """Raised from the snapshot hook once ``--max-env-steps`` is reached."""


class Snapshots:
    """Keeps the policy's state and the wall clock each time training passes a multiple of
    ``every`` env steps, and at the update that reaches ``max_env_steps``, where it stops the
    training (called after each policy update with the trainer's env step)."""

    def __init__(self, folder: Path, every: int, max_env_steps: int | None) -> None:
        self.folder = folder
        self.every = every
        self.max_env_steps = max_env_steps
        self.policy: torch.nn.Module | None = None
        self.rows: list[dict] = []
        self.next = every
        self.log = (folder / "snapshots.jsonl").open("w")

    def __call__(self, env_step: int) -> None:
        if self.policy is None:
            return
        done = self.max_env_steps is not None and env_step >= self.max_env_steps
        if env_step < self.next and not done:  # the last update always leaves a snapshot
            return
        wall = process_age()
        index = len(self.rows) + 1
        torch.save(self.policy.state_dict(), self.folder / f"snapshot_{index:04d}.pt")
        row = {"index": index, "env_steps": int(env_step), "wall_from_launch_s": round(wall, 3)}
        self.rows.append(row)
        self.log.write(json.dumps(row) + "\n")
        self.log.flush()
        self.next = (env_step // self.every + 1) * self.every
        if done:
            raise StopTraining


class SnapshotLogger(TensorboardLogger):
    """FSRL's TensorBoard logger, calling the snapshot hook after each policy update."""

    def __init__(self, hook: Snapshots, log_dir: str) -> None:
        super().__init__(log_dir, log_txt=True, name="fsrl")
        self.hook = hook

    def write_without_reset(self, step: int) -> None:
        super().write_without_reset(step)
        self.hook(step)


def parse_set(items: list[str], cfg: dict) -> dict:
    """``key=value`` overrides of FSRL's config fields (values as Python literals)."""
    out = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or key not in cfg:
            raise SystemExit(f"--set {item!r}: not KEY=VALUE with KEY a field of FSRL's config")
        try:
            out[key] = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            out[key] = raw
    return out


def fsrl_config(learner: str, env_id: str, config_class: str | None, sets: list[str]) -> dict:
    """FSRL's example-script settings for ``env_id`` (its task's config class), with overrides."""
    module = importlib.import_module(LEARNERS[learner][1])
    name = config_class or TASK_CONFIG.get(env_id)
    if name is None:
        raise SystemExit(f"no FSRL config class known for {env_id}; pass --config-class")
    cfg = asdict(getattr(module, name)())
    cfg["task"] = env_id
    cfg.update(parse_set(sets, cfg))
    return cfg


def make_agent(learner: str, cfg: dict, logger: TensorboardLogger):
    """FSRL's agent, every argument of its constructor that the config has (as the example
    script passes them), ``lr_scheduler`` None."""
    cls = getattr(fsrl.agent, LEARNERS[learner][0])
    renamed = RENAMED_FOCOPS if learner == "focops" else RENAMED
    kwargs = {}
    for name in inspect.signature(cls.__init__).parameters:
        key = renamed.get(name, name)
        if key in cfg and name not in ("env", "logger"):
            kwargs[name] = cfg[key]
    if "hidden_sizes" in kwargs:
        kwargs["hidden_sizes"] = tuple(kwargs["hidden_sizes"])
    return cls(env=gym.make(cfg["task"]), logger=logger, lr_scheduler=None, **kwargs), kwargs


def learn_kwargs(agent, cfg: dict) -> dict:
    """The arguments of ``agent.learn`` that the config has (the example's), quietly."""
    params = inspect.signature(agent.learn).parameters
    kwargs = {k: cfg[k] for k in params if k in cfg and k not in ("train_envs", "test_envs")}
    kwargs["epoch"] = cfg["epoch"]
    kwargs["verbose"] = False
    if "show_progress" in params:
        kwargs["show_progress"] = False
    return kwargs


def evaluate(agent, envs, state: dict, episodes: int, seed: int) -> dict:
    """Mean reward, cost and length of ``episodes`` deterministic episodes (FSRL's eval mode:
    ``agent.evaluate`` with the policy in eval mode), the envs reseeded so that every snapshot
    starts from the same states."""
    envs.seed([seed + i for i in range(len(envs))])
    rew, length, cost = agent.evaluate(envs, state_dict=state, eval_episodes=episodes)
    return {"reward": float(np.mean(rew)), "cost": float(np.mean(cost)), "length": float(length)}


def meets(s: dict, reward: float, cost: float) -> bool:
    return s["reward"] >= reward and s["cost"] <= cost


def versions() -> dict:
    names = ("fast-safe-rl", "tianshou", "torch", "numpy", "gymnasium", "bullet-safety-gym")
    out = {}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            out[n] = None
    return out


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--learner", choices=sorted(LEARNERS), required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--env", default="SafetyCarRun-v0")
    p.add_argument("--target-reward", type=float, default=500.0)
    p.add_argument("--cost-limit", type=float, default=5.0, help="criterion, not FSRL's")
    p.add_argument("--episodes", type=int, default=50)
    p.add_argument("--screen-episodes", type=int, default=10)
    p.add_argument("--eval-envs", type=int, default=10)
    p.add_argument(
        "--max-env-steps",
        type=int,
        help="stop training at the first policy update at or past this many env steps "
        "(default: FSRL's full epochs)",
    )
    p.add_argument(
        "--snapshot-every",
        type=int,
        help="env steps between snapshots (default: one epoch of ours for the learner, "
        + ", ".join(f"{k} {v:,}" for k, v in DEFAULT_SNAPSHOT_EVERY.items())
        + ")",
    )
    p.add_argument("--config-class", help="FSRL config class (default: the example's for --env)")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a field of FSRL's config (e.g. thread=2, cost_limit=5); recorded",
    )
    p.add_argument("--runs", default="runs/speed_vs_fsrl/fsrl")
    p.add_argument("--out", default="benchmarks/results/speed_vs_fsrl/fsrl")
    p.add_argument(
        "--force", action="store_true", help="delete this seed's run folder in --runs if it exists"
    )
    args = p.parse_args()

    cfg = fsrl_config(args.learner, args.env, args.config_class, args.set)
    cfg["seed"] = args.seed
    every = args.snapshot_every or DEFAULT_SNAPSHOT_EVERY[args.learner]
    run = Path(args.runs) / f"{args.learner}-seed{args.seed}"
    if run.exists():  # the timing is from scratch: never on top of an earlier run
        if not args.force:
            raise SystemExit(f"{run} exists; pass --force to delete it, or another --runs")
        shutil.rmtree(run)
    (run / "snapshots").mkdir(parents=True)
    hook = Snapshots(run / "snapshots", every, args.max_env_steps)
    logger = SnapshotLogger(hook, str(run))
    logger.save_config(cfg, verbose=False)

    # ---- training, as FSRL's example script runs it (timed from process launch)
    train_start, cpu_start = process_age(), cpu_seconds()
    agent, agent_kwargs = make_agent(args.learner, cfg, logger)
    hook.policy = agent.policy
    worker = getattr(tianshou.env, cfg["worker"])
    training_num = min(cfg["training_num"], cfg["episode_per_collect"])
    train_envs = worker([lambda: gym.make(cfg["task"]) for _ in range(training_num)])
    test_envs = worker([lambda: gym.make(cfg["task"]) for _ in range(cfg["testing_num"])])
    learn = learn_kwargs(agent, cfg)
    stopped = False
    try:
        agent.learn(train_envs=train_envs, test_envs=test_envs, **learn)
    except StopTraining:
        stopped = True
    train_end = process_age()
    load_after_training = load_average()
    train_envs.close()
    test_envs.close()
    train_cpu = cpu_seconds() - cpu_start  # the env subprocesses included
    hook.log.close()
    rows = hook.rows
    if not rows:
        raise SystemExit("training ended before the first snapshot: raise --max-env-steps")
    print(
        f"trained {rows[-1]['env_steps']:,} env steps in {train_end - train_start:.1f} s "
        f"({train_end:.1f} s since launch); {len(rows)} snapshots",
        flush=True,
    )

    # ---- evaluation of the snapshots, in order, then of the final policy (not timed)
    final_state = copy.deepcopy(agent.policy.state_dict())
    eval_envs = tianshou.env.SubprocVectorEnv(
        [lambda: gym.make(cfg["task"]) for _ in range(args.eval_envs)]
    )
    first = None
    try:
        for row in rows:
            # written by this process above (FSRL's state holds numpy scalars: not weights-only)
            snap = run / "snapshots" / f"snapshot_{row['index']:04d}.pt"
            state = torch.load(snap, weights_only=False)
            screen = evaluate(agent, eval_envs, state, args.screen_episodes, 0)
            if not meets(screen, 0.9 * args.target_reward, 2 * args.cost_limit + 1):
                continue
            s = evaluate(agent, eval_envs, state, args.episodes, 0)
            print(f"snapshot {row['index']} ({row['env_steps']:,} steps): {s}", flush=True)
            if meets(s, args.target_reward, args.cost_limit):
                first = {**row, "reward": s["reward"], "cost": s["cost"]}
                break
        final = evaluate(agent, eval_envs, final_state, args.episodes, 0)
    finally:
        eval_envs.close()

    result = {
        "library": "fsrl",
        "learner": args.learner,
        "seed": args.seed,
        "env_id": args.env,
        "command": "python " + shlex.join(sys.argv),
        "target": {"reward": args.target_reward, "cost": args.cost_limit},
        "episodes": args.episodes,
        "first_meeting_target": first,
        "final": final,
        "train": {
            "env_steps": rows[-1]["env_steps"],
            "start_from_launch_s": round(train_start, 3),
            "end_from_launch_s": round(train_end, 3),
            "steps_per_s": rows[-1]["env_steps"] / (rows[-1]["wall_from_launch_s"] - train_start),
            "cpu_s": round(train_cpu, 2),
            "stopped_at_max_env_steps": stopped,
            "snapshots": len(rows),
            "snapshot_every": every,
        },
        "fsrl_config": cfg,
        "fsrl_config_class": args.config_class or TASK_CONFIG.get(args.env),
        "fsrl_overrides": args.set,
        "agent_kwargs": {
            k: list(v) if isinstance(v, tuple) else v for k, v in agent_kwargs.items()
        },
        "learn_kwargs": learn,
        "versions": versions(),
        "machine": machine(),
        "load_average": {
            "start": LOAD_AT_START,
            "after_training": load_after_training,
            "end": load_average(),
        },
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{args.learner}-seed{args.seed}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("learner", "seed", "first_meeting_target", "final")}))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
