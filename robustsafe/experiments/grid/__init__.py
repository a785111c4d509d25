"""The experiment grid: train every (env, learner, mode, seed) in its own process, then
evaluate it.

A grid is a ``GridSpec``; ``run_grid(spec)`` makes every combination's run directory

    <out>/<env>/<mode without ':'>/seed<S>/     e.g. runs/grid/SafetyCarRun-v0/adv-mix0.5/seed3
    <out>/<env>/<algo>-<mode>/seed<S>/          other learners than PPOL: .../focops-adv-mc/seed0

hold a finished training (``robustsafe train``: ``config.yaml``, ``agent.pt``, ``state.pt``, ...,
plus ``train.log``, the process's output) and an evaluation under the attacker set at the task's
epsilon (``eval.json`` from ``robustsafe evaluate``, plus ``eval.log``). It is safe to call again
and again, for instance after a crash or a reboot:

- a run whose ``state.pt`` says it has done the planned epochs is skipped;
- a run with fewer epochs done (killed, or the grid now asks for more epochs) is resumed with
  ``--resume``; a resumed run keeps its saved settings except the number of epochs (that is what
  ``robustsafe train --resume`` does), and the plan notes any difference from the spec;
- every other run is started;
- an evaluation is skipped when ``eval.json`` is newer than the run's ``agent.pt`` and was made
  with the same attackers, episodes, evaluation seed and epsilon.

Every training and evaluation is a separate process (``python -m robustsafe.cli train ...``),
so a crash or a leak in one cannot take down the others: a failed process is reported with its
exit status and the last lines of its log, and the grid goes on with the rest. At most
``workers`` processes run at a time (the Ray backend: as many as the cluster has room for); an
agent is evaluated as soon as its training ends.

This package plans and schedules, one module per job (every name is importable from
``robustsafe.experiments.grid``):

- ``spec``: ``GridSpec`` and its checks, ``parse_train_args``, ``resolve_train_config``,
  ``check_envs``;
- ``plan``: ``plan_grid`` / ``plan_run`` (``PlannedRun``: train, resume or skip, and which
  evaluations are out of date), ``format_plan``, and ``RunResult`` / ``format_results``;
- ``commands``: the command of each job (``train_command``, ``evaluate_command``,
  ``extra_command``: the appendix's evaluation and the xi sweep), and the jobs that the driver
  runs (a command with its log);
- ``driver``: ``run_grid``, which executes a plan and holds ``<out>/.grid.lock``.

Starting a command is a launcher's job (``robustsafe.experiments.launchers``:
``LocalLauncher``, subprocesses here; ``RayLauncher``, Ray tasks on any node without a shared
disk, the results copied back to ``out``); ``robustsafe.experiments.compute`` is the compute
model of ``--dry-run``.

The planned number of epochs of a run is resolved exactly as ``robustsafe train`` resolves it
(preset, then ``--env-workers`` / ``--num-envs`` / ``--obs-norm``, ``--set``, ``--epochs`` /
``--total-steps`` from ``train_args``), so ``train_args`` are checked before any process
starts: a misspelt ``--set`` key is one clear error, not a grid of failed runs.

Example::

    spec = GridSpec(envs=("SafetyCarRun-v0",), modes=("vanilla", "adv-mc"), seeds=(0, 1, 2),
                    preset="fast", out=Path("runs/grid"))
    for r in run_grid(spec):
        print(r.env_id, r.mode, r.seed, r.train, r.evaluation)
"""

from __future__ import annotations

from robustsafe.experiments.grid.commands import (
    evaluate_command,
    extra_command,
    train_command,
)
from robustsafe.experiments.grid.driver import (
    LOG_TAIL_LINES,
    MAX_LOST,
    run_grid,
)
from robustsafe.experiments.grid.plan import (
    PlannedRun,
    RunResult,
    evaluation_is_current,
    expected_attacks,
    extra_evaluation_is_current,
    extra_evaluations,
    format_plan,
    format_results,
    plan_grid,
    plan_run,
)
from robustsafe.experiments.grid.spec import (
    APPENDIX_ATTACKS,
    BACKENDS,
    DEFAULT_ATTACKS,
    Action,
    EvalStatus,
    GridSpec,
    TrainArgs,
    TrainStatus,
    check_envs,
    env_dir_name,
    parse_train_args,
    resolve_train_config,
)

__all__ = [
    "APPENDIX_ATTACKS",
    "Action",
    "BACKENDS",
    "DEFAULT_ATTACKS",
    "EvalStatus",
    "GridSpec",
    "LOG_TAIL_LINES",
    "MAX_LOST",
    "PlannedRun",
    "RunResult",
    "TrainArgs",
    "TrainStatus",
    "check_envs",
    "env_dir_name",
    "evaluate_command",
    "evaluation_is_current",
    "expected_attacks",
    "extra_command",
    "extra_evaluation_is_current",
    "extra_evaluations",
    "format_plan",
    "format_results",
    "parse_train_args",
    "plan_grid",
    "plan_run",
    "resolve_train_config",
    "run_grid",
    "train_command",
]
