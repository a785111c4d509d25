"""Loading a file never runs code from it, and a bad file is a one-line error (issue 12: 1, 9)."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import cli_train, one_line_error

from robustsafe.cli import main
from robustsafe.rundir import run_status

ROOT = Path(__file__).resolve().parents[2]
PYTHONPATH = os.environ.get("PYTHONPATH", "")


class _Payload:
    """Unpickling this calls ``os.system``: what a planted file would do."""

    def __init__(self, marker) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _plant(path, marker) -> None:
    path.unlink(missing_ok=True)
    with path.open("wb") as f:
        pickle.dump({"format": "robustsafe-train-state", "epoch": _Payload(marker)}, f)


def test_a_planted_state_file_runs_no_code(cli_run, tmp_path, capsys):
    marker = tmp_path / "pwned"
    _plant(cli_run / "state.pt", marker)
    (cli_run / "status.json").unlink()  # so that run_status reads state.pt itself
    with pytest.raises(ValueError, match="state.pt"):
        run_status(cli_run)
    assert main(["train", "--resume", "--out", str(cli_run), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "state.pt" in err and "weights_only" not in err
    assert not marker.exists()
    # as a user sees it: one line on stderr, no warning from torch either
    cmd = [sys.executable, "-m", "robustsafe.cli", "train", "--resume", "--out", str(cli_run)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), PYTHONPATH]))}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert done.returncode == 2 and one_line_error(done.stderr), done.stderr
    assert not marker.exists()


def test_a_planted_agent_file_runs_no_code(tmp_path, capsys):
    marker = tmp_path / "pwned"
    agent = tmp_path / "agent.pt"
    torch.save({"format": "robustsafe-agent", "x": _Payload(marker)}, agent)
    assert main(["evaluate", "--run", str(agent)]) == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "never loaded, it could run code" in err
    assert not marker.exists()


@pytest.mark.parametrize(
    "content",
    ["truncated", "garbage", "foreign", "empty"],
)
def test_a_damaged_or_foreign_state_is_a_one_line_error(cli_run, capsys, content):
    state = cli_run / "state.pt"
    if content == "truncated":
        state.write_bytes(state.read_bytes()[:300])
    elif content == "garbage":
        state.write_bytes(b"\x00not a torch file" * 10)
    elif content == "foreign":
        torch.save({"weights": torch.zeros(3)}, state)
    else:
        state.write_bytes(b"")
    assert main(["train", "--resume", "--epochs", "3", "--out", str(cli_run)]) == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and str(state) in err
    # it says what is wrong: a damaged file is not torch's archive; a foreign one not a state
    damaged = "not a file written by torch.save: truncated, damaged or another format"
    assert (damaged in err) == (content != "foreign")


def test_the_state_encoding_round_trips_any_numpy_array_and_big_ints(tmp_path):
    from robustsafe.runstate import load_state, save_state

    rng = np.random.default_rng(7)
    rng.random(3)
    arrays = {
        str(dt): np.arange(6).astype(dt).reshape(2, 3)
        for dt in (np.bool_, np.int8, np.int64, np.uint64, np.float16, np.float32, np.float64)
    }
    state = {
        "arrays": arrays,
        "empty": np.zeros((0, 4), np.float32),
        "scalar": np.float64(2.5),
        "uint_scalar": np.uint64(2**64 - 1),
        "big": 2**127 + 3,
        "negative_big": -(2**90),
        "plain": [1, 2.5, "x", True, None, (3, "y"), b"", b"ab"],
        "tensor": torch.arange(4.0),
        "rng": rng.bit_generator.state,
        "nested": {"deeper": [{"a": np.array([True, False])}]},
    }
    save_state(tmp_path / "s.pt", state)
    back = load_state(tmp_path / "s.pt")
    for key, arr in arrays.items():
        assert back["arrays"][key].dtype == arr.dtype and np.array_equal(back["arrays"][key], arr)
        back["arrays"][key][0, 0] = 1  # a writable array of its own
    assert back["empty"].shape == (0, 4) and back["empty"].dtype == np.float32
    assert back["scalar"] == 2.5 and isinstance(back["scalar"], np.float64)
    assert back["uint_scalar"] == np.uint64(2**64 - 1)
    assert back["big"] == 2**127 + 3 and back["negative_big"] == -(2**90)
    assert back["plain"] == [1, 2.5, "x", True, None, (3, "y"), b"", b"ab"]
    assert torch.equal(back["tensor"], torch.arange(4.0))
    assert np.array_equal(back["nested"]["deeper"][0]["a"], [True, False])
    again = np.random.default_rng()
    again.bit_generator.state = back["rng"]
    assert np.array_equal(again.random(5), rng.random(5))


def test_the_state_of_a_run_loads_safely(cli_run):
    from robustsafe.runstate import load_state, save_state

    state = load_state(cli_run / "state.pt")
    assert state["epoch"] == 2 and isinstance(state["np_rng"]["state"]["state"], int)
    with pytest.raises(TypeError):
        save_state(cli_run / "x.pt", {"obj": object()})


def test_a_state_from_another_run_is_a_one_line_error(cli_run, tmp_path, capsys):
    other = tmp_path / "other"
    assert cli_train(other, "--epochs", "2", "--set", "ppo.hidden=[16,16]") == 0
    (cli_run / "state.pt").write_bytes((other / "state.pt").read_bytes())
    assert main(["train", "--resume", "--epochs", "3", "--out", str(cli_run)]) == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "state.pt" in err


@pytest.mark.parametrize("drop", ["config", "actor", "epoch"])
def test_an_agent_file_with_missing_parts_is_a_one_line_error(cli_run, tmp_path, capsys, drop):
    data = torch.load(cli_run / "agent.pt", weights_only=True)
    del data[drop]
    torch.save(data, tmp_path / "agent.pt")
    assert main(["evaluate", "--run", str(tmp_path / "agent.pt")]) == 2
    assert one_line_error(capsys.readouterr().err)


def _evaluation(eps: str = "0.05", reward: str = "1.0", episodes: str | None = None) -> str:
    """An eval.json text with one natural and one MC result; the parts given are spliced in
    as they are (JSON text), to plant values json.dumps would not write."""
    records = episodes if episodes is not None else f'[{{"reward": {reward}, "cost": 0.0}}]'
    results = [
        f'{{"attack": "none", "epsilon": 0, "episodes": {records}}}',
        f'{{"attack": "mc", "epsilon": {eps}, "episodes": {records}}}',
    ]
    return (
        '{"env_id": "SafetyCarRun-v0", "train_mode": "vanilla", "episodes": 1, "seed": 0, '
        f'"results": [{", ".join(results)}]}}'
    )


@pytest.mark.parametrize(
    "text, words",
    [
        (_evaluation(eps="1" + "0" * 400), "an integer of 401 digits"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        (_evaluation(reward="NaN"), "malformed episodes"),
        (_evaluation(reward="-Infinity"), "malformed episodes"),
        (_evaluation(episodes="[]"), "no per-episode records"),
        (_evaluation(eps="-0.05"), "not a number >= 0"),
        (_evaluation(eps="true"), "not a number >= 0"),
        (_evaluation(eps='"0"'), "not a number >= 0"),
    ],
)
def test_a_malformed_evaluation_is_a_one_line_error_in_table_and_plot(
    tmp_path, capsys, text, words
):
    """Values that used to pass (NaN rewards in a sweep) or to raise far from the file
    (OverflowError, RecursionError) are refused in one line naming the file."""
    run = tmp_path / "runs" / "run"
    run.mkdir(parents=True)
    (run / "eval.json").write_text(text)
    commands = [
        ["plot", "sweep", str(run / "eval.json"), "--out", str(tmp_path / "fig")],
        ["table", str(tmp_path / "runs"), "--out", str(tmp_path / "t")],
    ]
    for argv in commands:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert one_line_error(err) and "eval.json" in err and words in err, (argv, err)


@pytest.mark.parametrize(
    "damage, words",
    [
        (lambda text: text.replace("\n1,", "\n9,", 1), "not in increasing order"),
        (lambda text: text + "3," + "x" * 200_000 + "\n", "not a metrics file"),
    ],
)
def test_a_damaged_metrics_file_is_a_one_line_error_in_plot(
    cli_run, tmp_path, capsys, damage, words
):
    path = cli_run / "metrics.csv"
    path.write_text(damage(path.read_text()))
    assert main(["plot", "curves", str(cli_run), "--out", str(tmp_path / "fig")]) == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "metrics.csv" in err and words in err, err


def test_linked_run_folders_are_read_once(tmp_path):
    """table / report find a run linked into the results folder; a link back up the tree is
    not followed twice (no endless walk)."""
    from robustsafe.experiments.eval_files import find_eval_files

    linked = tmp_path / "elsewhere" / "seed1"
    linked.mkdir(parents=True)
    (linked / "eval.json").write_text("{}")
    runs = tmp_path / "runs"
    (runs / "seed0").mkdir(parents=True)
    (runs / "seed0" / "eval.json").write_text("{}")
    (runs / "seed1").symlink_to(linked, target_is_directory=True)
    (runs / "seed0" / "up").symlink_to(runs, target_is_directory=True)
    assert find_eval_files(runs) == [runs / "seed0" / "eval.json", runs / "seed1" / "eval.json"]


def test_a_foreign_state_or_critics_file_says_what_it_should_be(tmp_path):
    """The one loader of tagged torch files keeps each kind's hint: a state may be an older
    RobustSafe's (version 1 states were plain pickles); critics come from fit-critics --out."""
    from robustsafe.fit_critics import load_critics
    from robustsafe.runstate import StateFileError, load_state

    old = tmp_path / "state.pt"
    old.write_bytes(pickle.dumps({"epoch": 3}))  # what version 1 wrote
    with pytest.raises(StateFileError, match="or written by an older RobustSafe"):
        load_state(old)
    agent_like = tmp_path / "agent.pt"
    torch.save({"format": "robustsafe-agent", "version": 1}, agent_like)
    with pytest.raises(ValueError, match=r"not a RobustSafe critics file \(made by fit-critics"):
        load_critics(agent_like)
