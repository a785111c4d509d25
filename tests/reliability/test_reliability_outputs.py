"""Outputs: checked before the work, never inside someone's run by default, never lost on a
failed write (issue 12: 3, 6)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from conftest import cli_train, one_line_error

from robustsafe.agent import load_agent
from robustsafe.cli import main

EVAL = ["--env-workers", "0", "--num-envs", "2", "--episodes", "2", "--no-progress"]


def _snapshot(folder) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
        if p.is_file()
    }


def test_evaluate_leaves_the_run_untouched_by_default(cli_run, capsys):
    before = _snapshot(cli_run)
    assert main(["evaluate", "--run", str(cli_run), *EVAL]) == 0
    assert "reward" in capsys.readouterr().out
    assert _snapshot(cli_run) == before
    assert main(["evaluate", "--run", str(cli_run / "agent.pt"), *EVAL]) == 0
    assert _snapshot(cli_run) == before


def test_evaluate_out_is_checked_before_any_episode(cli_run, tmp_path, capsys):
    args = ["evaluate", "--run", str(cli_run), *EVAL]
    for bad in (tmp_path, "/proc/robustsafe-no-such-dir/eval.json", tmp_path / "f" / "e.json"):
        if bad == tmp_path / "f" / "e.json":
            (tmp_path / "f").write_text("a file, not a folder")
        assert main([*args, "--out", str(bad)]) == 2
        captured = capsys.readouterr()
        assert one_line_error(captured.err) and "reward" not in captured.out, captured
        if bad == tmp_path:  # a directory: the example file name is an evaluation's
            assert f"e.g. {tmp_path / 'eval.json'}" in captured.err


def test_xi_sweep_does_not_replace_a_file_without_force(cli_run, tmp_path, capsys):
    out = cli_run / "eval-xi.json"  # the default --out
    out.write_text("precious")
    args = ["xi-sweep", "--run", str(cli_run), "--xi", "0.5", *EVAL[:-1]]
    assert main(args) == 2
    captured = capsys.readouterr()
    assert one_line_error(captured.err) and "--force" in captured.err
    assert "reward" not in captured.out and out.read_text() == "precious"  # no episode ran
    assert main([*args, "--force"]) == 0
    assert json.loads(out.read_text())["xi_values"] == [0.5]


def test_derived_outputs_never_replace_measured_data(cli_run, tmp_path, capsys):
    """table, plot and report rebuild their own files in place, but refuse an --out that would
    replace a run's metrics.csv or a data file, before any work."""
    metrics = (cli_run / "metrics.csv").read_text()
    prefix = str(cli_run / "metrics")
    for argv in (
        ["table", str(tmp_path), "--out", prefix],
        ["plot", "curves", str(cli_run), "--out", prefix + ".png"],
        ["plot", "sweep", str(tmp_path / "e.json"), "--out", prefix],
    ):
        assert main(argv) == 2, argv
        captured = capsys.readouterr()
        assert one_line_error(captured.err) and "metrics.csv" in captured.err, argv
        assert "written" not in captured.out
    assert (cli_run / "metrics.csv").read_text() == metrics
    data = tmp_path / "eval.json"
    data.write_text("precious")
    assert main(["report", str(tmp_path), "--out", str(data)]) == 2
    assert one_line_error(capsys.readouterr().err) and data.read_text() == "precious"
    # a page without an HTML name could not be rebuilt (the check above would refuse it)
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "mypage")]) == 2
    assert "*.html" in capsys.readouterr().err and not (tmp_path / "mypage").exists()
    # their own outputs are rebuilt in place
    page, figure = tmp_path / "page.html", tmp_path / "curves"
    for _ in range(2):
        assert main(["report", str(tmp_path), "--out", str(page)]) == 0
        assert main(["plot", "curves", str(cli_run), "--out", str(figure)]) == 0
    assert page.stat().st_size > 0 and (tmp_path / "curves.csv").exists()


def test_derived_outputs_keep_off_a_users_files_without_force(cli_run, tmp_path, capsys):
    """A CSV, figure or page at --out that robustsafe did not write (its first bytes are not
    ours) is replaced only with --force; the refusal comes before any work."""
    evaluation = ["evaluate", "--run", str(cli_run), *EVAL, "--attacks", "none,random"]
    assert main([*evaluation, "--out", str(cli_run / "eval.json")]) == 0
    table = tmp_path / "grid" / "table"
    assert main(["table", str(cli_run.parent), "--out", str(table)]) == 0  # its own files
    capsys.readouterr()
    mine = tmp_path / "mine"
    cases = [
        (["table", str(cli_run.parent)], ".csv", "step,loss\n1,0.5\n"),
        (["table", str(cli_run.parent)], ".md", "# my notes\n"),
        (["table", str(cli_run.parent)], "-runs.csv", "my,runs\n"),  # a side file of table's
        (["plot", "curves", str(cli_run)], ".csv", "mydata\n"),
        (["plot", "curves", str(cli_run)], ".png", "not a figure of ours"),
        (["report", str(cli_run.parent)], ".html", "<html><title>Mine</title></html>"),
    ]
    for argv, suffix, text in cases:
        path = mine.with_name(mine.name + suffix)
        path.write_text(text)
        out = str(path) if suffix == ".html" else str(mine)
        assert main([*argv, "--out", out]) == 2, argv
        captured = capsys.readouterr()
        assert one_line_error(captured.err) and "robustsafe did not write" in captured.err
        assert "--force" in captured.err and "written" not in captured.out
        assert path.read_text() == text
        assert main([*argv, "--out", out, "--force"]) == 0, argv
        assert path.read_bytes() != text.encode() and "written" in capsys.readouterr().out
        for written in tmp_path.glob("mine*"):
            written.unlink()
    # the grid's own table and a page of ours are rebuilt in place without --force
    assert main(["table", str(cli_run.parent), "--out", str(table)]) == 0
    page = tmp_path / "page.html"
    for _ in range(2):
        assert main(["report", str(cli_run.parent), "--out", str(page)]) == 0
    # report's default page is checked too
    default = cli_run.parent / "report.html"
    default.write_text("<html><title>My notes</title></html>")
    assert main(["report", str(cli_run.parent)]) == 2
    assert "robustsafe did not write" in capsys.readouterr().err
    assert default.read_text() == "<html><title>My notes</title></html>"
    # a file the command does not write is no obstacle (plot writes no .md)
    notes = tmp_path / "fig.md"
    notes.write_text("mine")
    assert main(["plot", "curves", str(cli_run), "--out", str(tmp_path / "fig")]) == 0
    assert notes.read_text() == "mine"


def test_evaluate_does_not_replace_a_file_without_force(cli_run, tmp_path, capsys):
    out = tmp_path / "eval.json"
    out.write_text("precious")
    assert main(["evaluate", "--run", str(cli_run), *EVAL, "--out", str(out)]) == 2
    assert one_line_error(capsys.readouterr().err) and out.read_text() == "precious"
    assert main(["evaluate", "--run", str(cli_run), *EVAL, "--out", str(out), "--force"]) == 0
    assert json.loads(out.read_text())["episodes"] == 2


def test_a_dotted_out_name_checks_the_sweep_files_it_writes(cli_run, tmp_path, capsys):
    """--out carrun.eps.json writes carrun.eps_sweep.*: those are checked (carrun.csv was, and
    the sweep's files were replaced without --force)."""
    notes = tmp_path / "carrun.eps_sweep.csv"
    notes.write_text("my notes")
    (tmp_path / "carrun.csv").write_text("unrelated")
    out = tmp_path / "carrun.eps.json"
    args = ["evaluate", "--run", str(cli_run), *EVAL, "--attacks", "random", "--eps", "0.02,0.05"]
    args += ["--out", str(out)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "carrun.eps_sweep.csv" in err and not out.exists()
    notes.unlink()
    assert main(args) == 0 and (tmp_path / "carrun.eps_sweep.csv").exists()
    assert (tmp_path / "carrun.csv").read_text() == "unrelated"


@pytest.fixture
def full_disk_in(monkeypatch):
    """``full_disk_in(folder)``: atomic writes into ``folder`` hit a real ENOSPC (/dev/full)."""
    real = tempfile.mkstemp

    def install(folder):
        def fake(suffix=None, prefix=None, dir=None, text=False):
            if dir is not None and os.path.samefile(dir, folder):
                fd, path = real(suffix=suffix, prefix=prefix, dir=dir)
                os.close(fd)
                return os.open("/dev/full", os.O_WRONLY), path
            return real(suffix=suffix, prefix=prefix, dir=dir, text=text)

        monkeypatch.setattr(tempfile, "mkstemp", fake)

    return install


def test_a_full_disk_during_training_says_so(tmp_path, capsys, full_disk_in):
    out = tmp_path / "run"
    out.mkdir()
    full_disk_in(out)
    assert cli_train(out, "--epochs", "1") == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "no space left on device" in err and str(out) in err
    assert not list(out.glob(".*.tmp"))


def test_a_failed_evaluation_write_keeps_the_results(cli_run, tmp_path, capsys, full_disk_in):
    out = tmp_path / "evals" / "eval.json"
    out.parent.mkdir()
    full_disk_in(out.parent)
    assert main(["evaluate", "--run", str(cli_run), *EVAL, "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert one_line_error(captured.err) and "no space left on device" in captured.err
    kept = Path(captured.err.rsplit("saved in ", 1)[1].split()[0])
    assert json.loads(kept.read_text())["episodes"] == 2
    shutil.rmtree(kept.parent)
    assert "reward" in captured.out  # the table was printed before the write


FIT = ["--steps", "40", "--env-workers", "0", "--num-envs", "2"]


def test_fit_critics_never_replaces_the_agent_silently(cli_run, tmp_path, capsys):
    agent = (cli_run / "agent.pt").read_bytes()
    assert main(["fit-critics", "--run", str(cli_run), *FIT]) == 2
    captured = capsys.readouterr()
    assert one_line_error(captured.err) and "--out" in captured.err
    assert "TD loss" not in captured.out and (cli_run / "agent.pt").read_bytes() == agent
    assert main(["fit-critics", "--run", str(cli_run), *FIT, "--out", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert one_line_error(captured.err) and "TD loss" not in captured.out
    assert f"e.g. {tmp_path / 'agent-critics.pt'}" in captured.err  # a .pt, not eval.json
    assert main(["fit-critics", "--run", str(cli_run), *FIT, "--force"]) == 0
    assert (cli_run / "agent.pt").read_bytes() != agent


def test_fit_critics_keeps_its_result_on_a_failed_write(cli_run, tmp_path, capsys, full_disk_in):
    out = tmp_path / "agents" / "fitted.pt"
    out.parent.mkdir()
    full_disk_in(out.parent)
    assert main(["fit-critics", "--run", str(cli_run), *FIT, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "no space left on device" in err
    kept = Path(err.rsplit("saved in ", 1)[1].split()[0])
    assert load_agent(kept).epoch == 2
    shutil.rmtree(kept.parent)


def test_an_out_that_names_no_file_or_lies_under_a_file(cli_run, tmp_path, capsys):
    """Refused with a one-line error before any work: a prefix that is a folder (``.``, ``..``,
    empty), a path below a regular file, and a non-finite tabular budget."""
    from robustsafe.tabular.demo import main as tabular_main

    afile = tmp_path / "afile"
    afile.write_text("precious")
    for argv, says in (
        (["table", str(tmp_path), "--out", "."], "names a folder"),
        (["plot", "curves", str(cli_run), "--out", ".."], "names a folder"),
        (["plot", "curves", str(cli_run), "--out", ""], "names a folder"),
        (["table", str(tmp_path), "--out", str(afile / "t")], f"{afile} is a file"),
        (["report", str(tmp_path), "--out", str(afile / "p.html")], f"{afile} is a file"),
        (["tabular", "definitions", "--out", str(afile / "d")], f"{afile} is a file"),
        (["tabular", "definitions", "--eps", "inf", "--out", str(tmp_path)], "finite"),
        (["tabular", "demo", "--out", str(afile / "d")], f"{afile} is a file"),
        (["evaluate", "--run", str(cli_run), "--out", str(afile / "e.json")], f"{afile} is a f"),
        (["xi-sweep", "--run", str(cli_run), "--out", str(afile / "x.json")], f"{afile} is a f"),
    ):
        assert main(argv) == 2, argv
        captured = capsys.readouterr()
        assert one_line_error(captured.err) and says in captured.err, (argv, captured.err)
        assert "written" not in captured.out
    assert afile.read_text() == "precious"
    # python -m robustsafe.tabular: the same checks, as argparse errors (exit status 2)
    for argv in (["--out", str(afile)], ["--out", str(tmp_path), "--radii", "-1"]):
        with pytest.raises(SystemExit) as stop:
            tabular_main(argv)
        err = capsys.readouterr().err  # argparse's usage, then its one-line error
        assert stop.value.code == 2 and "Traceback" not in err, argv
        assert err.strip().splitlines()[-1].startswith("python -m robustsafe.tabular: error: ")


def test_table_does_not_replace_another_commands_csv(cli_run, tmp_path, capsys):
    """Every derived CSV starts with env,method; table rebuilds only its own (its columns)."""
    curves = tmp_path / "curves"
    assert main(["plot", "curves", str(cli_run), "--out", str(curves)]) == 0
    text = (tmp_path / "curves.csv").read_text()
    capsys.readouterr()
    assert main(["table", str(cli_run.parent), "--out", str(curves)]) == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "another command's output" in err and "--force" in err
    assert (tmp_path / "curves.csv").read_text() == text
    # and plot's kinds keep off each other's CSV (a sweep figure over the curves' CSV)
    assert main(["plot", "sweep", str(tmp_path / "e.json"), "--out", str(curves)]) == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "another command's output" in err
    assert (tmp_path / "curves.csv").read_text() == text


def test_tabular_definitions_rebuilds_its_own_files_only(tmp_path, capsys):
    out = tmp_path / "tab"
    definitions = ["tabular", "definitions", "--out", str(out)]
    for _ in range(2):  # its own files: rebuilt in place
        assert main(definitions) == 0
    mine = out / "definitions.csv"
    mine.write_text("my,data\n")
    capsys.readouterr()
    assert main(definitions) == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "robustsafe did not write" in err
    assert mine.read_text() == "my,data\n"
    assert main([*definitions, "--force"]) == 0
    assert mine.read_text().startswith("kind,label,reward_return,cost_return\n")


def test_no_out_replaces_a_runs_training_files_even_with_force(cli_run, tmp_path, capsys):
    before = _snapshot(cli_run)
    for name, argv in (
        ("config.yaml", ["fit-critics", "--run", str(cli_run), *FIT]),
        ("metrics.csv", ["evaluate", "--run", str(cli_run), *EVAL]),
        ("state.pt", ["evaluate", "--run", str(cli_run), *EVAL]),
        ("agent.pt", ["evaluate", "--run", str(cli_run), *EVAL]),
    ):
        assert main([*argv, "--out", str(cli_run / name), "--force"]) == 2, name
        err = capsys.readouterr().err
        assert one_line_error(err) and f"is the {name} of the run" in err, err
    assert _snapshot(cli_run) == before


def test_fit_critics_does_not_write_into_a_run_being_trained(cli_run, capsys):
    from robustsafe.runstate import run_lock

    agent = (cli_run / "agent.pt").read_bytes()
    with run_lock(cli_run):  # as a training holds it
        assert main(["fit-critics", "--run", str(cli_run), *FIT, "--force"]) == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "being written by another process" in err, err
    assert (cli_run / "agent.pt").read_bytes() == agent


def test_fit_critics_writes_nothing_if_a_training_starts_while_it_fits(
    cli_run, capsys, monkeypatch
):
    """A training that takes the run between fit-critics' first check and its write wins."""
    import robustsafe.fit_critics
    from robustsafe.runstate import run_lock

    agent = (cli_run / "agent.pt").read_bytes()
    fit = robustsafe.fit_critics.fit_critics
    training = contextlib.ExitStack()

    def fit_then_a_training_starts(*args, **kwargs):
        history = fit(*args, **kwargs)
        training.enter_context(run_lock(cli_run))
        return history

    monkeypatch.setattr(robustsafe.fit_critics, "fit_critics", fit_then_a_training_starts)
    with training:
        assert main(["fit-critics", "--run", str(cli_run), *FIT, "--force"]) == 2
    err = capsys.readouterr().err
    assert "being written by another process" in err and "not written" in err, err
    assert (cli_run / "agent.pt").read_bytes() == agent


def test_a_folder_given_as_a_file_prefix_is_refused(cli_run, tmp_path, capsys):
    folder = tmp_path / "figs"
    for out in (f"{folder}/", str(cli_run)):  # a new folder, an existing one
        assert main(["plot", "curves", str(cli_run), "--out", out]) == 2, out
        err = capsys.readouterr().err
        assert one_line_error(err) and "names a folder" in err, err
    assert not list(tmp_path.glob("figs*"))
    # table of a file: the error is about the runs folder, not about an --out nobody gave
    assert main(["table", str(cli_run / "metrics.csv")]) == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "is not a directory of runs" in err and "--out" not in err
