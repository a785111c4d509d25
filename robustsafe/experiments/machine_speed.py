"""How fast is this machine against the one the compute model's rates were measured on?

The rates (``compute_rates``) come from one 2-core machine. ``measure`` times here the short
training that ``benchmarks/compute_calibration.py`` timed there (the reference task's fast
vanilla preset: 20 envs in 2 worker processes, the first epoch and its start-up skipped) and
returns this machine's seconds per env step of env stepping, policy and updates over the
rates' machine's: the factor ``robustsafe grid --dry-run --calibrate`` multiplies every
expected time by. It measures the machine as loaded at the time, other jobs included.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from robustsafe.experiments import compute_rates as rates
from robustsafe.rundir import train_metrics

PARTS = ("time_env", "time_attack", "time_policy", "time_update")


def per_step(rows: list[dict[str, str]], skip: int) -> dict[str, float]:
    """Seconds per env step of each part (``PARTS``) and of the whole epoch (``epoch``) over the
    ``metrics.csv`` rows after the first ``skip``."""
    if not 0 <= skip < len(rows):
        raise ValueError(f"need 0 <= skip < {len(rows)} epochs, got skip {skip}")
    before = int(rows[skip - 1]["env_steps"]) if skip else 0
    rows = rows[skip:]
    n = int(rows[-1]["env_steps"]) - before
    per_epoch = n / len(rows)
    parts = {k: sum(float(r[k]) for r in rows) / n for k in PARTS}
    parts["epoch"] = sum(per_epoch / float(r["steps_per_s"]) for r in rows) / n
    return parts


def train_split(
    env_id: str, preset: str, epochs: int, skip: int, out: Path | None = None
) -> dict[str, float]:
    """``per_step`` of a fresh ``vanilla`` training (``robustsafe train`` in a subprocess) of
    ``epochs`` epochs; the run is kept in ``out`` where given, else in a temporary directory."""
    if not 0 <= skip < epochs:
        raise ValueError(f"need 0 <= skip < epochs, got skip {skip}, epochs {epochs}")
    with tempfile.TemporaryDirectory() as tmp:
        out = out if out is not None else Path(tmp) / "run"
        cmd = [sys.executable, "-m", "robustsafe.cli", "train", "--env", env_id]
        cmd += ["--preset", preset, "--epochs", str(epochs), "--out", str(out), "--no-progress"]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        return per_step(train_metrics(out), skip)


def machine_factor(seconds_per_step: float) -> float:
    """This machine's env + policy + update seconds per step of the reference training over
    the rates' machine's (above 1: slower here)."""
    if seconds_per_step <= 0:
        raise ValueError(f"seconds per step must be positive, got {seconds_per_step}")
    return seconds_per_step / (rates.REFERENCE_TRAIN_US_PER_STEP * 1e-6)


def measure(epochs: int = 3) -> tuple[float, float]:
    """(factor, this machine's seconds per step): ``epochs`` epochs of the reference task's
    fast vanilla training, the first skipped."""
    parts = train_split(rates.REFERENCE, "fast", epochs, 1)
    here = parts["time_env"] + parts["time_policy"] + parts["time_update"]
    return machine_factor(here), here
