"""Summarise training runs for the recipe calibration: training-time cost, then an evaluation.

For each run directory: the stochastic policy's training episode reward and cost over the last
10 epochs (what the Lagrangian constrains), the final multiplier, the run's wall time, and a
paired evaluation of the final agent (deterministic actions, natural and, with ``--attacks``,
attacked). The small files of each run (config.yaml, metrics.csv, eval.json) are copied under
``--out`` and a Markdown table is written there, with the command and the machine load.

    python benchmarks/recipe_runs.py runs/carrun-ki003 runs/dronerun-v --episodes 50 \
        --out benchmarks/results/recipe [--append]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

from robustsafe.experiments import runs_table
from robustsafe.files import read_yaml
from robustsafe.rundir import train_metrics
from robustsafe.settings_io import to_dict

LAST = 10
COPIED = ("config.yaml", "metrics.csv")  # each run's files copied to --out/<run>/


def finite_mean(rows: list[dict[str, str]], key: str) -> float:
    """Mean of a ``metrics.csv`` column over ``rows``, leaving out the epochs that finished no
    episode (empty or NaN), as the library's per-run table does; NaN if none."""
    value = runs_table.finite_mean(rows, key)
    return float("nan") if value is None else value


def multiplier_key(rows: list[dict[str, str]]) -> str:
    """The metrics.csv column of a run's Lagrange multiplier: ``lambda``, or FOCOPS's ``nu``."""
    return "nu" if rows and "lambda" not in rows[0] and "nu" in rows[0] else "lambda"


def training_summary(run: Path) -> dict[str, float]:
    rows = train_metrics(run)
    tail = rows[-LAST:]
    return {
        "epochs": len(rows),
        "env_steps": int(rows[-1]["env_steps"]),
        "wall_s": float(rows[-1]["wall_time"]),
        "train_reward_last10": finite_mean(tail, "ep_return"),
        "train_cost_last10": finite_mean(tail, "ep_cost"),
        "lambda_final": float(rows[-1][multiplier_key(rows)]),
    }


def settings(run: Path) -> str:
    """The run's settings that differ from its preset (what the calibration varies)."""
    from robustsafe.presets import preset

    cfg = read_yaml(run / "config.yaml")
    base = to_dict(preset(cfg["env_id"], cfg["preset"], mode=cfg["robust"]["mode"]))
    diff = []
    for group in ("ppo", "pid", "robust"):
        for key, value in cfg[group].items():
            if base[group].get(key) != value:
                diff.append(f"{group}.{key}={value}")
    return ", ".join(diff) or "preset defaults"


def evaluate(run: Path, out: Path, episodes: int, attacks: str, force: bool) -> dict:
    cmd = [sys.executable, "-m", "robustsafe.cli", "evaluate", "--run", str(run)]
    cmd += ["--episodes", str(episodes), "--attacks", attacks, "--out", str(out)]
    cmd += ["--no-progress", *(["--force"] if force else [])]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--episodes", type=int, default=50)
    ap.add_argument("--attacks", default="none")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument(
        "--append", action="store_true", help="add rows (and the command) to --out's table"
    )
    ap.add_argument(
        "--force",
        action="store_true",
        help="replace --out's README.md (without --append) and the runs' files already there",
    )
    args = ap.parse_args()
    if len({r.name for r in args.runs}) != len(args.runs):  # each goes to --out/<its name>/
        ap.error("two runs share a folder name; give runs with distinct names")
    readme = args.out / "README.md"
    taken = [args.out / r.name / n for r in args.runs for n in (*COPIED, "eval.json")]
    taken = [p for p in [*([] if args.append else [readme]), *taken] if p.exists()]
    if taken and not args.force:  # before any evaluation runs
        ap.error(f"{taken[0]} exists; pass --force to replace it (or --append to add rows)")
    repo = Path(__file__).resolve().parents[1]
    out_shown = args.out.resolve()
    out_shown = out_shown.relative_to(repo) if out_shown.is_relative_to(repo) else args.out
    command = (
        f"`python benchmarks/recipe_runs.py {' '.join(f'runs/{r.name}' for r in args.runs)} "
        f"--episodes {args.episodes} --attacks {args.attacks} --out {out_shown}"
        + (" --append`" if args.append else "`")
    )
    if args.append and readme.exists():
        old = readme.read_text().splitlines()
        old.insert(1, f"Command: {command}")
        _write_rows(args, old, readme)
        return
    lines = [
        f"Command: {command}",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, load average at the end "
        f"{os.getloadavg()[0]:.1f} (wall times are from runs sharing the cores with others).",
        "",
        "Training columns: the stochastic policy's mean episode reward / cost over the last "
        f"{LAST} epochs. Evaluation: {args.episodes} paired episodes, deterministic action.",
        "",
        "| run | env | mode | settings | epochs | steps | wall s | train reward | train cost "
        "| lambda | eval reward | eval cost |"
        + "".join(f" {a} cost |" for a in args.attacks.split(",")[1:]),
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
        + "---:|" * (len(args.attacks.split(",")) - 1),
    ]
    _write_rows(args, lines, readme)


def _write_rows(args: argparse.Namespace, lines: list[str], readme: Path) -> None:
    for run in args.runs:
        dst = args.out / run.name
        dst.mkdir(parents=True, exist_ok=True)
        for name in COPIED:
            shutil.copy2(run / name, dst / name)
        t = training_summary(run)
        ev = evaluate(run, dst / "eval.json", args.episodes, args.attacks, args.force)
        by_attack = {r["attack"]: r for r in ev["results"]}
        cfg = read_yaml(run / "config.yaml")
        nat = by_attack["none"]
        row = (
            f"| {run.name} | {cfg['env_id']} | {cfg['robust']['mode']} | {settings(run)} "
            f"| {t['epochs']} | {t['env_steps']} | {t['wall_s']:.0f} "
            f"| {t['train_reward_last10']:.1f} | {t['train_cost_last10']:.2f} "
            f"| {t['lambda_final']:.2f} | {nat['reward_mean']:.1f} | {nat['cost_mean']:.2f} |"
        )
        row += "".join(f" {by_attack[a]['cost_mean']:.2f} |" for a in args.attacks.split(",")[1:])
        lines.append(row)
        print(row, flush=True)
    readme.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
