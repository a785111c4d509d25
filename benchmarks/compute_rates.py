"""Write the compute model's table of measured rates (``robustsafe/experiments/compute_rates.py``).

From the committed runs (Table 1's, ``benchmarks/results/table1/<env>/<mode>/seed*/metrics.csv``
and ``benchmarks/results/table1da/...`` on the Drone and Ant tasks,
and the other learners', ``benchmarks/results/table1alg/<env>/<learner>-<mode>/...`` and
``benchmarks/results/offpolicy_adv/...`` (SAC-Lag's and CVPO's adversarial trainings) and
``benchmarks/results/sac_multiplier/table-150k/...`` (the 150k-step SAC-Lag table), the runs
on the rates' processor only (``RATES_CPU``); preset ``fast``, 20 envs in 2 worker processes, a
2-core machine): seconds per env step of the whole training (wall time over env steps: start-up,
checkpoints and updates included) and its parts (env stepping, attacks, policy, updates; summed
over epochs), pooled over seeds, per task and run directory name (the training mode, with the
learner in front for learners other than PPOL), and the share of their env steps acted on
attacked observations (``attacked_share``, from each run's config.yaml; the runs' shares
weighted by their env steps). From ``benchmarks/results/compute/calibration.json``
(``benchmarks/compute_calibration.py``): each task's env, policy and update time per step in
a short fast vanilla training relative to the reference task's, the paper preset's update
cost per step relative to fast's, and an evaluation's cost per step relative to the fast
training's env + policy cost.

    python benchmarks/compute_rates.py
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import Counter, defaultdict
from pathlib import Path

from robustsafe.files import read_csv_rows, read_yaml

PARTS = ("time_env", "time_attack", "time_policy", "time_update")
# The processor the rates were measured on; a run whose provenance names another one (another
# machine's speed) is left out, and robustsafe.experiments.machine_speed scales to other machines.
RATES_CPU = "AMD EPYC"


def on_the_rates_machine(run: Path) -> bool:
    """Whether every start of ``run`` (its ``provenance.json``) ran on ``RATES_CPU``; runs older
    than provenance files were all trained there."""
    path = run / "provenance.json"
    if not path.exists():
        return True
    starts = json.loads(path.read_text()).get("starts", [])
    return all(start.get("cpu") == RATES_CPU for start in starts)


def _layout(cfg: dict) -> tuple[int, int]:
    """(envs, worker processes) of a run, from its config.yaml."""
    return int(cfg["num_envs"]), int(cfg["workers"])


def attacked_share(cfg: dict) -> float:
    """The share of a run's env steps acted on attacked observations, from its config.yaml: in
    random / adv-* training ``robust.attacked_fraction`` of the envs (1 in runs older than the
    option: every env) while the budget is above 0, the epochs after ``robust.schedule_start``
    (the budget is 0 up to that epoch, ``robustsafe.schedule``), or every epoch under the
    ``constant`` schedule; 0 in the other modes (clean rollouts)."""
    r = cfg["robust"]
    mode = r["mode"]
    if mode != "random" and not mode.startswith("adv-"):
        return 0.0
    fraction = float(r.get("attacked_fraction", 1.0))
    if r["schedule"] == "constant":
        return fraction
    return fraction * max(0.0, 1.0 - int(r["schedule_start"]) / int(cfg["epochs"]))


STOPPED = 3.0  # an epoch this many times the run's median epoch time was paused (SIGSTOP)


def without_stopped_epochs(rows: list[dict[str, str]]) -> tuple[float, dict[str, float]]:
    """A run's wall time and summed part times, each epoch that took over ``STOPPED`` times the
    median epoch's wall time counted as a median epoch instead: the committed runs were at times
    stopped (SIGSTOP) for other measurements, which lands in one epoch's clock."""
    steps = [int(r["env_steps"]) for r in rows]
    epoch_steps = [b - a for a, b in zip([0, *steps[:-1]], steps, strict=True)]
    times = [n / float(r["steps_per_s"]) for n, r in zip(epoch_steps, rows, strict=True)]
    median_time = statistics.median(times)
    medians = {k: statistics.median(float(r[k]) for r in rows) for k in PARTS}
    wall = float(rows[-1]["wall_time"])
    parts = dict.fromkeys(PARTS, 0.0)
    for r, t in zip(rows, times, strict=True):
        stopped = t > STOPPED * median_time
        wall -= t - median_time if stopped else 0.0
        for k in PARTS:
            parts[k] += medians[k] if stopped else float(r[k])
    return wall, parts


def _entry(key: str, values: tuple) -> str:
    """One MEASURED line as ``ruff format`` leaves it: on one line if it fits in 100
    characters, else one value per line."""
    line = f"    {json.dumps(key)}: {values!r},"
    if len(line) <= 100:
        return line
    inner = "".join(f"        {v!r},\n" for v in values)
    return f"    {json.dumps(key)}: (\n{inner}    ),"


def measure(dirs: list[str]) -> dict[str, tuple]:
    """The MEASURED entries (``FIELDS`` in order) of the runs under ``dirs``
    (``<dir>/<env>/<run directory name>/seed*/``, on ``RATES_CPU`` only): each part's time and
    the attacked steps summed over the runs, over their summed env steps."""
    sums: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    layouts: dict[tuple[str, str], Counter] = defaultdict(Counter)
    found = (sorted(Path(d).glob("*/*/seed*/metrics.csv")) for d in dirs)
    for metrics in (m for runs in found for m in runs if on_the_rates_machine(m.parent)):
        env, mode = metrics.parts[-4], metrics.parts[-3]
        rows = read_csv_rows(metrics)
        s = sums[(env, mode)]
        cfg = read_yaml(metrics.parent / "config.yaml")
        layouts[(env, mode)][_layout(cfg)] += 1
        wall, parts = without_stopped_epochs(rows)
        steps = int(rows[-1]["env_steps"])
        s["steps"] += steps
        s["attacked"] += steps * attacked_share(cfg)
        s["wall"] += wall
        s["runs"] += 1
        for k in PARTS:
            s[k] += parts[k]
    measured = {}
    for (env, mode), s in sorted(sums.items()):
        us = [1e6 * s["wall"] / s["steps"], *(1e6 * s[k] / s["steps"] for k in PARTS)]
        layout = layouts[(env, mode)].most_common(1)[0][0]
        attacked = round(s["attacked"] / s["steps"], 4)
        measured[f"{env}/{mode}"] = (*(round(x, 2) for x in us), int(s["runs"]), *layout, attacked)
    return measured


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument(
        "--runs",
        nargs="+",
        default=[
            "benchmarks/results/table1",
            "benchmarks/results/table1alg",
            "benchmarks/results/table1da",
            "benchmarks/results/offpolicy_adv",
            # the SAC-Lag table of the 150k-step preset: AMD EPYC runs, where the current
            # preset's (table1alg) ran on Intel Xeon; a rate is per env step either way
            "benchmarks/results/sac_multiplier/table-150k",
        ],
    )
    p.add_argument("--calibration", default="benchmarks/results/compute/calibration.json")
    p.add_argument("--out", default="robustsafe/experiments/compute_rates.py")
    args = p.parse_args()
    measured = measure(args.runs)
    cal = json.loads(Path(args.calibration).read_text())
    rows = "\n".join(_entry(k, v) for k, v in measured.items())
    parts = ("env", "policy", "update")
    ratios = "\n".join(
        f"    {json.dumps(k)}: {tuple(round(v[part], 3) for part in parts)!r},"
        for k, v in cal["train_over_reference"].items()
    )
    reference = cal["train_seconds_per_step"][cal["reference"]]
    reference_us = 1e6 * sum(reference[k] for k in ("time_env", "time_policy", "time_update"))
    runs_text = ",\n".join(args.runs)
    text = f'''"""Measured rates of the compute model (``robustsafe.experiments.compute``).

Written by ``python benchmarks/compute_rates.py`` from the committed runs' metrics.csv
({runs_text};
preset fast, 2 cores, the runs on {RATES_CPU} only) and
{args.calibration}; do not edit.
"""

# "<env>/<run directory name>": microseconds per env step of a whole fast-preset training
# (wall: start-up, checkpoints and updates included) and of its parts, summed over epochs; the
# runs pooled; and their env layout (envs, worker processes). attacked: the share of the runs'
# env steps acted on attacked observations, from each run's config.yaml (random / adv-*:
# robust.attacked_fraction, 1 in runs older than the option, x the epochs after
# robust.schedule_start over the epochs, or x 1 under the constant schedule; other modes 0),
# the runs' shares weighted by their env steps as the per-step rates pool (attacked steps
# summed over steps summed).
FIELDS = ("wall", "env", "attack", "policy", "update", "runs", "num_envs", "workers", "attacked")
MEASURED = {{
{rows}
}}

# The task the others are scaled from, and each task's seconds per env step of env stepping,
# policy and updates relative to it (fast vanilla trainings, a few epochs each, side by side).
REFERENCE = {json.dumps(cal["reference"])}
TRAIN_OVER_REFERENCE = {{
{ratios}
}}

# The reference task's env + policy + update microseconds per env step in those trainings on
# the rates' machine: what robustsafe.experiments.machine_speed compares another machine with.
REFERENCE_TRAIN_US_PER_STEP = {round(reference_us, 1)!r}

# Update seconds per env step under the paper preset over fast's (the reference task, vanilla).
PAPER_UPDATE_FACTOR = {round(cal["paper_update_factor"], 3)!r}

# An evaluation's seconds per env step (robustsafe evaluate's layout: 10 envs, 2 workers) over
# the fast training's env + policy seconds per step, on the reference task: natural / random,
# and the gradient attackers (MAD, AMAD, MC, MR).
EVAL_CHEAP_FACTOR = {round(cal["eval_cheap_factor"], 3)!r}
EVAL_GRADIENT_FACTOR = {round(cal["eval_gradient_factor"], 3)!r}
'''
    Path(args.out).write_text(text)
    print(f"wrote {args.out}: {len(measured)} (task, run) rates")


if __name__ == "__main__":
    main()
