"""The launchers' file shipping (no Ray needed): what travels to a task and back."""

from __future__ import annotations

import contextlib
import json
import os

import pytest

from robustsafe.experiments import run_bundles
from robustsafe.experiments.launchers import LocalLauncher, _relocate, make_launcher
from robustsafe.experiments.run_bundles import (
    _changed,
    _files,
    consistent_changes,
    pack_run_dir,
    unpack,
)


def test_pack_unpack_and_changes(tmp_path):
    run = tmp_path / "run"
    (run / "tb").mkdir(parents=True)
    (run / "checkpoints").mkdir()
    for name, data in {
        "config.yaml": b"a: 1\n",
        "state.pt": b"\x00state",
        "tb/events.1": b"ev",
        "checkpoints/agent_epoch_0001.pt": b"ck",
        "train.log": b"log",
        ".lock": b"123",
        ".agent.pt.tmp": b"partial",
    }.items():
        (run / name).write_bytes(data)
    os.utime(run / "state.pt", ns=(1_234_567_891_234_567_891, 1_234_567_891_234_567_891))
    bundle = pack_run_dir(run)
    assert [rel for rel, _, _ in bundle] == ["config.yaml", "state.pt", "tb/events.1"]
    assert [rel for rel, _, _ in pack_run_dir(run, with_state=False)] == [
        "config.yaml",
        "tb/events.1",
    ]
    copy = tmp_path / "copy"
    unpack(copy, bundle)
    assert (copy / "state.pt").read_bytes() == b"\x00state"
    assert (copy / "state.pt").stat().st_mtime_ns == 1_234_567_891_234_567_891  # exact
    assert (copy / "tb" / "events.1").read_bytes() == b"ev"
    with pytest.raises(ValueError, match="leaves"):
        unpack(copy, [("../outside", 0, b"x")])

    seen = {rel: (st.st_mtime_ns, st.st_size) for rel, st in _files(copy).items()}
    assert _changed(copy, seen, set()) == []
    (copy / "metrics.csv").write_text("epoch\n1\n")
    (copy / "state.pt").write_bytes(b"new state")
    (copy / "train.log").write_text("not sent as a file")
    changed = _changed(copy, seen, {"train.log"})
    assert [rel for rel, _, _ in changed] == ["metrics.csv", "state.pt"]
    assert _changed(copy, seen, {"train.log"}) == []


def _epoch_files(run, epoch: int, status: bool = True) -> None:
    """What a training writes at the end of an epoch, in its order: metrics row, state,
    then status.json naming the state's mtime."""
    with open(run / "metrics.csv", "a") as f:
        f.write(f"{epoch}\n")
    tmp = run / ".state.pt.tmp"
    tmp.write_bytes(f"state {epoch}".encode())
    os.utime(tmp, ns=(epoch * 10**9, epoch * 10**9))  # distinct mtimes, however fast
    os.replace(tmp, run / "state.pt")
    if status:
        _status_file(run, epoch)


def _status_file(run, epoch: int) -> None:
    mtime = (run / "state.pt").stat().st_mtime_ns
    (run / "status.json").write_text(json.dumps({"epoch": epoch, "state_mtime_ns": mtime}))


def _sent(bundle) -> dict[str, bytes]:
    return {rel: data for rel, _, data in bundle}


def test_a_sending_never_pairs_a_status_with_a_later_state(tmp_path):
    """The interleaving that lost a metrics row: the sender reads epoch 2's state.pt before
    the training wrote epoch 2's status.json. It must wait for the status, not send epoch 1's
    status with epoch 2's state."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.csv").write_text("epoch\n")
    _epoch_files(run, 1)
    seen: dict[str, tuple[int, int]] = {}
    first = consistent_changes(run, seen, set(), wait=lambda: pytest.fail("no wait needed"))
    assert _sent(first)["state.pt"] == b"state 1"
    assert json.loads(_sent(first)["status.json"])["epoch"] == 1

    _epoch_files(run, 2, status=False)  # state.pt written, status.json not yet
    waits = []

    def wait() -> None:
        waits.append(1)
        _status_file(run, 2)  # the training goes on

    bundle = _sent(consistent_changes(run, seen, set(), wait=wait))
    assert len(waits) == 1
    assert bundle["state.pt"] == b"state 2"
    assert json.loads(bundle["status.json"])["epoch"] == 2
    assert bundle["metrics.csv"] == b"epoch\n1\n2\n"


def test_a_sending_reads_again_when_an_epoch_ends_during_it(tmp_path, monkeypatch):
    """A whole epoch ends between the reading of metrics.csv and that of state.pt: state
    and status agree, but the metrics sent lack the new row. The sender sees status.json
    change during its reading and reads again."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.csv").write_text("epoch\n")
    _epoch_files(run, 1)
    seen: dict[str, tuple[int, int]] = {}
    consistent_changes(run, seen, set(), wait=lambda: None)
    _epoch_files(run, 2)
    opened = []

    def open_during_an_epoch(path, mode="r"):
        if path.name == "state.pt" and "state.pt" not in opened:
            _epoch_files(run, 3)
        opened.append(path.name)
        return open(path, mode)

    monkeypatch.setattr(run_bundles, "open", open_during_an_epoch, raising=False)
    bundle = _sent(consistent_changes(run, seen, set(), wait=lambda: None))
    assert opened.count("metrics.csv") == 2  # read again
    assert bundle["state.pt"] == b"state 3"
    assert json.loads(bundle["status.json"])["epoch"] == 3
    assert bundle["metrics.csv"] == b"epoch\n1\n2\n3\n"


def test_relocate_and_local_launcher(tmp_path):
    old = str(tmp_path / "out" / "run")
    assert _relocate(old, old, "/node/x") == "/node/x"
    assert _relocate(old + os.sep + "eval.json", old, "/node/x") == "/node/x/eval.json"
    assert _relocate(old + "2", old, "/node/x") == old + "2"
    assert _relocate("--out", old, "/node/x") == "--out"
    launcher = make_launcher("local", workers=3)
    assert isinstance(launcher, LocalLauncher) and launcher.capacity() == 3
    with pytest.raises(ValueError, match="unknown backend"):
        make_launcher("dask")


# the frame a gRPC server sends first: an (empty) HTTP/2 SETTINGS frame
_SETTINGS = bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


@contextlib.contextmanager
def _server(family: int, host: str, reply: bytes | None, port: int = 0):
    """A listening port whose server answers each connection with ``reply`` (None: silence);
    yields the port."""
    import socket
    import threading

    listening = socket.socket(family)
    listening.bind((host, port))
    listening.listen()
    listening.settimeout(0.2)
    stop = threading.Event()
    held = []

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listening.accept()
            except OSError:
                continue
            held.append(conn)
            if reply is not None:
                conn.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listening.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        listening.close()


def test_an_unreachable_ray_address_is_refused_at_once(tmp_path):
    """ray.init retries an address where nothing listens, or where something other than Ray's
    GCS does, for minutes; the grid says so in one line within seconds, and lets through a gRPC
    server and what it cannot judge (auto)."""
    import socket
    import subprocess
    import sys
    import time

    from robustsafe.experiments.ray_launcher import check_ray_address

    with _server(socket.AF_INET, "127.0.0.1", _SETTINGS) as port:  # answers as gRPC does
        for ok in (None, "", "auto", f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
            check_ray_address(ok, timeout=5.0)
    with pytest.raises(RuntimeError, match=f"cannot reach the Ray cluster at .*:{port}"):
        check_ray_address(f"127.0.0.1:{port}")  # closed now
    # something else on the port (a web server; one that says nothing): ray.init retried for
    # minutes; refused in one line, at once or after the timeout
    for reply in (b"HTTP/1.1 400 Bad Request\r\n\r\n", None):
        with _server(socket.AF_INET, "127.0.0.1", reply) as other:
            start = time.monotonic()
            with pytest.raises(RuntimeError, match="answers, but not as a Ray cluster's head"):
                check_ray_address(f"127.0.0.1:{other}", timeout=1.0)
            assert time.monotonic() - start < 5
    if socket.has_ipv6:  # the bracketed form Ray accepts for an IPv6 head
        try:
            with _server(socket.AF_INET6, "::1", _SETTINGS) as v6:
                check_ray_address(f"[::1]:{v6}", timeout=5.0)
        except OSError:  # no IPv6 loopback here
            pass
    pytest.importorskip("ray")
    env = {**os.environ, "RAY_ADDRESS": f"127.0.0.1:{port}"}
    cmd = [sys.executable, "-m", "robustsafe.cli", "grid", "--backend", "ray", "--envs"]
    cmd += ["SafetyCarRun-v0", "--epochs", "1", "--no-eval", "--out", str(tmp_path / "g")]
    start = time.monotonic()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and time.monotonic() - start < 60
    last = [x for x in done.stderr.splitlines() if x.strip()][-1]  # after any Ray warning
    assert "Traceback" not in done.stderr, done.stderr
    assert last.startswith("robustsafe grid: error: cannot reach the Ray cluster"), last
    assert not (tmp_path / "g").exists()  # refused before --out was made


_PESTERED_CLEAN_UP = """
import _thread, signal, subprocess, sys, threading, time
from pathlib import Path
from robustsafe.experiments.ray_launcher import clean_up

local = Path(sys.argv[1])
slow_exit = (
    "import signal, sys, time; "
    "signal.signal(signal.SIGTERM, lambda *a: (time.sleep(1.5), sys.exit(1))); "
    "print('ready', flush=True); time.sleep(600)"
)
child = subprocess.Popen([sys.executable, "-c", slow_exit], stdout=subprocess.PIPE)
child.stdout.readline()
done = threading.Event()
interrupts = []


def pester():  # what Ray does to a task it cancelled that is still running
    while not done.wait(0.2):
        interrupts.append(1)
        _thread.interrupt_main()


threading.Thread(target=pester, daemon=True).start()
try:
    clean_up(child, local)
    print("returned", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
finally:
    done.set()
try:
    time.sleep(0.5)  # a last interrupt already on its way lands here
except KeyboardInterrupt:
    pass
print(f"interrupts {len(interrupts)} child {child.poll()} copy {local.exists()}", flush=True)
"""


def test_a_stopped_tasks_clean_up_survives_repeated_cancels(tmp_path):
    """Ray re-sends the cancel (a KeyboardInterrupt) to a task still running: the clean-up
    goes on through them, waits for the program to end and removes the node-local copy."""
    import subprocess
    import sys

    local = tmp_path / "robustsafe-run-x"
    (local / "tb").mkdir(parents=True)
    (local / "train.log").write_text("log\n")
    out = subprocess.run(
        [sys.executable, "-c", _PESTERED_CLEAN_UP, str(local)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = out.stdout.split()
    assert "returned" in lines, out.stdout + out.stderr
    counts = out.stdout.strip().splitlines()[-1].split()
    assert int(counts[1]) >= 3, f"too few interrupts to test anything: {out.stdout}"
    assert counts[3] == "1", f"the program was not left to end on SIGTERM: {out.stdout}"
    assert counts[5] == "False", f"the copy is still on the node: {out.stdout}"


def test_a_bundle_is_written_all_or_none(tmp_path, monkeypatch):
    """A full disk while the driver wrote a two-epoch bundle left metrics.csv (written first,
    by name) ahead of state.pt, which no resume of the run takes, and a half-written temporary
    file; the error named no file. Now nothing of the bundle lands, the driver's run keeps its
    last complete epoch, and the grid's error names the file and says how to go on."""
    import errno
    import types
    from pathlib import Path

    from robustsafe.experiments.ray_launcher import RayLauncher

    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.csv").write_text("epoch\n1\n")
    (run / "state.pt").write_bytes(b"epoch 1")
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    bundle = [("metrics.csv", 1, b"epoch\n1\n2\n3\n"), ("state.pt", 2, b"epoch 3")]
    real_write = Path.write_bytes

    def full_disk_at_state(self, data):
        if self.name.startswith(".state.pt"):
            real_write(self, data[:3])  # part of it, as a full disk leaves
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        return real_write(self, data)

    monkeypatch.setattr(Path, "write_bytes", full_disk_at_state)
    with pytest.raises(OSError) as caught:
        unpack(run, bundle)
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(run / "state.pt")
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before  # no temporary file left
    # the driver's drain says it in one line (a RuntimeError: the grid's one-line error)
    launcher = RayLauncher.__new__(RayLauncher)
    launcher.ray = types.SimpleNamespace(get=lambda refs: refs)
    items = [(0, bundle, b"[log]\n")]
    launcher._inbox = types.SimpleNamespace(take=types.SimpleNamespace(remote=lambda: items))
    launcher._targets = {0: (run, run / "train.log")}
    launcher.drain_interval, launcher._last_drain = 0.0, 0.0
    with pytest.raises(RuntimeError) as caught:
        launcher.drain(force=True)
    message = str(caught.value)
    assert "\n" not in message and str(run / "state.pt") in message
    assert "run the same grid command again to resume" in message
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before
    monkeypatch.setattr(Path, "write_bytes", real_write)
    launcher.drain(force=True)  # space again: the bundle lands whole
    assert (run / "state.pt").read_bytes() == b"epoch 3"
    assert (run / "metrics.csv").read_bytes() == b"epoch\n1\n2\n3\n"
    assert (run / "train.log").read_bytes() == b"[log]\n"


def test_the_grid_lock_does_not_hide_the_error_that_ended_the_grid(tmp_path, monkeypatch):
    """A folder turned read-only mid-grid: the lock's release failed too, and its error
    (naming .grid.lock) replaced the one that stopped the grid."""
    import errno
    import os

    from robustsafe.experiments.grid.driver import _grid_lock

    real_truncate, read_only = os.ftruncate, []

    def truncate(fd, length):
        if read_only:
            raise OSError(errno.EROFS, "Read-only file system")
        return real_truncate(fd, length)

    monkeypatch.setattr(os, "ftruncate", truncate)
    with pytest.raises(RuntimeError, match="cannot write a run's results"):
        with _grid_lock(tmp_path):
            read_only.append(True)
            raise RuntimeError("cannot write a run's results into ...")
    read_only.clear()
    with pytest.raises(OSError, match="Read-only"):  # with nothing in flight, it is reported
        with _grid_lock(tmp_path / "other"):
            read_only.append(True)


def test_files_a_task_writes_name_the_drivers_run_directory(monkeypatch):
    """eval.json's "agent" named the task's node-local copy, deleted when the task ended."""
    from robustsafe.experiments.launchers import RUN_COPY_ENV, recorded_path

    copy, driver = os.path.join("/node", "robustsafe-run-x"), os.path.join("/out", "seed0")
    monkeypatch.delenv(RUN_COPY_ENV, raising=False)
    assert recorded_path(copy) == copy
    monkeypatch.setenv(RUN_COPY_ENV, copy + os.pathsep + driver)
    assert recorded_path(copy) == driver
    assert recorded_path(os.path.join(copy, "agent.pt")) == os.path.join(driver, "agent.pt")
    assert recorded_path(copy + "2") == copy + "2"  # another folder


def test_either_address_of_a_local_head_will_do(monkeypatch):
    """For a loopback RAY_ADDRESS Ray also connects to this node's own address; the check
    refused on the first address that answered without gRPC, never trying the other."""
    import socket

    services = pytest.importorskip("ray._private.services")
    from robustsafe.experiments.ray_launcher import check_ray_address

    monkeypatch.setattr(services, "resolve_ip_for_localhost", lambda host: "127.0.0.2")
    with _server(socket.AF_INET, "127.0.0.1", b"-ERR unknown command\r\n") as port:
        try:
            other = _server(socket.AF_INET, "127.0.0.2", _SETTINGS, port=port)
            other.__enter__()
        except OSError:
            pytest.skip("no second loopback address here")
        try:
            check_ray_address(f"127.0.0.1:{port}", timeout=2.0)  # the head on 127.0.0.2: passes
        finally:
            other.__exit__(None, None, None)
        with pytest.raises(RuntimeError, match="answers, but not as a Ray cluster's head"):
            check_ray_address(f"127.0.0.1:{port}", timeout=1.0)  # only Redis-like left
