"""Issue 11's speed target: RobustSafe against FSRL, learner by learner, back to back.

For each learner and seed, in a fresh process each, one after the other (the order alternates
with the seed, ours first on the first seed, so that a drift of the machine's load does not
always fall on the same library):

- ours: ``benchmarks/ppol_benchmark.py --algo LEARNER`` (the ``fast`` preset), in this
  interpreter, with this checkout first on ``PYTHONPATH``;
- FSRL's: ``benchmarks/fsrl_speed.py --learner LEARNER`` in FSRL's scratch venv
  (``--fsrl-venv``, default ``$FSRL_VENV`` or ``.fsrl-venv`` in the repository root, made by
  ``benchmarks/setup_fsrl_venv.sh``), FSRL's example-script defaults for the task.

Both train on the same task for at most ``--max-env-steps`` env steps, keep a snapshot per
epoch of ours (FSRL: per the same number of env steps) with the wall time since the process
was launched, then scan the snapshots in order for the first whose ``--episodes``
deterministic episodes have mean reward >= ``--target-reward`` and mean cost <=
``--cost-limit`` (a 10-episode screen first, the same on both sides). Then this script writes
``OUT/README.md``: the table (ours vs FSRL), the commands, and FSRL's venv (``pip freeze``).

    bash benchmarks/setup_fsrl_venv.sh
    python benchmarks/speed_vs_fsrl.py --learners ppol focops sac-lag cvpo --seeds 0 1 2

``--report-only`` rebuilds the README from the JSON files already in OUT (results of separate
calls add up: one call per learner is fine). A learner that this checkout does not have (e.g.
``cvpo`` before it lands) runs on FSRL's side only and is marked so.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV = "SafetyCarRun-v0"
LEARNERS = ("ppol", "focops", "sac-lag", "cvpo")
NAMES = {"ppol": "PPO-Lagrangian", "focops": "FOCOPS", "sac-lag": "SAC-Lagrangian", "cvpo": "CVPO"}


def our_algos(python: str) -> tuple[str, ...]:
    """The learners of this checkout's ``robustsafe train --algo``."""
    out = subprocess.run(
        [python, "-c", "from robustsafe.choices import ALGOS; print(' '.join(ALGOS))"],
        capture_output=True,
        text=True,
        env=ours_env(),
        cwd=ROOT,
        check=True,
    )
    return tuple(out.stdout.split())


def ours_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def fsrl_env() -> dict:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # nothing of RobustSafe's on FSRL's side
    return env


def our_epochs(
    python: str, learner: str, max_env_steps: int, sets: list[str] | None = None
) -> tuple[int, int]:
    """Env steps between two snapshots of ours' ``fast`` preset (``checkpoint_every`` epochs),
    with the ``sets`` overrides, and the epochs that reach ``max_env_steps`` (at most the
    preset's)."""
    code = (
        "from robustsafe.settings_io import apply_sets; from robustsafe.presets import preset; "
        f"c = apply_sets(preset('{ENV}', 'fast', algo='{learner}'), {list(sets or [])!r}); "
        "print(c.steps_per_epoch, c.epochs, max(1, c.checkpoint_every))"
    )
    out = subprocess.run(
        [python, "-c", code], capture_output=True, text=True, env=ours_env(), cwd=ROOT, check=True
    )
    per_epoch, epochs, every = map(int, out.stdout.split())
    return per_epoch * every, max(1, min(epochs, math.ceil(max_env_steps / per_epoch)))


def run_logged(
    cmd: list[str], log: Path, env: dict, places: dict[str, str] | None = None
) -> tuple[int, float]:
    """Run ``cmd`` from the repository root, output to ``log`` with each of ``places``' paths
    written as its name (the log is committed; no machine's paths in it); returns (exit code,
    seconds)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    print("$", shlex.join(cmd), f"> {log}", flush=True)
    t0 = time.perf_counter()
    with log.open("w") as f:  # streamed: a killed run keeps its log
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=ROOT).returncode
    dt = time.perf_counter() - t0
    text = log.read_text(errors="replace")
    for path, name in (places or {}).items():
        text = text.replace(path, name)
    log.write_text(text)
    print(f"  exit {rc} after {dt:.0f} s", flush=True)
    return rc, dt


def _criterion(args) -> list[str]:
    """The flags of the shared criterion: target reward, cost limit, evaluation episodes."""
    return [
        "--target-reward",
        f"{args.target_reward:g}",
        "--cost-limit",
        f"{args.cost_limit:g}",
        "--episodes",
        str(args.episodes),
    ]


def ours_runs(args, learner: str, seed: int) -> Path:
    return Path(args.runs) / "ours" / f"{learner}-seed{seed}"


def run_folders(args) -> list[Path]:
    """The folders in --runs that a comparison of these learners and seeds starts afresh."""
    out = []
    for learner in args.learners:
        for seed in args.seeds:
            if args.sides != "fsrl":
                out.append(ours_runs(args, learner, seed))
            if args.sides != "ours":
                out.append(Path(args.runs) / "fsrl" / f"{learner}-seed{seed}")
    return out


def ours_command(args, learner: str, seed: int, epochs: int) -> list[str]:
    cmd = [
        args.python,
        "benchmarks/ppol_benchmark.py",
        "--algo",
        learner,
        "--env",
        ENV,
        "--seeds",
        str(seed),
        "--scan-seeds",
        str(seed),
        *_criterion(args),
        "--epochs",
        str(epochs),
        "--raw-seconds",
        "0",
        "--runs",
        str(ours_runs(args, learner, seed)),
        "--results",
        str(Path(args.out) / "ours" / f"{learner}-seed{seed}"),
        "--zoo",
        "",
    ]
    for item in args.ours_set:
        cmd += ["--set", item]
    return cmd


def fsrl_command(args, learner: str, seed: int, snapshot_every: int | None) -> list[str]:
    cmd = [
        str(Path(args.fsrl_venv) / "bin" / "python"),
        "benchmarks/fsrl_speed.py",
        "--learner",
        learner,
        "--env",
        ENV,
        "--seed",
        str(seed),
        *_criterion(args),
        "--max-env-steps",
        str(args.max_env_steps),
        "--runs",
        str(Path(args.runs) / "fsrl"),
        "--out",
        str(Path(args.out) / "fsrl"),
        "--force",  # speed_vs_fsrl checked its --runs before it started
    ]
    every = args.fsrl_snapshot_every or snapshot_every
    if every:
        cmd += ["--snapshot-every", str(every)]
    for item in args.fsrl_set:
        cmd += ["--set", item]
    return cmd


def freeze(args) -> None:
    """FSRL's venv, exactly (``pip freeze``), next to the results."""
    out = subprocess.run(
        [str(Path(args.fsrl_venv) / "bin" / "python"), "-m", "pip", "freeze", "--all"],
        capture_output=True,
        text=True,
        env=fsrl_env(),
        check=True,
    )
    path = Path(args.out) / "fsrl_pip_freeze.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(out.stdout)


# ----------------------------------------------------------------------------- the report


def _ours(out: Path, learner: str, seed: int) -> dict | None:
    path = out / "ours" / f"{learner}-seed{seed}" / f"{learner}_{ENV}.json"
    if not path.exists():
        return None
    r = json.loads(path.read_text())
    e = r["seeds"][0]
    first = e["first_meeting_target"]
    return {
        "steps": first and first["env_steps"],
        "wall": first and first.get("wall_from_launch_s"),
        "reward": first and first["reward"],
        "cost": first and first["cost"],
        "final_reward": e["final"]["reward_mean"],
        "final_cost": e["final"]["cost_mean"],
        "trained": e["train_env_steps"],
        "sps": e["train_steps_per_s"],
        "cpu": e.get("train_cpu_s"),
        "load": (r.get("load_average") or {}).get("start"),
        "load_end": e.get("load_average_after_training"),
        "command": r["command"],
        "commit": r.get("git_commit"),
        "target": r["target"],
        "episodes": r["episodes"],
        "settings": r.get("settings", []),
        "layout": r.get("layout"),
    }


def _layout(learner: str, layout: dict | None) -> str:
    """One learner's layout on ours' side, as its runs recorded it."""
    if layout is None:
        return f"{learner}: not recorded (runs before the benchmark recorded it)"
    n, w = layout["num_envs"], layout["workers"]
    per, every = layout["steps_per_epoch"], layout["checkpoint_every"]
    where = f"in {w} worker process{'es' if w != 1 else ''}" if w else "in the main process"
    snap = "every epoch" if every == 1 else f"every {every} epochs ({per * every:,} steps)"
    return f"{learner}: {n} envs {where}, epochs of {per:,} steps, a snapshot {snap}"


def _fsrl(out: Path, learner: str, seed: int) -> dict | None:
    path = out / "fsrl" / f"{learner}-seed{seed}.json"
    if not path.exists():
        return None
    r = json.loads(path.read_text())
    first = r["first_meeting_target"]
    return {
        "steps": first and first["env_steps"],
        "wall": first and first["wall_from_launch_s"],
        "reward": first and first["reward"],
        "cost": first and first["cost"],
        "final_reward": r["final"]["reward"],
        "final_cost": r["final"]["cost"],
        "trained": r["train"]["env_steps"],
        "sps": r["train"]["steps_per_s"],
        "cpu": r["train"].get("cpu_s"),
        "load": r["load_average"]["start"],
        "load_end": r["load_average"]["after_training"],
        "command": r["command"],
        "versions": r["versions"],
        "target": r["target"],
        "episodes": r["episodes"],
        "overrides": r["fsrl_overrides"],
    }


def _cells(x: dict | None, missing: str) -> list[str]:
    if x is None:
        return [missing] + ["-"] * 6
    first = x["steps"] is not None
    load = lambda v: "/".join(f"{a:g}" for a in v[:1]) if v else "?"  # noqa: E731
    return [
        f"{x['steps']:,}" if first else f"not within {x['trained']:,}",
        f"{x['wall']:.1f}" if first and x["wall"] is not None else ("?" if first else "-"),
        f"{x['reward']:.1f} / {x['cost']:.2f}" if first else "-",
        f"{x['final_reward']:.1f} / {x['final_cost']:.2f}",
        f"{x['sps']:.0f}",
        "?" if x["cpu"] is None else f"{1000 * x['cpu'] / x['trained']:.1f}",
        f"{load(x['load'])} -> {load(x['load_end'])}",
    ]


def _verdict(o: dict, f: dict) -> tuple[str, float | None, bool | None]:
    """One seed's comparison: (text, ours / FSRL's wall time or None, ours ahead or None)."""
    o_met, f_met = o["steps"] is not None, f["steps"] is not None
    if o_met and f_met:
        if o["wall"] is None or f["wall"] is None:
            return "? (a wall time is missing)", None, None
        r = o["wall"] / f["wall"]
        return f"{r:.2f}", r, r < 1
    if o_met:
        return f"FSRL not within {f['trained']:,} steps", None, True
    if f_met:
        return f"ours not within {o['trained']:,} steps", None, False
    return "neither within its budget", None, None


def _verdict_line(learner: str, v: list[tuple[int, str, float | None, bool | None]]) -> str:
    ratios = [r for _, _, r, _ in v if r is not None]
    ahead = sum(1 for *_, a in v if a)
    line = f"- {learner}: " + ", ".join(f"seed {s} {t}" for s, t, _, _ in v)
    line += f"; ours ahead on {ahead} of {len(v)} seed{'s' if len(v) > 1 else ''}"
    if ratios:
        gm = math.exp(sum(map(math.log, ratios)) / len(ratios))
        both = "the seed" if len(ratios) == 1 else f"the {len(ratios)} seeds"
        line += f" (geometric mean of the ratios over {both} where both met it: {gm:.2f})"
    return line


def driver_command(argv: list[str]) -> str:
    """This call as a command line, without ``--fsrl-venv`` (a place on this machine; the venv
    is made by ``benchmarks/setup_fsrl_venv.sh``)."""
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--fsrl-venv":
            skip = True
        elif not arg.startswith("--fsrl-venv="):
            kept.append(arg)
    return "python benchmarks/speed_vs_fsrl.py " + shlex.join(kept)


def record_driver(out: Path, command: str) -> list[str]:
    """Add ``command`` to ``OUT/drivers.txt`` (one line per driver call whose results are in
    OUT, in order, no repeats) and return the list."""
    path = out / "drivers.txt"
    calls = path.read_text().splitlines() if path.exists() else []
    if command not in calls:
        calls.append(command)
        path.write_text("\n".join(calls) + "\n")
    return calls


def report(out: Path, drivers: list[str]) -> str:
    found = sorted(
        {
            (p.parent.name.rsplit("-seed", 1)[0], int(p.parent.name.rsplit("-seed", 1)[1]))
            for p in (out / "ours").glob("*-seed*/*.json")
        }
        | {
            (p.stem.rsplit("-seed", 1)[0], int(p.stem.rsplit("-seed", 1)[1]))
            for p in (out / "fsrl").glob("*-seed*.json")
        },
        key=lambda k: (LEARNERS.index(k[0]) if k[0] in LEARNERS else 99, k[1]),
    )
    rows, commands, versions, targets, overrides = [], [], None, set(), set()
    ours_settings: set[tuple[str, ...]] = set()
    layouts: dict[str, set[str]] = {}
    verdicts: dict[str, list[tuple[int, str, float | None, bool | None]]] = {}
    for learner, seed in found:
        o, f = _ours(out, learner, seed), _fsrl(out, learner, seed)
        for side, x in (("RobustSafe", o), ("FSRL", f)):
            miss = "not in this checkout" if side == "RobustSafe" else "not run"
            rows.append(f"| {learner} | {seed} | {side} | " + " | ".join(_cells(x, miss)) + " |")
            if x is not None:  # FSRL's runs in its venv (--fsrl-venv, default .fsrl-venv)
                prefix = ".fsrl-venv/bin/" if side == "FSRL" else ""
                commands.append(prefix + x["command"])
                targets.add((x["target"]["reward"], x["target"]["cost"], x["episodes"]))
        if o is not None:
            ours_settings.add(tuple(o["settings"]))
            layouts.setdefault(learner, set()).add(_layout(learner, o["layout"]))
        if f is not None:
            versions = f["versions"]
            overrides.add(tuple(f["overrides"]))
        if o and f:
            verdicts.setdefault(learner, []).append((seed, *_verdict(o, f)))
    (tr, tc, te) = sorted(targets)[0] if targets else (500, 5, 50)
    lines = [
        "# Speed against FSRL (issue 11): wall clock to the first target evaluation",
        "",
        f"Task {ENV}. Criterion: the first snapshot whose {te} deterministic episodes have mean "
        f"reward >= {tr:g} and mean cost <= {tc:g}; time from the launch of the training "
        "process (interpreter start, imports and env start-up included) to the end of the "
        "update that produced the snapshot. Snapshots: ours one per `checkpoint_every` epochs "
        "(the layout below), FSRL's one per the same number of env steps (see Differences). "
        "Evaluation time is not counted. Train steps/s: env steps over the training's wall "
        "time; CPU s per 1k steps: the training's "
        "user + system CPU, env worker processes included (less sensitive to load than wall "
        "time, but torch's threads spin when cores are short: FSRL's CVPO with 2 threads used "
        "8x the CPU per step on a loaded machine; on 2 cores the wall time cannot be below "
        "half of it).",
        "",
    ]
    if len(targets) > 1:
        lines += [f"**Warning: the results mix criteria {sorted(targets)}.**", ""]
    lines += [
        "| learner | seed | library | env steps to criterion | wall s from launch | "
        "reward / cost at criterion | final reward / cost | train steps/s | "
        "train CPU s per 1k steps | load avg (1 min) start -> end of training |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]
    if verdicts:
        lines.append(
            "Ours over FSRL's wall clock to the criterion, per seed (below 1: ours is faster; "
            "a side that did not meet it within its budget loses that seed):"
        )
        lines.append("")
        lines += [_verdict_line(learner, v) for learner, v in verdicts.items()]
        lines.append("")
    if versions:
        lines += [
            "FSRL's side: "
            + ", ".join(f"{k} {v}" for k, v in versions.items())
            + " in a scratch venv (`bash benchmarks/setup_fsrl_venv.sh`; exact set: "
            "[fsrl_pip_freeze.txt](fsrl_pip_freeze.txt)); FSRL overrides: "
            + (", ".join(" ".join(o) or "none" for o in sorted(overrides)))
            + ". "
            + INSTALL,
            "",
        ]
    if layouts:
        lines += [
            "Ours' layout (each run's recorded settings; one torch thread): "
            + "; ".join(line for learner in layouts for line in sorted(layouts[learner]))
            + ".",
            "",
        ]
    if any(ours_settings):
        lines += [
            "Ours' overrides of its preset (`--ours-set`, as `robustsafe train --set`): "
            + "; ".join(", ".join(o) or "none" for o in sorted(ours_settings))
            + ".",
            "",
        ]
    lines += ["## Commands", ""]
    if drivers:
        lines += ["The driver calls, one per group of learners:", "", "```", *drivers, "```", ""]
    lines += ["Each run (one process each):", "", "```", *commands, "```", ""]
    lines += [DIFFERENCES, ""]
    return "\n".join(lines)


INSTALL = (
    "FSRL is on PyPI as `fast-safe-rl` (the name `fsrl` is not on PyPI); it pins "
    "tianshou~=0.5.0, wandb~=0.14.0 and protobuf~=3.19.0, and runs here with numpy < 2 "
    "and setuptools < 81 (FSRL imports wandb 0.14, which uses np.float_ and imports "
    "pkg_resources): benchmarks/fsrl_constraints.txt. RobustSafe's side runs numpy 2."
)

DIFFERENCES = """## Differences between the two measurements

Same on both sides: task and env versions (Bullet-Safety-Gym 1.4.0, gymnasium 0.28.1, torch
2.13.0 CPU), criterion, deterministic evaluation (the Gaussian's mean), 10-episode screen then
the full evaluation, time from process launch, evaluation not timed, one fresh process per
(library, learner, seed), run back to back.

Different, by design (each library with its own defaults):

- **Settings.** Ours: the `fast` preset of `--algo LEARNER` (cost limit 5). FSRL: its example
  script's config class for the task (`Bullet1MCfg` for CarRun) with FSRL's defaults, among
  them cost limit 10 (the criterion still asks cost <= 5), 4 torch threads on this machine,
  and FSRL's vector env (`ShmemVectorEnv`, one subprocess per env: 20 for PPOL/FOCOPS, 10 for
  CVPO, 2 for SAC-Lag, plus 2 test envs). Ours: the envs and workers of "Ours' layout" above,
  1 torch thread.
- **Work inside the clock.** FSRL's trainer runs its own 2-episode test after every FSRL
  epoch and logs to TensorBoard (its example logs to wandb instead; this benchmark uses FSRL's
  TensorBoard logger so that nothing goes over the network); ours writes metrics.csv,
  TensorBoard and an agent checkpoint every epoch. Both sides' snapshot saving is in the clock.
- **Snapshot points.** Ours: every `checkpoint_every` epochs of the preset ("Ours' layout"
  above). FSRL: right after the first policy update at or past each multiple of
  `--snapshot-every` env steps (default: ours' spacing for the learner); an FSRL update follows a
  whole collect
  (`episode_per_collect` episodes: 4,000 steps for PPOL/FOCOPS, 400 for SAC-Lag, 2,000 for
  CVPO), so FSRL's snapshots can fall up to one collect past the multiple.
- **Training budget.** Both stop at `--max-env-steps` (ours: the epochs that reach it, at most
  the preset's; FSRL: at the first update at or past it). A learner that has not met the
  criterion by then is reported as "not within N steps", not as a time.
- **Evaluation envs.** Ours: paired episodes (the same start states for every snapshot, any
  number of envs). FSRL: its collector on 10 subprocess envs reseeded before each evaluation;
  repeated evaluations of one policy differ slightly (0.1 reward over 20 episodes in a
  check; more when there are fewer episodes than envs).
- **Python packages.** numpy 1.26.4 on FSRL's side (wandb 0.14, which FSRL imports, fails
  with numpy 2), 2.4.6 on ours; each library's own other dependencies (tianshou 0.5.1 for FSRL).
- **Seeds.** The same seed numbers; FSRL seeds its agent (`seed_all`) and, as its example,
  not its training envs, so its runs are not bit-reproducible; ours are."""


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--learners", nargs="+", choices=LEARNERS, default=list(LEARNERS))
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--target-reward", type=float, default=500.0)
    p.add_argument("--cost-limit", type=float, default=5.0)
    p.add_argument("--episodes", type=int, default=50)
    p.add_argument(
        "--max-env-steps",
        type=int,
        default=400_000,
        help="training budget of each run, both sides (default 400,000: FSRL's CarRun "
        "curves settle by 300k; ours' SAC-Lag fast preset is 300k, CVPO's 400k)",
    )
    p.add_argument(
        "--fsrl-venv",
        default=os.environ.get("FSRL_VENV", ".fsrl-venv"),
        help="FSRL's scratch venv (default $FSRL_VENV or .fsrl-venv, relative to the repo root)",
    )
    p.add_argument("--python", default=sys.executable, help="RobustSafe's interpreter")
    p.add_argument(
        "--fsrl-snapshot-every",
        type=int,
        help="FSRL side's snapshot spacing in env steps (default: one epoch of ours' preset "
        "for the learner; fsrl_speed.py's default for a learner this checkout lacks)",
    )
    p.add_argument(
        "--ours-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a setting of ours' preset, as robustsafe train --set (recorded)",
    )
    p.add_argument(
        "--fsrl-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a field of FSRL's config (recorded in the table)",
    )
    p.add_argument(
        "--order", choices=("alternate", "ours-first", "fsrl-first"), default="alternate"
    )
    p.add_argument(
        "--sides",
        choices=("both", "ours", "fsrl"),
        default="both",
        help="run both libraries, or only one side (after a change to one of them; the other "
        "side's JSON files in OUT stay and the README is rebuilt from all of them)",
    )
    p.add_argument("--runs", default="runs/speed_vs_fsrl")
    p.add_argument("--out", default="benchmarks/results/speed_vs_fsrl")
    p.add_argument("--report-only", action="store_true")
    p.add_argument(
        "--force",
        action="store_true",
        help="delete the run folders of these learners and seeds in --runs (each side trains "
        "from scratch); without it, existing ones are refused before anything runs",
    )
    args = p.parse_args()
    os.chdir(ROOT)
    out = Path(args.out)
    fsrl_python = Path(args.fsrl_venv) / "bin" / "python"

    if not args.report_only:
        if not fsrl_python.exists():
            raise SystemExit(
                f"no FSRL venv at {args.fsrl_venv}: run `bash benchmarks/setup_fsrl_venv.sh` "
                "(FSRL_VENV=DIR for another place) or pass --fsrl-venv"
            )
        existing = [str(d) for d in run_folders(args) if d.exists()]
        if existing and not args.force:
            raise SystemExit(
                f"run folders exist in --runs ({', '.join(existing[:3])}"
                + (", ..." if len(existing) > 3 else "")
                + "); pass --force to delete them, or another --runs"
            )
        freeze(args)
        places = {str(Path(args.fsrl_venv).resolve()): ".fsrl-venv", str(ROOT): "."}
        ours_have = our_algos(args.python)
        for learner in args.learners:
            epochs = spacing = None  # FSRL snapshots as often as ours
            if learner in ours_have:
                spacing, epochs = our_epochs(
                    args.python, learner, args.max_env_steps, args.ours_set
                )
            else:
                print(f"{learner}: not in this checkout's learners {ours_have}; FSRL only")
            for i, seed in enumerate(args.seeds):
                ours_first = {"alternate": i % 2 == 0, "ours-first": True, "fsrl-first": False}[
                    args.order
                ]
                jobs = []
                if epochs is not None and args.sides != "fsrl":
                    shutil.rmtree(ours_runs(args, learner, seed), True)  # checked above
                    jobs.append(("ours", ours_command(args, learner, seed, epochs), ours_env()))
                fsrl = [("fsrl", fsrl_command(args, learner, seed, spacing), fsrl_env())]
                fsrl = [] if args.sides == "ours" else fsrl
                jobs = jobs + fsrl if ours_first else fsrl + jobs
                for side, cmd, env in jobs:
                    log = out / "logs" / f"{learner}-seed{seed}-{side}.log"
                    rc, _ = run_logged(cmd, log, env, places)
                    if rc != 0:
                        print(f"  {side} failed: see the log", flush=True)
    if args.report_only:
        path = out / "drivers.txt"
        drivers = path.read_text().splitlines() if path.exists() else []
    else:
        drivers = record_driver(out, driver_command(sys.argv[1:]))
    text = report(out, drivers)
    (out / "README.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
