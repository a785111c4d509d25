"""How many runs a local grid runs at a time, and how long they take together.

A run does not keep its cores busy all the time: its env workers wait while the main process
computes actions, attacks and updates, and the update runs on one thread. Measured on a
2-core machine (``benchmarks/grid_concurrency.py``, results in
``benchmarks/results/speed/grid_concurrency_*.md``): two runs at a time trained and evaluated
1.30x (CarRun PPOL-vanilla) and 1.49x (CarCircle ADV-PPOL(MC)) as many runs per hour as one at
a time, with the same numbers. With the machine full in both cases, a run alone kept about
2 / 1.30 = 1.54 and 2 / 1.49 = 1.34 cores busy on average: ``BUSY_CORES_PER_RUN`` is their mean.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

BUSY_CORES_PER_RUN = 1.44
# A fast-preset training's memory: its main process (~0.4 GiB) and two env workers (~0.9 GiB
# each), measured on CarCircle ADV-PPOL; 3 GiB leaves room for an evaluation's buffers.
RUN_MEMORY_BYTES = 3 * 2**30


def available_memory(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """MemAvailable in bytes, or None where the system does not say."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def default_parallel_runs(cores: int | None = None, memory: int | None = None) -> int:
    """Runs at a time that keep ``cores`` busy (ceil(cores / BUSY_CORES_PER_RUN)), at most one
    per ``RUN_MEMORY_BYTES`` of available memory, at least 1. Defaults: this machine's."""
    cores = cores if cores is not None else (os.cpu_count() or 1)
    memory = memory if memory is not None else available_memory()
    runs = math.ceil(cores / BUSY_CORES_PER_RUN)
    if memory is not None:
        runs = min(runs, memory // RUN_MEMORY_BYTES)
    return max(1, runs)


def shared_wall_time(seconds: Sequence[float], at_once: int, cores: int) -> float:
    """Wall time of jobs taking ``seconds`` each alone, started in order, ``at_once`` at a time
    on ``cores`` cores: while n run, each goes at min(1, cores / (n x BUSY_CORES_PER_RUN)) of
    its speed alone."""
    pending = list(seconds)[::-1]
    running: list[float] = []
    wall = 0.0
    while pending or running:
        while pending and len(running) < at_once:
            running.append(pending.pop())
        speed = min(1.0, cores / (len(running) * BUSY_CORES_PER_RUN))
        step = min(running) / speed
        wall += step
        running = [left - step * speed for left in running]
        running = [left for left in running if left > 1e-9]
    return wall
