"""What a new user meets first: --help with every default, --version, --config FILE.yaml with
--set on top, one option name per concept (old spellings warn), and env ids checked up front."""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from pathlib import Path

import pytest
import yaml

import robustsafe
from robustsafe.choices import ALGOS
from robustsafe.cli import build_parser, main
from robustsafe.cli._common import CLIError
from robustsafe.cli.train import DEFAULT_PRESET, train_settings
from robustsafe.presets import preset
from robustsafe.rundir import load_run_config
from robustsafe.settings_io import to_dict

ROOT = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------- --help


def _parsers(parser: argparse.ArgumentParser, name: str = "robustsafe"):
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _parsers(sub, f"{name} {sub_name}")


def test_help_of_every_command_shows_every_default():
    parsers = dict(_parsers(build_parser()))
    assert {"robustsafe train", "robustsafe grid", "robustsafe plot sweep"} <= set(parsers)
    missing = []
    for name, parser in parsers.items():
        formatter = parser._get_formatter()
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._VersionAction):
                continue
            if isinstance(action, argparse._SubParsersAction) or not action.option_strings:
                continue
            if action.required or action.nargs == 0:  # flags: off unless given
                continue
            text = formatter._expand_help(action) if action.help else ""
            if "deprecated spelling" in text:
                continue
            if "default" not in text:
                missing.append(f"{name} {action.option_strings[0]}: {text!r}")
    assert not missing, "options whose --help names no default:\n" + "\n".join(missing)


@pytest.mark.parametrize(
    "command,expected",
    [
        ("evaluate", ["--episodes EPISODES", "(default: 50)", "(default: the run's robust"]),
        ("train", [f"(default: {DEFAULT_PRESET})", "(default: SafetyCarRun-v0)"]),
        ("grid", ["(default: runs/grid)", "(default: enough to keep the cores busy"]),
    ],
)
def test_help_text_prints_the_defaults(command, expected, capsys):
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    out = re.sub(r"\s+", " ", capsys.readouterr().out)  # argparse wraps lines
    for piece in expected:
        assert piece in out


# ----------------------------------------------------------------------------- --version


def test_the_command_line_starts_without_torch():
    """`robustsafe` (the console script) imports robustsafe.cli, and so does every env worker
    it spawns (they import the main script again): that import pulled in torch, about a second
    of start-up in the command and again in each worker before the first epoch."""
    import subprocess

    code = (
        "import sys, robustsafe.cli\n"
        "heavy = sorted(m for m in ('torch', 'matplotlib', 'ray') if m in sys.modules)\n"
        "print(heavy)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout


def test_version_prints_the_package_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"robustsafe {robustsafe.__version__}\n"
    # the one version: pyproject.toml's (what package metadata carries)
    text = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^version = "([^"]+)"', text, re.M).group(1) == robustsafe.__version__


# ----------------------------------------------------------------------------- --config


def _settings(*argv: str):
    return train_settings(build_parser().parse_args(["train", *argv]))


@pytest.mark.parametrize(
    "item, message",
    [
        ("critics.batch_size=0", "critics.batch_size must be > 0, got 0"),
        ("critics.updates_per_epoch=0", "critics.updates_per_epoch must be > 0, got 0"),
        ("critics.replay_size=-1", "critics.replay_size must be > 0, got -1"),
        ("critics.gamma=5", "critics.gamma must be in [0, 1), got 5.0"),
        ("critics.lr=-1", "critics.lr must be >= 0, got -1.0"),
        ("pid.kp=-1", "pid.kp must be >= 0 (a PID gain), got -1.0"),
        ("robust.schedule=foo", "robust: unknown schedule 'foo'"),
        ("pid.cost_limit=-5", "pid.cost_limit must be >= 0, got -5.0"),
        ("focops.cost_limit=-1", "focops.cost_limit must be >= 0, got -1.0"),
        ("sac.cost_limit=-1", "sac.cost_limit must be >= 0, got -1.0"),
        # each named once, with its value (it read "sac: sac.multiplier ..." and "alpha,
        # lambda_init, lambda_lr and update_after must be >= 0")
        ("sac.multiplier=foo", "sac.multiplier must be 'gradient' or 'pid', got 'foo'"),
        ("ppo.init_log_std=9", "ppo.init_log_std must be in [-20, 5], got 9.0"),
        ("sac.lambda_lr=-1", "sac.lambda_lr must be >= 0, got -1.0"),
        ("cvpo.alpha_std_max=-1", "cvpo.alpha_std_max must be >= 0, got -1.0"),
        ("checkpoint_every=-1", "checkpoint_every must be >= 0, got -1"),
        # a negative cap would flip the clipped gradient's sign: ascent, silently
        ("ppo.actor_max_grad_norm=-1", "ppo.actor_max_grad_norm must be > 0 or None"),
        ("ppo.critic_max_grad_norm=0", "ppo.critic_max_grad_norm must be > 0 or None"),
        ("focops.actor_max_grad_norm=-1", "focops.actor_max_grad_norm must be > 0 or None"),
        # not YAML: a one-line error, not the parser's traceback; no tag constructs an object
        ("ppo.hidden=[64, 64", "--set ppo.hidden: not a valid value"),
        ("ppo.actor_lr=@x", "--set ppo.actor_lr: not a valid value"),
        ("ppo.actor_lr=!!python/object/apply:os.getcwd []", "--set ppo.actor_lr: not a valid"),
        # the settings that name a run: their own options, so that the name cannot disagree
        ("seed=5", "--set seed: this setting names the run; give --seed instead (grid: --seeds)"),
        (
            "robust={mode: adv-mc}",
            "--set robust: a group of settings; set one of them, e.g. robust.",
        ),
        ("env_id=SafetyDroneRun-v0", "--set env_id: this setting names the run; give --env"),
        ("algo=focops", "--set algo: this setting names the run; give --algo instead"),
        ("robust.mode=adv-mc", "--set robust.mode: this setting names the run; give --mode"),
        ("preset=paper", "--set preset: this setting names the run; give --preset instead"),
    ],
)
def test_bad_settings_are_refused_naming_the_setting(item, message):
    # refused while the settings are read, before any run directory or env exists
    with pytest.raises(CLIError) as err:
        _settings("--set", item)
    assert str(err.value).startswith(message)


@pytest.mark.parametrize(
    "item, message",
    [
        # settings that trained nothing or failed after the envs started (a memory error, a
        # hang, an ever-growing n-step window)
        ("sac.replay_size=500", "sac.update_after (1000) must be <= replay_size (500)"),
        ("cvpo.batch_size=300000", "cvpo.batch_size (300000) must be <= replay_size (200000)"),
        ("sac.replay_size=1000000000000", "sac.replay_size must be <= 100,000,000"),
        ("sac.batch_size=100000000000", "sac.batch_size must be <= 1,048,576"),
        ("sac.updates_per_step=1e9", "sac.updates_per_step must be <= 1,000"),
        ("sac.n_step=1000000", "sac.n_step must be an integer in [1, 100]"),
        ("cvpo.sample_actions=1000000000", "cvpo.sample_actions must be <= 4096"),
    ],
)
def test_off_policy_settings_that_could_not_train_are_refused(item, message):
    with pytest.raises(CLIError) as err:
        _settings("--algo", "cvpo" if item.startswith("cvpo") else "sac-lag", "--set", item)
    assert str(err.value).startswith(message)


def test_an_off_policy_epoch_takes_a_whole_number_of_gradient_steps():
    """The fraction left at an epoch's end is not carried over: 0.002 x 400 steps would take no
    gradient step at all."""
    with pytest.raises(CLIError, match=r"must be a whole number >= 1 of gradient steps"):
        _settings(
            "--algo",
            "sac-lag",
            "--set",
            "steps_per_epoch=400",
            "--set",
            "sac.updates_per_step=0.002",
        )
    cfg, _ = _settings("--algo", "sac-lag", "--set", "sac.updates_per_step=0.5")
    assert cfg.sac.updates_per_step * cfg.steps_per_epoch >= 1


def test_settings_from_every_source_are_checked_together(tmp_path):
    """--num-envs (or a file's num_envs) with --set steps_per_epoch: the final settings are
    valid, so neither source is refused for the preset's steps_per_epoch it replaces."""
    cfg, _ = _settings("--num-envs", "3", "--set", "steps_per_epoch=1200")
    assert (cfg.num_envs, cfg.steps_per_epoch) == (3, 1200)
    file = tmp_path / "settings.yaml"
    file.write_text("num_envs: 3\n")
    cfg, _ = _settings("--config", str(file), "--set", "steps_per_epoch=1200")
    assert (cfg.num_envs, cfg.steps_per_epoch) == (3, 1200)
    with pytest.raises(CLIError, match=r"steps_per_epoch \(4000\) must be a multiple of num_envs"):
        _settings("--config", str(file))  # the final settings are checked all the same


def test_config_file_precedence_preset_then_file_then_options(tmp_path):
    base = preset("SafetyCarRun-v0", DEFAULT_PRESET)
    file = tmp_path / "settings.yaml"
    file.write_text(
        yaml.safe_dump(
            {
                "env_id": "SafetyCarCircle-v0",
                "seed": 4,
                "epochs": 7,
                "workers": 2,
                "ppo": {"actor_lr": 0.002, "hidden": [16, 16]},
                "robust": {"mode": "adv-mc", "epsilon": 0.03},
            }
        )
    )
    cfg, out = _settings("--config", str(file))
    circle = preset("SafetyCarCircle-v0", DEFAULT_PRESET, mode="adv-mc")
    # the file replaces the preset's values ...
    assert (cfg.env_id, cfg.seed, cfg.robust.mode) == ("SafetyCarCircle-v0", 4, "adv-mc")
    assert (cfg.epochs, cfg.ppo.actor_lr, cfg.ppo.hidden) == (7, 0.002, (16, 16))
    assert cfg.robust.epsilon == 0.03
    assert cfg.steps_per_epoch == circle.steps_per_epoch  # ... and keeps the others
    assert cfg.ppo.critic_lr == base.ppo.critic_lr
    assert out == Path("runs/SafetyCarCircle-v0") / f"adv-mc-{DEFAULT_PRESET}-seed4"
    # ... and the command line replaces the file's
    cfg, out = _settings(
        "--config",
        str(file),
        "--env",
        "SafetyCarRun-v0",
        "--seed",
        "1",
        "--set",
        "ppo.actor_lr=0.003",
        "--epochs",
        "2",
        "--env-workers",
        "0",
    )
    assert (cfg.env_id, cfg.seed, cfg.robust.mode) == ("SafetyCarRun-v0", 1, "adv-mc")
    assert (cfg.epochs, cfg.ppo.actor_lr, cfg.workers) == (2, 0.003, 0)
    assert cfg.ppo.hidden == (16, 16) and cfg.robust.epsilon == 0.03
    assert cfg.steps_per_epoch == base.steps_per_epoch  # CarRun's preset under the file


def test_a_run_config_yaml_as_config_gives_the_same_settings(tmp_path, toy_env_id):
    from tiny_config import tiny_config

    from robustsafe.files import write_text_atomic

    run = tmp_path / "run"
    run.mkdir()
    write_text_atomic(run / "config.yaml", yaml.safe_dump(to_dict(tiny_config(toy_env_id))))
    saved = load_run_config(run)
    cfg, _ = _settings("--config", str(run / "config.yaml"), "--out", str(tmp_path / "b"))
    assert cfg == saved == tiny_config(toy_env_id)  # nothing lost on the way through the file


def test_config_file_errors_are_one_line_and_loading_runs_no_code(tmp_path, capsys):
    def error(text: str) -> str:
        file = tmp_path / "s.yaml"
        file.write_text(text)
        assert main(["train", "--config", str(file), "--out", str(tmp_path / "r")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("robustsafe train: error: ")
        return err

    assert "unknown setting 'ppo.nope'" in error("ppo:\n  nope: 1\n")
    assert "unknown setting 'learning_rate'" in error("learning_rate: 0.1\n")
    assert "ppo is a group of settings" in error("ppo: 3\n")
    assert "expected a mapping" in error("- 1\n- 2\n")
    assert "actor_lr" in error("ppo:\n  actor_lr: fast\n")
    assert "ppo.hidden: not a setting value" in error("ppo: {hidden: &a [*a]}\n")  # contains itself
    marker = tmp_path / "pwned"
    assert "not valid YAML" in error(f'!!python/object/apply:os.system ["touch {marker}"]\n')
    assert not marker.exists()
    assert main(["train", "--config", str(tmp_path / "none.yaml")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["train", "--config", str(tmp_path)]) == 2
    assert "is a directory; give its config.yaml" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_resume_with_a_config_that_changes_settings_is_refused(toy_run_dir, tmp_path):
    file = tmp_path / "s.yaml"
    file.write_text("ppo:\n  actor_lr: 0.5\n")
    with pytest.raises(CLIError, match=r"cannot resume .*--config .*ppo.actor_lr=0.5"):
        _settings("--resume", "--out", str(toy_run_dir), "--config", str(file))


@pytest.mark.parametrize(
    "length, message",
    [
        (["--total-steps", "0"], "--total-steps must be >= 1, got 0"),
        (["--total-steps", "-99999"], "--total-steps must be >= 1, got -99999"),
        (["--epochs", "0"], "epochs must be > 0, got 0"),
    ],
)
def test_resume_checks_the_new_length_as_a_new_run_does(toy_run_dir, length, message):
    with pytest.raises(CLIError) as err:
        _settings("--resume", "--out", str(toy_run_dir), *length)
    assert str(err.value).startswith(message)


def test_a_seed_beyond_32_bits_is_refused_before_anything_is_written(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", "--seed", str(2**31), "--out", str(out)]) == 2
    assert "seed must be in [0, 2147483647], got 2147483648" in capsys.readouterr().err
    assert not out.exists()


def test_a_module_named_in_a_file_is_imported_only_on_the_command_lines_word(
    toy_run_dir, toy_env_id, tmp_path, monkeypatch, capsys
):
    """An env id ``module:Id`` makes gymnasium import ``module``: from a run's files or a settings
    file that would run code on loading; from ``--env`` it is the user's word."""
    import torch

    marker = tmp_path / "imported"
    (tmp_path / "sidemod.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    env_id = f"sidemod:{toy_env_id}"
    agent_file = tmp_path / "agent.pt"
    data = torch.load(toy_run_dir / "agent.pt", weights_only=True)
    data["config"]["env_id"] = env_id
    torch.save(data, agent_file)
    config = toy_run_dir / "config.yaml"
    config.write_text(config.read_text().replace(f"env_id: {toy_env_id}", f"env_id: {env_id}"))
    settings = tmp_path / "s.yaml"
    settings.write_text(f"env_id: {env_id}\n")
    evaluate = ["evaluate", "--run", str(agent_file), "--episodes", "1", "--num-envs", "1"]
    evaluate += ["--env-workers", "0", "--no-progress", "--out", str(tmp_path / "e.json")]
    for argv in (
        evaluate,
        ["xi-sweep", "--run", str(agent_file), "--episodes", "1", "--xi", "0.5"],
        ["train", "--resume", "--out", str(toy_run_dir), "--epochs", "2"],
        ["train", "--config", str(settings), "--out", str(tmp_path / "new")],
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"give --env {env_id} to allow it" in err, err
        assert not marker.exists() and "sidemod" not in sys.modules
    assert main([*evaluate, "--env", env_id]) == 0
    assert marker.exists()
    sys.modules.pop("sidemod")


@pytest.fixture
def toy_run_dir(tmp_path, toy_env_id):
    from tiny_config import tiny_config

    from robustsafe.train import train

    return train(tiny_config(toy_env_id), tmp_path / "run", progress=False)


def test_grid_no_eval_refuses_evaluation_options_that_would_do_nothing(tmp_path, capsys):
    grid = ["grid", "--envs", "SafetyCarRun-v0", "--out", str(tmp_path / "g"), "--dry-run"]
    for extra in (["--attacks", "mad"], ["--episodes", "10"], ["--appendix"], ["--eval-seed", "1"]):
        assert main([*grid, "--no-eval", *extra]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"--no-eval trains only, so {extra[0]}" in err
    assert main([*grid, "--no-eval"]) == 0
    assert main([*grid, "--episodes", "10"]) == 0  # without --no-eval: used


def test_grid_config_file_then_set_then_epochs(tmp_path, capsys):
    file = tmp_path / "s.yaml"
    file.write_text("env_id: SafetyCarCircle-v0\nepochs: 3\nppo:\n  actor_lr: 0.002\n")
    grid = ["grid", "--envs", "SafetyCarRun-v0", "--out", str(tmp_path / "g"), "--dry-run"]
    assert main([*grid, "--config", str(file)]) == 0
    out = capsys.readouterr().out
    assert "env_id not used" in out
    steps = preset("SafetyCarRun-v0", DEFAULT_PRESET).steps_per_epoch
    assert f"{3 * steps:,}" in out  # the file's epochs, CarRun (the grid's env) steps
    assert main([*grid, "--config", str(file), "--epochs", "2"]) == 0
    assert f"{2 * steps:,}" in capsys.readouterr().out
    file.write_text("nope: 1\n")
    assert main([*grid, "--config", str(file)]) == 2
    assert "unknown setting 'nope'" in capsys.readouterr().err


# ----------------------------------------------------------------------------- renamed options


@pytest.mark.parametrize(
    "argv,dest,value,new",
    [
        (["train", "--workers", "0"], "env_workers", 0, "--env-workers"),
        (["evaluate", "--workers", "3"], "env_workers", 3, "--env-workers"),
        (["fit-critics", "--workers", "3"], "env_workers", 3, "--env-workers"),
        (["xi-sweep", "--run", "r", "--workers", "3"], "env_workers", 3, "--env-workers"),
        (["grid", "--envs", "X-v0", "--workers", "2"], "parallel_runs", 2, "--parallel-runs"),
        (["grid", "--envs", "X-v0", "--eval-workers", "0"], "eval_env_workers", 0, None),
    ],
)
def test_old_option_spelling_maps_to_the_new_one_and_warns(argv, dest, value, new, capsys):
    args = build_parser().parse_args(argv)
    assert getattr(args, dest) == value
    err = capsys.readouterr().err
    old = next(a for a in argv if a.startswith("--") and "workers" in a)
    new = new or "--eval-env-workers"
    assert err.count("\n") == 1
    assert f"warning: {old} is deprecated" in err and f"use {new}" in err
    # the new spelling: same value, no warning
    args = build_parser().parse_args([new if a == old else a for a in argv])
    assert getattr(args, dest) == value and capsys.readouterr().err == ""


def test_option_defaults_under_the_new_names():
    p = build_parser()
    assert p.parse_args(["grid", "--envs", "X-v0"]).parallel_runs is None  # the machine's
    assert p.parse_args(["grid", "--envs", "X-v0"]).eval_env_workers == 2
    assert p.parse_args(["evaluate"]).env_workers == 2
    assert p.parse_args(["train"]).env_workers is None  # the preset's


def test_grid_runs_at_a_time_default_to_what_keeps_the_cores_busy(tmp_path, capsys, monkeypatch):
    """Two at a time on 2 cores (measured: 1.30-1.49x the runs per hour of one), fewer when the
    free memory holds fewer (3 GiB a run); --parallel-runs overrides."""
    from robustsafe.experiments import concurrency

    monkeypatch.setattr("os.cpu_count", lambda: 2)
    grid = ["grid", "--envs", "SafetyCarRun-v0", "--seeds", "0,1,2", "--dry-run"]
    grid += ["--out", str(tmp_path / "g")]
    for memory, extra, at_once in ((24, [], 2), (5, [], 1), (24, ["--parallel-runs", "1"], 1)):
        monkeypatch.setattr(concurrency, "available_memory", lambda m=memory: m * 2**30)
        assert main([*grid, *extra]) == 0
        assert f"here with {at_once} at a time on 2 cores" in capsys.readouterr().out


# ----------------------------------------------------------------------------- env ids


@pytest.mark.parametrize("dry_run", [True, False])
def test_grid_refuses_an_unknown_env_id_in_one_line(tmp_path, capsys, dry_run):
    out = tmp_path / "g"
    argv = ["grid", "--envs", "SafetyCarRun-v0,SafetyCarJump-v0", "--out", str(out)]
    assert main(argv + (["--dry-run"] if dry_run else [])) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1
    assert "unknown environment id 'SafetyCarJump-v0'" in captured.err
    assert "SafetyCarRun-v0" in captured.err  # the valid ids are listed
    assert not out.exists()


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--algos", "sac-lag", "--modes", "sa-mad"], "--algo sac-lag trains in"),
        (["--epochs", "2", "--total-steps", "1000"], "give --epochs or --total-steps, not both"),
        (["--backend", "ray", "--parallel-runs", "2"], "--parallel-runs is for the local"),
        (["--backend", "ray", "--parallel-runs", "1"], "--parallel-runs is for the local"),
        (["--parallel-runs", "0"], "--parallel-runs must be >= 1, got 0"),
        # a negative comma list is the option's value (argparse alone: an unknown option)
        (["--seeds", "-1,0"], "seeds must be non-negative integers, got -1"),
    ],
)
def test_grid_option_errors_are_one_line_in_the_users_words(tmp_path, capsys, extra, words):
    out = tmp_path / "g"
    assert main(["grid", "--envs", "SafetyCarRun-v0", "--out", str(out), "--dry-run", *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"robustsafe grid: error: {words}")
    assert not out.exists()


def test_only_a_negative_value_after_an_option_is_joined_to_it():
    from robustsafe.cli import join_negative_values

    argv = ["grid", "--seeds", "-1,0", "--eps", "-.5", "--out", "-x", "--", "-2", "--a=1", "-3"]
    assert join_negative_values(argv) == [
        "grid", "--seeds=-1,0", "--eps=-.5", "--out", "-x", "--", "-2", "--a=1", "-3"
    ]  # fmt: skip


def test_a_negative_comma_list_reaches_the_options_own_check(capsys):
    zoo = Path(robustsafe.__file__).resolve().parents[1] / "zoo" / "SafetyCarRun-v0" / "vanilla"
    assert main(["evaluate", "--run", str(zoo), "--eps", "-0.05,0.1"]) == 2
    err = capsys.readouterr().err
    assert err == "robustsafe evaluate: error: epsilons must be >= 0, got '-0.05,0.1'\n"


@pytest.mark.parametrize("command", [["grid", "--envs", "SafetyCarRun-v0"], ["tabular", "demo"]])
def test_an_out_directory_that_is_a_file_is_refused_before_any_work(tmp_path, capsys, command):
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    assert main([*command, "--out", str(notes)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--out {notes} is a file, not a directory" in err
    assert notes.read_text() == "mine"


def test_grid_dry_run_refuses_an_unimportable_env_module(tmp_path, capsys):
    argv = ["grid", "--envs", "no_such_module:Toy-v0", "--out", str(tmp_path), "--dry-run"]
    assert main(argv) == 2
    assert "no_such_module" in capsys.readouterr().err


def test_every_learner_has_its_words_in_train_help(capsys, monkeypatch):
    from robustsafe.cli.train import LEARNERS

    assert set(LEARNERS) == set(ALGOS)  # a new learner: its name in choices.ALGOS, words here
    monkeypatch.setenv("COLUMNS", "1000")  # argparse wraps at the terminal's width, hyphens too
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = capsys.readouterr().out
    for algo in ALGOS:
        assert f"{algo} ({LEARNERS[algo]})" in text


def test_a_resume_may_change_the_env_workers_and_the_numbers_do_not(tmp_path):
    """Env workers step the same envs in the same order whatever their number, yet a resume
    refused `--env-workers` (and the grid's resume dropped `--set workers=K`): a run could not
    move to a machine with more cores. Resumed with other workers, a run ends as one trained
    straight through, bit for bit."""
    import csv

    import torch

    from robustsafe.experiments.grid.commands import _resume_args

    base = ["train", "--env", "SafetyCarRun-v0", "--num-envs", "4", "--set", "steps_per_epoch=800"]
    straight, moved = tmp_path / "straight", tmp_path / "moved"
    assert main([*base, "--epochs", "3", "--env-workers", "0", "--out", str(straight)]) == 0
    assert main([*base, "--epochs", "1", "--env-workers", "0", "--out", str(moved)]) == 0
    resume = ["train", "--resume", "--out", str(moved)]
    assert main([*resume, "--epochs", "2", "--env-workers", "2", "--no-progress"]) == 0
    assert yaml.safe_load((moved / "config.yaml").read_text())["workers"] == 2
    # ... and the snapshots' spacing (a long run's disk): here none kept from epoch 3 on
    thin = ["--set", "checkpoint_every=0"]
    assert main([*resume, "--epochs", "3", "--set", "workers=1", *thin, "--no-progress"]) == 0
    saved = yaml.safe_load((moved / "config.yaml").read_text())
    assert (saved["workers"], saved["checkpoint_every"]) == (1, 0)
    kept = sorted(p.name for p in (moved / "checkpoints").iterdir())
    assert kept == ["agent_epoch_0001.pt", "agent_epoch_0002.pt"]
    assert len(list((straight / "checkpoints").iterdir())) == 3

    def numbers(run):
        with (run / "metrics.csv").open() as f:
            return [
                {k: v for k, v in row.items() if not k.startswith(("time_", "wall", "steps_per"))}
                for row in csv.DictReader(f)
            ]

    assert numbers(moved) == numbers(straight) and len(numbers(moved)) == 3
    a, b = (torch.load(r / "agent.pt", weights_only=True) for r in (straight, moved))
    assert all(torch.equal(a["actor"][k], b["actor"][k]) for k in a["actor"])
    # the other settings still may not change, nor the length through --set
    assert main([*resume, "--epochs", "4", "--num-envs", "2"]) == 2
    assert main([*resume, "--set", "epochs=4"]) == 2
    assert len(numbers(moved)) == 3
    # and the grid's resume takes the workers from its --set / --env-workers
    args = ["--epochs", "5", "--set", "workers=1", "--set", "ppo.actor_lr=1", "--set=workers=3"]
    assert _resume_args([*args, "--set", "checkpoint_every=5", "--env-workers", "2"]) == [
        "--epochs",
        "5",
        "--set",
        "workers=1",
        "--set=workers=3",
        "--set",
        "checkpoint_every=5",
        "--env-workers",
        "2",
    ]
    # nor does the grid count a run of another snapshot spacing as one of other settings
    from robustsafe.experiments.grid.plan import _settings_difference
    from robustsafe.rundir import load_run_config

    cfg = load_run_config(moved)
    assert _settings_difference(cfg, dataclasses.replace(cfg, checkpoint_every=25)) == []
    assert _settings_difference(cfg, dataclasses.replace(cfg, num_envs=2)) == ["num_envs"]
