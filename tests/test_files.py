"""robustsafe.files: atomic writes keep a replaced file's permissions; the results reader's
rules for epsilon."""

from __future__ import annotations

import os
import stat

import pytest

from robustsafe.experiments.eval_files import parse_results
from robustsafe.files import write_text_atomic


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_an_atomic_write_keeps_the_permissions_of_the_file_it_replaces(tmp_path):
    new = tmp_path / "new.txt"
    write_text_atomic(new, "a")
    assert _mode(new) == 0o644 and new.read_text() == "a"
    shared = tmp_path / "metrics.csv"
    shared.write_text("epoch\n")
    os.chmod(shared, 0o664)  # made under umask 002, group-writable
    write_text_atomic(shared, "epoch,x\n")
    assert _mode(shared) == 0o664 and shared.read_text() == "epoch,x\n"


def test_an_attacked_result_needs_its_epsilon_the_natural_one_may_leave_it_out():
    episodes = [{"reward": 1.0, "cost": 0.0}]
    results = parse_results({"results": [{"attack": "none", "episodes": episodes}]}, "f")
    assert [(r.attack, r.epsilon) for r in results] == [("none", 0.0)]
    with pytest.raises(ValueError, match="f: attacker 'mad' has epsilon None"):
        parse_results({"results": [{"attack": "mad", "episodes": episodes}]}, "f")
