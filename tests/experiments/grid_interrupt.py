"""Stop a grid command with a signal once its run has written two epochs (the grid tests' kill)."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path


def epoch_of(run_dir: Path) -> int:
    """The epoch a run's ``status.json`` records (0 before it exists or while it is written)."""
    try:
        return int(json.loads((run_dir / "status.json").read_text())["epoch"])
    except (OSError, ValueError, KeyError):
        return 0


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
