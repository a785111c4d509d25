"""What a learner offers the training loop.

An on-policy learner (PPO-Lagrangian, FOCOPS) learns from whole epochs of experience. The loop
(``robustsafe.train``) owns everything else: the ``Collector`` steps the envs (episodes go on
across epochs), the robust-training hooks choose the rollout perturbation and SA's extra actor
loss, the ``CriticTrainer`` fits the attackers' Q critics, and the run directory holds the
files. Per epoch the loop calls exactly one method:

    metrics = learner.update(rollout, mean_episode_cost, generator, extra_actor_loss)

- ``rollout``: the epoch's ``Rollout`` (time x env arrays; ``obs`` is what the policy acted on,
  ``true_obs`` the true state);
- ``mean_episode_cost``: the mean undiscounted cost of the episodes that finished this epoch
  (the constraint's J_c, compared with a per-episode cost limit), or None when none finished:
  the learner then keeps its multiplier;
- ``generator``: the run's torch generator, for minibatch shuffling (reproducible, resumable);
- ``extra_actor_loss``: None, or a term added to the actor loss on every minibatch (SA's
  smoothness regulariser): a function of (actor, flat minibatch indices).

It returns the epoch's scalar metrics (metrics.csv / TensorBoard); ``multiplier`` is the
current weight of the cost (the progress bar shows it). ``actor`` is the policy that acts, is
attacked and is saved in the agent file, unless the learner offers ``saved_actor`` (the
per-epoch weight average of ``OnPolicyNetworks``, below); ``v_reward`` / ``v_cost`` are saved
beside it.
``state_dict`` / ``load_state_dict`` hold everything the learner needs to resume bit-identically
(networks, optimisers, multiplier state); the loop saves it in ``state.pt``.

Off-policy learners (SAC-Lagrangian, CVPO) implement the second, step-wise protocol
below, driven by a second loop in ``robustsafe.train``: an "epoch" is still ``steps_per_epoch``
env steps (so the run directory, checkpoints, metrics rows, progress bar and resume work as
here), collected by the same ``Collector`` in chunks of ``steps_per_collect`` steps per env;
after each chunk the learner stores the chunk's transitions (``add``: true observations) and the
loop takes ``updates_per_step`` gradient steps per stored transition, each
``update(replay.sample(batch_size, np_rng), generator, actor_obs)``, ``actor_obs`` None or, in
random / adversarial training, the function giving what the actor's loss sees of the batch's
true states (the mode's perturbation of its first ``attacked_fraction`` rows, drawn afresh at
each call; the critics still learn and score on the true states). The replay buffer, target
networks and multiplier are in the learner's ``state_dict``, hence in the resumable state. An
off-policy learner's ``critics`` (Q_r, Q_c) are the attackers' critics too: the loop trains no
others. One may offer ``saved_actor``, the policy the agent file holds when it is not
``actor`` (SAC-Lag's weight average).
What the two loops share (the run directory and its files, the robust hooks) lives outside both.
What the learners of one kind share lives here: ``OnPolicyNetworks`` (actor, V_r / V_c, their
optimisers, the actor step and the critics' regression) and ``OffPolicyNetworks`` (actor, Q
critics and their target, optimisers, replay); each learner module adds only its own math.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Protocol, TypeVar, runtime_checkable

import numpy as np
import torch

from robustsafe.buffers import NStepWindow, ReplayBuffer, Rollout, gae
from robustsafe.config import CVPOConfig, FOCOPSConfig, PPOLagConfig, SACLagConfig
from robustsafe.critics import QCritics, _polyak
from robustsafe.nets import GaussianActor, SquashedGaussianActor, ValueCritic

# An optional extra actor loss on a minibatch of flat indices (SA's regulariser).
ExtraActorLoss = Callable[[GaussianActor, torch.Tensor], torch.Tensor]
# What an off-policy actor's loss sees of a batch's true observations (adversarial training).
ActorObs = Callable[[torch.Tensor], torch.Tensor]
_Net = TypeVar("_Net", bound=torch.nn.Module)


@runtime_checkable
class OnPolicyLearner(Protocol):
    """A learner that updates once per epoch from the epoch's rollout (see the module text)."""

    actor: GaussianActor
    v_reward: ValueCritic
    v_cost: ValueCritic

    @property
    def multiplier(self) -> float:
        """The current weight of the cost in the actor loss (lambda, nu)."""
        ...

    def update(
        self,
        ro: Rollout,
        mean_episode_cost: float | None,
        generator: torch.Generator,
        extra_actor_loss: ExtraActorLoss | None = None,
    ) -> dict[str, float]: ...

    def state_dict(self) -> dict: ...

    def load_state_dict(self, d: dict) -> None: ...


@runtime_checkable
class OffPolicyLearner(Protocol):
    """A learner that updates per gradient step from its own replay buffer (see the module
    text). ``cfg`` has ``steps_per_collect``, ``updates_per_step``, ``update_after`` and
    ``batch_size``."""

    actor: SquashedGaussianActor
    critics: QCritics
    v_reward: ValueCritic
    v_cost: ValueCritic
    replay: ReplayBuffer

    @property
    def multiplier(self) -> float: ...

    def add(self, ro: Rollout) -> None: ...

    def update(
        self,
        batch: dict[str, np.ndarray],
        generator: torch.Generator,
        actor_obs: ActorObs | None = None,
    ) -> dict[str, float]: ...

    def end_epoch(self, mean_episode_cost: float | None) -> None:
        """After the epoch's gradient steps: the mean cost of the episodes finished in it
        (None if none did), for a multiplier that follows episode costs."""

    def state_dict(self) -> dict: ...

    def load_state_dict(self, d: dict) -> None: ...


@torch.no_grad()
def rollout_advantages(
    ro: Rollout, v_reward: ValueCritic, v_cost: ValueCritic, gamma: float, gae_lambda: float
) -> dict[str, torch.Tensor]:
    """The rollout flattened over (time, env), with GAE advantages and returns for reward and
    cost (``buffers.gae``; the critics see the true states). Keys: obs (what the policy acted
    on), true_obs, act, logp (of the policy that acted), adv_r, ret_r, adv_c, ret_c."""
    T, N = ro.reward.shape
    obs = torch.as_tensor(ro.true_obs).reshape(T * N, -1)
    next_obs = torch.as_tensor(ro.next_obs).reshape(T * N, -1)
    end = ro.terminated | ro.truncated
    out: dict[str, torch.Tensor] = {
        "obs": torch.as_tensor(ro.obs).reshape(T * N, -1),
        "true_obs": obs,
        "act": torch.as_tensor(ro.act).reshape(T * N, -1),
        "logp": torch.as_tensor(ro.logp).reshape(T * N),
    }
    for key, critic, signal in (("r", v_reward, ro.reward), ("c", v_cost, ro.cost)):
        v = critic(obs).reshape(T, N).double().numpy()
        v_next = critic(next_obs).reshape(T, N).double().numpy()
        adv, ret = gae(signal, v, v_next, ro.terminated, end, gamma, gae_lambda)
        out[f"adv_{key}"] = torch.as_tensor(adv, dtype=torch.float32).reshape(T * N)
        out[f"ret_{key}"] = torch.as_tensor(ret, dtype=torch.float32).reshape(T * N)
    return out


def minibatches(n: int, size: int | None, generator: torch.Generator) -> list[torch.Tensor]:
    """Flat indices of one pass over ``n`` samples: the full batch when ``size`` is None (or at
    least ``n``), else shuffled minibatches of ``size`` (the last one shorter)."""
    if size is None or size >= n:
        return [torch.arange(n)]
    return list(torch.randperm(n, generator=generator).split(size))


class WeightAverage:
    """A Polyak average of a network's weights (an actor's: the ``actor_average`` option of
    PPO-Lagrangian, FOCOPS and SAC-Lagrangian). Each ``follow(net)`` is one step, avg <- rate
    avg + (1 - rate) net; the first one copies ``net`` (without gradients, seeing observations
    through ``net``'s live normaliser). A rate of 0 keeps nothing."""

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.net: torch.nn.Module | None = None

    def follow(self, net: torch.nn.Module) -> None:
        if self.rate <= 0:
            return
        if self.net is None:
            self.net = frozen_copy(net)
        else:
            _polyak(self.net, net, self.rate)

    def saved(self, actor: _Net) -> _Net:
        """The policy an agent file holds (``saved_actor``): the average if kept, else
        ``actor``, the last one."""
        return actor if self.net is None else self.net  # type: ignore[return-value]

    def state_dict(self) -> dict:
        """``{"actor_average": weights}`` once there is an average, else empty."""
        return {} if self.net is None else {"actor_average": self.net.state_dict()}

    def load_state_dict(self, d: dict, net: torch.nn.Module) -> None:
        """The average saved in ``d`` (a learner's state), shaped like ``net``; none if absent."""
        self.net = None
        if "actor_average" in d:
            self.net = frozen_copy(net)
            self.net.load_state_dict(d["actor_average"])


class OnPolicyNetworks:
    """What PPO-Lagrangian and FOCOPS share: the Gaussian actor, V_r and V_c, one Adam for the
    actor and one for both critics, the actor's optimiser step, the critics' regression and the
    optional weight average of the actor. A learner built on it adds its actor loss and its
    multiplier (and the multiplier's state), and calls ``self.average.follow(self.actor)`` at
    the end of its update.

    The weight average (``cfg.actor_average`` > 0): after every epoch's update, the first
    epoch's actor, then avg <- rho avg + (1 - rho) actor with rho = ``cfg.actor_average``. It
    is the policy saved in the agent file (``saved_actor``: evaluated and attacked); the envs
    are stepped with the last actor, so the training is the same with or without it. A
    learner whose cost swings from epoch to epoch would otherwise be saved on one draw of the
    swing (FOCOPS on CarCircle: 16-55 in one epoch)."""

    def __init__(
        self,
        actor: GaussianActor,
        v_reward: ValueCritic,
        v_cost: ValueCritic,
        cfg: PPOLagConfig | FOCOPSConfig,
    ) -> None:
        self.actor = actor
        self.v_reward = v_reward
        self.v_cost = v_cost
        self.actor_optim = torch.optim.Adam(actor.parameters(), lr=cfg.actor_lr)
        self.critic_params = list(v_reward.parameters()) + list(v_cost.parameters())
        self.critic_optim = torch.optim.Adam(self.critic_params, lr=cfg.critic_lr)
        self.average = WeightAverage(cfg.actor_average)  # its first step after epoch 1

    @property
    def saved_actor(self) -> GaussianActor:
        return self.average.saved(self.actor)

    def actor_step(
        self,
        loss: torch.Tensor,
        idx: torch.Tensor,
        extra_actor_loss: ExtraActorLoss | None,
        max_grad_norm: float | None,
    ) -> float:
        """One Adam step of the actor on ``loss`` plus, when given, SA's extra term on the
        same minibatch ``idx``, gradient norm clipped at ``max_grad_norm`` (None: no clip).
        Returns the extra term's value (0 without one)."""
        extra_value = 0.0
        if extra_actor_loss is not None:
            extra = extra_actor_loss(self.actor, idx)
            loss = loss + extra
            extra_value = float(extra.detach())
        self.actor_optim.zero_grad(set_to_none=True)
        loss.backward()
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(self.actor.parameters(), max_grad_norm)
        self.actor_optim.step()
        return extra_value

    def fit_critics(
        self,
        data: dict[str, torch.Tensor],
        passes: int,
        minibatch_size: int | None,
        max_grad_norm: float | None,
        generator: torch.Generator,
    ) -> float:
        """Regress V_r and V_c on the GAE returns from the true observations; returns the last
        minibatch's loss."""
        n = data["true_obs"].shape[0]
        loss_value = 0.0
        for _ in range(passes):
            for idx in minibatches(n, minibatch_size, generator):
                obs = data["true_obs"][idx]
                loss = ((self.v_reward(obs) - data["ret_r"][idx]) ** 2).mean() + (
                    (self.v_cost(obs) - data["ret_c"][idx]) ** 2
                ).mean()
                self.critic_optim.zero_grad(set_to_none=True)
                loss.backward()
                if max_grad_norm is not None:
                    torch.nn.utils.clip_grad_norm_(self.critic_params, max_grad_norm)
                self.critic_optim.step()
                loss_value = float(loss.detach())
        return loss_value

    def networks_state(self) -> dict:
        """The networks', optimisers' and weight average's state (a learner's ``state_dict``
        adds its multiplier)."""
        out = {
            "actor": self.actor.state_dict(),
            "v_reward": self.v_reward.state_dict(),
            "v_cost": self.v_cost.state_dict(),
            "actor_optim": self.actor_optim.state_dict(),
            "critic_optim": self.critic_optim.state_dict(),
        }
        return {**out, **self.average.state_dict()}

    def load_networks_state(self, d: dict) -> None:
        for key in ("actor", "v_reward", "v_cost", "actor_optim", "critic_optim"):
            getattr(self, key).load_state_dict(d[key])
        self.average.load_state_dict(d, self.actor)


class OffPolicyNetworks:
    """What SAC-Lagrangian and CVPO share: the squashed-Gaussian actor, the Q critics and their
    target copy, one Adam each for the actor and the critics, and the replay buffer (true
    observations). V_r and V_c stay untrained: they are the slots every agent file has. A
    learner built on it adds its losses, its multipliers and their state."""

    def __init__(
        self,
        actor: SquashedGaussianActor,
        critics: QCritics,
        v_reward: ValueCritic,
        v_cost: ValueCritic,
        cfg: SACLagConfig | CVPOConfig,
        obs_dim: int,
        act_dim: int,
    ) -> None:
        self.actor = actor
        self.critics = critics
        self.v_reward = v_reward
        self.v_cost = v_cost
        self.target = frozen_copy(critics)
        self.actor_optim = torch.optim.Adam(actor.parameters(), lr=cfg.actor_lr)
        self.critic_optim = torch.optim.Adam(critics.parameters(), lr=cfg.critic_lr)
        self.replay = ReplayBuffer(obs_dim, act_dim, cfg.replay_size)
        self.window = NStepWindow(cfg.n_step, cfg.gamma)

    def add(self, ro: Rollout) -> None:
        """Store a rollout's transitions, from the true observations, as ``cfg.n_step``-step
        transitions (a time-limit truncation is not a terminal: the target bootstraps through
        it)."""
        self.replay.add(*self.window.transitions(ro))

    def update_target(self, polyak: float) -> None:
        """target <- polyak * target + (1 - polyak) * critics."""
        _polyak(self.target, self.critics, polyak)

    def networks_state(self) -> dict:
        """The networks', optimisers' and replay's state (a learner adds its own)."""
        return {
            "actor": self.actor.state_dict(),
            "critics": self.critics.state_dict(),
            "target": self.target.state_dict(),
            "actor_optim": self.actor_optim.state_dict(),
            "critic_optim": self.critic_optim.state_dict(),
            "replay": self.replay.state_dict(),
            "n_step_pending": self.window.state_dict(),
        }

    def load_networks_state(self, d: dict) -> None:
        for key in ("actor", "critics", "target", "actor_optim", "critic_optim", "replay"):
            getattr(self, key).load_state_dict(d[key])
        self.window.load_state_dict(d.get("n_step_pending", {}))


def frozen_copy(net: _Net) -> _Net:
    """A copy of ``net`` without gradients (a target network, a weight average) that sees
    observations through ``net``'s live normaliser(s), not a copy of them."""
    out = copy.deepcopy(net).requires_grad_(False)
    if isinstance(net, QCritics):
        out.q_reward.obs_normalizer = net.q_reward.obs_normalizer
        out.q_cost.obs_normalizer = net.q_cost.obs_normalizer
    else:
        out.obs_normalizer = net.obs_normalizer
    return out
