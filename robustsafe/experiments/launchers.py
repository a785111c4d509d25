"""How the grid runs its commands: one small class per backend.

The grid (``robustsafe.experiments.grid``) plans the runs and decides what runs when; a
launcher only starts one command (``python ARGS``, for one run directory) and says when it
ends::

    launcher = make_launcher("local", workers=1)       # or "ray", cpus_per_run=2
    handle = launcher.start(args, log_path, run_dir)   # output appended to log_path
    handle.poll()        # None while it runs, else its exit status; RUN_LOST: the machine
                         # running it was lost (the grid then starts it again)
    handle.stop()        # end it (the grid was interrupted)
    launcher.capacity()  # how many commands may run at once, now
    launcher.close()

``LocalLauncher`` (here): subprocesses of this process, writing in the run directory itself.
``RayLauncher`` (``robustsafe.experiments.ray_launcher``): Ray tasks, on any node of a Ray
cluster, with no shared disk; the run directories travel as ``robustsafe.experiments.run_bundles``.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

RUN_LOST = -1000  # poll(): the node (or worker) running the command was lost
# A task's command sees its node-local copy of the run directory; files it writes name the
# driver's run directory instead (``recorded_path``): "NODE_COPY<os.pathsep>DRIVER_RUN_DIR".
RUN_COPY_ENV = "ROBUSTSAFE_RUN_COPY"


def recorded_path(path: str) -> str:
    """``path`` as files and messages should name it: under a Ray task's node-local copy of a
    run directory, the same place in the driver's run directory (the copy is gone after the
    task); elsewhere ``path`` itself."""
    copy, sep, driver = os.environ.get(RUN_COPY_ENV, "").partition(os.pathsep)
    return _relocate(path, copy, driver) if sep and copy else path


def _relocate(arg: str, old: str, new: str) -> str:
    if arg == old:
        return new
    if arg.startswith(old + os.sep):
        return new + arg[len(old) :]
    return arg


def log_header(args: Sequence[str]) -> str:
    stamp = datetime.now().isoformat(timespec="seconds")
    return f"\n=== robustsafe grid, {stamp}: python {shlex.join(args)}\n"


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"  # the log shows progress as it happens
    return env


_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child get SIGTERM when this process dies, even by
    ``kill -9`` (Linux ``prctl(PR_SET_PDEATHSIG)``), so that no training outlives its grid
    (or its Ray worker). None elsewhere: there the run lock still stops a second writer."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes
    import signal

    libc = ctypes.CDLL(None, use_errno=True)  # loaded here: the child only calls it
    parent = os.getpid()

    def preexec() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return preexec


# ----------------------------------------------------------------------------- local


class LocalProcess:
    def __init__(self, args: Sequence[str], log_path: Path) -> None:
        self._log = open(log_path, "a")  # closed in poll() or stop()
        try:
            self._log.write(log_header(args))
            self._log.flush()
            self._proc = subprocess.Popen(
                [sys.executable, *args],
                stdout=self._log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=child_env(),
                preexec_fn=die_with_parent(),
            )
        except BaseException:
            self._log.close()
            raise

    def poll(self) -> int | None:
        rc = self._proc.poll()
        if rc is not None:
            self._log.close()
        return rc

    def stop(self) -> None:
        """End this process (the grid was interrupted)."""
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._log.close()


class LocalLauncher:
    """Subprocesses of this process, ``workers`` at a time, in the run directories."""

    def __init__(self, workers: int = 1) -> None:
        self.workers = workers

    def capacity(self) -> int:
        return self.workers

    def start(self, args: Sequence[str], log_path: Path, run_dir: Path) -> LocalProcess:
        return LocalProcess(args, log_path)

    def close(self) -> None:
        pass


def make_launcher(backend: str, workers: int = 1, cpus_per_run: int = 2) -> Any:
    """The launcher of a backend: ``local`` (``workers`` at a time) or ``ray``."""
    if backend == "ray":
        from robustsafe.experiments.ray_launcher import RayLauncher

        return RayLauncher(cpus_per_run)
    if backend == "local":
        return LocalLauncher(workers)
    raise ValueError(f"unknown backend {backend!r}")
