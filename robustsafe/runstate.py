"""Safe files for a run directory: the training state, version-tagged torch files, the run lock.

The training state (``state.pt``) holds optimisers, the replay buffer, random-generator states
and counters. It is written with ``torch.save`` and read back only with ``torch.load(...,
weights_only=True)``, which rebuilds tensors and plain containers and never runs code from the
file. Numpy arrays, numpy scalars and bytes are stored as tagged dicts holding their raw bytes
as a uint8 tensor (with dtype and shape); Python ints of any size (PCG64 states hold 128-bit
ints), floats, str, bool, None, tensors, dicts, lists and tuples are stored as they are. The
encoding is generic: any new field made of these types round-trips without a change here.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import pickle
import warnings
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from robustsafe.files import write_bytes_atomic

STATE_FORMAT = "robustsafe-train-state"
STATE_VERSION = 2  # version 1 was a plain pickle, which cannot be loaded safely
_NDARRAY = "__robustsafe_ndarray__"
_NPSCALAR = "__robustsafe_npscalar__"
_BYTES = "__robustsafe_bytes__"
_TAGS = (_NDARRAY, _NPSCALAR, _BYTES)
LOCK_NAME = ".lock"


class StateFileError(ValueError):
    """A state file that is damaged, foreign, or from an older RobustSafe."""


class RunLockedError(RuntimeError):
    """Another live process holds the lock (of a run directory, or of a grid's folder)."""

    def __init__(self, message: str, owner: str = "unknown") -> None:
        super().__init__(message)
        self.owner = owner  # the holder's PID, as its lock file says


# ----------------------------------------------------------------------------- encoding


def _encode(obj: Any) -> Any:
    import torch  # (here, not at the top: the CLI and env workers import this module)

    if isinstance(obj, np.ndarray | np.generic):
        arr = np.asarray(obj)
        if arr.dtype.hasobject:
            raise TypeError("numpy arrays of Python objects cannot be stored safely")
        tag = _NPSCALAR if isinstance(obj, np.generic) else _NDARRAY
        # raw bytes as a uint8 tensor: an empty ``bytes`` would pickle as a call to bytes()
        raw = torch.from_numpy(np.frombuffer(arr.tobytes(), dtype=np.uint8).copy())
        return {tag: arr.dtype.str, "shape": list(arr.shape), "data": raw}
    if isinstance(obj, bytes):  # as a tensor: an empty ``bytes`` pickles as a call to bytes()
        return {_BYTES: torch.from_numpy(np.frombuffer(obj, dtype=np.uint8).copy())}
    if isinstance(obj, dict):
        if any(tag in obj for tag in _TAGS):
            raise TypeError(f"dict keys {', '.join(_TAGS)} are reserved")
        return {k: _encode(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_encode(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_encode(v) for v in obj)
    if obj is None or isinstance(obj, bool | int | float | str | torch.Tensor):
        return obj
    raise TypeError(f"cannot store a {type(obj).__name__} in a training state")


def _decode(obj: Any) -> Any:
    if isinstance(obj, dict):
        if _BYTES in obj:
            return obj[_BYTES].numpy().tobytes()
        for tag in (_NDARRAY, _NPSCALAR):
            if tag in obj:
                raw = obj["data"].numpy().tobytes()
                arr = np.frombuffer(raw, dtype=np.dtype(obj[tag]))
                arr = arr.reshape(obj["shape"]).copy()  # writable, own memory
                return arr[()] if tag == _NPSCALAR else arr
        return {k: _decode(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_decode(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_decode(v) for v in obj)
    return obj


def torch_bytes(obj: Any) -> bytes:
    """``obj`` serialised by ``torch.save``, in memory (so that write errors are real OSErrors)."""
    import torch

    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def atomic_torch_save(obj: Any, path: Path) -> None:
    """Write ``obj`` to ``path`` so that a crash never leaves a half-written file there."""
    write_bytes_atomic(Path(path), torch_bytes(obj))


def save_state(path: str | Path, obj: Any) -> None:
    """Write a training state (nested containers of tensors, numpy arrays and plain values)."""
    payload = {"format": STATE_FORMAT, "version": STATE_VERSION, "state": _encode(obj)}
    atomic_torch_save(payload, path)


def load_state(path: str | Path) -> Any:
    """Read a training state written by ``save_state``; never executes code from the file.

    Raises StateFileError (one line, naming the file) for a damaged, foreign or old file.
    """
    path = Path(path)
    data = load_tagged(
        path,
        STATE_FORMAT,
        STATE_VERSION,
        "training state",
        StateFileError,
        ", or written by an older RobustSafe",
    )
    try:
        return _decode(data["state"])
    except (KeyError, TypeError, ValueError) as err:
        raise StateFileError(f"{path}: damaged training state ({err})") from None


def load_tagged(
    path: Path,
    fmt: str,
    version: int,
    what: str,
    error: type[Exception] = ValueError,
    hint: str = "",
) -> dict[str, Any]:
    """The dict of a file ``torch.save`` wrote with ``"format": fmt`` and ``"version": version``
    (``safe_torch_load``: never runs code from the file). ``error``, one line naming the file and
    ``what`` it should be (then ``hint``), for a damaged or foreign file or another version;
    FileNotFoundError as it is."""
    try:
        data = safe_torch_load(path)
    except FileNotFoundError:
        raise
    except Exception as err:
        raise error(
            f"cannot read {what} {path}: damaged, or not a RobustSafe {what}{hint} "
            f"({load_error_reason(err)})"
        ) from None
    if not isinstance(data, dict) or data.get("format") != fmt:
        raise error(f"{path} is not a RobustSafe {what}{hint}")
    if data.get("version") != version:
        raise error(
            f"{path} has {what} version {data.get('version')}; this RobustSafe reads version "
            f"{version}"
        )
    return data


def safe_torch_load(path: Path) -> Any:
    """``torch.load`` of tensors and plain values only, without torch's warnings on stderr.
    A file that is not ``torch.save``'s zip archive (truncated, damaged, text) is a ValueError
    that says so, rather than the unpickler's puzzle."""
    import torch

    if Path(path).is_file() and not zipfile.is_zipfile(path):
        raise ValueError("not a file written by torch.save: truncated, damaged or another format")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. about the pickle protocol of a foreign file
        return torch.load(path, map_location="cpu", weights_only=True)


def load_error_reason(err: BaseException) -> str:
    """Why ``safe_torch_load`` failed, in words for the user (torch's own message advises
    loading with ``weights_only=False``, which would run the file's code)."""
    if isinstance(err, pickle.UnpicklingError) and "weights only" in str(err).lower():
        return "not only tensors and plain values: such a file is never loaded, it could run code"
    return first_line(err)


def first_line(err: BaseException, limit: int = 200) -> str:
    """The first line of an exception's message (torch's load errors span many lines)."""
    text = str(err).strip()
    return text.splitlines()[0][:limit] if text else type(err).__name__


def clean_temp_files(run_dir: Path) -> list[Path]:
    """Remove the ``.NAME*.tmp`` files an interrupted atomic write left; returns them.

    Call only while holding the run lock: a live writer's temporary file must not vanish.
    """
    removed = []
    for folder in (run_dir, run_dir / "checkpoints"):
        if folder.is_dir():
            for tmp in folder.glob(".*.tmp"):
                if tmp.is_file():
                    tmp.unlink()
                    removed.append(tmp)
    return removed


# ----------------------------------------------------------------------------- lock


@contextmanager
def run_lock(run_dir: Path, name: str = LOCK_NAME) -> Iterator[None]:
    """Hold the exclusive lock of ``run_dir`` (file ``name``, holding the owner's PID; the
    grid's folder uses ``.grid.lock``).

    The lock is an ``flock`` on that file: the kernel drops it when its owner dies, even by
    ``kill -9``, so a stale lock (owner gone) is taken over without any cleanup, and a PID
    reused by another program holds nothing. While the owner lives, a second writer gets
    RunLockedError naming the owner's PID. An error in flight is never replaced by one of
    the lock's own (a folder turned read-only).
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(run_dir / name, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _lock_or_raise(fd, run_dir, name)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        try:
            yield
        except BaseException:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            raise
        os.ftruncate(fd, 0)  # no PID: nobody holds it
    finally:
        os.close(fd)  # releases the flock


def check_unlocked(run_dir: Path, name: str = LOCK_NAME) -> None:
    """RunLockedError if another process holds the lock ``name`` of ``run_dir`` now (the lock
    is held only for the check)."""
    try:
        fd = os.open(run_dir / name, os.O_RDWR)
    except OSError:
        return  # never locked (or no directory: the caller's next check says so)
    try:
        _lock_or_raise(fd, run_dir, name)  # closing the file below releases it again
    finally:
        os.close(fd)


def _lock_or_raise(fd: int, run_dir: Path, name: str) -> None:
    """Take the flock of the open lock file ``fd``; RunLockedError naming the owner if held."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        owner = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
        raise RunLockedError(
            f"{run_dir} is being written by another process (PID {owner}, lock file "
            f"{run_dir / name}); wait for it to finish or stop it",
            owner,
        ) from None
