"""Settings: numbers read as numbers, NaN / inf refused, errors name the key and the type
(issue 12: 5)."""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import TOY, cli_train, one_line_error

from robustsafe.choices import spelling_key, unique_entries
from robustsafe.cli import main
from robustsafe.presets import resolve


def test_the_readme_set_example_trains(tmp_path):
    out = tmp_path / "run"
    assert cli_train(out, "--epochs", "1", "--set", "ppo.actor_lr=1e-3") == 0
    assert yaml.safe_load((out / "config.yaml").read_text())["ppo"]["actor_lr"] == 0.001
    cfg = resolve(TOY, sets=["ppo.actor_lr=1E-3", "epochs=2e1", "ppo.actor_max_grad_norm=5e-1"])
    assert (cfg.ppo.actor_lr, cfg.epochs, cfg.ppo.actor_max_grad_norm) == (0.001, 20, 0.5)


@pytest.mark.parametrize(
    "item, words",
    [
        ("ppo.actor_lr=.nan", ["ppo.actor_lr", "finite"]),
        ("ppo.actor_lr=.inf", ["ppo.actor_lr", "finite"]),
        ("pid.kp=-.inf", ["pid.kp", "finite"]),
        ("robust.epsilon=nan", ["robust.epsilon", "finite"]),
        ("ppo.actor_max_grad_norm=.nan", ["ppo.actor_max_grad_norm", "finite"]),
        ("ppo.hidden=[8,.nan]", ["ppo.hidden", "finite"]),
        ("ppo.actor_lr=fast", ["ppo.actor_lr", "number"]),
        ("epochs=ten", ["epochs", "integer"]),
        ("epochs=2.5", ["epochs", "integer"]),
        ("num_envs=true", ["num_envs", "integer"]),
        ("robust.epsilon=1e9", ["epsilon", "<= 1"]),
        ("ppo.init_log_std=1e5", ["ppo.init_log_std", "[-20, 5]"]),
    ],
)
def test_bad_settings_name_the_key_and_the_type(tmp_path, capsys, item, words):
    assert cli_train(tmp_path / "run", "--set", item) == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and all(w in err for w in words), err
    assert not (tmp_path / "run").exists()


def test_an_attack_at_budget_zero_is_refused(cli_run, capsys):
    """eps 0 leaves the observations as they are: the 'attacked' row would be the natural one."""
    args = ["evaluate", "--run", str(cli_run), "--attacks", "none,mad", "--eps", "0"]
    assert main([*args, "--episodes", "2", "--env-workers", "0", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "budget of 0" in err, err


def test_one_thing_spelled_two_ways_is_one_entry(cli_run, tmp_path):
    assert spelling_key("mix:.5") == spelling_key("mix:0.50") == "mix:0.5"
    assert spelling_key("sac-lag:1") == spelling_key("sac-lag:1.0") == "sac-lag:1.0"
    assert spelling_key("mix:0.5") != spelling_key("mix:0.7")
    assert spelling_key("my_pkg.envs:Walker-v0") == "my_pkg.envs:Walker-v0"
    assert unique_entries(["none", "mix:0.5", "mad", "mix:.5", "mad"]) == ["none", "mix:0.5", "mad"]
    out = tmp_path / "eval.json"
    args = ["evaluate", "--run", str(cli_run), "--attacks", "none,mix:0.5,mix:.5", "--eps", "0.1"]
    args += ["--episodes", "2", "--env-workers", "0", "--no-progress", "--out", str(out)]
    assert main(args) == 0
    assert [r["attack"] for r in json.loads(out.read_text())["results"]] == ["none", "mix:0.5"]


def test_a_settings_file_with_a_key_given_twice_is_refused(tmp_path, capsys):
    """Plain YAML keeps the last of two ``ppo:`` blocks silently: the first one's gamma would
    be lost."""
    settings = tmp_path / "s.yaml"
    settings.write_text("ppo:\n  gamma: 0.9\nppo:\n  actor_lr: 0.002\n")
    assert cli_train(tmp_path / "run", "--config", str(settings)) == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "the key 'ppo' is given twice" in err and "line 3" in err
    assert not (tmp_path / "run").exists()


def test_a_hidden_layer_beyond_any_use_is_refused(tmp_path, capsys):
    assert cli_train(tmp_path / "run", "--set", "ppo.hidden=[99999999999]") == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and "sizes in [1, 65536]" in err, err
