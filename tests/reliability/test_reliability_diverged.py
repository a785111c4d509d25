"""A training whose update diverges (NaN / inf) stops with a one-line error and saves nothing of
that epoch; an agent file with non-finite weights is refused in one line."""

from __future__ import annotations

import csv
from pathlib import Path

import torch
from conftest import cli_train, one_line_error

from robustsafe.agent import load_agent
from robustsafe.cli import main
from robustsafe.learners.ppo_lag import PPOLagrangian
from robustsafe.learners.sac_lag import SACLagrangian
from robustsafe.nets import all_finite
from robustsafe.rundir import run_status

# SAC-Lagrangian on 40-step epochs: 4 chunks of 10 transitions, 5 gradient steps per chunk from
# the second chunk of epoch 1 on: 15 updates in epoch 1.
SAC = ["--algo", "sac-lag", "--set", "sac.batch_size=16", "--set", "sac.steps_per_collect=5"]
SAC += ["--set", "sac.updates_per_step=0.5", "--set", "sac.update_after=11"]


def _diverge_from_call(monkeypatch, cls: type, call: int) -> None:
    """``cls.update`` leaves the actor's first weight NaN from its ``call``-th call on."""
    original = cls.update
    calls = [0]

    def update(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        calls[0] += 1
        if calls[0] >= call:
            with torch.no_grad():
                next(self.actor.parameters()).fill_(float("nan"))
        return result

    monkeypatch.setattr(cls, "update", update)


def _epochs(run: Path) -> list[int]:
    with (run / "metrics.csv").open() as f:
        return [int(r["epoch"]) for r in csv.DictReader(f)]


def test_a_diverged_update_saves_nothing_of_its_epoch(tmp_path, capsys, monkeypatch):
    _diverge_from_call(monkeypatch, PPOLagrangian, call=2)  # epoch 2's update
    out = tmp_path / "run"
    assert cli_train(out, "--epochs", "3") == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "diverged in epoch 2 (non-finite actor" in err, err
    assert _epochs(out) == [1] and run_status(out) == (1, 3)
    agent = load_agent(out)
    assert agent.epoch == 1 and all_finite(agent.actor)
    monkeypatch.undo()  # the run goes on from its last finite epoch
    assert main(["train", "--resume", "--out", str(out), "--epochs", "3"]) == 0
    assert _epochs(out) == [1, 2, 3]


def test_an_off_policy_update_that_diverges_mid_epoch_saves_nothing_of_it(
    tmp_path, capsys, monkeypatch
):
    _diverge_from_call(monkeypatch, SACLagrangian, call=16)  # epoch 2's first gradient step
    out = tmp_path / "run"
    assert cli_train(out, *SAC, "--epochs", "3") == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "diverged in epoch 2 (non-finite actor)" in err, err
    assert _epochs(out) == [1] and run_status(out) == (1, 3)
    assert all_finite(load_agent(out).actor)


def test_an_agent_with_non_finite_weights_is_a_one_line_error(cli_run, tmp_path, capsys):
    data = torch.load(cli_run / "agent.pt", weights_only=True)
    name = next(iter(data["actor"]))
    data["actor"][name] = torch.full_like(data["actor"][name], float("nan"))
    bad = tmp_path / "nan.pt"
    torch.save(data, bad)
    args = ["evaluate", "--run", str(bad), "--episodes", "2", "--env-workers", "0"]
    assert main([*args, "--num-envs", "2", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "actor hold non-finite weights" in err, err


def test_a_multi_line_error_from_inside_is_shown_as_one_line(tmp_path, capsys, monkeypatch):
    """torch's argument errors print whole tensors; the command shows their first line."""
    import robustsafe.train

    def fails(*args, **kwargs):
        raise ValueError("Expected parameter loc of distribution Normal\ntensor([[nan],\n[nan]])")

    monkeypatch.setattr(robustsafe.train, "train", fails)
    assert cli_train(tmp_path / "run", "--epochs", "1") == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "Normal [...]" in err and "nan" not in err, err


def test_ctrl_c_is_one_line_and_keeps_the_epochs_written(tmp_path, capsys, monkeypatch):
    import robustsafe.train

    original = robustsafe.train.MetricsCSV.append
    rows = [0]

    def append(self, row):  # Ctrl-C arrives as epoch 2's row is written
        rows[0] += 1
        if rows[0] == 2:
            raise KeyboardInterrupt
        return original(self, row)

    monkeypatch.setattr(robustsafe.train.MetricsCSV, "append", append)
    out = tmp_path / "run"
    assert cli_train(out, "--epochs", "3") == 130
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.strip().endswith(
        "interrupted (what was already written is kept)"
    )
    assert _epochs(out) == [1] and run_status(out) == (1, 3)


def test_a_non_finite_observation_statistic_is_divergence_too(tmp_path, capsys, monkeypatch):
    """One inf observation makes the normaliser's statistics inf: caught before the epoch's
    files, like a NaN weight (the actor holds the normaliser)."""
    from robustsafe.nets import ObsNormalizer

    original = ObsNormalizer.update
    calls = [0]

    def update(self, batch):
        calls[0] += 1
        original(self, batch)
        if calls[0] == 2:  # epoch 2's statistics
            self.var.fill_(float("inf"))

    monkeypatch.setattr(ObsNormalizer, "update", update)
    out = tmp_path / "run"
    assert cli_train(out, "--epochs", "3", "--obs-norm") == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "diverged in epoch 2 (non-finite actor" in err, err
    assert _epochs(out) == [1] and all_finite(load_agent(out).actor)


def test_out_of_memory_is_one_line(tmp_path, capsys, monkeypatch):
    """A buffer or batch too large for the machine (numpy's MemoryError) is the command's one
    line, not a traceback."""
    import robustsafe.train

    def fails(*args, **kwargs):
        raise MemoryError("Unable to allocate 25.5 TiB for an array with shape (10**12, 7)")

    monkeypatch.setattr(robustsafe.train, "train", fails)
    assert cli_train(tmp_path / "run", "--epochs", "1") == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "out of memory (Unable to allocate 25.5 TiB" in err, err
