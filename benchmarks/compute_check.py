"""The compute model against the committed Drone / Ant runs (issue 14's compute model).

Per (task, mode) and processor: the runs' training wall time (pauses taken out as
``benchmarks/compute_rates.py`` does), pooled over seeds, the model's time for the same env
steps (``robustsafe.experiments.compute.step_cost``, idle machine, the rates' processor), and
each mode's time over the same task's vanilla time on the same processor, measured and modelled:
that ratio does not depend on the processor's speed (it does on how loaded the machine was
while each run trained), so the runs on the other processor, which are not in the rates, check
the model out of sample; the rates' processor's runs are the rates themselves (in sample).
PPOL runs only (run directories named by the mode alone).

    python benchmarks/compute_check.py --out benchmarks/results/compute/model_check.md
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

from compute_rates import RATES_CPU, on_the_rates_machine, without_stopped_epochs

from robustsafe.experiments.compute import step_cost
from robustsafe.files import read_csv_rows

LEARNER_PREFIXES = ("focops", "sac-lag", "cvpo")  # run directories of the other learners


def _cpu(run: Path) -> str:
    """The processor a run trained on (``RATES_CPU`` for runs older than provenance files, as
    ``compute_rates.py`` takes them); ``mixed`` if its starts differ."""
    path = run / "provenance.json"
    if not path.exists():
        return RATES_CPU
    cpus = {s.get("cpu") or "not recorded" for s in json.loads(path.read_text()).get("starts", [])}
    name = cpus.pop() if len(cpus) == 1 else "mixed"
    return "AMD EPYC" if name.startswith("AMD EPYC") else name.split("(")[0].strip() or name


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--runs", default="benchmarks/results/table1da")
    p.add_argument("--out", default="benchmarks/results/compute/model_check.md")
    args = p.parse_args()
    # (task, mode, cpu) -> [(wall seconds, env steps)]; cpu "in the rates" for those runs
    runs: dict[tuple[str, str, str], list[tuple[float, int]]] = defaultdict(list)
    for metrics in sorted(Path(args.runs).glob("*/*/seed*/metrics.csv")):
        task, mode = metrics.parts[-4], metrics.parts[-3]
        if mode.startswith(LEARNER_PREFIXES):
            continue
        rows = read_csv_rows(metrics)
        wall, _ = without_stopped_epochs(rows)
        cpu = "in the rates" if on_the_rates_machine(metrics.parent) else _cpu(metrics.parent)
        runs[(task, mode, cpu)].append((wall, int(rows[-1]["env_steps"])))
    minutes = {k: statistics.mean(w for w, _ in v) / 60 for k, v in runs.items()}
    model = {
        k: statistics.mean(step_cost(k[0], k[1]).wall * n for _, n in v) / 60
        for k, v in runs.items()
    }
    lines = [
        "# The compute model against the Drone / Ant runs",
        "",
        f"Command: `python benchmarks/compute_check.py` (runs: `{args.runs}`). Measured: the",
        "runs' training wall time (pauses taken out), pooled over seeds; they shared the 2 cores",
        "with one to four other jobs. Model: `robustsafe grid --dry-run`'s time for the same",
        "steps on an idle machine of the rates' processor. Ratio to vanilla: the mode's time",
        "over the same task's PPOL-vanilla time on the same processor, which does not depend on",
        "the processor's speed, but does on each run's load. Runs on processors other than",
        f"{RATES_CPU} (or whose processor was not recorded) are not in the rates: their ratios",
        "check the model out of sample; the rows marked `in the rates` are the rates themselves",
        "(measured / model is the load the model divides out).",
        "",
        "| task | mode | processor | runs | measured min | model min | measured / model |"
        " ratio to vanilla, measured | ratio to vanilla, model | model's basis |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for (task, mode, cpu), v in sorted(runs.items()):
        vanilla = (task, "vanilla", cpu)
        have = vanilla in runs and mode != "vanilla"
        measured_ratio = f"{minutes[(task, mode, cpu)] / minutes[vanilla]:.2f}" if have else ""
        model_ratio = f"{model[(task, mode, cpu)] / model[vanilla]:.2f}" if have else ""
        lines.append(
            f"| {task} | {mode} | {cpu} | {len(v)} | {minutes[(task, mode, cpu)]:.1f} | "
            f"{model[(task, mode, cpu)]:.1f} | "
            f"{minutes[(task, mode, cpu)] / model[(task, mode, cpu)]:.2f} | "
            f"{measured_ratio} | {model_ratio} | {step_cost(task, mode).basis} |"
        )
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
