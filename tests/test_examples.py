"""Every worked example in examples/ runs (tiny sizes through environment variables)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TINY = {"EXAMPLE_EPISODES": "2", "EXAMPLE_CRITIC_STEPS": "1000", "EXAMPLE_TRAIN_STEPS": "1024"}


def _run(name: str, tmp_path: Path, **extra: str) -> str:
    env = {**os.environ, **TINY, **extra}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.slow
def test_attack_torch_module_example(tmp_path):
    out = _run("attack_torch_module.py", tmp_path)
    for name in ("none", "random", "mad", "mc", "mr"):
        assert f"\n{name} " in out
    assert "Δcost (paired)" in out


@pytest.mark.slow
def test_attack_blackbox_example(tmp_path):
    out = _run("attack_blackbox.py", tmp_path)
    assert "\nrandom " in out
    assert "refused, as it should be" in out and "none, random" in out


@pytest.mark.slow
def test_attack_sb3_ppo_example(tmp_path, sb3):
    out = _run("attack_sb3_ppo.py", tmp_path, EXAMPLE_SAVE=str(tmp_path / "ppo.zip"))
    assert "\nmc " in out and "\nmr " in out and "Δreward (paired)" in out
    # the saved model through the command line, weights-only (no unpickling)
    from robustsafe.cli import main

    critics = tmp_path / "critics.pt"
    base = ["--sb3", str(tmp_path / "ppo.zip"), "--env", "SafetyCarRun-v0", "--env-workers", "0"]
    assert (
        main(["fit-critics", *base, "--steps", "400", "--num-envs", "2", "--out", str(critics)])
        == 0
    )
    args = ["evaluate", *base, "--critics", str(critics), "--attacks", "mc", "--episodes", "1"]
    assert main([*args, "--num-envs", "1", "--no-progress"]) == 0
