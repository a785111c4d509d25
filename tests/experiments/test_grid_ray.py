"""The grid's Ray backend on a simulated multi-node cluster (``ray.cluster_utils.Cluster``).

Each worker node has its own working directory (``ROBUSTSAFE_RAY_WORKDIR`` in its raylet's
environment), where its tasks unpack and run; the driver's ``--out`` is written only by the
driver, from what the tasks send. Ray comes with the ``test`` extra, so the suite (and CI) runs
these tests; where Ray is missing they are skipped, except under CI (``CI`` set), where that is
an error.
"""

from __future__ import annotations

import csv
import json
import os
import re
import threading
import time
from pathlib import Path

import pytest

if os.environ.get("CI"):  # CI installs the test extra, Ray included: never skip there
    import ray
    import ray.cluster_utils as cluster_utils
else:
    ray = pytest.importorskip("ray", reason='Ray: pip install -e ".[test]"')
    cluster_utils = pytest.importorskip("ray.cluster_utils")

from grid_interrupt import epoch_of, signal_after_two_epochs  # noqa: E402

from robustsafe.experiments.grid import (  # noqa: E402
    GridSpec,  # noqa: E402
    plan_grid,
    run_grid,
)
from robustsafe.experiments.ray_launcher import WORKDIR_ENV  # noqa: E402
from robustsafe.rundir import run_status

REPO_ROOT = Path(__file__).resolve().parents[2]
TOY = "tests.experiments.toy_env:RobustSafeGridToy-v0"
TINY = (
    "--set steps_per_epoch=40 --set num_envs=2 --set workers=0 --set ppo.hidden=[8,8] "
    "--set ppo.actor_passes=1 --set ppo.critic_passes=1 --set ppo.minibatch_size=null"
).split()

pytestmark = pytest.mark.slow

NODE = dict(num_cpus=2, object_store_memory=80 * 1024**2)


def tiny_spec(out: Path, epochs: int, **kw) -> GridSpec:
    base = dict(
        envs=(TOY,),
        modes=("vanilla",),
        seeds=(0,),
        preset="fast",
        out=out,
        train_args=("--epochs", str(epochs), *TINY),
        episodes=2,
        eval_workers=0,
        eval_num_envs=2,
        attacks=("none", "random", "mc"),
    )
    base.update(kw)
    return GridSpec(**base)


@pytest.fixture
def importable_toy(monkeypatch):
    """Make ``tests.experiments.toy_env`` importable here and in the Ray workers (which
    inherit the environment of the raylets that the cluster starts from here)."""
    monkeypatch.syspath_prepend(str(REPO_ROOT))
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT) + (os.pathsep + path if path else ""))
    monkeypatch.chdir(REPO_ROOT)


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def cluster(tmp_path, importable_toy, monkeypatch):
    """A head node without CPUs (the driver's) and two 2-CPU worker nodes, each with its own
    working directory."""
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")  # a test cluster reports nothing
    c = cluster_utils.Cluster(
        initialize_head=True,
        head_node_args=dict(
            num_cpus=0,
            object_store_memory=80 * 1024**2,
            include_dashboard=False,
            _system_config={"health_check_period_ms": 500, "health_check_failure_threshold": 4},
        ),
    )
    nodes = {}
    for name in ("node1", "node2"):
        work = tmp_path / name
        nodes[name] = (c.add_node(env_vars={WORKDIR_ENV: str(work)}, **NODE), work)
    ray.init(address=c.address)
    try:
        yield c, nodes
    finally:
        ray.shutdown()
        c.shutdown()


def test_four_runs_on_two_nodes_come_back_to_the_driver(tmp_path, cluster):
    c, nodes = cluster
    out = tmp_path / "grid"
    spec = tiny_spec(out, 2, modes=("vanilla", "adv-mc"), seeds=(0, 1), backend="ray")
    logged: list[str] = []
    results = run_grid(spec, log=logged.append)
    assert [(r.train, r.evaluation, r.epochs_done) for r in results] == [
        ("trained", "evaluated", 2)
    ] * 4, "\n".join(logged)
    # two at a time (2 nodes x 2 CPUs / 2 CPUs per run): the second starts before any ends
    starts = [i for i, line in enumerate(logged) if "] start train" in line]
    ends = [i for i, line in enumerate(logged) if "done  train" in line]
    assert len(starts) == 4 and starts[1] < ends[0]
    for r in results:
        names = _files(r.run_dir)
        for name in ("config.yaml", "metrics.csv", "agent.pt", "state.pt", "status.json"):
            assert name in names, (r.run_dir, names)
        assert "eval.json" in names and "train.log" in names and "eval.log" in names
        assert any(n.startswith("tb/") for n in names)
        assert any(n.startswith("checkpoints/") for n in names)
        assert run_status(r.run_dir) == (2, 2)
        with (r.run_dir / "metrics.csv").open() as f:
            assert [int(x["epoch"]) for x in csv.DictReader(f)] == [1, 2]
        evaluation = json.loads((r.run_dir / "eval.json").read_text())
        assert evaluation["episodes"] == 2
        assert evaluation["agent"] == str(r.run_dir)  # not the node's copy, gone by now
        header = (r.run_dir / "train.log").read_text().split("\n")[1]
        assert "=== robustsafe grid" in header and str(r.run_dir) in header  # the driver's paths
        assert f"run saved in {r.run_dir}\n" in (r.run_dir / "train.log").read_text()
    # the tasks ran on both nodes, in their own directories, and left nothing there
    for _, work in nodes.values():
        assert work.is_dir(), "a node ran no task"
        assert _files(work) == set()
    # again: everything is already on the driver
    assert [p.action for p in plan_grid(spec)] == ["skip"] * 4
    assert not any(p.evaluate for p in plan_grid(spec))


def test_a_run_whose_node_dies_resumes_on_the_other(tmp_path, cluster):
    c, nodes = cluster
    out = tmp_path / "grid"
    epochs = 6
    sets = [f"--set={s}" for s in TINY if s != "--set"]
    sets = [s.replace("steps_per_epoch=40", "steps_per_epoch=20000") for s in sets]
    spec = tiny_spec(out, epochs, train_args=("--epochs", str(epochs), *sets), backend="ray")
    run = spec.run_dir(TOY, "vanilla", 0)
    logged: list[str] = []
    box: dict = {}
    grid = threading.Thread(target=lambda: box.update(r=run_grid(spec, log=logged.append)))
    grid.start()

    # wait until the driver holds a few epochs, then kill the node running the training
    deadline = time.monotonic() + 300
    while epoch_of(run) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert epoch_of(run) >= 2, "\n".join(logged)
    busy = [
        (name, node, work)
        for name, (node, work) in nodes.items()
        if work.is_dir() and any(work.glob("robustsafe-run-*/status.json"))
    ]
    assert len(busy) == 1, busy
    name, node, work = busy[0]

    def on_node() -> int:  # the epochs that the node's copy of the run has finished
        return max((epoch_of(p) for p in work.glob("robustsafe-run-*")), default=0)

    on_driver = epoch_of(run)
    before = on_node()
    assert 0 < before < epochs, (before, "\n".join(logged))  # mid-run
    c.remove_node(node, allow_graceful=False)
    grid.join(timeout=400)
    assert not grid.is_alive(), "\n".join(logged)

    (result,) = box["r"]
    assert (result.train, result.evaluation, result.epochs_done) == (
        "trained",
        "evaluated",
        epochs,
    ), "\n".join(logged)
    lost = [line for line in logged if "LOST" in line]
    assert len(lost) == 1, "\n".join(logged)
    resumed_from = int(re.search(r"from epoch (\d+)", lost[0]).group(1))
    # the node's directory outlives it (nothing cleans it up): what it holds now is what the
    # node had finished when it died, epochs that ended while it was being killed included
    killed_at = max(before, on_node())
    assert resumed_from >= on_driver and killed_at - resumed_from <= 1, (killed_at, resumed_from)
    # the resumed run went on from the driver's copy: one row per epoch, in order
    with (run / "metrics.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [int(x["epoch"]) for x in rows] == list(range(1, epochs + 1))
    assert run_status(run) == (epochs, epochs)
    log = (run / "train.log").read_text()
    assert log.count("=== robustsafe grid") == 2  # the training and its resume
    assert "--resume" in log and "was lost" in log
    jobs = json.loads((run / "timings.json").read_text())  # the driver's record of each job
    assert [(j["job"], j.get("from_epoch"), j["exit_status"]) for j in jobs] == [
        ("train", 0, "lost"),
        ("train", resumed_from, 0),
        ("evaluate", None, 0),
    ]
    assert jobs[1]["to_epoch"] == epochs
    other = next(w for n, (_, w) in nodes.items() if n != name)
    assert _files(other) == set()
    print(
        f"node {name} killed at epoch {killed_at} (driver held {on_driver}); resumed from "
        f"{resumed_from} on the other node: {killed_at - resumed_from} epoch(s) lost; "
        f"an epoch took {float(rows[1]['wall_time']) - float(rows[0]['wall_time']):.1f} s"
    )


def wait_for_log_line(nodes: dict, text: str, timeout: float = 120.0) -> None:
    """Until a ``train.log`` in some node's working directory holds ``text``."""

    def seen() -> bool:
        logs = [p for _, w in nodes.values() if w.is_dir() for p in w.rglob("train.log")]
        return any(text in p.read_text() for p in logs)

    deadline = time.monotonic() + timeout
    while not seen() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert seen(), f"the task did not start within {timeout:.0f} s"


def test_closing_the_launcher_waits_for_a_stopped_task_to_clean_its_node(tmp_path, cluster):
    """A stopped task has removed its node-local copy when ``close()`` returns: Ray kills a
    driver's workers when the driver exits, so a clean-up still running then would strand the
    copy on the node's disk. The task's program here takes 3 s to end on SIGTERM."""
    from robustsafe.experiments.ray_launcher import RayLauncher

    _, nodes = cluster
    run = tmp_path / "run"
    run.mkdir()
    slow_exit = (
        "import signal, sys, time; "
        "signal.signal(signal.SIGTERM, lambda *a: (time.sleep(3), sys.exit(1))); "
        "print('handler set', flush=True); time.sleep(600)"
    )
    launcher = RayLauncher(cpus_per_run=2)
    task = launcher.start(["-c", slow_exit], run / "train.log", run)

    wait_for_log_line(nodes, "handler set")  # the program runs, with its handler, on a node
    task.stop()
    launcher.close()
    left = {n: sorted(_files(w)) for n, (_, w) in nodes.items() if w.is_dir() and _files(w)}
    assert not left, f"close() returned with a stopped task's copy still on its node: {left}"


def test_a_task_stops_and_cleans_up_on_the_drivers_word_alone(tmp_path, cluster):
    """Without Ray's cancel (whose interrupt a loaded machine was seen to lose), the word the
    driver leaves in the inbox stops the task: its program ends and its copy is removed before
    ``close()`` returns, well within the clean-up timeout."""
    from robustsafe.experiments.ray_launcher import RayLauncher

    _, nodes = cluster
    run = tmp_path / "run"
    run.mkdir()
    launcher = RayLauncher(cpus_per_run=2)
    task = launcher.start(
        ["-c", "print('running', flush=True); import time; time.sleep(600)"], run / "train.log", run
    )

    wait_for_log_line(nodes, "running")
    launcher.request_stop(task._key)
    launcher.stopped[task._key] = task._ref
    start = time.monotonic()
    launcher.close(cleanup_timeout=40)
    took = time.monotonic() - start
    left = {n: sorted(_files(w)) for n, (_, w) in nodes.items() if w.is_dir() and _files(w)}
    assert not left, f"the task did not clean up on the driver's word: {left}"
    assert took < 30, f"close() waited {took:.0f} s for the task to clean up"


def test_sigterm_to_the_grid_cancels_its_ray_tasks(tmp_path, cluster):
    """``kill <grid>`` on the Ray backend: exit 130, the tasks stop and clean up, the same
    command resumes from what the driver holds."""
    import subprocess
    import sys

    c, nodes = cluster
    out = tmp_path / "grid"
    cmd = [sys.executable, "-m", "robustsafe.cli", "grid", "--envs", TOY, "--modes", "vanilla"]
    cmd += ["--seeds", "0", "--out", str(out), "--no-eval", "--backend", "ray"]
    sets = [f"--set={item}" for item in TINY if item != "--set"]
    env = {**os.environ, "RAY_ADDRESS": c.address}
    run = out / "RobustSafeGridToy-v0" / "vanilla" / "seed0"
    signal_after_two_epochs(
        [*cmd, "--epochs", "100000", *sets], run, env=env, start_timeout=180, stop_timeout=120
    )
    held = epoch_of(run)
    # The grid exits only once its cancelled task has removed its node-local copy (Ray kills
    # a driver's workers when the driver leaves, which would strand the copy).
    left = {n: sorted(_files(w)) for n, (_, w) in nodes.items() if _files(w)}
    assert not left, (
        f"the cancelled task's files are still on its node after the grid exited: {left}"
    )
    again = subprocess.run(
        [*cmd, "--epochs", str(held + 1), *sets],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr
    assert f"resume ({held}/{held + 1} epochs)" in again.stdout
    assert epoch_of(run) == held + 1
    jobs = json.loads((run / "timings.json").read_text())  # the stopped task, then the resume
    assert [(j["from_epoch"], j["to_epoch"], j["exit_status"]) for j in jobs] == [
        (0, held, "interrupted"),
        (held, held + 1, 0),
    ]
