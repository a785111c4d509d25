"""Nothing of a run is lost or replaced without --force, and a resume is exact (issue 12: 2, 7,
8, 9)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
import torch
import yaml
from conftest import TOY, cli_train, one_line_error
from tiny_config import WalkToy, register_toy, tiny_config

from robustsafe.agent import load_agent
from robustsafe.cli import main
from robustsafe.config import TrainConfig
from robustsafe.pid import PIDConfig
from robustsafe.rundir import (
    load_run_config,
    read_timings,
    record_timing,
    run_status,
    with_settings_of_its_time,
)
from robustsafe.runstate import load_state, save_state
from robustsafe.settings_io import to_dict
from robustsafe.train import train


def _tiny(env_id: str, **kw) -> TrainConfig:
    ppo = {"hidden": (16, 16), "actor_passes": 3, "critic_passes": 3, "minibatch_size": 32}
    base = dict(seed=3, epochs=3, steps_per_epoch=80, num_envs=4, torch_threads=1)
    return tiny_config(env_id, ppo, **{**base, **kw})


def _params(run_dir):
    agent = load_agent(run_dir)
    return torch.cat(
        [
            p.flatten()
            for m in (agent.actor, agent.v_reward, agent.v_cost, agent.critics)
            for p in m.state_dict().values()
        ]
    )


def _epochs(run_dir) -> list[int]:
    with (run_dir / "metrics.csv").open() as f:
        return [int(r["epoch"]) for r in csv.DictReader(f)]


# ----------------------------------------------------------------------------- same numbers


def test_same_seed_same_parameters_and_different_seed_differs(tmp_path, toy_env_id):
    a = _params(train(_tiny(toy_env_id), tmp_path / "a", progress=False))
    b = _params(train(_tiny(toy_env_id), tmp_path / "b", progress=False))
    c = _params(train(_tiny(toy_env_id, seed=4), tmp_path / "c", progress=False))
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


@pytest.mark.parametrize("obs_normalization", [False, True])
def test_resumed_run_ends_with_the_same_parameters(tmp_path, toy_env_id, obs_normalization):
    cfg = _tiny(toy_env_id, epochs=4, obs_normalization=obs_normalization)
    full = _params(train(cfg, tmp_path / "full", progress=False))
    train(cfg, tmp_path / "cut", progress=False, stop_after_epoch=2)  # "killed" after epoch 2
    # a crash after the CSV row but before the checkpoint leaves an extra row: add one
    with (tmp_path / "cut" / "metrics.csv").open("a") as f:
        f.write("3" + ",0" * 5 + "\n")
    # and a kill during an atomic write leaves temporary files: they are cleaned
    (tmp_path / "cut" / ".state.pt.x1y2.tmp").write_bytes(b"half")
    (tmp_path / "cut" / "checkpoints" / ".agent_epoch_0003.pt.z.tmp").write_bytes(b"half")
    resumed = _params(train(cfg, tmp_path / "cut", resume=True, progress=False))
    assert torch.equal(full, resumed)
    assert _epochs(tmp_path / "cut") == [1, 2, 3, 4]
    assert not list((tmp_path / "cut").rglob("*.tmp"))


class _CostEveryStep(WalkToy):
    def cost(self, x: float) -> float:
        return 1.0


def test_a_resume_restores_the_cost_multiplier_it_had(tmp_path):
    """The resume test above never pays a cost, so its multiplier stays 0 with or without its
    state. Here each env finishes one 20-step episode of cost 20 per epoch against a limit of
    5: the PID's integral gains 15 each epoch, 60 after 4, and a resume must carry it on."""
    env_id = register_toy("RobustSafeToyCostEveryStep-v0", _CostEveryStep, 20)
    cfg = _tiny(env_id, epochs=4, pid=PIDConfig(cost_limit=5.0))
    full = train(cfg, tmp_path / "full", progress=False)
    train(cfg, tmp_path / "cut", progress=False, stop_after_epoch=2)
    cut = train(cfg, tmp_path / "cut", resume=True, progress=False)
    pid_full = load_state(full / "state.pt")["learner"]["pid"]
    assert pid_full["integral"] == pytest.approx(60.0)
    assert load_state(cut / "state.pt")["learner"]["pid"] == pid_full
    assert torch.equal(_params(full), _params(cut))


@pytest.mark.slow
def test_resume_on_a_bullet_task_with_subprocess_workers(tmp_path):
    cfg = _tiny("SafetyCarRun-v0", epochs=2, steps_per_epoch=800, workers=2)
    full = _params(train(cfg, tmp_path / "full", progress=False))
    train(cfg, tmp_path / "cut", progress=False, stop_after_epoch=1)
    resumed = _params(train(cfg, tmp_path / "cut", resume=True, progress=False))
    assert torch.equal(full, resumed)


def test_a_resume_through_the_command_extends_a_run_exactly(tmp_path, cli_run):
    assert cli_train(tmp_path / "full", "--epochs", "3") == 0
    assert main(["train", "--resume", "--out", str(cli_run), "--epochs", "3"]) == 0
    assert torch.equal(_params(cli_run), _params(tmp_path / "full"))
    assert load_run_config(cli_run).epochs == 3 and run_status(cli_run) == (3, 3)
    assert _epochs(cli_run) == [1, 2, 3]


# ----------------------------------------------------------------------------- overwriting


def test_refuses_to_overwrite_a_run_and_to_resume_nothing(tmp_path, toy_env_id):
    cfg = _tiny(toy_env_id, epochs=1)
    train(cfg, tmp_path / "run", progress=False)
    with pytest.raises(FileExistsError, match="--resume"):
        train(cfg, tmp_path / "run", progress=False)
    with pytest.raises(FileNotFoundError, match="state.pt"):
        train(cfg, tmp_path / "empty", resume=True, progress=False)


def _zoo_like(run) -> None:
    """A directory like zoo/ENV/MODE: an agent and its history, no training state."""
    for name in ("state.pt", "status.json"):
        (run / name).unlink()


def test_train_does_not_replace_an_agent_without_force(cli_run, capsys):
    _zoo_like(cli_run)
    before = {p.name: p.read_bytes() for p in (cli_run / "agent.pt", cli_run / "metrics.csv")}
    assert cli_train(cli_run, "--epochs", "1") == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "--force" in err
    assert {p: (cli_run / p).read_bytes() for p in before} == before


def test_force_starts_over_and_keeps_other_files(cli_run):
    _zoo_like(cli_run)
    (cli_run / "notes.txt").write_text("mine")
    (cli_run / "timings.json").write_text('[{"job": "train", "exit_status": 0}]')
    assert cli_train(cli_run, "--epochs", "1", "--force") == 0
    assert not (cli_run / "timings.json").exists()  # the old run's jobs went with it
    assert _epochs(cli_run) == [1] and run_status(cli_run) == (1, 1)
    assert (cli_run / "notes.txt").read_text() == "mine"
    assert not (cli_run / "checkpoints" / "agent_epoch_0002.pt").exists()


def test_a_foreign_directory_is_refused_in_one_line(tmp_path, capsys):
    out = tmp_path / "data"
    out.mkdir()
    (out / "metrics.csv").write_text("step,loss\n1,0.5\n")
    (out / "tb").mkdir()
    (out / "notes.txt").write_text("mine")
    assert cli_train(out, "--epochs", "1") == 2
    err = capsys.readouterr().err
    assert one_line_error(err)
    # it names exactly what --force would delete: the run files present, not notes.txt
    assert "pass --force to delete the run files there (metrics.csv, tb/), keep the others" in err
    assert (out / "metrics.csv").read_text() == "step,loss\n1,0.5\n"
    notes_only = tmp_path / "notes"
    notes_only.mkdir()
    (notes_only / "notes.txt").write_text("mine")
    assert cli_train(notes_only, "--epochs", "1") == 2  # nothing --force would delete: said so
    err = capsys.readouterr().err
    assert one_line_error(err) and "--force to start a new run beside them" in err
    assert cli_train(notes_only, "--epochs", "1", "--force") == 0
    assert (notes_only / "notes.txt").read_text() == "mine"
    (tmp_path / "plain").write_text("x")
    assert cli_train(tmp_path / "plain", "--epochs", "1") == 2
    assert one_line_error(capsys.readouterr().err)


@pytest.mark.parametrize("names", [("tb",), ("provenance.json",), ("tb", "provenance.json")])
def test_a_runs_own_names_without_its_config_are_someone_elses(tmp_path, capsys, names):
    # a run writes config.yaml before tb/ and provenance.json, and deletes it after them: without
    # it they are not a run's that died, and a new run keeps off them without --force
    out = tmp_path / "data"
    (out / "tb").mkdir(parents=True)
    (out / "tb" / "events.out.mine").write_text("mine")
    (out / "provenance.json").write_text("{}")
    for name in {"tb", "provenance.json"} - set(names):
        target = out / name
        target.unlink() if target.is_file() else shutil.rmtree(target)
    assert cli_train(out, "--epochs", "1") == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "but no run's config.yaml" in err and "--force" in err
    assert sorted(p.name for p in out.iterdir()) == sorted(names)
    assert cli_train(out, "--epochs", "1", "--force") == 0


def test_a_settings_file_in_the_runs_own_place_is_not_replaced(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    text = "# my settings\nppo:\n  actor_lr: 0.001\n"
    (out / "config.yaml").write_text(text)
    assert cli_train(out, "--config", str(out / "config.yaml"), "--epochs", "1") == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "the file a new run in" in err
    assert (out / "config.yaml").read_text() == text
    # elsewhere it is only read
    assert cli_train(tmp_path / "run", "--config", str(out / "config.yaml"), "--epochs", "1") == 0
    assert load_run_config(tmp_path / "run").ppo.actor_lr == 0.001


def test_a_run_killed_in_its_first_epoch_restarts(tmp_path):
    out = tmp_path / "run"
    assert cli_train(out, "--epochs", "1") == 0
    for name in ("state.pt", "status.json", "agent.pt", "metrics.csv"):
        (out / name).unlink()
    (out / "checkpoints" / "agent_epoch_0001.pt").unlink()
    (out / "checkpoints").rmdir()
    (out / "train.log").write_text("grid log\n")
    jobs = '[{"job": "train", "started": "t", "exit_status": "running"}]'
    (out / "timings.json").write_text(jobs)
    assert cli_train(out, "--epochs", "1") == 0
    assert (out / "timings.json").read_text() == jobs  # the grid's record of this attempt stays
    assert run_status(out) == (1, 1)


def _untimed_rows(run_dir) -> list[dict[str, str]]:
    """metrics.csv's rows without the columns that measure time."""
    with (run_dir / "metrics.csv").open() as f:
        rows = list(csv.DictReader(f))
    timed = {"wall_time", "steps_per_s"}
    return [
        {k: v for k, v in r.items() if k not in timed and not k.startswith("time_")} for r in rows
    ]


def test_a_run_killed_before_its_first_state_restarts_and_a_later_one_does_not(tmp_path, capsys):
    # the end of epoch 1 writes metrics.csv, agent.pt and checkpoints/ before state.pt: a kill
    # in between leaves nothing to resume, and a restart must write the same epoch again
    out = tmp_path / "run"
    assert cli_train(out, "--epochs", "1") == 0
    first = _untimed_rows(out)
    for name in ("state.pt", "status.json"):
        (out / name).unlink()
    assert cli_train(out, "--epochs", "1") == 0
    assert run_status(out) == (1, 1)
    assert _untimed_rows(out) == first
    # two epochs recorded without a state.pt: not a first-epoch death; kept without --force
    cut = tmp_path / "cut"
    assert cli_train(cut, "--epochs", "2") == 0
    (cut / "state.pt").unlink()
    assert cli_train(cut, "--epochs", "2") == 2
    assert one_line_error(capsys.readouterr().err)
    assert len((cut / "metrics.csv").read_text().splitlines()) == 3


def test_a_timing_replaces_only_the_running_entry_of_its_job(tmp_path):
    def job(name, started, status):
        return {"job": name, "started": started, "seconds": None, "exit_status": status}

    record_timing(tmp_path, job("train", "t0", "lost"))
    record_timing(tmp_path, job("train", "t0", "running"))  # started again in the same second
    record_timing(tmp_path, job("evaluate", "t0", "running"))
    record_timing(tmp_path, {**job("train", "t0", 0), "seconds": 12.5})
    assert read_timings(tmp_path) == [
        job("train", "t0", "lost"),
        {**job("train", "t0", 0), "seconds": 12.5},
        job("evaluate", "t0", "running"),
    ]
    (tmp_path / "timings.json").write_text('{"not": "a list"}')
    with pytest.raises(ValueError, match="list of jobs"):
        record_timing(tmp_path, job("train", "t1", 0))
    assert (tmp_path / "timings.json").read_text() == '{"not": "a list"}'


# ----------------------------------------------------------------------------- resume checks


@pytest.mark.parametrize(
    "flags, named",
    [
        (["--seed", "1"], "--seed 1"),
        (["--mode", "random"], "--mode random"),
        (["--env", "SafetyCarRun-v0"], "--env SafetyCarRun-v0"),
        (["--preset", "paper"], "--preset paper"),
        (["--set", "ppo.actor_lr=1e-3"], "ppo.actor_lr"),
        (["--num-envs", "4"], "--num-envs 4"),
    ],
)
def test_resume_refuses_changed_settings(cli_run, capsys, flags, named):
    config = (cli_run / "config.yaml").read_text()
    assert main(["train", "--resume", "--out", str(cli_run), "--epochs", "3", *flags]) == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and named in err
    assert (cli_run / "config.yaml").read_text() == config and run_status(cli_run) == (2, 2)


def test_resume_accepts_the_same_settings_given_again(cli_run):
    assert cli_train(cli_run, "--resume", "--epochs", "3", "--seed", "0") == 0
    assert run_status(cli_run) == (3, 3)


def test_resume_never_shrinks_a_run_below_its_epochs(cli_run, capsys):
    assert main(["train", "--resume", "--out", str(cli_run), "--epochs", "1"]) == 2
    assert one_line_error(capsys.readouterr().err)
    assert load_run_config(cli_run).epochs == 2 and run_status(cli_run) == (2, 2)


def test_resume_without_metrics_refuses_unless_forced(cli_run, capsys):
    (cli_run / "metrics.csv").unlink()
    assert main(["train", "--resume", "--out", str(cli_run), "--epochs", "3"]) == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "metrics.csv" in err and run_status(cli_run) == (2, 2)
    assert main(["train", "--resume", "--out", str(cli_run), "--epochs", "3", "--force"]) == 0
    assert _epochs(cli_run) == [3]


@pytest.mark.parametrize("text", ["step,loss\n1,0.5\n", "step,loss\n"])
def test_resume_with_a_foreign_metrics_file_is_a_one_line_error(cli_run, capsys, text):
    (cli_run / "metrics.csv").write_text(text)
    assert main(["train", "--resume", "--out", str(cli_run), "--epochs", "3"]) == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "not a RobustSafe metrics file" in err
    assert (cli_run / "metrics.csv").read_text() == text


@pytest.mark.parametrize("kind", ["fifo", "directory", "binary"])
def test_a_fresh_train_over_an_unreadable_metrics_file_names_the_folder(tmp_path, kind, capsys):
    """A folder with a config.yaml and a metrics.csv that cannot be read as CSV holds no run
    to restart: the one-line refusal names the folder (a FIFO made it wait; a directory gave
    an error without the path)."""
    import os

    out = tmp_path / "run"
    out.mkdir()
    (out / "config.yaml").write_text("env_id: x\n")
    metrics = out / "metrics.csv"
    if kind == "fifo":
        os.mkfifo(metrics)
    elif kind == "directory":
        metrics.mkdir()
    else:
        metrics.write_bytes(b"epoch\n\xff\xfe\n")
    assert main(["train", "--env", TOY, "--out", str(out), "--epochs", "1"]) == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and f"{out} is not empty" in err and "--force" in err


def test_resume_with_a_fifo_for_metrics_is_a_one_line_error_not_a_wait(cli_run, capsys):
    """The resume check opened metrics.csv with a plain open: a FIFO there waited for a writer."""
    import os
    import signal

    (cli_run / "metrics.csv").unlink()
    os.mkfifo(cli_run / "metrics.csv")
    signal.signal(signal.SIGALRM, lambda *_: pytest.fail("the resume waited on a FIFO"))
    signal.alarm(20)
    try:
        assert main(["train", "--resume", "--out", str(cli_run), "--epochs", "3"]) == 2
    finally:
        signal.alarm(0)
    err = capsys.readouterr().err
    assert one_line_error(err) and "metrics.csv: cannot read it (not a regular file)" in err
    assert run_status(cli_run) == (2, 2)


def test_a_resumed_runs_wall_time_counts_the_writing_of_the_last_saved_epoch(
    tmp_path, toy_env_id, monkeypatch
):
    """The elapsed seconds a state saves are taken after the epoch's metrics row, TensorBoard
    and agent files: a resume that started from seconds taken before them lost their time."""
    import time as time_module

    import robustsafe.train as train_module

    save_agents = train_module._save_agents

    def slow_save(*args, **kwargs):
        time_module.sleep(0.3)
        save_agents(*args, **kwargs)

    monkeypatch.setattr(train_module, "_save_agents", slow_save)
    run = train(_tiny(toy_env_id), tmp_path / "run", progress=False, stop_after_epoch=2)
    with (run / "metrics.csv").open() as f:
        wall = float(list(csv.DictReader(f))[-1]["wall_time"])
    assert load_state(run / "state.pt")["elapsed"] >= wall + 0.3


def test_resume_with_epochs_missing_from_metrics_refuses_unless_forced(cli_run, capsys):
    path = cli_run / "metrics.csv"
    header, first, _second = path.read_text().splitlines(keepends=True)
    path.write_text(header + first)  # epoch 2 of the 2 saved is gone
    assert main(["train", "--resume", "--out", str(cli_run), "--epochs", "3"]) == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "epochs 1-2" in err and "1 rows there" in err
    assert path.read_text() == header + first and run_status(cli_run) == (2, 2)
    assert main(["train", "--resume", "--out", str(cli_run), "--epochs", "3", "--force"]) == 0
    assert _epochs(cli_run) == [1, 3]


@pytest.mark.parametrize("text", ["epochs: [1,\n", "ppo:\n  actor_lr: .nan\n", "- a\n- b\n"])
def test_a_broken_config_yaml_is_a_one_line_error(cli_run, capsys, text):
    (cli_run / "config.yaml").write_text(text)
    assert main(["train", "--resume", "--out", str(cli_run), "--epochs", "3"]) == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "config.yaml" in err


def test_a_blank_config_yaml_says_the_file_is_empty(cli_run, capsys):
    (cli_run / "config.yaml").write_text("")
    assert main(["train", "--resume", "--out", str(cli_run), "--epochs", "3"]) == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and f"{cli_run / 'config.yaml'} is empty" in err


def test_resuming_a_run_being_written_names_the_lock(tmp_path, capsys):
    """A run in its first epoch has config.yaml and the lock, no state.pt yet: a resume must say
    that another process writes it, not that it holds no training state."""
    from robustsafe.runstate import run_lock

    out = tmp_path / "run"
    out.mkdir()
    (out / "config.yaml").write_text("epochs: 1\n")
    with run_lock(out):  # another open of the lock file: held as by another process
        assert main(["train", "--resume", "--out", str(out), "--epochs", "2"]) == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "being written by another process" in err
    assert main(["train", "--resume", "--out", str(out), "--epochs", "2"]) == 2  # released
    assert "holds no training state" in capsys.readouterr().err


def test_status_json_damage_does_not_break_the_plan(cli_run):
    (cli_run / "status.json").write_text("{not json")
    assert run_status(cli_run) == (2, 2)
    (cli_run / "status.json").write_text(json.dumps([1, 2]))
    assert run_status(cli_run) == (2, 2)


def test_config_yaml_never_disagrees_with_the_state(cli_run):
    assert main(["train", "--resume", "--out", str(cli_run), "--epochs", "4", "--seed", "9"]) == 2
    saved = yaml.safe_load((cli_run / "config.yaml").read_text())
    assert saved["epochs"] == 2 and saved["env_id"] == TOY


# ----------------------------------------------------------------------------- old run files


def _saved_config(run_dir, algo, sac):
    data = to_dict(TrainConfig(algo=algo))
    data["sac"] = sac(data["sac"])
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text(yaml.safe_dump(data))
    return run_dir


def test_a_sac_run_saved_before_a_setting_existed_keeps_its_old_behaviour(tmp_path):
    def without_new_settings(sac):
        return {k: v for k, v in sac.items() if k not in ("rescale", "multiplier", "actor_average")}

    old = load_run_config(_saved_config(tmp_path / "old", "sac-lag", without_new_settings))
    assert old.sac.rescale is False and old.sac.multiplier == "gradient"
    # its agent file holds the last actor, though today's fast preset saves the weight average
    assert old.sac.actor_average == 0.0
    # ... by the table of old settings, not only because the dataclass default is 0 as well
    old_file = yaml.safe_load((tmp_path / "old" / "config.yaml").read_text())
    assert "actor_average" not in old_file["sac"]
    assert with_settings_of_its_time(old_file)["sac"]["actor_average"] == 0.0
    # Today's defaults differ, so a resume with them is refused rather than changing the run.
    assert TrainConfig(algo="sac-lag").sac.rescale is True
    # A file that names the settings keeps them; another learner's file keeps the defaults.
    named = load_run_config(_saved_config(tmp_path / "named", "sac-lag", lambda s: s))
    assert named.sac.rescale is True and named.sac.multiplier == "pid"
    ppol = load_run_config(_saved_config(tmp_path / "ppol", "ppol", without_new_settings))
    assert ppol.sac == TrainConfig().sac


def test_a_ppol_file_from_before_the_regulariser_setting_ran_sa_ppol_with_the_kl(tmp_path):
    data = to_dict(TrainConfig())
    del data["algo"]  # as the first run files were: PPO-Lagrangian the only learner
    del data["robust"]["sa_regularizer"]
    run = tmp_path / "old"
    run.mkdir()
    (run / "config.yaml").write_text(yaml.safe_dump(data))
    assert load_run_config(run).robust.sa_regularizer == "kl"
    assert TrainConfig().robust.sa_regularizer == "mse"  # not today's default
    # the committed zoo agents of that time read so too
    zoo = Path(__file__).resolve().parents[2] / "zoo" / "SafetyCarRun-v0" / "sa-mc"
    assert load_run_config(zoo).robust.sa_regularizer == "kl"
    # a file that names it keeps it
    data["robust"]["sa_regularizer"] = "mse"
    (run / "config.yaml").write_text(yaml.safe_dump(data))
    assert load_run_config(run).robust.sa_regularizer == "mse"


def test_resume_refuses_the_state_of_another_run(cli_run, tmp_path, capsys):
    """A state.pt copied from another run (here: another seed) is refused in one line before
    anything is written; the run's own state resumes as before."""
    other = tmp_path / "other"
    assert cli_train(other, "--epochs", "1", "--seed", "1") == 0
    own = (cli_run / "state.pt").read_bytes()
    metrics = (cli_run / "metrics.csv").read_text()
    shutil.copy(other / "state.pt", cli_run / "state.pt")
    assert main(["train", "--resume", "--out", str(cli_run), "--epochs", "3"]) == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "another run" in err and "seed" in err, err
    assert (cli_run / "metrics.csv").read_text() == metrics
    (cli_run / "state.pt").write_bytes(own)
    assert main(["train", "--resume", "--out", str(cli_run), "--epochs", "3"]) == 0
    assert _epochs(cli_run) == [1, 2, 3]


def test_resume_refuses_a_state_older_than_the_history_unless_forced(cli_run, capsys):
    """A stopped run leaves at most one metrics row past its state; more means the state.pt is
    not the run's last, and resuming would delete rows: refused unless --force."""
    assert cli_train(cli_run, "--epochs", "1", "--force") == 0
    old = (cli_run / "state.pt").read_bytes()  # epoch 1's
    assert main(["train", "--resume", "--out", str(cli_run), "--epochs", "3"]) == 0
    (cli_run / "state.pt").write_bytes(old)
    capsys.readouterr()
    assert main(["train", "--resume", "--out", str(cli_run), "--epochs", "4"]) == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "2 epochs past" in err and "--force" in err, err
    assert _epochs(cli_run) == [1, 2, 3]
    forced = cli_run.parent / "forced"  # --force resumes from the state's epoch all the same
    shutil.copytree(cli_run, forced)
    assert main(["train", "--resume", "--out", str(forced), "--epochs", "3", "--force"]) == 0
    assert _epochs(forced) == [1, 2, 3] and run_status(forced) == (3, 3)
    # one row past the state is what a kill leaves: resumed without --force
    metrics = cli_run / "metrics.csv"
    header, first, second, _third = metrics.read_text().splitlines(keepends=True)
    metrics.write_text(header + first + second)
    assert main(["train", "--resume", "--out", str(cli_run), "--epochs", "3"]) == 0
    assert _epochs(cli_run) == [1, 2, 3]


def test_a_state_saved_without_its_settings_still_resumes(cli_run):
    """State files written before they named their run's settings resume as before."""
    path = cli_run / "state.pt"
    state = load_state(path)
    assert state.pop("settings")["seed"] == 0
    save_state(path, state)
    assert main(["train", "--resume", "--out", str(cli_run), "--epochs", "3"]) == 0
    assert _epochs(cli_run) == [1, 2, 3]
