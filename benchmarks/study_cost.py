"""What the paper's full study costs, from the compute model (``robustsafe.experiments.compute``,
the same numbers ``robustsafe grid --dry-run`` prints).

The study: Table 1's 6 tasks x 7 methods (PPOL-vanilla, PPOL-random, SA-PPOL(MAD/MC/MR),
ADV-PPOL(MC/MR)) x 5 seeds, each evaluated under the 6 attackers (50 episodes), with the
appendix's evaluations (``--appendix``), plus the appendix's FOCOPS learners (vanilla, MC, MR);
under the ``fast`` and the ``paper`` presets.

    python benchmarks/study_cost.py --out benchmarks/results/compute/study_cost.md
"""

from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
from collections import defaultdict
from pathlib import Path

from robustsafe.experiments.compute import run_cost
from robustsafe.experiments.grid import APPENDIX_ATTACKS, GridSpec, plan_grid
from robustsafe.experiments.xi_sweep import DEFAULT_XIS

TASKS = (
    "SafetyCarRun-v0",
    "SafetyCarCircle-v0",
    "SafetyDroneRun-v0",
    "SafetyDroneCircle-v0",
    "SafetyAntRun-v0",
    "SafetyAntCircle-v0",
)
MODES = ("vanilla", "random", "sa-mad", "sa-mc", "sa-mr", "adv-mc", "adv-mr")
FOCOPS_MODES = ("vanilla", "adv-mc", "adv-mr")
SEEDS = (0, 1, 2, 3, 4)
CPUS_PER_RUN = 2


def study(preset: str, out: Path) -> list[tuple[str, str, object, object]]:
    """(part, task, plan, cost) of every run of the study under ``preset``."""
    rows = []
    for part, algos, modes in (("PPOL", ("ppol",), MODES), ("FOCOPS", ("focops",), FOCOPS_MODES)):
        spec = GridSpec(
            envs=TASKS,
            modes=modes,
            algos=algos,
            seeds=SEEDS,
            preset=preset,
            out=out,
            cpus_per_run=CPUS_PER_RUN,
            appendix_attacks=",".join(APPENDIX_ATTACKS),
            xi_sweep=tuple(DEFAULT_XIS),
        )
        for p in plan_grid(spec):
            rows.append((part, p.env_id, p, run_cost(spec, p)))
    return rows


def load_note() -> list[str]:
    """The load factors the model divided out of the measured rates (see
    ``robustsafe.experiments.compute.load_factor``)."""
    from robustsafe.experiments import compute_rates as rates
    from robustsafe.experiments.compute import load_factor

    factors = [
        f"{k} x{load_factor(k):.2f}" for k in sorted(rates.MEASURED) if load_factor(k) > 1.05
    ]
    if not factors:
        return []
    return [
        "## Load in the measured rates",
        "",
        "The rates come from the committed runs' `metrics.csv`, which ran on a shared machine. "
        "Env stepping per env step depends on the task, the env layout and the kind of rollout, "
        "not on the mode or the learner, so the model divides each run group's rates by its "
        "env-stepping time over the least of its task's groups with the same layout and kind: "
        + ", ".join(factors)
        + " (the others: at most x1.05). This takes out the load as far as env stepping shows "
        "it; the least loaded groups themselves ran beside one other training.",
        "",
    ]


def rate_source(basis: str) -> str:
    """A run's basis without its load note (listed once, at the end of the page)."""
    kept = [p for p in basis.split("; ") if not re.fullmatch(r"load x[0-9.]+ divided out", p)]
    return "; ".join(kept)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="benchmarks/results/compute/study_cost.md")
    args = ap.parse_args()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    lines = [
        "# What the paper's full study costs (compute model)",
        "",
        f"Command: `python benchmarks/study_cost.py` (commit {commit}). The model: "
        "`robustsafe/experiments/compute.py` (rates measured on this 2-core machine: "
        "`benchmarks/compute_rates.py`, `benchmarks/compute_calibration.py`); the same numbers "
        "as `robustsafe grid --dry-run`. Core-hours = wall hours x "
        f"{CPUS_PER_RUN} cores per run. Study: 6 tasks x 7 methods x 5 seeds (PPOL), plus "
        "FOCOPS vanilla / MC / MR x 6 tasks x 5 seeds (the appendix's learners); every run "
        "evaluated under none, random, MAD, AMAD, MC, MR (50 episodes), with the appendix's "
        "evaluations (minr, mix x3 for vanilla / ADV-MC / ADV-MR; AMAD over 6 xi for vanilla).",
        "",
    ]
    totals = {}
    with tempfile.TemporaryDirectory() as tmp:
        for preset in ("fast", "paper"):
            rows = study(preset, Path(tmp) / preset)
            by: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0])
            bases: dict[tuple[str, str], set[str]] = defaultdict(set)
            for part, task, _, c in rows:
                b = by[(part, task)]
                b[0] += c.train_steps
                b[1] += c.train_seconds
                b[2] += c.eval_seconds
                b[3] += 1
                bases[(part, task)].add(rate_source(c.basis))
            lines += [
                f"## Preset `{preset}`",
                "",
                "| learner | task | runs | env steps (training) | hours per run | "
                "training core-h | evaluation core-h | total core-h | rates |",
                "|---|---|---|---|---|---|---|---|---|",
            ]
            all_steps = all_train = all_eval = 0.0
            for (part, task), (steps, tr, ev, n) in by.items():
                all_steps, all_train, all_eval = all_steps + steps, all_train + tr, all_eval + ev
                lines.append(
                    f"| {part} | {task} | {n} | {steps:,.0f} | {(tr + ev) / n / 3600:.2f} | "
                    f"{tr * CPUS_PER_RUN / 3600:,.0f} | {ev * CPUS_PER_RUN / 3600:,.0f} | "
                    f"{(tr + ev) * CPUS_PER_RUN / 3600:,.0f} | "
                    f"{'; '.join(sorted(bases[(part, task)]))} |"
                )
            core_h = (all_train + all_eval) * CPUS_PER_RUN / 3600
            ppol = sum(c.seconds for part, _, _, c in rows if part == "PPOL")
            ppol_steps = sum(c.train_steps for part, _, _, c in rows if part == "PPOL")
            totals[preset] = (all_steps, core_h, ppol_steps, ppol * CPUS_PER_RUN / 3600)
            lines += [
                f"| **all** | | {len(rows)} | {all_steps:,.0f} | | "
                f"{all_train * CPUS_PER_RUN / 3600:,.0f} | {all_eval * CPUS_PER_RUN / 3600:,.0f} "
                f"| **{core_h:,.0f}** | |",
                "",
                "Rates: `measured` where this task's runs of that learner were trained (load "
                "divided out, see the end of this page), else scaled from another task's "
                "measured runs by the per-task factors of `robustsafe/experiments/compute.py`.",
                "",
            ]
    lines.insert(
        4,
        "Totals: "
        + "; ".join(
            f"`{p}` {s / 1e9:.2f} x 10^9 env steps, {h:,.0f} core-hours "
            f"({h / 24 / 30:.1f} core-months; Table 1's PPOL runs alone: {ps / 1e9:.2f} x 10^9 "
            f"steps, {ph:,.0f} core-hours)"
            for p, (s, h, ps, ph) in totals.items()
        )
        + ".\n",
    )
    lines += load_note()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
