"""The code stays as docs/development.md asks: `ruff check` and `ruff format --check` pass on the
whole repository (code, tests, benchmarks and the Python blocks in docs/). Formatting differs
between ruff releases, so the format check runs only with the ruff that constraints.txt pins."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff() -> list[str]:
    beside = Path(sys.executable).with_name("ruff")  # the venv's ruff, from the test extra
    if beside.exists():
        return [str(beside)]
    found = shutil.which("ruff")
    if found is None:
        pytest.skip("ruff is not installed (it comes with the test extra)")
    return [found]


def _pinned_version() -> str:
    pins = (ROOT / "constraints.txt").read_text().splitlines()
    return next(line.split("==")[1].strip() for line in pins if line.startswith("ruff=="))


@pytest.mark.parametrize("args", [["check", "."], ["format", "--check", "."]])
def test_ruff_passes(args: list[str]) -> None:
    ruff = _ruff()
    if args[0] == "format":
        version = subprocess.run([*ruff, "--version"], capture_output=True, text=True).stdout
        if version.split()[-1] != _pinned_version():
            pytest.skip(f"{version.strip()} is not the pinned ruff {_pinned_version()}")
    done = subprocess.run([*ruff, *args], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1000:]
