"""The per-epoch weight average of an on-policy learner's actor (``ppo.actor_average``,
``focops.actor_average``; ``OnPolicyNetworks``) through the command line, and
``benchmarks/average_snapshots.py``, which rebuilds it from a run's per-epoch snapshots."""

from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path

import pytest
import torch
from tiny_config import ROBUST_CLI, TINY_CLI, agent_params, cli_train, full_and_resumed

from robustsafe.agent import load_agent
from robustsafe.config import PPOLagConfig
from robustsafe.runstate import load_state

# Each learner's tiny settings (its passes cut to 2) and the option's name.
SETTINGS = {
    "ppol": ["--set", "ppo.actor_passes=2", "--set", "ppo.critic_passes=2"],
    "focops": ["--set", "focops.passes=2", "--set", "focops.critic_passes=2"],
}
SECTION = {"ppol": "ppo", "focops": "focops"}
NETS = ("actor", "v_reward", "v_cost", "critics")


def _train(algo: str, out: Path, *extra: str) -> int:
    return cli_train(algo, out, [*TINY_CLI, *SETTINGS[algo], "--no-progress"], *extra)


def _average(algo: str, rho: float) -> tuple[str, str]:
    return ("--set", f"{SECTION[algo]}.actor_average={rho}")


def _script():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "average_snapshots.py"
    spec = importlib.util.spec_from_file_location("average_snapshots", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("algo", ["ppol", "focops"])
def test_the_weight_average_changes_the_saved_actor_not_the_training(algo, tmp_path, monkeypatch):
    """The option saves the per-epoch average and trains exactly as without it;
    ``benchmarks/average_snapshots.py`` rebuilds that saved actor, bit for bit, from a run
    trained without the option (how the FOCOPS CarCircle ADV rows' averaged agents were made)."""
    plain, avg = tmp_path / "plain", tmp_path / "avg"
    adv = ("--epochs", "3", "--mode", "adv-mc", *ROBUST_CLI)
    assert _train(algo, plain, *adv) == 0
    assert _train(algo, avg, *adv, *_average(algo, 0.5)) == 0
    timing = ("wall_time", "time_", "steps_per_s")

    def curve(run: Path) -> list[dict[str, str]]:
        rows = list(csv.DictReader((run / "metrics.csv").open()))
        return [{k: v for k, v in r.items() if not k.startswith(timing)} for r in rows]

    assert curve(plain) == curve(avg)  # the same training, epoch by epoch
    assert torch.equal(agent_params(plain, ("critics",)), agent_params(avg, ("critics",)))
    saved = agent_params(avg, ("actor",))
    assert not torch.equal(saved, agent_params(plain, ("actor",)))  # the average is saved
    script = _script()
    out = tmp_path / "rebuilt.pt"
    argv = ["average_snapshots.py", str(plain), "--rho", "0.5", "--out", str(out)]
    monkeypatch.setattr(sys, "argv", argv)
    script.main()
    assert torch.equal(agent_params(out, ("actor",)), saved)
    assert load_agent(out).config == load_agent(avg).config  # it says what it holds
    with pytest.raises(SystemExit, match="exists"):
        script.main()  # and never overwrites without --force


@pytest.mark.parametrize("algo", ["ppol", "focops"])
def test_resume_with_the_weight_average_is_bit_identical(algo, tmp_path):
    def train(out: Path, *extra: str) -> int:
        return _train(algo, out, *extra, *_average(algo, 0.5))

    full, cut = full_and_resumed(train, tmp_path, "vanilla", NETS)
    assert "actor_average" in load_state(cut / "state.pt")["learner"]
    assert not torch.equal(agent_params(cut, ("actor",)), _live_actor(cut))


def _live_actor(run: Path) -> torch.Tensor:
    """The last actor's parameters in ``run``'s resumable state (not the saved average)."""
    state = load_state(run / "state.pt")["learner"]["actor"]
    return torch.cat([v.flatten() for v in state.values()])


def test_the_option_is_validated_and_the_script_refuses_other_learners(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match=r"actor_average must be in \[0, 1\)"):
        PPOLagConfig(actor_average=1.0)
    run = tmp_path / "sac"
    settings = [*TINY_CLI, "--set", "checkpoint_every=1", "--no-progress"]
    assert cli_train("sac-lag", run, settings, "--epochs", "1") == 0
    argv = ["average_snapshots.py", str(run), "--out", str(tmp_path / "x.pt")]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit, match="a PPO-Lagrangian or FOCOPS run is needed"):
        _script().main()
