"""Silent wrong results become warnings or refusals (issue 12: 8)."""

from __future__ import annotations

import gymnasium as gym
import pytest
from conftest import TOY, cli_train, one_line_error

from robustsafe.cli import main

TWIN = "RobustSafeToyCostTwin-v0"  # the toy env's sizes under another name
if TWIN not in gym.registry:
    gym.register(TWIN, entry_point=gym.registry[TOY].entry_point, max_episode_steps=20)


def test_an_env_without_costs_warns(tmp_path):
    with pytest.warns(UserWarning, match=r"info\['cost'\]"):
        assert cli_train(tmp_path / "run", "--epochs", "1", env="Pendulum-v1") == 0


def test_an_absurd_epsilon_is_refused_before_any_episode(cli_run, capsys):
    args = ["evaluate", "--run", str(cli_run), "--env-workers", "0", "--episodes", "2"]
    assert main([*args, "--attacks", "random", "--eps", "1e9"]) == 2
    captured = capsys.readouterr()
    assert one_line_error(captured.err) and "--allow-large-eps" in captured.err
    assert "reward" not in captured.out
    assert main([*args, "--attacks", "random", "--eps", "2", "--allow-large-eps"]) == 0
    capsys.readouterr()
    xi = ["xi-sweep", "--run", str(cli_run), "--env-workers", "0", "--episodes", "1", "--xi"]
    assert main([*xi, "0.5", "--eps", "5", "--out", str(cli_run / "x.json")]) == 2
    captured = capsys.readouterr()
    assert one_line_error(captured.err) and "--allow-large-eps" in captured.err
    assert not (cli_run / "x.json").exists()


def test_an_agent_is_not_evaluated_on_another_task_silently(cli_run, capsys):
    args = ["evaluate", "--run", str(cli_run), "--env-workers", "0", "--episodes", "2"]
    assert main([*args, "--env", TWIN]) == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and TOY in err and "--allow-other-env" in err
    assert main([*args, "--env", TWIN, "--allow-other-env"]) == 0
    assert main([*args, "--env", "SafetyCarRun-v0", "--allow-other-env"]) == 2
    assert "observation size" in capsys.readouterr().err


def test_an_agents_critics_are_not_fitted_on_another_task_silently(cli_run, tmp_path, capsys):
    out = tmp_path / "fitted.pt"
    args = ["fit-critics", "--run", str(cli_run), "--env-workers", "0", "--num-envs", "2"]
    args += ["--steps", "40", "--out", str(out)]
    assert main([*args, "--env", TWIN]) == 2
    err = capsys.readouterr().err
    assert one_line_error(err) and TOY in err and "--allow-other-env" in err
    assert not out.exists()
    assert main([*args, "--env", TWIN, "--allow-other-env"]) == 0
    assert out.exists()
    assert main([*args, "--exploration-std", "0.3", "--force"]) == 2  # not ignored silently
    assert "--exploration-std is for --policy/--sb3" in capsys.readouterr().err


@pytest.mark.parametrize(
    "option, message",
    [
        (["--trust-pickle"], "--trust-pickle is for --sb3"),
        (["--action-std", "0.3"], "--action-std is for --policy"),
    ],
)
def test_a_foreign_policys_options_with_a_run_are_refused(
    cli_run, tmp_path, capsys, option, message
):
    out = tmp_path / "e.json"
    for command in ("evaluate", "fit-critics"):
        assert main([command, "--run", str(cli_run), *option, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert one_line_error(err) and message in err
        assert not out.exists()
