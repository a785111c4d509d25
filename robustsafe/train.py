"""The training loop (the paper's Algorithm 1): rollout, learner update, critic update.

Per epoch: the ``Collector`` steps the envs for ``rollout_length`` steps (episodes continue
across epochs), acting on the observations the training mode's hooks give (``robust``); the
learner (any ``learners.base.OnPolicyLearner``: ``--algo ppol|focops``) updates from the
rollout and the mean cost of the episodes that finished; the ``CriticTrainer`` fits the
attackers' Q critics; then the epoch's files are written (``rundir``: metrics row, agent,
checkpoint, resumable state).

The state holds each env's episode number and the actions of its episode so far, which resuming
replays, so a run killed at any point and resumed with ``resume=True`` ends with the same
parameters as an uninterrupted run.
"""

from __future__ import annotations

import json
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml

from robustsafe.agent import build_networks, save_agent
from robustsafe.buffers import Rollout
from robustsafe.choices import OFF_POLICY_ALGOS
from robustsafe.config import TrainConfig
from robustsafe.critics import CriticTrainer, QCritics
from robustsafe.envs import BULLET_IDS, VectorEnv
from robustsafe.files import write_text_atomic
from robustsafe.learners import OffPolicyLearner, OnPolicyLearner, make_learner
from robustsafe.nets import all_finite
from robustsafe.provenance import record_start
from robustsafe.robust import RobustHooks
from robustsafe.rollout import Collector, CollectResult, Perturbation, join_results
from robustsafe.rundir import (
    RESUME_MAY_CHANGE,
    MetricsCSV,
    check_fresh,
    check_resumable,
    remove_run_files,
    resume_config,
)
from robustsafe.runstate import (
    StateFileError,
    clean_temp_files,
    first_line,
    load_state,
    run_lock,
    save_state,
)
from robustsafe.schedule import epsilon_at
from robustsafe.settings_io import flat_settings, to_dict

__all__ = ["train"]

# The progress bar's name for each learner's cost multiplier.
_MULTIPLIER_NAMES = {"ppol": "lam", "focops": "nu", "sac-lag": "lam", "cvpo": "lam"}


def _warn_if_budget_not_reached(cfg: TrainConfig) -> None:
    """A schedule that is far from the full training budget at the last epoch trains below it
    (the original CarCircle schedule ends at 91% of it)."""
    r = cfg.robust
    scheduled = r.mode == "random" or r.mode.startswith("adv-")
    full = r.training_epsilon
    final = epsilon_at(cfg.epochs, full, r.schedule, r.schedule_start, r.schedule_length)
    if scheduled and final < 0.9 * full:
        warnings.warn(
            f"the {r.schedule} epsilon schedule (start {r.schedule_start}, length "
            f"{r.schedule_length}) ends training at epsilon {final:.4g}, "
            f"{final / full:.0%} of the budget {full:g}. Set more epochs, or "
            "robust.schedule_start / robust.schedule_length",
            UserWarning,
            stacklevel=3,
        )


def _warn_no_finished_episode(epoch: int, cfg: TrainConfig, episode_steps: int | None) -> None:
    """Said once per run: the multiplier only moves in epochs that finish an episode."""
    length = f"{episode_steps}-step" if episode_steps else "unbounded"
    warnings.warn(
        f"epoch {epoch} finished no episode ({cfg.rollout_length} steps per env per epoch, "
        f"{length} episodes): the Lagrange multiplier is updated only in epochs that finish "
        "episodes. Episodes continue across epochs, so training goes on; for a multiplier that "
        "moves every epoch give each env at least an episode per epoch (steps_per_epoch / "
        "num_envs >= the episode length)",
        UserWarning,
        stacklevel=3,
    )


def _warn_if_no_cost(env_id: str, costs: np.ndarray) -> None:
    """A task without a cost signal trains plain PPO while looking like a safe-RL run."""
    if env_id in BULLET_IDS or np.any(costs != 0):
        return
    warnings.warn(
        f"no step of the first epoch ({costs.size} steps) had a cost: if {env_id} does not "
        "report a per-step cost in info['cost'] (Pendulum-v1, most gymnasium tasks), every "
        "cost is 0 and the cost constraint does nothing",
        UserWarning,
        stacklevel=3,
    )


def train(
    cfg: TrainConfig,
    out_dir: str | Path,
    resume: bool = False,
    progress: bool = True,
    stop_after_epoch: int | None = None,
    force: bool = False,
) -> Path:
    """Train (or resume) a run in ``out_dir``; returns the run directory.

    A new run needs an empty (or absent) directory; ``force`` deletes the files of a run there
    first (``rundir.RUN_FILES``) and keeps any other file. A resume continues the saved
    settings: only ``cfg.epochs`` may differ (not below the epochs done); ``force`` lets it go
    on without a lost ``metrics.csv``. One process at a time writes a directory
    (``runstate.run_lock``). ``stop_after_epoch`` ends the call early after that epoch, as a
    kill would (tests).
    """
    out = Path(out_dir)
    if resume:
        check_resumable(out)
    else:
        check_fresh(out, force)
    with run_lock(out):
        clean_temp_files(out)  # left by a kill during an atomic write
        if resume:
            cfg = resume_config(cfg, out, force)
        else:
            check_fresh(out, force)  # again, now that no one else can write here
            remove_run_files(out, force)
        return _train(cfg, out, resume, progress, stop_after_epoch)


@dataclass
class _Resumable:
    """What ``state.pt`` holds besides the counters: everything that changes during a run."""

    learner: OnPolicyLearner | OffPolicyLearner
    critics: QCritics
    critic_trainer: CriticTrainer | None  # None for off-policy learners (their own critics)
    collector: Collector
    generator: torch.Generator
    np_rng: np.random.Generator
    settings: dict[str, Any]  # the run's settings but its length: whose state this is

    def state_dict(self, epoch: int, env_steps: int, elapsed: float) -> dict[str, Any]:
        return {
            "settings": self.settings,
            "epoch": epoch,
            "env_steps": env_steps,
            "elapsed": elapsed,
            "learner": self.learner.state_dict(),
            "critics": self.critics.state_dict(),
            "critic_trainer": (
                None if self.critic_trainer is None else self.critic_trainer.state_dict()
            ),
            "torch_rng": torch.get_rng_state(),
            "generator": self.generator.get_state(),
            "np_rng": self.np_rng.bit_generator.state,
            "collector": self.collector.state_dict(),
        }

    def load(self, state_path: Path) -> tuple[int, int, float]:
        """Restore from ``state_path``; returns (epoch, env steps, elapsed seconds)."""
        state = load_state(state_path)
        saved = state.get("settings") if isinstance(state, dict) else None
        # (older state files hold no settings; a setting only one side knows, from another
        # version of RobustSafe, is not compared)
        differ = [
            k
            for k, v in (saved.items() if isinstance(saved, dict) else ())
            if k in self.settings and v != self.settings[k]
        ]
        if differ:
            raise StateFileError(
                f"{state_path} is the training state of another run ({', '.join(differ[:3])} "
                "differ from the run's config.yaml); restore this run's state.pt"
            )
        try:  # a state from another run (other sizes) or with missing parts
            self.learner.load_state_dict(state["learner"])
            self.critics.load_state_dict(state["critics"])
            if self.critic_trainer is not None:
                self.critic_trainer.load_state_dict(state["critic_trainer"])
            torch.set_rng_state(state["torch_rng"])
            self.generator.set_state(state["generator"])
            self.np_rng.bit_generator.state = state["np_rng"]
            self.collector.load_state_dict(state["collector"])
            return int(state["epoch"]), int(state["env_steps"]), float(state["elapsed"])
        except (KeyError, IndexError, RuntimeError, TypeError, ValueError) as err:
            raise StateFileError(
                f"{state_path} does not fit the run's config.yaml ({first_line(err)})"
            ) from None


def _train(
    cfg: TrainConfig,
    out: Path,
    resume: bool,
    progress: bool,
    stop_after_epoch: int | None,
) -> Path:
    """The training loop proper, on a checked directory that this process holds."""
    state_path = out / "state.pt"
    _warn_if_budget_not_reached(cfg)
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / "config.yaml", yaml.safe_dump(to_dict(cfg), sort_keys=False))

    t_call = time.perf_counter()  # wall-clock counts environment start-up too
    torch.set_num_threads(cfg.torch_threads)
    torch.manual_seed(cfg.seed)  # network initialisation
    generator = torch.Generator().manual_seed(cfg.seed + 1)  # actions and minibatches
    np_rng = np.random.default_rng(cfg.seed)  # replay sampling

    vec = VectorEnv(
        cfg.env_id, cfg.num_envs, seed=cfg.seed, workers=cfg.workers, env_kwargs=cfg.env_kwargs
    )
    try:
        actor, v_r, v_c, critics, norm = build_networks(
            cfg, vec.obs_dim, vec.act_dim, float(vec.act_low.min()), float(vec.act_high.max())
        )
        off_policy = cfg.algo in OFF_POLICY_ALGOS
        learner = make_learner(
            cfg, actor, v_r, v_c, critics, vec.obs_dim, vec.act_dim, vec.max_episode_steps
        )
        # An off-policy learner's Q critics are the attackers' critics: no others to train.
        critic_trainer = (
            None if off_policy else CriticTrainer(critics, vec.obs_dim, vec.act_dim, cfg.critics)
        )
        hooks = RobustHooks(cfg, actor, critics, generator)
        collector = Collector(vec, cfg.seed, cfg.survival_bonus)
        settings = {k: v for k, v in flat_settings(cfg).items() if k not in RESUME_MAY_CHANGE}
        parts = _Resumable(learner, critics, critic_trainer, collector, generator, np_rng, settings)

        start_epoch, env_steps, elapsed = 0, 0, 0.0
        if resume:
            start_epoch, env_steps, elapsed = parts.load(state_path)
        record_start(out, start_epoch)  # provenance.json: the code of this start / resume
        files = _EpochFiles(out, cfg, parts, start_epoch)
        bar = _progress_bar(cfg, env_steps) if progress else None
        t_start = t_call - elapsed
        last_return = last_cost = float("nan")
        no_episode_epochs = 0
        for epoch in range(start_epoch + 1, cfg.epochs + 1):
            # ---- rollout: the policy acts on nu(s) (robust hooks), the envs move on s
            t_epoch = time.perf_counter()
            perturb = hooks.rollout_perturbation(epoch, cfg.num_envs)
            if off_policy:
                result, metrics, t_upd = _off_policy_epoch(
                    cfg,
                    epoch,
                    learner,
                    collector,
                    perturb,
                    hooks.update_perturbation(epoch, learner.cfg.batch_size),  # type: ignore[union-attr]
                    hooks.critic_perturbation(epoch, learner.cfg.batch_size),  # type: ignore[union-attr]
                    generator,
                    np_rng,  # type: ignore[arg-type]
                )
            else:
                result = collector.collect(actor, cfg.rollout_length, generator, perturb)
            ro, eps = result.rollout, result.episodes
            if epoch == 1:
                _warn_if_no_cost(cfg.env_id, ro.cost)
            t_update = time.perf_counter()
            # The multiplier follows the costs of the episodes that finished this epoch.
            mean_cost = float(np.mean([e.cost for e in eps])) if eps else None
            if not eps and not off_policy:
                no_episode_epochs += 1
                if no_episode_epochs == 1:
                    _warn_no_finished_episode(epoch, cfg, vec.max_episode_steps)

            # ---- updates: the learner (with SA's extra loss), then the attackers' Q critics
            # (off-policy learners: CVPO's and SAC-Lag's gradient multiplier move every
            # gradient step; SAC-Lag's PID, like PPOL's, only in epochs that finish episodes)
            t_sa = 0.0
            if off_policy:
                learner.end_epoch(mean_cost)  # type: ignore[union-attr]
                metrics["lambda"] = learner.multiplier
            else:
                assert critic_trainer is not None
                metrics, t_sa = _on_policy_update(
                    epoch,
                    learner,
                    critic_trainer,
                    hooks,
                    ro,
                    mean_cost,
                    generator,
                    np_rng,  # type: ignore[arg-type]
                )
            if norm is not None:  # new statistics from the next rollout on (logp stays valid)
                norm.update(torch.from_numpy(ro.true_obs))
            check_finite(epoch, learner, critics)  # (the normaliser is the actor's)
            t_end = time.perf_counter()

            # ---- the epoch's files
            env_steps += ro.size
            if eps:
                last_return = float(np.mean([e.ret for e in eps]))
                last_cost = float(np.mean([e.cost for e in eps]))
            row = {
                "epoch": epoch,
                "env_steps": env_steps,
                "wall_time": round(t_end - t_start, 3),
                "episodes": len(eps),
                "ep_return": last_return if eps else float("nan"),
                "ep_cost": last_cost if eps else float("nan"),
                "ep_length": float(np.mean([e.length for e in eps])) if eps else float("nan"),
                "epsilon": hooks.epsilon(epoch),
                **metrics,
                "steps_per_s": ro.size / (t_end - t_epoch),
                "time_env": result.timing.env,
                "time_attack": result.timing.attack + t_sa,
                "time_policy": result.timing.policy,
                "time_update": t_upd if off_policy else t_end - t_update - t_sa,
            }
            files.write(row, env_steps, t_start)
            if bar is not None:
                bar.update(ro.size)
                bar.set_postfix(
                    {
                        "reward": f"{last_return:.1f}",
                        "cost": f"{last_cost:.2f}",
                        _MULTIPLIER_NAMES[cfg.algo]: f"{learner.multiplier:.3f}",
                        "sps": f"{row['steps_per_s']:.0f}",
                    }
                )
            if stop_after_epoch is not None and epoch >= stop_after_epoch:
                break
        if bar is not None:
            bar.close()
        files.close()
    finally:
        vec.close()
    return out


def _off_policy_epoch(
    cfg: TrainConfig,
    epoch: int,
    learner: OffPolicyLearner,
    collector: Collector,
    perturb: Perturbation | None,
    actor_obs: Perturbation | None,
    next_view: Perturbation | None,
    generator: torch.Generator,
    np_rng: np.random.Generator,
) -> tuple[CollectResult, dict[str, float], float]:
    """Off-policy epoch ``epoch`` (``learners.base``): ``rollout_length`` steps per env, collected
    ``steps_per_collect`` at a time with the current stochastic policy acting on nu(s); after
    each chunk its transitions (true observations) go into the replay, then ``updates_per_step``
    gradient steps per transition, the actor's loss seeing ``actor_obs`` of each batch and the
    critics' bootstrap action taken on ``next_view`` of its next states (``next_actor_obs``,
    ``sac_lag.critic_step``). Returns
    the epoch's experience (the chunks joined), the mean of the gradient steps' metrics and the
    update seconds."""
    sc = learner.cfg  # type: ignore[attr-defined]
    parts: list[CollectResult] = []
    sums: dict[str, float] = {}
    steps = 0
    # gradient steps due but not yet taken: a fraction carries over to the epoch's next chunk;
    # an epoch's steps are a whole number (TrainConfig checks it), so none is left at its end
    owed = 0.0
    t_update = 0.0
    done = 0
    try:
        while done < cfg.rollout_length:
            chunk = min(sc.steps_per_collect, cfg.rollout_length - done)
            part = collector.collect(learner.actor, chunk, generator, perturb)  # type: ignore[arg-type]
            parts.append(part)
            done += chunk
            t0 = time.perf_counter()
            learner.add(part.rollout)
            if learner.replay.size >= max(sc.update_after, 1):
                owed += sc.updates_per_step * part.rollout.size
                while owed >= 1.0 - 1e-9:  # 0.4 added ten times is 3.9999999999999996
                    owed -= 1.0
                    batch = learner.replay.sample(sc.batch_size, np_rng)
                    if next_view is not None:
                        next_obs = torch.as_tensor(batch["next_obs"])
                        batch["next_actor_obs"] = next_view(next_obs).detach().numpy()
                    m = learner.update(batch, generator, actor_obs)
                    for k, v in m.items():
                        sums[k] = sums.get(k, 0.0) + v
                    steps += 1
            t_update += time.perf_counter() - t0
    except ValueError:  # torch's argument checks fail once a step has left the actor NaN
        check_finite(epoch, learner, nets=("actor",))  # if so, say that instead
        raise
    metrics = {k: v / steps for k, v in sums.items()}
    # "lambda" here keeps the metrics.csv column order; the caller updates it after end_epoch
    metrics.update({"lambda": learner.multiplier, "gradient_steps": float(steps)})
    return join_results(parts), metrics, t_update


def _progress_bar(cfg: TrainConfig, env_steps: int) -> Any:
    """The run's tqdm bar over its env steps, from ``env_steps`` on (a resume)."""
    from tqdm import tqdm

    return tqdm(
        total=cfg.total_steps,
        initial=env_steps,
        unit="step",
        dynamic_ncols=True,
        desc=cfg.env_id if cfg.algo == "ppol" else f"{cfg.algo} {cfg.env_id}",
    )


def _on_policy_update(
    epoch: int,
    learner: OnPolicyLearner,
    critic_trainer: CriticTrainer,
    hooks: RobustHooks,
    ro: Rollout,
    mean_cost: float | None,
    generator: torch.Generator,
    np_rng: np.random.Generator,
) -> tuple[dict[str, float], float]:
    """An on-policy epoch's updates: the learner's, with SA-PPOL's regulariser where the mode
    has one, then the attackers' Q critics on the rollout. Returns the metrics and the
    regulariser's seconds (an attack: timed apart from the update)."""
    t_sa = time.perf_counter()
    extra = hooks.sa_regularizer(torch.from_numpy(ro.obs.reshape(ro.size, -1)))
    t_sa = time.perf_counter() - t_sa if extra is not None else 0.0
    metrics = learner.update(ro, mean_cost, generator, extra)  # type: ignore[call-arg]
    check_finite(epoch, learner)  # before the critics' update samples its actions
    critic_trainer.add_rollout(ro)
    metrics.update(critic_trainer.update(learner.actor, np_rng))
    return metrics, t_sa


class _EpochFiles:
    """What each epoch writes in the run directory, in this order: its metrics.csv row and
    TensorBoard scalars, agent.pt (and a checkpoint), state.pt, then status.json (which names
    state.pt's time: a kill between them leaves a state that resuming checks)."""

    def __init__(self, out: Path, cfg: TrainConfig, parts: _Resumable, start_epoch: int) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.out, self.cfg, self.parts = out, cfg, parts
        self.metrics_csv = MetricsCSV(out / "metrics.csv", keep_through_epoch=start_epoch)
        self.tb = SummaryWriter(str(out / "tb"), purge_step=start_epoch + 1)

    def write(self, row: dict[str, Any], env_steps: int, t_start: float) -> None:
        """Write epoch ``row["epoch"]``'s files; the state's elapsed seconds since ``t_start``
        (a ``perf_counter`` time) count the writing of everything before it."""
        epoch = int(row["epoch"])
        self.metrics_csv.append(row)
        for k, v in row.items():
            if k != "epoch":
                self.tb.add_scalar(k, v, epoch)
        self.tb.flush()
        _save_agents(self.out, self.cfg, self.parts.learner, self.parts.critics, epoch)
        state_path = self.out / "state.pt"
        elapsed = time.perf_counter() - t_start
        save_state(state_path, self.parts.state_dict(epoch, env_steps, elapsed))
        status = {
            "epoch": epoch,
            "epochs": self.cfg.epochs,
            "env_steps": env_steps,
            "state_mtime_ns": state_path.stat().st_mtime_ns,
        }
        write_text_atomic(self.out / "status.json", json.dumps(status))

    def close(self) -> None:
        self.tb.close()


class TrainingDivergedError(ValueError):
    """An update left a network or the multiplier non-finite (NaN / inf)."""


def check_finite(
    epoch: int,
    learner: OnPolicyLearner | OffPolicyLearner,
    critics: QCritics | None = None,
    nets: tuple[str, ...] = ("actor", "saved_actor", "v_reward", "v_cost"),
) -> None:
    """Raise TrainingDivergedError, naming what diverged, if a learner's network in ``nets``
    (attribute names; absent or None ones are skipped; with the statistics of their
    observation normaliser), ``critics`` or the multiplier is not finite. Checked before an
    epoch's files are written, so a diverged update saves nothing: the run directory keeps the
    last finite epoch."""
    modules = {name: getattr(learner, name, None) for name in nets}
    modules["attackers' Q critics"] = critics
    bad = [name for name, net in modules.items() if net is not None and not all_finite(net)]
    if not np.isfinite(learner.multiplier):
        bad.append("multiplier")
    if bad:
        raise TrainingDivergedError(
            f"training diverged in epoch {epoch} (non-finite {', '.join(bad)}); the run's files "
            f"stay at epoch {epoch - 1}: start a new run with lower learning rates or a smaller "
            "reward scale"
        )


def _save_agents(
    out: Path,
    cfg: TrainConfig,
    learner: OnPolicyLearner | OffPolicyLearner,
    critics: QCritics,
    epoch: int,
) -> None:
    """agent.pt, and a checkpoint every ``checkpoint_every`` epochs (the config names the
    learner, so evaluation and the attackers load any learner's agent the same way)."""
    # a learner may save another policy than the one it acts with (``saved_actor``)
    actor = getattr(learner, "saved_actor", learner.actor)
    nets = (actor, learner.v_reward, learner.v_cost, critics)
    save_agent(out / "agent.pt", cfg, *nets, epoch)
    if cfg.checkpoint_every and epoch % cfg.checkpoint_every == 0:
        save_agent(out / "checkpoints" / f"agent_epoch_{epoch:04d}.pt", cfg, *nets, epoch)
