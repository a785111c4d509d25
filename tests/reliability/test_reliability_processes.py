"""One writer per run, and no training outlives a killed grid (issue 12: 4)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import cli_train, one_line_error

from robustsafe.rundir import run_status

REPO_ROOT = Path(__file__).resolve().parents[2]
GRID_TOY = "tests.experiments.toy_env:RobustSafeGridToy-v0"
TINY_SETS = [
    "steps_per_epoch=40",
    "num_envs=2",
    "workers=0",
    "ppo.hidden=[8,8]",
    "ppo.actor_passes=1",
    "ppo.critic_passes=1",
    "ppo.minibatch_size=null",
]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return env


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False


def _wait(predicate, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def _holder(run: Path) -> subprocess.Popen:
    """A process that holds the lock of ``run`` until killed."""
    code = (
        "import sys, time; from pathlib import Path; from robustsafe.runstate import run_lock\n"
        "with run_lock(Path(sys.argv[1])):\n    print('locked', flush=True); time.sleep(600)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(run)], stdout=subprocess.PIPE, text=True, env=_env()
    )
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_a_second_writer_is_refused_and_a_dead_owner_is_taken_over(cli_run, capsys):
    holder = _holder(cli_run)
    try:
        assert cli_train(cli_run, "--resume", "--epochs", "3") == 2
        err = capsys.readouterr().err
        assert one_line_error(err) and f"PID {holder.pid}" in err
        assert run_status(cli_run) == (2, 2)
    finally:
        holder.kill()  # kill -9: the lock is stale now
        holder.wait()
    assert cli_train(cli_run, "--resume", "--epochs", "3") == 0
    assert run_status(cli_run) == (3, 3)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal: Linux")
def test_kill_9_of_the_grid_stops_its_training(tmp_path):
    out = tmp_path / "grid"
    cmd = [sys.executable, "-m", "robustsafe.cli", "grid", "--envs", GRID_TOY, "--out", str(out)]
    cmd += ["--epochs", "100000", "--no-eval", *[f"--set={s}" for s in TINY_SETS]]
    grid = subprocess.Popen(
        cmd, cwd=REPO_ROOT, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    status = out / "RobustSafeGridToy-v0" / "vanilla" / "seed0" / "status.json"

    def epoch() -> int:
        try:
            return int(json.loads(status.read_text())["epoch"])
        except (OSError, ValueError, KeyError):
            return 0

    children: list[int] = []
    try:
        assert _wait(lambda: epoch() >= 2 or grid.poll() is not None, 120), "no epoch"
        assert grid.poll() is None, grid.stderr.read()
        tasks = Path(f"/proc/{grid.pid}/task")
        children = [int(c) for t in tasks.iterdir() for c in (t / "children").read_text().split()]
        assert children
        grid.send_signal(signal.SIGKILL)
        grid.wait()
        assert _wait(lambda: not any(_alive(c) for c in children), 15), "training survived"
        stopped_at = epoch()
        time.sleep(1.0)
        assert epoch() == stopped_at
        # the same grid again resumes the run: one writer, every epoch once
        again = [*cmd, "--epochs", str(stopped_at + 2)]
        done = subprocess.run(again, cwd=REPO_ROOT, env=_env(), capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        rows = (status.parent / "metrics.csv").read_text().splitlines()[1:]
        assert [int(r.split(",")[0]) for r in rows] == list(range(1, stopped_at + 3))
    finally:
        if grid.poll() is None:
            grid.kill()
            grid.wait()
        for c in children:  # only if the test failed: never leave a training behind
            if _alive(c):
                os.kill(c, signal.SIGKILL)
