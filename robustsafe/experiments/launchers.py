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

``LocalLauncher``: subprocesses of this process, writing in the run directory itself.

``RayLauncher``: Ray tasks, on any node of a Ray cluster, with no shared disk. The driver
(this process) holds the run directories under the grid's ``--out``; a task never writes there:

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
4. the driver empties the inbox as it polls, writing the files into ``--out`` (atomically,
   with the task's modification times) and appending to the run's log there;
5. the task removes its directory.

So when a node dies mid-run, the driver holds the run as of its last finished epoch (at most
one epoch, plus the one running, is lost) and the grid resumes it with ``--resume`` on
whichever node Ray picks. Concurrency follows the cluster: each task asks Ray for
``cpus_per_run`` CPUs, and ``capacity()`` is the number of such slots over the alive nodes
(``floor(node CPUs / cpus_per_run)`` summed), re-read as nodes join or leave.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

RUN_LOST = -1000  # poll(): the node (or worker) running the command was lost
WORKDIR_ENV = "ROBUSTSAFE_RAY_WORKDIR"  # where a Ray task makes its run directories
# A task's command sees its node-local copy of the run directory; files it writes name the
# driver's run directory instead (``recorded_path``): "NODE_COPY<os.pathsep>DRIVER_RUN_DIR".
RUN_COPY_ENV = "ROBUSTSAFE_RUN_COPY"
RAY_MISSING = (
    "the Ray backend (--backend ray) needs Ray, which is not installed: "
    'pip install "robustsafe[ray]" (or use the default local backend)'
)


def recorded_path(path: str) -> str:
    """``path`` as files and messages should name it: under a Ray task's node-local copy of a
    run directory, the same place in the driver's run directory (the copy is gone after the
    task); elsewhere ``path`` itself."""
    copy, sep, driver = os.environ.get(RUN_COPY_ENV, "").partition(os.pathsep)
    return _relocate(path, copy, driver) if sep and copy else path


# A file bundle: (path relative to the run directory, mtime in ns, contents).
Bundle = list[tuple[str, int, bytes]]


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


# ----------------------------------------------------------------------------- file bundles

_NEVER_SENT = (".lock",)  # the run lock (robustsafe.runstate.LOCK_NAME) stays where it is


def _sendable(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return name not in _NEVER_SENT and not (name.startswith(".") and name.endswith(".tmp"))


def _files(root: Path) -> dict[str, os.stat_result]:
    out: dict[str, os.stat_result] = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if _sendable(rel):
                try:
                    out[rel] = path.stat()
                except FileNotFoundError:  # replaced meanwhile
                    pass
    return out


def pack_run_dir(run_dir: Path, with_state: bool = True) -> Bundle:
    """The files of a run directory to ship to a task: all but the grid's logs (``*.log``
    at the top) and ``checkpoints/`` (agent snapshots, kept on the driver only); without
    ``state.pt`` (the training state, replay buffer included) unless ``with_state``."""
    bundle: Bundle = []
    if not run_dir.is_dir():
        return bundle
    for rel, st in sorted(_files(run_dir).items()):
        top = "/" not in rel
        if rel.startswith("checkpoints/") or (top and rel.endswith(".log")):
            continue
        if rel == "state.pt" and not with_state:
            continue
        try:
            bundle.append((rel, st.st_mtime_ns, (run_dir / rel).read_bytes()))
        except FileNotFoundError:
            pass
    return bundle


def unpack(root: Path, bundle: Bundle) -> None:
    """Write a bundle's files under ``root``, with their modification times, all or none: each
    is written beside its place first, and they are moved in only when every one is written
    (a full disk part-way left a run's metrics.csv ahead of its state.pt, which no resume
    takes). OSError names the file that could not be written."""
    staged: list[tuple[Path, Path]] = []
    try:
        for rel, mtime_ns, data in bundle:
            path = root / rel
            if not path.resolve().is_relative_to(root.resolve()):
                raise ValueError(f"bundle path {rel!r} leaves {root}")
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.sync.tmp")
            staged.append((tmp, path))
            try:
                tmp.write_bytes(data)
                os.utime(tmp, ns=(mtime_ns, mtime_ns))
            except OSError as err:
                raise OSError(err.errno, err.strerror, str(path)) from None
    except BaseException:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        raise
    for tmp, path in staged:
        os.replace(tmp, path)


def _changed(root: Path, seen: dict[str, tuple[int, int]], skip: set[str]) -> Bundle:
    """The files of ``root`` that are new or changed since ``seen`` (updated in place), each
    with the modification time of the very contents read (a file replaced meanwhile is read
    whole, old or new, with its own time)."""
    out: Bundle = []
    for rel, st in sorted(_files(root).items()):
        if rel in skip or seen.get(rel) == (st.st_mtime_ns, st.st_size):
            continue
        try:
            with open(root / rel, "rb") as f:
                st = os.fstat(f.fileno())
                data = f.read()
        except FileNotFoundError:
            continue
        seen[rel] = (st.st_mtime_ns, st.st_size)
        out.append((rel, st.st_mtime_ns, data))
    return out


def _read_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _status_state_mtime(data: bytes | None) -> int | None:
    """The ``state_mtime_ns`` a ``status.json`` names (None if it cannot be read)."""
    try:
        return int(json.loads(data or b"")["state_mtime_ns"])
    except (ValueError, TypeError, KeyError):
        return None


def consistent_changes(
    root: Path,
    seen: dict[str, tuple[int, int]],
    skip: set[str],
    wait: Callable[[], None],
    tries: int = 40,
) -> Bundle:
    """The changes of a run directory that a training writes into, as one consistent
    snapshot: its ``status.json`` names the ``state.pt`` it sends with.

    A training writes an epoch's files (metrics, agents, ``state.pt``) and then
    ``status.json``; the files are read one by one while it goes on, so one reading can
    pair epoch N's ``status.json`` with epoch N+1's ``state.pt``, or send epoch N+1's
    state and status with epoch N's metrics; a driver holding either has lost a metrics
    row when it resumes. The changes are read again (after ``wait()``) until
    ``status.json`` kept its contents during a reading (contents, not modification time:
    two epochs can end within one tick of the file system's clock) and names the
    ``state.pt`` read; after ``tries`` readings, what was read is sent as it is."""
    merged: dict[str, tuple[int, bytes]] = {}
    status = root / "status.json"
    for _ in range(tries):
        before = _read_or_none(status)
        for rel, mtime, data in _changed(root, seen, skip):
            merged[rel] = (mtime, data)
        after = _read_or_none(status)
        if before == after and (
            after is None
            or "state.pt" not in seen
            or _status_state_mtime(after) == seen["state.pt"][0]
        ):
            break
        wait()
    return [(rel, mtime, data) for rel, (mtime, data) in sorted(merged.items())]


# ----------------------------------------------------------------------------- ray


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


def _relocate(arg: str, old: str, new: str) -> str:
    if arg == old:
        return new
    if arg.startswith(old + os.sep):
        return new + arg[len(old) :]
    return arg


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
    reason = ""
    for candidate in dict.fromkeys(hosts):
        try:
            conn = socket.create_connection((candidate, port), timeout=timeout)
        except OSError as err:
            reason = err.strerror or str(err)
            continue
        with conn:
            if _is_grpc_server(conn, timeout):
                return
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


def make_launcher(backend: str, workers: int = 1, cpus_per_run: int = 2) -> Any:
    """The launcher of a backend: ``local`` (``workers`` at a time) or ``ray``."""
    if backend == "ray":
        return RayLauncher(cpus_per_run)
    if backend == "local":
        return LocalLauncher(workers)
    raise ValueError(f"unknown backend {backend!r}")
