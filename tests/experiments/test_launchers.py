"""The launchers' file shipping (no Ray needed): what travels to a task and back."""

from __future__ import annotations

import os

import pytest

from robustsafe.experiments.launchers import (
    LocalLauncher,
    _changed,
    _files,
    _relocate,
    make_launcher,
    pack_run_dir,
    unpack,
)


def test_pack_unpack_and_changes(tmp_path):
    run = tmp_path / "run"
    (run / "tb").mkdir(parents=True)
    (run / "checkpoints").mkdir()
    for name, data in {
        "config.yaml": b"a: 1\n",
        "state.pt": b"\x00state",
        "tb/events.1": b"ev",
        "checkpoints/agent_epoch_0001.pt": b"ck",
        "train.log": b"log",
        ".lock": b"123",
        ".agent.pt.tmp": b"partial",
    }.items():
        (run / name).write_bytes(data)
    os.utime(run / "state.pt", ns=(1_234_567_891_234_567_891, 1_234_567_891_234_567_891))
    bundle = pack_run_dir(run)
    assert [rel for rel, _, _ in bundle] == ["config.yaml", "state.pt", "tb/events.1"]
    assert [rel for rel, _, _ in pack_run_dir(run, with_state=False)] == [
        "config.yaml",
        "tb/events.1",
    ]
    copy = tmp_path / "copy"
    unpack(copy, bundle)
    assert (copy / "state.pt").read_bytes() == b"\x00state"
    assert (copy / "state.pt").stat().st_mtime_ns == 1_234_567_891_234_567_891  # exact
    assert (copy / "tb" / "events.1").read_bytes() == b"ev"
    with pytest.raises(ValueError, match="leaves"):
        unpack(copy, [("../outside", 0, b"x")])

    seen = {rel: (st.st_mtime_ns, st.st_size) for rel, st in _files(copy).items()}
    assert _changed(copy, seen, set()) == []
    (copy / "metrics.csv").write_text("epoch\n1\n")
    (copy / "state.pt").write_bytes(b"new state")
    (copy / "train.log").write_text("not sent as a file")
    changed = _changed(copy, seen, {"train.log"})
    assert [rel for rel, _, _ in changed] == ["metrics.csv", "state.pt"]
    assert _changed(copy, seen, {"train.log"}) == []


def test_relocate_and_local_launcher(tmp_path):
    old = str(tmp_path / "out" / "run")
    assert _relocate(old, old, "/node/x") == "/node/x"
    assert _relocate(old + os.sep + "eval.json", old, "/node/x") == "/node/x/eval.json"
    assert _relocate(old + "2", old, "/node/x") == old + "2"
    assert _relocate("--out", old, "/node/x") == "--out"
    launcher = make_launcher("local", workers=3)
    assert isinstance(launcher, LocalLauncher) and launcher.capacity() == 3
    with pytest.raises(ValueError, match="unknown backend"):
        make_launcher("dask")
