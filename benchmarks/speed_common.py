"""What both sides of the FSRL speed comparison measure the same way (standard library only, so
that the script running in FSRL's scratch venv imports it too): the age of this process since
it was launched, CPU seconds, the load average, and the machine.

The process age is read from ``/proc`` (the kernel's start time of the process, in clock
ticks), so it counts the interpreter start and every import before the first line of the
script; where ``/proc`` is missing it falls back to the time since this module was imported.
"""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path

_IMPORTED = time.monotonic()


def process_age() -> float:
    """Seconds since this process was launched (resolution one clock tick, 10 ms on Linux)."""
    try:
        stat = Path("/proc/self/stat").read_text()
        # field 22 (starttime) counts from after the parenthesised command name
        start_ticks = int(stat.rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return uptime - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.monotonic() - _IMPORTED


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and of its children that have ended (env
    worker processes count once they are joined): a measure of work less sensitive to the
    machine's load than wall time, though not immune (torch's idle threads spin when there
    are more of them than free cores)."""
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages (empty where the OS has none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def machine() -> dict:
    """CPU model, core count and Python version (each side adds its own library versions)."""
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version()}
