"""The grid's record of a training that exited normally but whose state it cannot read."""

from __future__ import annotations

import yaml

from robustsafe.config import TrainConfig
from robustsafe.experiments.grid.driver import _finish_training, _State
from robustsafe.experiments.grid.plan import PlannedRun
from robustsafe.settings_io import to_dict


def _state(run_dir) -> _State:
    plan = PlannedRun("SafetyCarRun-v0", "vanilla", 0, run_dir, "train", 0, 2, True, 0.05)
    return _State(plan, "pending", "pending", 0)


def test_an_unreadable_state_after_a_normal_exit_says_why(tmp_path):
    # A run written by a newer package (a setting this process does not know): the grid that
    # started before the change cannot read it, and says so instead of a bare failure.
    saved = to_dict(TrainConfig(epochs=2))
    saved["focops"]["a_setting_from_a_newer_package"] = True
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(saved))
    (tmp_path / "state.pt").write_bytes(b"")
    state = _state(tmp_path)
    assert not _finish_training(state, 0, 1.0)
    assert state.train == "failed" and state.epochs_done == 0
    [note] = state.notes
    assert "cannot read the run's state" in note and "a_setting_from_a_newer_package" in note


def test_a_normal_exit_short_of_its_epochs_is_noted_as_before(tmp_path):
    state = _state(tmp_path)  # no state.pt at all: nothing saved
    assert not _finish_training(state, 0, 1.0)
    assert state.notes == ["training exited normally but the run holds 0/2 epochs"]
