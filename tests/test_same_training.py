"""benchmarks/same_training.py: two trainings compared, timings aside, weights bit for bit."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import torch

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
HEADER = "epoch,env_steps,wall_time,ep_return,ep_cost,lambda,steps_per_s,time_env\n"


def _run(path: Path, rows: list[str], actor: torch.Tensor) -> Path:
    path.mkdir(parents=True)
    (path / "metrics.csv").write_text(HEADER + "".join(r + "\n" for r in rows))
    agent = {"config": {"seed": 0}, "actor": {"w": actor}, "critics": {"q": torch.ones(2)}}
    torch.save(agent, path / "agent.pt")
    return path


def _check(a: Path, b: Path) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, str(BENCH / "same_training.py"), str(a), str(b)],
        capture_output=True,
        text=True,
    )
    return done.returncode, done.stdout


def test_timings_aside_the_same_training_is_identical_and_a_change_is_named(tmp_path):
    w = torch.tensor([0.1, 0.2])
    a = _run(
        tmp_path / "a", ["1,100,3.5,1.0,nan,0.0,28.6,1.2", "2,200,7.1,2.0,0.5,0.1,28.2,1.3"], w
    )
    # other wall times, steps/s and time_* columns: still the same training
    b = _run(
        tmp_path / "b", ["1,100,9.9,1.0,nan,0.0,10.1,4.4", "2,200,19.8,2.0,0.5,0.1,10.1,4.5"], w
    )
    assert _check(a, b) == (0, _expected("identical", "identical"))
    # one cost in epoch 2, and one weight's last bit
    c = _run(
        tmp_path / "c", ["1,100,3.5,1.0,nan,0.0,28.6,1.2", "2,200,7.1,2.0,0.6,0.1,28.2,1.3"], w
    )
    w2 = w.clone()
    w2[1] = torch.nextafter(w2[1], torch.tensor(1.0))
    d = _run(
        tmp_path / "d", ["1,100,3.5,1.0,nan,0.0,28.6,1.2", "2,200,7.1,2.0,0.5,0.1,28.2,1.3"], w2
    )
    rc, out = _check(a, c)
    assert rc == 1 and "epoch 2 differs in ep_cost\n" in out
    rc, out = _check(a, d)
    assert rc == 1 and "identical\n" in out and "1 of 2 tensors differ, e.g. actor.w" in out


def _expected(metrics: str, weights: str) -> str:
    return (
        f"metrics (every epoch, timings aside): {metrics}\n"
        f"agent weights (agent.pt / agent.pt): {weights}\n"
    )


def test_a_shorter_training_is_not_the_same():
    spec = importlib.util.spec_from_file_location("same_training", BENCH / "same_training.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rows = [{"epoch": "1"}, {"epoch": "2"}]
    assert module.first_difference(rows, rows[:1]) == "2 epochs against 1"
    assert module.first_difference(rows, rows) is None
