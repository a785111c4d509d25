"""Which code produced a result: RobustSafe's version, the git commit of the checkout it runs
from (and whether the package's files differ from that commit), and the versions of the
libraries the numbers depend on, and the processor they ran on: the same seed gives the same
numbers on the same kind of machine only (a simulator's and PyTorch's floating point differ in the
last bits from one CPU to another, and a chaotic task amplifies that; docs/guarantees.md).

Every run directory records it in ``provenance.json``, one entry per start or resume (a run
resumed under other code says so), and every evaluation file under ``code``. The commit is
read only where the package's own files are tracked by git (an editable install from a
clone); installed from a wheel, ``commit`` is None and the version says which release it is.
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib.metadata
import json
import platform
import subprocess
from pathlib import Path
from typing import Any

from robustsafe import __version__
from robustsafe.files import read_text_file, write_text_atomic

PACKAGE_DIR = Path(__file__).resolve().parent
LIBRARIES = ("torch", "numpy", "gymnasium", "bullet-safety-gym")
PROVENANCE_NAME = "provenance.json"


def _git(directory: Path, *args: str) -> str | None:
    """``git -C DIRECTORY ARGS`` output, or None where git is missing or fails."""
    try:
        done = subprocess.run(
            ["git", "-C", str(directory), *args],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


def _library_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    """The processor's model name (Linux: the first ``model name`` of ``cpuinfo``; elsewhere
    ``platform.processor()``), or None where neither says."""
    try:
        for line in cpuinfo.read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or None


# Vector instruction sets that change which floating-point kernels run, widest first (x86,
# then ARM).
_SIMD = ("avx512f", "avx2", "avx", "sse4_2", "sve2", "sve", "asimd", "neon")
# The fields that name a processor: x86 (vendor, family, model, stepping), then ARM.
_KIND_FIELDS = (
    ("", "vendor_id"),
    ("family ", "cpu family"),
    ("model ", "model"),
    ("stepping ", "stepping"),
    ("implementer ", "CPU implementer"),
    ("part ", "CPU part"),
    ("variant ", "CPU variant"),
    ("revision ", "CPU revision"),
)


def cpu_kind(cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    """The processor's vendor, family, model and stepping (ARM: implementer, part, variant,
    revision) and its widest vector instruction set, from the first value of each field in
    ``cpuinfo`` (Linux), e.g. ``AuthenticAMD family 26 model 2 stepping 1, avx512f``: a
    virtual machine's model name ("AMD EPYC") may name processors that give other numbers.
    None where ``cpuinfo`` says none of these (other kernels' formats are not read)."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return None
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    words = [label + fields[key] for label, key in _KIND_FIELDS if fields.get(key)]
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    simd = next((s for s in _SIMD if s in flags), None)
    if not words and simd is None:
        return None
    return ", ".join(x for x in (" ".join(words), simd) if x)


def git_state(package_dir: Path) -> tuple[str | None, bool | None]:
    """(commit, modified) of the git checkout that tracks ``package_dir/__init__.py``:
    ``modified`` is whether the package's tracked files differ from the commit. (None, None)
    where git does not track the package (a wheel install, no git)."""
    if _git(package_dir, "ls-files", "--error-unmatch", "__init__.py") is None:
        return None, None
    commit = _git(package_dir, "rev-parse", "HEAD")
    if not commit:
        return None, None
    status = _git(package_dir, "status", "--porcelain", "--untracked-files=no", "--", ".")
    return commit, None if status is None else bool(status)


@functools.cache
def code_version() -> dict[str, Any]:
    """The code this process runs (read once per process)."""
    commit, modified = git_state(PACKAGE_DIR)
    info: dict[str, Any] = {
        "robustsafe": __version__,
        "commit": commit,
        "modified": modified,
        "python": platform.python_version(),
        "machine": platform.machine() or None,
        "cpu": cpu_model(),
        "cpu_kind": cpu_kind(),
    }
    info.update({name: _library_version(name) for name in LIBRARIES})
    return info


def record_start(run_dir: Path, start_epoch: int) -> None:
    """Append this process's code to ``run_dir/provenance.json`` as the start (``start_epoch``
    0) or resume of the run; a fresh start replaces what an earlier run there wrote."""
    path = Path(run_dir) / PROVENANCE_NAME
    starts: list[dict[str, Any]] = []
    if start_epoch > 0 and path.exists():
        try:
            loaded = json.loads(read_text_file(path))
            starts = [s for s in loaded.get("starts", []) if isinstance(s, dict)]
        except (OSError, ValueError, AttributeError):
            starts = []  # damaged: begin again rather than lose the run
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    starts.append({"start_epoch": start_epoch, "time": now, **code_version()})
    write_text_atomic(path, json.dumps({"starts": starts}, indent=2) + "\n")
