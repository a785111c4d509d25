"""robustsafe.files: atomic writes keep a replaced file's permissions; the CSV reader; the
results reader's rules for epsilon."""

from __future__ import annotations

import os
import stat

import pytest

from robustsafe.experiments.eval_files import parse_results
from robustsafe.files import read_csv_rows, write_text_atomic


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


def test_the_csv_reader_reads_any_line_ends_and_refuses_what_is_not_a_file(tmp_path):
    import signal

    path = tmp_path / "metrics.csv"
    for ends in ("\n", "\r\n", "\r"):  # the last: a file saved with old Mac line ends
        path.write_bytes(ends.join(["epoch,x", "1,0.5", "2,"]).encode() + ends.encode())
        assert read_csv_rows(path) == [{"epoch": "1", "x": "0.5"}, {"epoch": "2", "x": ""}]
    path.unlink()
    os.mkfifo(path)
    signal.signal(signal.SIGALRM, lambda *_: pytest.fail("read_csv_rows waited on a FIFO"))
    signal.alarm(5)
    try:
        with pytest.raises(OSError, match="not a regular file"):
            read_csv_rows(path)
    finally:
        signal.alarm(0)
    with pytest.raises(OSError, match="not a regular file"):
        read_csv_rows(tmp_path)
