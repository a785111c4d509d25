"""A run directory's files as they travel between the grid's driver and a Ray task
(``robustsafe.experiments.ray_launcher``): packed for the task, its changes read back as one
consistent snapshot at every finished epoch, and written on the driver all or none."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

# A file bundle: (path relative to the run directory, mtime in ns, contents).
Bundle = list[tuple[str, int, bytes]]


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
