"""The grid's Ray backend: each command a Ray task, on any node of a Ray cluster, with no
shared disk (the local backend and the launcher interface: ``robustsafe.experiments.launchers``).

The driver (this process) holds the run directories under the grid's ``--out``; a task never
writes there:

1. the driver ships the run directory (its files, without the grid's logs and without the
   ``checkpoints/`` snapshots, which a resume does not need; an evaluation gets no
   ``state.pt`` either) to the task as a task argument, through Ray's object store;
2. the task unpacks it in a fresh node-local directory (``$ROBUSTSAFE_RAY_WORKDIR`` or the
   node's temporary directory), runs the command there with the paths rewritten, and
3. at each finished epoch (``status.json`` changed) and at the end, sends the files that
   changed (one consistent snapshot: the ``status.json`` sent names the ``state.pt`` sent,
   and no epoch ended while they were read), and the new lines of the command's log, to
   an inbox actor that lives on the driver's node (``ray.get`` in the task waits until
   the inbox holds them);
4. the driver empties the inbox as it polls, writing the files into ``--out`` (each sending
   all or none, with the task's modification times) and appending to the run's log there;
5. the task removes its directory.

So when a node dies mid-run, the driver holds the run as of its last finished epoch (at most
one epoch, plus the one running, is lost) and the grid resumes it with ``--resume`` on
whichever node Ray picks. Concurrency follows the cluster: each task asks Ray for
``cpus_per_run`` CPUs, and ``capacity()`` is the number of such slots over the alive nodes
(``floor(node CPUs / cpus_per_run)`` summed), re-read as nodes join or leave.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from robustsafe.experiments.launchers import (
    RUN_COPY_ENV,
    RUN_LOST,
    _relocate,
    child_env,
    die_with_parent,
    log_header,
)
from robustsafe.experiments.run_bundles import (
    Bundle,
    _files,
    consistent_changes,
    pack_run_dir,
    unpack,
)

WORKDIR_ENV = "ROBUSTSAFE_RAY_WORKDIR"  # where a Ray task makes its run directories
RAY_MISSING = (
    "the Ray backend (--backend ray) needs Ray, which is not installed: "
    'pip install "robustsafe[ray]" (or use the default local backend)'
)


class _Inbox:
    """A Ray actor on the driver's node: what the tasks send, until the driver takes it."""

    def __init__(self) -> None:
        self._items: list[tuple[int, Bundle, bytes]] = []
        self._marks: dict[int, str] = {}  # key -> "started" | "cleaned"
        self._stop: set[int] = set()

    def push(self, key: int, files: Bundle, log: bytes) -> None:
        self._items.append((key, files, log))

    def take(self) -> list[tuple[int, Bundle, bytes]]:
        items, self._items = self._items, []
        return items

    def mark(self, key: int, what: str) -> None:
        self._marks[key] = what

    def marks(self) -> dict[int, str]:
        return dict(self._marks)

    def request_stop(self, key: int) -> None:
        self._stop.add(key)

    def stop_requested(self, key: int) -> bool:
        return key in self._stop


def run_in_task(
    args: list[str],
    run_dir: str,
    log_name: str,
    header: str,
    bundle: Bundle,
    inbox: Any,
    key: int,
    poll_interval: float = 0.25,
    stop_check_interval: float = 1.0,
) -> int:
    """Body of a Ray task: run ``python ARGS`` in a node-local copy of the run directory and
    send its changes to the driver's inbox at every finished epoch and at the end.

    The driver stops a task both ways: ``ray.cancel`` (a KeyboardInterrupt here; the only way
    for a task still waiting to start) and a word in the inbox, read every
    ``stop_check_interval`` s (Ray's interrupt was seen lost on a loaded machine)."""
    import ray

    local: Path | None = None
    proc: subprocess.Popen | None = None
    try:
        ray.get(inbox.mark.remote(key, "started"))  # before anything is on this node's disk
        base = os.environ.get(WORKDIR_ENV) or None
        if base:
            os.makedirs(base, exist_ok=True)
        local = Path(tempfile.mkdtemp(prefix="robustsafe-run-", dir=base))
        unpack(local, bundle)
        del bundle
        seen = {rel: (st.st_mtime_ns, st.st_size) for rel, st in _files(local).items()}
        log_path = local / log_name
        sent = 0

        def send() -> None:
            nonlocal sent
            files = consistent_changes(
                local, seen, {log_name}, wait=lambda: time.sleep(poll_interval)
            )
            with open(log_path, "rb") as f:
                f.seek(sent)
                new = f.read()
            sent += len(new)
            if files or new:
                ray.get(inbox.push.remote(key, files, new))

        with open(log_path, "a") as log:
            log.write(header)
            log.flush()
            proc = subprocess.Popen(
                [sys.executable, *[_relocate(a, run_dir, str(local)) for a in args]],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**child_env(), RUN_COPY_ENV: f"{local}{os.pathsep}{run_dir}"},
                cwd=local,
                preexec_fn=die_with_parent(),
            )
        status = local / "status.json"
        last = None
        next_check = time.monotonic() + stop_check_interval
        while proc.poll() is None:
            time.sleep(poll_interval)
            if time.monotonic() >= next_check:
                next_check = time.monotonic() + stop_check_interval
                if ray.get(inbox.stop_requested.remote(key)):
                    raise KeyboardInterrupt  # as Ray's cancel: clean up, send nothing more
            try:
                now = status.stat().st_mtime_ns
            except FileNotFoundError:
                now = None
            if now != last:  # an epoch ended: state.pt and friends are written
                last = now
                send()
        send()
        return int(proc.returncode)
    finally:
        clean_up(proc, local)
        _report_cleaned(inbox, key)


def _report_cleaned(inbox: Any, key: int, tries: int = 5) -> None:
    """Tell the driver that this task's node-local copy is gone: ``close()`` waits for this
    word, which says exactly that, rather than for the task's end (a task cancelled before it
    started ends without it, and without a copy)."""
    import ray

    for _ in range(tries):
        try:
            ray.get(inbox.mark.remote(key, "cleaned"), timeout=10)
            return
        except KeyboardInterrupt:  # another of Ray's repeated cancels
            continue
        except Exception:  # the driver or its inbox is gone: nobody is waiting
            return


def clean_up(proc: subprocess.Popen | None, local: Path | None, grace: float = 10.0) -> None:
    """Stop ``proc`` (SIGTERM, then SIGKILL after ``grace`` s) and remove ``local``, whatever
    KeyboardInterrupts arrive meanwhile: Ray re-sends a cancel to a task still running after
    Ray's ``cancellation_retry_ms``, which would otherwise abort the clean-up half-way and
    strand the copy on the node's disk."""
    deadline = time.monotonic() + grace
    terminated = False
    while True:
        try:
            if proc is not None and proc.poll() is None:  # cancelled
                if not terminated:
                    proc.terminate()
                    terminated = True
                try:
                    proc.wait(timeout=max(deadline - time.monotonic(), 0.0))
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            if local is not None:
                shutil.rmtree(local, ignore_errors=True)
            return
        except KeyboardInterrupt:
            continue


def check_ray_address(address: str | None, timeout: float = 10.0) -> None:
    """RuntimeError at once if ``address`` (``RAY_ADDRESS``) is a ``host:port`` on which nothing
    answers, or something other than a Ray head's GCS, where ``ray.init`` would retry for
    minutes; other forms (``auto``, unset) pass."""
    if not address:
        return
    where = urllib.parse.urlsplit("//" + address.split("://", 1)[-1])  # host:port, [v6]:port
    try:
        host, port = where.hostname, where.port
    except ValueError:  # a port that is no number: Ray's to judge
        return
    if not host or port is None:
        return
    hosts = [host]
    try:  # Ray connects to this node's address for a loopback one: either may be listening
        from ray._private.services import resolve_ip_for_localhost

        hosts.append(resolve_ip_for_localhost(host))
    except Exception:  # a Ray without it: the address as given
        pass
    reason, answered = "", False
    for candidate in dict.fromkeys(hosts):  # any one that is a gRPC server will do
        try:
            conn = socket.create_connection((candidate, port), timeout=timeout)
        except OSError as err:
            reason = err.strerror or str(err)
            continue
        with conn:
            if _is_grpc_server(conn, timeout):
                return
        answered = True
    if answered:
        raise RuntimeError(
            f"RAY_ADDRESS={address} answers, but not as a Ray cluster's head (its GCS speaks "
            "gRPC): is that the port `ray start --head` printed? Unset RAY_ADDRESS to start "
            "Ray here"
        )
    raise RuntimeError(
        f"cannot reach the Ray cluster at RAY_ADDRESS={address} ({reason}): is its head "
        "running (ray start --head)? Unset RAY_ADDRESS to start Ray here"
    )


# An HTTP/2 client's connection preface and an empty SETTINGS frame (RFC 9113, 3.4 and 6.5)
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def _is_grpc_server(conn: socket.socket, timeout: float) -> bool:
    """Whether the server on ``conn`` answers an HTTP/2 preface with a SETTINGS frame, as a
    gRPC server (Ray's GCS) does at once; another server (a web server, Redis) on the port made
    ``ray.init`` retry for minutes. A cluster with TLS (``RAY_USE_TLS``) is not probed."""
    if os.environ.get("RAY_USE_TLS", "").lower() in ("1", "true"):
        return True
    try:
        conn.settimeout(timeout)
        conn.sendall(_HTTP2_PREFACE)
        head = b""
        while len(head) < 9:
            chunk = conn.recv(9 - len(head))
            if not chunk:
                break
            head += chunk
    except OSError:
        return False
    return len(head) == 9 and head[3] == 4  # frame type 4: SETTINGS


def _keeping_sigterm(fn: Callable[[], Any]) -> Any:
    """Call ``fn`` (``ray.init``) and put back this process's SIGTERM handler, which Ray's
    core worker replaces with its own (log and die): a ``kill`` of the grid must stop its
    tasks as Ctrl-C does (the grid's handler raises KeyboardInterrupt)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return fn()
    previous = signal.getsignal(signal.SIGTERM)
    try:
        return fn()
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


class RayTask:
    def __init__(self, launcher: RayLauncher, ref: Any, key: int, log_path: Path) -> None:
        self._launcher, self._ref, self._key, self._log_path = launcher, ref, key, log_path

    def poll(self) -> int | None:
        ray = self._launcher.ray
        ready, _ = ray.wait([self._ref], timeout=0)
        self._launcher.drain(force=bool(ready))
        if not ready:
            return None
        self._launcher.forget(self._key)
        try:
            return int(ray.get(self._ref))
        except ray.exceptions.RayTaskError as err:  # the task's own code failed
            with open(self._log_path, "a") as log:
                log.write(f"[grid] the Ray task failed: {err}\n")
            return -1
        except ray.exceptions.RayError as err:  # its worker or node was lost
            with open(self._log_path, "a") as log:
                log.write(f"[grid] the Ray task was lost: {type(err).__name__}: {err}\n")
            self._launcher.capacity(refresh=True)  # the node may be gone: count again
            return RUN_LOST

    def stop(self) -> None:
        try:
            self._launcher.request_stop(self._key)  # read by the running task
            self._launcher.ray.cancel(self._ref)  # KeyboardInterrupt in the task: it cleans up
            self._launcher.forget(self._key)  # what it sent before
            self._launcher.stopped[self._key] = self._ref  # close() waits for its clean-up
        except Exception:  # the cluster is gone: nothing more to save
            pass


class RayLauncher:
    """Ray tasks of ``cpus_per_run`` CPUs each, with no shared disk (see the module doc)."""

    def __init__(self, cpus_per_run: int = 2, drain_interval: float = 1.0) -> None:
        try:
            import ray
        except ImportError:
            raise RuntimeError(RAY_MISSING) from None
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        if not ray.is_initialized():
            check_ray_address(os.environ.get("RAY_ADDRESS"))
            _keeping_sigterm(ray.init)  # connects to RAY_ADDRESS if set, else starts one here
        self.ray = ray
        self.cpus_per_run = cpus_per_run
        self.drain_interval = drain_interval
        here = ray.get_runtime_context().get_node_id()
        self._inbox = (
            ray.remote(_Inbox)
            .options(
                num_cpus=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=False),
            )
            .remote()
        )
        self._task = ray.remote(run_in_task).options(num_cpus=cpus_per_run, max_retries=0)
        self._targets: dict[int, tuple[Path, Path]] = {}  # key -> (run dir, log)
        self.stopped: dict[int, Any] = {}  # cancelled tasks, by key: cleaning up on their nodes
        self._next_key = 0
        self._last_drain = 0.0
        self._capacity: tuple[float, int] | None = None
        if self.capacity() == 0:
            raise RuntimeError(
                f"no alive node of the Ray cluster has {cpus_per_run} CPUs for a run; "
                "lower --cpus-per-run or add nodes (an autoscaling cluster: min_workers >= 1)"
            )

    def capacity(self, refresh: bool = False) -> int:
        """Runs that fit at once on the alive nodes (re-read every 5 s, or now with
        ``refresh``; 0 while none)."""
        now = time.monotonic()
        if refresh or self._capacity is None or now - self._capacity[0] > 5.0:
            slots = sum(
                int(n.get("Resources", {}).get("CPU", 0) // self.cpus_per_run)
                for n in self.ray.nodes()
                if n.get("Alive")
            )
            self._capacity = (now, slots)
        return self._capacity[1]

    def start(self, args: Sequence[str], log_path: Path, run_dir: Path) -> RayTask:
        key = self._next_key
        self._next_key += 1
        run_dir, log_path = Path(run_dir), Path(log_path)
        if not log_path.parent.resolve().is_relative_to(run_dir.resolve()):
            raise ValueError(f"the log {log_path} is not in the run directory {run_dir}")
        self._targets[key] = (run_dir, log_path)
        ref = self._task.remote(
            list(args),
            str(run_dir),
            log_path.resolve().relative_to(run_dir.resolve()).as_posix(),
            log_header(args),
            pack_run_dir(run_dir, with_state=list(args[2:3]) == ["train"]),
            self._inbox,
            key,
        )
        return RayTask(self, ref, key, log_path)

    def drain(self, force: bool = False) -> None:
        """Write what the tasks sent into the driver's run directories."""
        now = time.monotonic()
        if not force and now - self._last_drain < self.drain_interval:
            return
        self._last_drain = now
        for key, files, log in self.ray.get(self._inbox.take.remote()):
            target = self._targets.get(key)
            if target is None:
                continue  # a stopped task's last words
            run_dir, log_path = target
            try:
                unpack(run_dir, files)
                if log:
                    with open(log_path, "ab") as f:
                        f.write(log)
            except OSError as err:
                where = f" ({err.filename})" if err.filename else ""
                raise RuntimeError(
                    f"cannot write a run's results into {run_dir}: "
                    f"{err.strerror or err}{where}; the run keeps its last complete epoch "
                    "there: free the space (or make the folder writable) and run the same grid "
                    "command again to resume"
                ) from None

    def request_stop(self, key: int) -> None:
        self.ray.get(self._inbox.request_stop.remote(key))

    def forget(self, key: int) -> None:
        self.drain(force=True)
        self._targets.pop(key, None)

    def close(self, cleanup_timeout: float = 60.0) -> None:
        """Collect what the tasks sent, and wait (at most ``cleanup_timeout`` s) for cancelled
        tasks to remove their node-local copies: Ray kills a driver's workers when the driver
        exits, and a worker killed before its clean-up leaves its copy on the node's disk."""
        try:
            self.drain(force=True)
            deadline = time.monotonic() + cleanup_timeout
            waiting = dict(self.stopped)
            while waiting and time.monotonic() < deadline:
                refs = list(waiting.values())
                ended, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0)
                marks = self.ray.get(self._inbox.marks.remote())  # after: a task marks first
                for key, ref in list(waiting.items()):
                    # cleaned; or cancelled before it started: nothing of it on any disk
                    if marks.get(key) == "cleaned" or (key not in marks and ref in ended):
                        del waiting[key]
                if waiting:
                    time.sleep(0.1)
            if self.stopped:  # and the tasks' last words, so that no worker dies mid-sentence
                left = max(deadline - time.monotonic(), 0.0)
                refs = list(self.stopped.values())
                self.ray.wait(refs, num_returns=len(refs), timeout=min(left, 10.0))
            self.ray.kill(self._inbox)
        except Exception:
            pass
