"""Helpers of the reliability suite: tiny runs made through the ``robustsafe`` command."""

from __future__ import annotations

from pathlib import Path

import pytest
from tiny_config import TINY_CLI

from robustsafe.cli import main

TOY = "RobustSafeToyCost-v0"  # registered by tests/conftest.py (in this process only)
TINY = [
    *TINY_CLI,
    "--set",
    "ppo.actor_passes=1",
    "--set",
    "ppo.critic_passes=1",
    "--set",
    "ppo.minibatch_size=null",
    "--no-progress",
]


def cli_train(out: Path, *extra: str, env: str = TOY) -> int:
    """``robustsafe train`` of a tiny run (40 steps an epoch) into ``out``."""
    return main(["train", "--env", env, "--out", str(out), *TINY, *extra])


@pytest.fixture
def cli_run(tmp_path) -> Path:
    """A finished 2-epoch run made by the command line."""
    out = tmp_path / "run"
    assert cli_train(out, "--epochs", "2") == 0
    return out


def one_line_error(err: str) -> bool:
    """True if ``err`` is the command's one-line error (no traceback)."""
    lines = [x for x in err.splitlines() if x.strip()]
    return "Traceback" not in err and len(lines) == 1 and ": error: " in lines[0]
