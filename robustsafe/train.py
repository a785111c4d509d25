"""The training loop (the paper's Algorithm 1): rollout, learner update, critic update.

A run directory holds:

    config.yaml            the resolved settings
    metrics.csv            one row per epoch
    tb/                    TensorBoard logs
    agent.pt               the latest agent (policy, V and Q critics, normaliser)
    checkpoints/           agent snapshots every ``checkpoint_every`` epochs
    state.pt               everything needed to resume: optimisers, PID state, replay buffer,
                           random-generator states, epoch counter

Every file is written atomically. Episodes continue across epochs (``rollout.Collector``);
the state holds each env's episode number and the actions of its episode so far, which resuming
replays, so a run killed at any point and resumed with ``resume=True`` ends with the same
parameters as an uninterrupted run.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import time
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml

from robustsafe.agent import build_networks, save_agent
from robustsafe.config import TrainConfig, from_dict, to_dict
from robustsafe.critics import CriticTrainer
from robustsafe.envs import BULLET_IDS, VectorEnv
from robustsafe.learners.ppo_lag import PPOLagrangian
from robustsafe.nets import GaussianActor
from robustsafe.rollout import Collector, Perturbation
from robustsafe.runstate import (
    LOCK_NAME,
    StateFileError,
    clean_temp_files,
    first_line,
    load_state,
    run_lock,
    save_state,
)
from robustsafe.schedule import epsilon_at


def gaussian_kl(mean_p: torch.Tensor, mean_q: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    """KL(N(mean_p, s) || N(mean_q, s)) per row for a shared diagonal std s = exp(log_std).

    Both policies share the state-independent std, so the log-ratio and variance terms cancel
    and KL = sum_i (mean_p_i - mean_q_i)^2 / (2 s_i^2).
    """
    return ((mean_p - mean_q) ** 2 / (2.0 * torch.exp(2.0 * log_std))).sum(-1)


class _RobustHooks:
    """What a training mode changes: the rollout perturbation and SA-PPOL's regulariser."""

    def __init__(self, cfg: TrainConfig, actor: GaussianActor, critics, generator) -> None:
        from robustsafe.attacks import make_attacker

        self.cfg = cfg.robust
        self.actor = actor
        self.critics = critics
        self.generator = generator
        name = self.cfg.attacker_name
        self.attacker = None if name is None else make_attacker(name)
        self.sa = self.cfg.mode.startswith("sa-")

    def epsilon(self, epoch: int) -> float:
        if self.attacker is None:
            return 0.0
        if self.sa:  # SA-PPOL regularises at the full budget from the start
            return self.cfg.epsilon
        r = self.cfg
        return epsilon_at(epoch, r.epsilon, r.schedule, r.schedule_start, r.schedule_length)

    def rollout_perturbation(self, epoch: int, num_envs: int) -> Perturbation | None:
        """nu for this epoch's rollout: the attacker at the scheduled budget, applied to the
        first ``attacked_fraction`` of the envs (all by default)."""
        eps = self.epsilon(epoch)
        if self.attacker is None or self.sa or eps == 0.0:
            return None
        attacker, actor, critics, gen = self.attacker, self.actor, self.critics, self.generator
        attacked = max(1, round(self.cfg.attacked_fraction * num_envs))
        if attacked == num_envs:
            return lambda obs: attacker(actor, critics, obs, eps, gen)

        def mixed(obs: torch.Tensor) -> torch.Tensor:
            head = attacker(actor, critics, obs[:attacked], eps, gen)
            return torch.cat([head, obs[attacked:]])

        return mixed

    def sa_regularizer(self, obs: torch.Tensor):
        """SA-PPOL's smoothness term (``RobustConfig.sa_regularizer``): the authors' code's
        beta * ||mu(s) - mu(s_adv)||^2 or the paper text's beta * KL(pi(.|s) || pi(.|s_adv)).

        s_adv is computed once per update (against the policy that collected the rollout); the
        clean action is the current policy's at every step, without gradient (Algorithm 1).
        """
        if not self.sa or self.cfg.sa_beta == 0.0:
            return None
        s_adv = self.attacker(self.actor, self.critics, obs, self.cfg.epsilon, self.generator)
        beta, form = self.cfg.sa_beta, self.cfg.sa_regularizer

        def extra(actor: GaussianActor, idx: torch.Tensor) -> torch.Tensor:
            with torch.no_grad():
                clean_mean = actor.mean_action(obs[idx])
            adv_mean = actor.mean_action(s_adv[idx])
            if form == "kl":
                return beta * gaussian_kl(clean_mean, adv_mean, actor.log_std).mean()
            return beta * ((clean_mean - adv_mean) ** 2).sum(-1).mean()

        return extra


def write_text_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def load_run_config(run_dir: Path) -> TrainConfig:
    """The settings of a run directory; ValueError naming the file if it cannot be read."""
    path = Path(run_dir) / "config.yaml"
    if not path.exists():
        raise FileNotFoundError(f"{run_dir} is not a run directory (no config.yaml)")
    try:
        return from_dict(TrainConfig, yaml.safe_load(path.read_text()))
    except yaml.YAMLError as err:
        where = getattr(err, "problem_mark", None)
        line = f" at line {where.line + 1}" if where is not None else ""
        raise ValueError(f"{path}: not valid YAML{line}") from None
    except (ValueError, TypeError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: {err}") from None


def run_status(run_dir: Path) -> tuple[int, int] | None:
    """(epochs done, epochs planned) of a run directory, or None if it holds no state."""
    state = run_dir / "state.pt"
    if not state.exists():
        return None
    cfg = load_run_config(run_dir)
    status = run_dir / "status.json"
    if status.exists():  # written right after state.pt: cheap to read
        try:
            data = json.loads(status.read_text())
            if data.get("state_mtime_ns") == state.stat().st_mtime_ns:
                return int(data["epoch"]), cfg.epochs
        except (ValueError, TypeError, AttributeError):
            pass  # damaged: read the state itself
    return int(load_state(state)["epoch"]), cfg.epochs


class _MetricsCSV:
    def __init__(self, path: Path, keep_through_epoch: int) -> None:
        self.path = path
        self.fields: list[str] | None = None
        if path.exists():  # resuming: drop rows written after the last checkpoint
            with path.open() as f:
                rows = list(csv.DictReader(f))
            rows = [r for r in rows if int(r["epoch"]) <= keep_through_epoch]
            if rows:
                self.fields = list(rows[0].keys())
            tmp = path.with_name(f".{path.name}.tmp")
            with tmp.open("w", newline="") as f:
                if self.fields:
                    w = csv.DictWriter(f, fieldnames=self.fields)
                    w.writeheader()
                    w.writerows(rows)
            os.replace(tmp, path)

    def append(self, row: dict[str, Any]) -> None:
        new = self.fields is None
        if new:
            self.fields = list(row.keys())
        with self.path.open("a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=self.fields, extrasaction="ignore")
            if new:
                w.writeheader()
            w.writerow(row)
            f.flush()
            os.fsync(f.fileno())


def _warn_if_budget_not_reached(cfg: TrainConfig) -> None:
    """A schedule that is far from the full budget at the last epoch trains below the
    evaluation budget (the original CarCircle schedule ends at 92% of it)."""
    r = cfg.robust
    scheduled = r.mode == "random" or r.mode.startswith("adv-")
    final = epsilon_at(cfg.epochs, r.epsilon, r.schedule, r.schedule_start, r.schedule_length)
    if scheduled and final < 0.9 * r.epsilon:
        warnings.warn(
            f"the {r.schedule} epsilon schedule (start {r.schedule_start}, length "
            f"{r.schedule_length}) ends training at epsilon {final:.4g}, "
            f"{final / r.epsilon:.0%} of the budget {r.epsilon:g}. Set more epochs, or "
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
    first (``RUN_FILES``) and keeps any other file. A resume continues the saved settings: only
    ``cfg.epochs`` may differ (not below the epochs done); ``force`` lets it go on without a
    lost ``metrics.csv``. One process at a time writes a directory (``runstate.run_lock``).
    ``stop_after_epoch`` ends the call early after that epoch, as a kill would (tests).
    """
    out = Path(out_dir)
    if resume:
        _check_resumable(out)
    else:
        _check_fresh(out, force)
    with run_lock(out):
        clean_temp_files(out)  # left by a kill during an atomic write
        if resume:
            cfg = _resume_config(cfg, out, force)
        else:
            _check_fresh(out, force)  # again, now that no one else can write here
            _remove_run_files(out)
        return _train(cfg, out, resume, progress, stop_after_epoch)


# What a run writes in its directory (``force`` deletes these, and only these).
RUN_FILES = (
    "config.yaml",
    "metrics.csv",
    "agent.pt",
    "state.pt",
    "status.json",
    "checkpoints",
    "tb",
    "eval.json",
    "eval_sweep.csv",
    "eval_sweep.png",
)
# What a run that died before its first epoch ended leaves (with the grid's log): restartable.
_RESTARTABLE = {LOCK_NAME, "config.yaml", "tb", "train.log"}


def _check_resumable(out: Path) -> None:
    if not (out / "state.pt").exists():
        raise FileNotFoundError(f"cannot resume: {out} holds no training state (state.pt)")


def _check_fresh(out: Path, force: bool) -> None:
    """Refuse to start a new run where it would replace anything, unless ``force``."""
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"--out {out} is a file, not a directory")
    if force or not out.is_dir():
        return
    names = {p.name for p in out.iterdir() if not (p.name.startswith(".") and p.suffix == ".tmp")}
    if (out / "state.pt").exists():
        raise FileExistsError(
            f"{out} already holds a run; pass --resume to continue it, --force to start it over, "
            "or choose another --out"
        )
    if names <= _RESTARTABLE:
        if "config.yaml" not in names:
            return
        try:  # a run that died in its first epoch: nothing to lose
            load_run_config(out)
            return
        except ValueError:
            pass
    shown = ", ".join(sorted(names - {LOCK_NAME})[:5])
    raise FileExistsError(
        f"{out} is not empty ({shown}) and holds no resumable run; choose another --out, or "
        "pass --force to delete the run files there (config.yaml, metrics.csv, agent.pt, "
        "state.pt, checkpoints/, tb/, ...) and start a new run"
    )


def _remove_run_files(out: Path) -> None:
    for name in RUN_FILES:
        path = out / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()


def _resume_config(cfg: TrainConfig, out: Path, force: bool) -> TrainConfig:
    """The saved settings with ``cfg``'s number of epochs; refuse any other difference."""
    saved = load_run_config(out)
    differ = _config_differences(saved, replace(cfg, epochs=saved.epochs))
    if differ:
        raise ValueError(
            f"cannot resume {out} with other settings than the saved ones: "
            + "; ".join(differ)
            + ". A resume continues the saved settings (only the number of epochs may change)"
        )
    status = run_status(out)
    done = status[0] if status is not None else 0
    if cfg.epochs < done:
        raise ValueError(
            f"cannot resume {out} for {cfg.epochs} epochs: it has already done {done}; "
            f"give at least {done}"
        )
    _check_metrics(out / "metrics.csv", done, force)
    return replace(saved, epochs=cfg.epochs)


def _config_differences(saved: TrainConfig, new: TrainConfig) -> list[str]:
    """``key: saved -> new`` for every setting that differs (dotted keys)."""

    def flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
        items: dict[str, Any] = {}
        for k, v in d.items():
            if isinstance(v, dict):
                items.update(flat(v, f"{prefix}{k}."))
            else:
                items[f"{prefix}{k}"] = v
        return items

    a, b = flat(to_dict(saved)), flat(to_dict(new))
    return [f"{k}: saved {a[k]!r}, asked {b.get(k)!r}" for k in a if a[k] != b.get(k)]


def _check_metrics(path: Path, done: int, force: bool) -> None:
    """Refuse a resume that would silently lose or mangle the epoch history."""
    if not path.exists():
        if done > 0 and not force:
            raise FileNotFoundError(
                f"{path} is missing: resuming would lose the history of epochs 1-{done}. "
                "Restore it, or pass --force to resume without it"
            )
        return
    try:
        with path.open(newline="") as f:
            rows = list(csv.DictReader(f))
        for row in rows:
            int(row["epoch"])
    except (KeyError, ValueError, TypeError, UnicodeDecodeError, csv.Error):
        raise ValueError(
            f"{path} is not a RobustSafe metrics file (it needs an integer 'epoch' column); "
            "move it away to resume"
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
        learner = PPOLagrangian(actor, v_r, v_c, cfg.ppo, cfg.pid)
        critic_trainer = CriticTrainer(critics, vec.obs_dim, vec.act_dim, cfg.critics)
        hooks = _RobustHooks(cfg, actor, critics, generator)
        collector = Collector(vec, cfg.seed)

        start_epoch, env_steps, elapsed = 0, 0, 0.0
        if resume:
            state = load_state(state_path)
            try:  # a state from another run (other sizes) or with missing parts
                learner.load_state_dict(state["learner"])
                critics.load_state_dict(state["critics"])
                critic_trainer.load_state_dict(state["critic_trainer"])
                torch.set_rng_state(state["torch_rng"])
                generator.set_state(state["generator"])
                np_rng.bit_generator.state = state["np_rng"]
                collector.load_state_dict(state["collector"])
                start_epoch, env_steps = int(state["epoch"]), int(state["env_steps"])
                elapsed = float(state["elapsed"])
            except (KeyError, IndexError, RuntimeError, TypeError, ValueError) as err:
                raise StateFileError(
                    f"{state_path} does not fit the run's config.yaml ({first_line(err)})"
                ) from None

        metrics_csv = _MetricsCSV(out / "metrics.csv", keep_through_epoch=start_epoch)
        from torch.utils.tensorboard import SummaryWriter

        tb = SummaryWriter(str(out / "tb"), purge_step=start_epoch + 1)
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(
                total=cfg.total_steps,
                initial=env_steps,
                unit="step",
                dynamic_ncols=True,
                desc=cfg.env_id,
            )
        t_start = t_call - elapsed
        last_return = last_cost = float("nan")
        no_episode_epochs = 0
        for epoch in range(start_epoch + 1, cfg.epochs + 1):
            t_epoch = time.perf_counter()
            result = collector.collect(
                actor,
                cfg.rollout_length,
                generator,
                hooks.rollout_perturbation(epoch, cfg.num_envs),
            )
            ro = result.rollout
            if epoch == 1:
                _warn_if_no_cost(cfg.env_id, ro.cost)
            t_update = time.perf_counter()
            eps = result.episodes
            # The multiplier follows the costs of the episodes that finished this epoch.
            mean_cost = float(np.mean([e.cost for e in eps])) if eps else None
            if not eps:
                no_episode_epochs += 1
                if no_episode_epochs == 1:
                    _warn_no_finished_episode(epoch, cfg, vec.max_episode_steps)
            t_sa = time.perf_counter()
            extra = hooks.sa_regularizer(torch.from_numpy(ro.obs.reshape(ro.size, -1)))
            t_sa = time.perf_counter() - t_sa if extra is not None else 0.0
            metrics: dict[str, float] = learner.update(ro, mean_cost, generator, extra)
            flat = ro.size
            critic_trainer.add_rollout(ro)
            metrics.update(critic_trainer.update(actor, np_rng))
            if norm is not None:  # new statistics from the next rollout on (logp stays valid)
                norm.update(torch.from_numpy(ro.true_obs))
            t_end = time.perf_counter()
            env_steps += flat
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
                "steps_per_s": flat / (t_end - t_epoch),
                "time_env": result.timing.env,
                "time_attack": result.timing.attack + t_sa,
                "time_policy": result.timing.policy,
                "time_update": t_end - t_update - t_sa,
            }
            metrics_csv.append(row)
            for k, v in row.items():
                if k != "epoch":
                    tb.add_scalar(k, v, epoch)
            tb.flush()
            save_agent(out / "agent.pt", cfg, actor, v_r, v_c, critics, epoch)
            if cfg.checkpoint_every and epoch % cfg.checkpoint_every == 0:
                save_agent(
                    out / "checkpoints" / f"agent_epoch_{epoch:04d}.pt",
                    cfg,
                    actor,
                    v_r,
                    v_c,
                    critics,
                    epoch,
                )
            save_state(
                state_path,
                {
                    "epoch": epoch,
                    "env_steps": env_steps,
                    "elapsed": time.perf_counter() - t_start,
                    "learner": learner.state_dict(),
                    "critics": critics.state_dict(),
                    "critic_trainer": critic_trainer.state_dict(),
                    "torch_rng": torch.get_rng_state(),
                    "generator": generator.get_state(),
                    "np_rng": np_rng.bit_generator.state,
                    "collector": collector.state_dict(),
                },
            )
            write_text_atomic(
                out / "status.json",
                json.dumps(
                    {
                        "epoch": epoch,
                        "epochs": cfg.epochs,
                        "env_steps": env_steps,
                        "state_mtime_ns": state_path.stat().st_mtime_ns,
                    }
                ),
            )
            if bar is not None:
                bar.update(flat)
                bar.set_postfix(
                    reward=f"{last_return:.1f}",
                    cost=f"{last_cost:.2f}",
                    lam=f"{metrics['lambda']:.3f}",
                    sps=f"{row['steps_per_s']:.0f}",
                )
            if stop_after_epoch is not None and epoch >= stop_after_epoch:
                break
        if bar is not None:
            bar.close()
        tb.close()
    finally:
        vec.close()
    return out


def train_metrics(run_dir: Path) -> list[dict[str, Any]]:
    with (Path(run_dir) / "metrics.csv").open() as f:
        return list(csv.DictReader(f))
