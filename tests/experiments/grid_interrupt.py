"""Stop a grid command with a signal once its run has written two epochs (the grid tests' kill)."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from robustsafe.rundir import run_status


def epoch_of(run_dir: Path) -> int:
    """The epoch of the run's last saved state as a grid reads it (``run_status``: status.json
    when it matches state.pt, else state.pt itself; status.json alone lags state.pt by one
    when a training is stopped between the two writes); 0 before any state."""
    try:
        status = run_status(run_dir)
    except (OSError, ValueError, KeyError):
        return 0
    return 0 if status is None else status[0]


def signal_after_two_epochs(
    cmd: Sequence[str],
    run_dir: Path,
    *,
    env: Mapping[str, str] | None = None,
    start_timeout: float = 120.0,
    stop_timeout: float = 60.0,
    sig: signal.Signals = signal.SIGTERM,
) -> str:
    """Run ``cmd``; when ``run_dir`` reaches epoch 2, send ``sig``; return its stderr.

    Fails if the run never reaches epoch 2 or if the grid does not end as that signal makes
    it: exit status 130 (interrupted) after SIGTERM, killed by any other signal.
    """
    grid = subprocess.Popen(
        list(cmd),
        env=None if env is None else dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + start_timeout
    while epoch_of(run_dir) < 2 and time.monotonic() < deadline and grid.poll() is None:
        time.sleep(0.2)
    assert epoch_of(run_dir) >= 2, grid.communicate(timeout=30)
    grid.send_signal(sig)
    _, err = grid.communicate(timeout=stop_timeout)
    assert grid.returncode == (130 if sig == signal.SIGTERM else -sig), err
    return err
