"""The compute model: env steps and expected wall time of a grid's runs.

A training's wall time is its env steps times seconds per step, the latter from a small table
of measured rates (``compute_rates.py``, written by ``benchmarks/compute_rates.py``):

- a (task, run) with committed runs (Table 1's, the Drone / Ant tasks' and the other
  learners', preset ``fast``, 2 cores, 20 envs in 2 worker processes; keyed by the run
  directory's name: ``adv-mc``, ``focops-vanilla``, ``sac-lag-vanilla``) uses their measured
  seconds per step: the whole training's wall time (start-up, checkpoints and updates
  included) over its env steps, pooled over seeds, divided by their load factor: their
  env-stepping time per step over the least of the task's runs with the same env layout and
  kind of rollout (on- or off-policy), or over the reference task's least times the two tasks'
  env-stepping ratio in the calibration trainings below where that is less (a task with one
  run group has no peer), since only the machine's load changes that (the committed runs
  shared the machine with up to 6 jobs);
- the attack part of random / ADV training is multiplied by the share of env steps the
  planned run attacks (attacked envs x the epochs after the schedule's start, under the preset
  priced with the run's own mode and learner: fast CarCircle ADV-PPOL and FOCOPS start at epoch
  50 of 150 with half the envs, 0.33, PPOL-random at 75, 0.25; ``paper`` attacks every env from
  epoch 52 of 100, 0.48) over the share the source runs attacked, from their own config.yaml
  (MEASURED's ``attacked``: Table 1's CarCircle runs attacked every env from epoch 21 of 150,
  0.87);
- a task measured in vanilla training but not in the mode takes its own vanilla rates plus
  what the mode adds per step on another task (each part: the mode's minus that task's
  vanilla's, at least 0; the wall time grows by their sum): for random / ADV training the
  task whose measured runs attacked the share of env steps nearest the planned run's (fast
  AntRun ADV-PPOL's 0.8 nearest CarCircle's 0.87, AntCircle's 0.41 DroneCircle's 0.40; among
  equals a task of the same kind, Run or Circle), so that the attack part is scaled least,
  since the per-step attack cost differs from task to task; else the reference task;
- a task without runs uses the reference task's rates (SafetyCarCircle-v0: the same
  (256, 256) networks as the Drone and Ant presets), or for another learner whichever task it
  was measured on, with the env-stepping, policy and update parts each scaled by the two
  tasks' ratio in short fast vanilla trainings run one after the other on an idle machine
  (``benchmarks/compute_calibration.py --train-only``: the physics, the episode resets, the
  epoch size's share of the update cost); a task without that measurement uses the source's
  rates unchanged (factor 1, stated);
- a learner measured only in vanilla training adds PPOL's attack time of the mode (times the
  learner's attacked share over PPOL's under the preset); SAC-Lag at an entropy weight without
  runs uses another weight's rates; a learner without any runs counts as PPOL; ``adv-mix:W``
  counts as ``adv-mc`` (each stated in the basis column);
- preset ``paper`` multiplies the update part by the measured paper/fast update cost per step
  (PPOL's full-batch 80-pass updates).

An evaluation's env steps are episodes x episode length per attacker; its seconds per step are
the task's vanilla env + policy parts times a factor measured on the reference task (an
evaluation as ``robustsafe evaluate`` runs it, 10 envs, float64, over the fast training's env +
policy): one for natural and random episodes, one for the gradient attackers (MAD, AMAD, MC,
MR, and the appendix's). A rough guide: the attack part of an evaluation scales with the
network, not the env.

The rates are one 2-core machine's (the basis column names them). ``robustsafe grid --dry-run``
prints the model's numbers after the plan; with ``--calibrate`` it first times a short training
here (``machine_speed``) and multiplies every time by this machine's factor against the rates'
machine, which ``--machine-factor`` gives without measuring again.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache

from robustsafe.choices import OFF_POLICY_ALGOS
from robustsafe.experiments import compute_rates as rates
from robustsafe.experiments.concurrency import available_cores, shared_wall_time


@dataclass(frozen=True)
class StepCost:
    """Seconds per env step of a training (``wall``) and of its parts."""

    wall: float
    env: float
    attack: float
    policy: float
    update: float
    basis: str


@dataclass(frozen=True)
class RunCost:
    train_steps: int  # env steps still to train
    train_seconds: float
    eval_steps: int  # env steps of the evaluations still to run
    eval_seconds: float
    basis: str

    @property
    def seconds(self) -> float:
        return self.train_seconds + self.eval_seconds


OFF_POLICY_LABELS = OFF_POLICY_ALGOS  # run-directory prefixes of the off-policy learners


def _rollout_group(key: str) -> tuple:
    """What the env-stepping time per step of a measured key can only depend on, load aside:
    the task, the env layout (envs, workers) and whether the learner steps the envs in whole
    epochs (on-policy) or between gradient steps (off-policy)."""
    task, label = key.split("/", 1)
    fields = rates.MEASURED[key]
    num_envs, workers = (fields[rates.FIELDS.index(f)] for f in ("num_envs", "workers"))
    return task, num_envs, workers, label.startswith(OFF_POLICY_LABELS)


def _least_env(group: tuple) -> float | None:
    """The least env-stepping time per step among a rollout group's measured keys."""
    env = rates.FIELDS.index("env")
    times = [v[env] for k, v in rates.MEASURED.items() if _rollout_group(k) == group and v[env] > 0]
    return min(times) if times else None


def load_factor(key: str) -> float:
    """How much slower the runs behind ``key`` stepped their envs per step than the least
    loaded runs of the same rollout group (>= 1), or than the reference task's least loaded
    runs of the same layout times the two tasks' env-stepping ratio in the side-by-side
    trainings, whichever is less (a task with one run group has no peer of its own): the
    machine's load while they ran, divided out of all of their parts."""
    group = _rollout_group(key)
    least = [_least_env(group)]
    ratio = rates.TRAIN_OVER_REFERENCE.get(group[0])
    ref_ratio = rates.TRAIN_OVER_REFERENCE.get(rates.REFERENCE)
    ref_least = _least_env((rates.REFERENCE, *group[1:]))
    if ratio and ref_ratio and ref_least:
        least.append(ref_least * ratio[0] / ref_ratio[0])
    floor = min(x for x in least if x)
    return max(1.0, rates.MEASURED[key][rates.FIELDS.index("env")] / floor)


def _parts(key: str) -> StepCost:
    """A measured key's seconds per step, with its load factor divided out (said in the basis
    where it is above 1.05)."""
    fields = rates.MEASURED[key]
    names = ("wall", "env", "attack", "policy", "update")
    wall, env, attack, policy, update = (fields[rates.FIELDS.index(n)] * 1e-6 for n in names)
    f = load_factor(key)
    basis = f"load x{f:.2f} divided out" if f > 1.05 else ""
    return StepCost(wall / f, env / f, attack / f, policy / f, update / f, basis)


def _labels(mode: str, algo: str) -> tuple[str, ...]:
    """Run-directory names whose rates stand for (mode, algo), best first: the grid's own
    (``adv-mc``, ``focops-adv-mc``, ``sac-lag0.1-vanilla``), then the learner's without its
    entropy weight (``sac-lag-vanilla``)."""
    if algo == "ppol":
        return (mode,)
    return tuple(dict.fromkeys((f"{algo.replace(':', '')}-{mode}", f"{algo.split(':')[0]}-{mode}")))


def _kind(task: str) -> str:
    """A Bullet task's kind (``Run``, ``Circle``, ...): its id without the robot and version;
    another id as it is."""
    found = re.fullmatch(r"Safety(?:Ball|Car|Drone|Ant)([A-Za-z]+)-v\d+", task)
    return found.group(1) if found else task


def _attacks_rollouts(mode: str) -> bool:
    """Whether training in ``mode`` acts on attacked observations (random noise or ADV)."""
    return mode == "random" or mode.startswith("adv-")


@cache
def _attacked_share(task: str, preset_name: str, mode: str, algo: str) -> float | None:
    """The share of env steps that a training of ``task`` in ``mode`` with learner ``algo``
    attacks under the preset (its settings for that mode and learner: fast's ADV-PPOL and
    FOCOPS on CarCircle start the schedule at epoch 50 of 150, not the task's 75): in random /
    ADV training the attacked envs' share times the epochs after the schedule's start (the
    budget is 0 until then), or every epoch under the ``constant`` schedule; 0 in the other
    modes (clean rollouts), as MEASURED's ``attacked``; None for a task without settings of its
    own in that preset. ``algo`` may carry a grid's entropy weight (``sac-lag:0.1``); a learner
    the presets do not know counts as PPOL."""
    from robustsafe.choices import ALGOS
    from robustsafe.presets import _FAST_TASKS, _PAPER_TASKS, preset

    if task not in (_FAST_TASKS if preset_name == "fast" else _PAPER_TASKS):
        return None
    if not _attacks_rollouts(mode):
        return 0.0
    learner = algo.split(":")[0]
    cfg = preset(task, preset_name, mode=mode, algo=learner if learner in ALGOS else "ppol")
    r = cfg.robust
    if r.schedule == "constant":
        return r.attacked_fraction
    return r.attacked_fraction * max(0.0, 1.0 - r.schedule_start / cfg.epochs)


def _measured_share(key: str) -> float:
    """The share of env steps that the runs behind a MEASURED key attacked (their own
    schedules and attacked envs, from their config.yaml: ``benchmarks/compute_rates.py``)."""
    return rates.MEASURED[key][rates.FIELDS.index("attacked")]


def _attack_scale(task: str, key: str, mode: str, preset_name: str, algo: str = "ppol") -> float:
    """What the attack time per step measured under ``key`` is multiplied by for a training of
    ``task`` in ``mode`` with ``algo`` under the preset: its attacked share of env steps over
    the one the key's runs trained with; 1 for a mode that does not attack its rollouts, or a
    share that is not known (a task without preset settings; source runs that attacked none)."""
    if not _attacks_rollouts(mode):
        return 1.0
    ours, theirs = _attacked_share(task, preset_name, mode, algo), _measured_share(key)
    return ours / theirs if ours is not None and theirs else 1.0


def _source(
    task: str, mode: str, algo: str, share: float | None = None
) -> tuple[str, list[str]] | None:
    """The MEASURED key to price (task, mode, algo) from: this task's; else (given the planned
    run's attacked ``share``, for a mode that attacks its rollouts) that of the task whose
    measured runs attacked the nearest share of env steps (to 0.01; among equals a task of the
    same kind, Run or Circle, then the reference task); else the reference task's; else any
    task's with the same run-directory name; None if there is none."""
    measured_tasks = sorted({k.split("/", 1)[0] for k in rates.MEASURED})
    labels = _labels(mode, algo)
    for label in labels:
        if share is None or not _attacks_rollouts(mode):
            tasks = [task, rates.REFERENCE, *measured_tasks]
        else:

            def distance(t: str, label: str = label) -> tuple[float, bool, bool, str]:
                key = f"{t}/{label}"
                gap = round(abs(_measured_share(key) - share), 2) if key in rates.MEASURED else 2.0
                return (gap, _kind(t) != _kind(task), t != rates.REFERENCE, t)

            tasks = [task, *sorted(measured_tasks, key=distance)]
        for t in dict.fromkeys(tasks):
            if f"{t}/{label}" in rates.MEASURED:
                notes = [] if label == labels[0] else [f"{algo} as {label}"]
                return f"{t}/{label}", notes
    return None


_PARTS = ("env", "attack", "policy", "update")


def _own_vanilla_plus_extra(
    task: str, key: str, mode: str, algo: str, preset_name: str
) -> StepCost | None:
    """A task measured in vanilla training but not in ``key``'s mode: its own vanilla rates
    plus what the mode adds per step on the task that measured it (each part: the mode's
    minus that task's vanilla's, at least 0; the attack part times the attacked shares'
    ratio; the wall time grows by the parts' sum); None if either vanilla run is missing."""
    source = key.split("/", 1)[0]
    own, theirs = _source(task, "vanilla", algo), _source(source, "vanilla", algo)
    if own is None or theirs is None or not own[0].startswith(f"{task}/"):
        return None
    if not theirs[0].startswith(f"{source}/"):
        return None
    base, modal, vanilla = _parts(own[0]), _parts(key), _parts(theirs[0])
    extra = {f: max(0.0, getattr(modal, f) - getattr(vanilla, f)) for f in _PARTS}
    scale = _attack_scale(task, key, mode, preset_name, algo)
    extra["attack"] *= scale
    loads = [c.basis for c in (base, modal, vanilla) if c.basis]
    attack = f", attack x{scale:.2f}" if round(scale, 2) != 1.0 else ""
    return StepCost(
        wall=base.wall + sum(extra.values()),
        **{f: getattr(base, f) + extra[f] for f in _PARTS},
        basis="; ".join([f"{own[0]} measured + {key} over {theirs[0]}{attack}", *loads]),
    )


def step_cost(env_id: str, mode: str, preset: str = "fast", algo: str = "ppol") -> StepCost:
    """The model's seconds per env step of a training (see the module doc)."""
    notes = []
    if mode.startswith("adv-mix"):
        notes.append(f"{mode} as adv-mc")
        mode = "adv-mc"
    task = env_id.rsplit(":", 1)[-1]
    found = _source(task, mode, algo)
    ppol_attack = None  # PPOL's attack time per step, added to a learner's vanilla rates
    if found is None and mode != "vanilla":
        found = _source(task, "vanilla", algo)
        if found is not None and algo != "ppol":
            # PPOL's attack time per step at its attacked share, brought to the learner's (the
            # SA modes' regulariser attack: unscaled, their shares are 0)
            ours = _attacked_share(task, preset, mode, algo)
            ppol_share = _attacked_share(task, preset, mode, "ppol")
            share = ours / ppol_share if ours is not None and ppol_share else 1.0
            ppol_attack = step_cost(env_id, mode, preset).attack * share
            at = f" x{share:.2f} ({algo}'s attacked share)" if round(share, 2) != 1.0 else ""
            notes.append(f"{mode} as vanilla + PPOL's attack time{at}")
        elif found is not None:
            notes.append(f"{mode} as vanilla")
    if found is None and algo != "ppol":
        c = step_cost(env_id, mode, preset)
        return replace(c, basis=f"{c.basis}; {algo} as ppol")
    if found is None:  # no rates at all for this mode, not even the reference's vanilla
        raise KeyError(f"no measured rates for {task}/{mode}")
    key, source_notes = found
    source = key.split("/", 1)[0]
    if source != task and ppol_attack is None:
        share = _attacked_share(task, preset, mode, algo)
        nearest, nearest_notes = _source(task, mode, algo, share) or found
        combined = _own_vanilla_plus_extra(task, nearest, mode, algo, preset)
        if combined is not None:
            return _paper(combined, preset, [combined.basis, *nearest_notes, *notes])
    c = _parts(key)
    if c.basis:
        source_notes = [*source_notes, c.basis]
    if ppol_attack is not None:
        c = replace(c, wall=c.wall + ppol_attack, attack=c.attack + ppol_attack)
    else:
        scale = _attack_scale(task, key, mode, preset, algo)
        c = replace(c, wall=c.wall + c.attack * (scale - 1), attack=c.attack * scale)
        if round(scale, 2) != 1.0:  # (measured shares have 4 decimals)
            notes.append(f"attack x{scale:.2f} (attacked share of env steps)")
    if source == task:
        basis = "measured"
    else:
        ratio = rates.TRAIN_OVER_REFERENCE.get(task)
        source_ratio = rates.TRAIN_OVER_REFERENCE.get(source)
        if ratio and source_ratio:
            env, policy, update = (x / y for x, y in zip(ratio, source_ratio, strict=True))
            scaled = replace(c, env=c.env * env, policy=c.policy * policy, update=c.update * update)
            extra = scaled.env + scaled.policy + scaled.update - c.env - c.policy - c.update
            c = replace(scaled, wall=c.wall + extra)
            basis = f"{source}'s, env x{env:.2f}, policy x{policy:.2f}, update x{update:.2f}"
        else:
            basis = f"no measurement: {source}'s (x1.00)"
    return _paper(c, preset, [basis, *source_notes, *notes])


def _paper(c: StepCost, preset: str, notes: list[str]) -> StepCost:
    """``c`` under ``preset``: ``paper`` multiplies the update part by the measured paper/fast
    update cost per step; the notes become the basis."""
    if preset == "paper":
        extra = c.update * (rates.PAPER_UPDATE_FACTOR - 1)
        c = replace(c, wall=c.wall + extra, update=c.update + extra)
        notes = [*notes, f"updates x{rates.PAPER_UPDATE_FACTOR:.1f} (paper)"]
    return replace(c, basis="; ".join(n for n in notes if n))


def _episode_length(env_id: str, episode_steps: int | None) -> int:
    if episode_steps:
        return int(episode_steps)
    from robustsafe.presets import _episode_length as registered

    try:
        return registered(env_id) or 1000
    except Exception:  # a custom env that cannot be looked up: a guess
        return 1000


def eval_attackers(spec, plan) -> tuple[int, int]:
    """(natural or random, gradient) attacker evaluations that a planned run still needs: the
    main evaluation's if it runs, and the extra ones it lists."""
    from robustsafe.experiments.grid import expected_attacks

    cheap, costly = 0, 0
    if plan.evaluate:
        for a in expected_attacks(spec):
            if a in ("none", "random"):
                cheap += 1
            else:
                costly += 1
    for name in plan.extra:
        if name.startswith("eval-xi"):  # natural, MAD, AMAD at each xi
            cheap, costly = cheap + 1, costly + 1 + len(spec.xi_sweep)
        else:
            cheap, costly = cheap + 1, costly + len(spec.appendix_attacks)
    return cheap, costly


def run_cost(spec, plan) -> RunCost:
    """The model's cost of what the grid still has to do for one planned run."""
    from robustsafe.experiments.grid import resolve_train_config

    cfg = resolve_train_config(spec, plan.env_id, plan.mode, plan.seed, plan.algo)
    c = step_cost(plan.env_id, plan.mode, spec.preset, plan.algo)
    left = max(0, plan.epochs_planned - plan.epochs_done) if plan.action != "skip" else 0
    train_steps = left * cfg.steps_per_epoch
    cheap, costly = eval_attackers(spec, plan)
    per_attacker = spec.episodes * _episode_length(plan.env_id, cfg.episode_steps)
    natural = step_cost(plan.env_id, "vanilla", "fast")
    eval_seconds = (
        per_attacker
        * (natural.env + natural.policy)
        * (cheap * rates.EVAL_CHEAP_FACTOR + costly * rates.EVAL_GRADIENT_FACTOR)
    )
    return RunCost(
        train_steps,
        train_steps * c.wall,
        per_attacker * (cheap + costly),
        eval_seconds,
        c.basis,
    )


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _local_wall_time(spec, seconds: Sequence[float], cores: int) -> str:
    """The grid's wall time here: ``spec.workers`` runs at a time sharing ``cores`` (each run
    alone keeps about ``BUSY_CORES_PER_RUN`` of them busy; more runs than the cores hold slow
    each other down), never less than its longest run."""
    at_once = max(1, min(spec.workers, len(seconds)))
    wall = shared_wall_time(seconds, at_once, cores)
    return f"{_duration(wall)} here with {at_once} at a time on {cores} cores"


def _hours(hours: float) -> str:
    """Hours to a precision the number keeps: 8529, 24.3, 0.53, 0.0011 (every total alike, so
    run-hours and core-hours read the same way: not 0.0 = 0.1)."""
    if hours >= 10:
        return f"{hours:,.0f}"
    if hours >= 0.1:
        return f"{hours:.1f}"
    return f"{hours:.2g}"


def format_cost(
    spec,
    plan: Sequence,
    costs: Sequence[RunCost] | None = None,
    machine_factor: float | None = None,
) -> str:
    """Per run: env steps and expected wall time of its training and evaluations; the total,
    in run-hours and core-hours (``cpus_per_run`` cores per run). ``machine_factor``: how much
    slower this machine is than the rates' (``machine_speed``); every time is multiplied by it."""
    costs = [run_cost(spec, p) for p in plan] if costs is None else list(costs)
    scale = 1.0 if machine_factor is None else machine_factor
    costs = [
        replace(c, train_seconds=c.train_seconds * scale, eval_seconds=c.eval_seconds * scale)
        for c in costs
    ]
    machine = "" if machine_factor is None else f"; times x{machine_factor:.2f} for this machine"
    lines = [
        "expected cost (rates measured on a 2-core machine, 20 envs in 2 processes per run"
        f"{machine}; see robustsafe.experiments.compute):",
        f"{'run':<48} {'train steps':>12} {'train':>8} {'eval steps':>11} {'eval':>8}  basis",
    ]
    for p, c in zip(plan, costs, strict=True):
        name = f"{p.env_id.rsplit(':', 1)[-1]} {p.label} seed {p.seed}"
        lines.append(
            f"{name:<48} {c.train_steps:>12,} {_duration(c.train_seconds):>8} "
            f"{c.eval_steps:>11,} {_duration(c.eval_seconds):>8}  {c.basis}"
        )
    total = sum(c.seconds for c in costs)
    steps = sum(c.train_steps for c in costs)
    core_h = total * spec.cpus_per_run / 3600
    line = (
        f"total: {len(costs)} runs, {steps:,} training env steps, "
        f"{sum(c.eval_steps for c in costs):,} evaluation env steps; "
        f"{_hours(total / 3600)} run-hours = {_hours(core_h)} core-hours at "
        f"{spec.cpus_per_run} cores per run"
    )
    if spec.backend == "local":
        line += "; " + _local_wall_time(spec, [c.seconds for c in costs], available_cores())
    else:
        line += "; on Ray: run-hours / the cluster's runs at a time (CPUs // cpus_per_run)"
    lines.append(line)
    load, cores = _load()
    if machine_factor is None and load is not None and cores and load > cores:
        lines.append(
            f"note: this machine's load average is {load:.1f} on {cores} cores; the rates were "
            f"measured on an idle one: expect up to about {load / cores:.1f}x longer"
        )
    return "\n".join(lines)


def _load() -> tuple[float | None, int | None]:
    import os

    try:
        return os.getloadavg()[0], os.cpu_count()
    except (AttributeError, OSError):
        return None, os.cpu_count()
