"""benchmarks/training_cost.py --bands: per-band means of a run's metrics, by hand."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _training_cost():
    """The script as a module (it imports its sibling ``recipe_runs``: ``benchmarks/`` is on the
    path only while it loads)."""
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("training_cost", BENCH / "training_cost.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH))
    return module


def test_band_means_skip_epochs_without_episodes(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    # Five epochs in bands of 2: {1, 2}, {3, 4}, {5}; epoch 4 finished no episode (nan).
    rows = [
        "epoch,ep_return,ep_cost,ep_length,lambda",
        "1,1.0,2.0,100,0.0",
        "2,3.0,4.0,200,1.0",
        "3,10.0,0.0,300,0.5",
        "4,nan,nan,nan,0.7",
        "5,7.5,6.25,250,2.0",
    ]
    (run / "metrics.csv").write_text("\n".join(rows) + "\n")
    out = _training_cost().band_rows(run, 2)
    assert out == [
        f"| {run} | 1-2 | 2.0 | 3.00 | 150 | 0.50 |",
        f"| {run} | 3-4 | 10.0 | 0.00 | 300 | 0.60 |",
        f"| {run} | 5-5 | 7.5 | 6.25 | 250 | 2.00 |",
    ]


def test_last_ten_summary_skips_epochs_without_episodes(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    # Twelve epochs: the last ten are 3..12; epochs 5 and 12 finished no episode (nan).
    rows = ["epoch,env_steps,wall_time,ep_return,ep_cost,lambda"]
    for epoch in range(1, 13):
        done = epoch not in (5, 12)
        reward, cost = (f"{epoch * 10.0}", f"{epoch / 2}") if done else ("nan", "nan")
        rows.append(f"{epoch},{epoch * 100},{epoch * 1.5},{reward},{cost},{epoch / 10}")
    (run / "metrics.csv").write_text("\n".join(rows) + "\n")
    summary = _training_cost().training_summary(run)
    # Epochs 3, 4, 6..11 (sum 58): reward 580 / 8, cost 29 / 8.
    assert summary["train_reward_last10"] == 72.5
    assert summary["train_cost_last10"] == 3.625
    assert summary["epochs"] == 12
    assert summary["lambda_final"] == 1.2


def test_focops_runs_report_their_nu_as_the_multiplier(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    rows = ["epoch,env_steps,wall_time,ep_return,ep_cost,ep_length,nu"]
    rows += ["1,100,1.0,5.0,1.0,300,0.25", "2,200,2.0,7.0,3.0,300,0.75"]
    (run / "metrics.csv").write_text("\n".join(rows) + "\n")
    module = _training_cost()
    assert module.band_rows(run, 2) == [f"| {run} | 1-2 | 6.0 | 2.00 | 300 | 0.50 |"]
    assert module.training_summary(run)["lambda_final"] == 0.75


def test_grid_jobs_list_each_job_of_timings_json(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    module = _training_cost()
    assert module.grid_jobs(run) == "-"  # trained before the grid recorded its jobs
    jobs = [
        {
            "job": "train",
            "started": "t",
            "from_epoch": 0,
            "to_epoch": 12,
            "seconds": 99.6,
            "exit_status": "lost",
        },
        {
            "job": "train",
            "started": "t",
            "from_epoch": 12,
            "to_epoch": 400,
            "seconds": 7422.3,
            "exit_status": 0,
        },
        {"job": "evaluate", "started": "t", "seconds": 209.6, "exit_status": 0},
    ]
    (run / "timings.json").write_text(json.dumps(jobs))
    assert module.grid_jobs(run) == (
        "train 0-12 100 s (exit lost), train 12-400 7422 s, evaluate 210 s"
    )
    stopped = {"job": "train", "started": "t", "from_epoch": 0, "to_epoch": 94}
    running = {"job": "train", "started": "t", "from_epoch": 94, "to_epoch": None}
    jobs = [
        {**stopped, "seconds": 1543.4, "exit_status": "interrupted"},
        {**stopped, "seconds": None, "exit_status": "interrupted"},
        {**running, "seconds": None, "exit_status": "running"},
    ]
    (run / "timings.json").write_text(json.dumps(jobs))
    assert module.grid_jobs(run) == (
        "train 0-94 1543 s (exit interrupted), train 0-94 ? s (exit interrupted), "
        "train 94-? ? s (exit running)"
    )
