"""How many runs a local grid runs at a time, and how long they take together.

A run does not keep its cores busy all the time: its env workers wait while the main process
computes actions, attacks and updates, and the update runs on one thread. Measured on a
2-core machine (``benchmarks/grid_concurrency.py``, results in
``benchmarks/results/speed/grid_concurrency_*.md``; each grid twice, the two passes in either
order): two runs at a time trained and evaluated 1.30x and 1.19x (CarRun PPOL-vanilla) and
1.49x and 1.58x (CarCircle ADV-PPOL(MC)) as many runs per hour as one at a time, with the same
numbers. With both cores busy at two at a time, a run alone kept 2 / speed-up cores busy on
average (1.54, 1.68, 1.34, 1.27): ``BUSY_CORES_PER_RUN`` is their mean.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

BUSY_CORES_PER_RUN = 1.46
# A fast-preset training's memory: its main process (~0.4 GiB) and two env workers (~0.9 GiB
# each), measured on CarCircle ADV-PPOL; 3 GiB leaves room for an evaluation's buffers.
RUN_MEMORY_BYTES = 3 * 2**30


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def available_cores(cgroup: Path = Path("/sys/fs/cgroup")) -> int:
    """The cores this process may use: its CPU affinity, within a container's CPU quota
    (cgroup v2 ``cpu.max``) where one is set; at least 1."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    quota = (_read(cgroup / "cpu.max") or "max").split()
    if quota and quota[0] != "max":
        try:
            period = int(quota[1]) if len(quota) > 1 else 100_000
            cores = min(cores, math.ceil(int(quota[0]) / period))
        except ValueError:
            pass
    return max(1, cores)


def available_memory(
    meminfo: Path = Path("/proc/meminfo"), cgroup: Path = Path("/sys/fs/cgroup")
) -> int | None:
    """Free memory in bytes: MemAvailable, within a container's limit (cgroup v2
    ``memory.max`` less ``memory.current``) where one is set; None where neither says."""
    free = None
    for line in (_read(meminfo) or "").splitlines():
        if line.startswith("MemAvailable:"):
            try:
                free = int(line.split()[1]) * 1024
            except (ValueError, IndexError):
                pass
    limit, used = _read(cgroup / "memory.max"), _read(cgroup / "memory.current")
    if limit and limit != "max" and used:
        try:
            left = max(0, int(limit) - int(used))
        except ValueError:
            return free
        free = left if free is None else min(free, left)
    return free


def default_parallel_runs(cores: int | None = None, memory: int | None = None) -> int:
    """Runs at a time that keep ``cores`` busy (ceil(cores / BUSY_CORES_PER_RUN)), at most one
    per ``RUN_MEMORY_BYTES`` of available memory, at least 1. Defaults: what this process may
    use (``available_cores``, ``available_memory``)."""
    cores = cores if cores is not None else available_cores()
    memory = memory if memory is not None else available_memory()
    runs = math.ceil(max(1, cores) / BUSY_CORES_PER_RUN)
    if memory is not None:
        runs = min(runs, memory // RUN_MEMORY_BYTES)
    return max(1, runs)


def shared_wall_time(seconds: Sequence[float], at_once: int, cores: int) -> float:
    """Wall time of jobs taking ``seconds`` each alone, started in order, ``at_once`` at a time
    on ``cores`` cores: while n run, each goes at min(1, cores / (n x BUSY_CORES_PER_RUN)) of
    its speed alone."""
    if at_once < 1 or cores < 1:
        raise ValueError(f"need at_once >= 1 and cores >= 1, got {at_once} and {cores}")
    if any(not 0.0 <= s < math.inf for s in seconds):
        raise ValueError(f"job seconds must be finite and >= 0, got {list(seconds)}")
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
