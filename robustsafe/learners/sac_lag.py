"""SAC-Lagrangian with a fixed entropy weight (paper appendix C, SAC-Lagrangian table; Yang et
al. 2021; Haarnoja et al. 2018).

One gradient step on a replay batch (s, a, r, c, s', d), with a' ~ pi(.|s') and a~ ~ pi(.|s)
reparameterised, Q_r = min of the two reward heads, primes the polyak-averaged targets:

    y_r = r + gamma (1 - d) (min_i Q'_r,i(s', a') - alpha log pi(a'|s'))
    y_c = c + gamma (1 - d) Q'_c(s', a')    (max(Q'_c(s', a'), 0) with ``floor_cost_targets``)
    L_Q = sum_i mean (Q_r,i(s, a) - y_r)^2 + mean (Q_c(s, a) - y_c)^2
    L_pi = mean( alpha log pi(a~|s) - Q_r(s, a~) + lambda Q_c(s, a~) ) / (1 + lambda if rescale)

(in adversarial training a~ ~ pi(.|s~) for the batch's attacked rows, s~ the attacker's
observation of s, and the critics still score a~ at s: ``update``'s ``actor_obs``)
    lambda <- max(0, lambda + lambda_lr (mean Q_c(s, a~) - qc_threshold))

With ``n_step`` = k > 1 the replay holds k-step transitions (``buffers.NStepWindow``): r and c
are sums over k steps discounted inside, s' the state k steps on, and gamma becomes gamma^k in
both targets (FSRL's SAC-Lag and CVPO take k = 2; the default 1 is the paper code's).

With ``actor_average`` > 0 a Polyak average of the actor's weights follows every gradient step,
avg <- actor_average avg + (1 - actor_average) pi, and is the policy saved in the agent file
(``saved_actor``); the envs are stepped with the last actor either way.

alpha is fixed (the appendix's sweep), or with ``learn_alpha`` learned (SAC's automatic
temperature, Haarnoja et al. 2018b): after the actor's step, one Adam step on log alpha of
L_alpha = -mean(log alpha (log pi(a~|s) + H_target)), which raises alpha while the policy's
entropy is under the target H_target (``target_entropy``, by default -act_dim). lambda is
kept non-negative by projection. With ``multiplier="pid"`` lambda instead comes from the PID
controller fed once per epoch with the mean cost of the episodes finished in it
(``end_epoch``), as PPO-Lagrangian's. The cost
critic's target has no entropy term: the entropy bonus belongs to the reward objective. The
replay holds the TRUE observations (``Collector``'s ``true_obs``): under adversarial rollouts
the policy acts on the perturbed observation, and the critics learn on true states; the actor's
loss sees what ``actor_obs`` gives (the training mode's attack of the batch, drawn afresh at
every gradient step; ``robust.actor_update_attack``), scored at the true states.

The critics are ``critics.QCritics`` (Q_r with two heads, Q_c with one): the same networks the
attackers use, so an SAC-Lag agent is attacked with its own critics and needs no separate
attacker critics.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from robustsafe.config import SACLagConfig
from robustsafe.critics import QCritics
from robustsafe.learners.base import ActorObs, OffPolicyNetworks, WeightAverage
from robustsafe.nets import SquashedGaussianActor, ValueCritic
from robustsafe.pid import PIDConfig, PIDLagrangian


def qc_threshold(cost_limit: float, gamma: float, episode_steps: int) -> float:
    """The per-episode cost limit as a bound on Q_c (the bound FSRL's CVPO uses): the
    discounted value of the limit spread evenly over a T-step episode,
    ``cost_limit * (1 - gamma^T) / (1 - gamma) / T``."""
    T = episode_steps
    return cost_limit * (1.0 - gamma**T) / (1.0 - gamma) / T


def q_targets(
    reward: torch.Tensor,
    cost: torch.Tensor,
    done: torch.Tensor,
    q_r_next: torch.Tensor,
    q_c_next: torch.Tensor,
    logp_next: torch.Tensor,
    discount: float | torch.Tensor,
    alpha: float,
    floor_cost: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The soft Bellman targets (y_r, y_c); ``q_r_next`` is already the minimum of the heads.
    ``discount``: gamma, or gamma^k per transition for k-step ones (``reward`` / ``cost`` are
    then their k-step discounted sums and s' the state k steps on). ``floor_cost``: the
    bootstrapped Q'_c is taken at no less than 0 (costs are non-negative, so a negative Q'_c is
    the critic's error, and without the floor it propagates into the targets)."""
    not_done = 1.0 - done
    y_r = reward + discount * not_done * (q_r_next - alpha * logp_next)
    if floor_cost:
        q_c_next = q_c_next.clamp(min=0.0)
    y_c = cost + discount * not_done * q_c_next
    return y_r, y_c


def critic_loss(
    q_r_heads: torch.Tensor, q_c: torch.Tensor, y_r: torch.Tensor, y_c: torch.Tensor
) -> torch.Tensor:
    """Squared TD errors: each reward head ``(heads, batch)`` and the cost critic ``(batch,)``."""
    return ((q_r_heads - y_r) ** 2).mean(dim=1).sum() + ((q_c - y_c) ** 2).mean()


def actor_loss(
    logp: torch.Tensor,
    q_r: torch.Tensor,
    q_c: torch.Tensor,
    alpha: float,
    lam: float,
    rescale: bool = False,
) -> torch.Tensor:
    """mean(alpha log pi - Q_r + lambda Q_c) on reparameterised actions; divided by
    (1 + lambda) with ``rescale`` (Stooke et al. 2020, Alg. 1), so that a jump of lambda changes
    the mix of the objectives and not the size of the step."""
    loss = (alpha * logp - q_r + lam * q_c).mean()
    return loss / (1.0 + lam) if rescale else loss


def alpha_loss(log_alpha: torch.Tensor, logp: torch.Tensor, target_entropy: float) -> torch.Tensor:
    """-mean(log alpha (log pi + target)): its gradient in log alpha is the entropy's excess
    over the target, so descent raises alpha while the entropy is under the target."""
    return -(log_alpha * (logp + target_entropy)).mean()


def lagrange_step(lam: float, qc_estimate: float, threshold: float, lr: float) -> float:
    """Projected gradient ascent on lambda (Q_c - threshold): lambda stays >= 0."""
    return max(0.0, lam + lr * (qc_estimate - threshold))


def critic_step(
    actor: SquashedGaussianActor,
    critics: QCritics,
    target: QCritics,
    optim: torch.optim.Optimizer,
    b: dict[str, torch.Tensor],
    generator: torch.Generator,
    gamma: float,
    alpha: float,
    floor_cost: bool = False,
) -> float:
    """One gradient step of Q_r (every head) and Q_c on a replay batch, towards the targets of
    ``q_targets`` with a' ~ pi(.|s') of the current actor: soft targets for ``alpha`` > 0, plain
    ones for ``alpha`` = 0 (CVPO). The bootstrap is discounted by gamma^k, k the batch's
    ``steps`` (the env steps each transition spans); a batch without ``steps`` holds one-step
    transitions, as ``ReplayBuffer.add`` without them. a' is taken on the batch's
    ``next_actor_obs`` where it has them (adversarial training,
    ``robust.critic_update_attack``: what the actor sees of s') and scored at s'.
    ``floor_cost``: ``q_targets``'s. Returns the loss."""
    with torch.no_grad():
        a_next, logp_next = actor.sample(b.get("next_actor_obs", b["next_obs"]), generator)
        if alpha == 0.0:
            logp_next = torch.zeros_like(b["reward"])
        y_r, y_c = q_targets(
            b["reward"],
            b["cost"],
            b["done"],
            target.q_reward(b["next_obs"], a_next),
            target.q_cost(b["next_obs"], a_next),
            logp_next,
            gamma ** b["steps"] if "steps" in b else gamma,
            alpha,
            floor_cost,
        )
    loss = critic_loss(
        critics.q_reward.all_heads(b["obs"], b["act"]),
        critics.q_cost(b["obs"], b["act"]),
        y_r,
        y_c,
    )
    optim.zero_grad(set_to_none=True)
    loss.backward()
    optim.step()
    return float(loss.detach())


class SACLagrangian(OffPolicyNetworks):
    """An ``OffPolicyLearner`` (``robustsafe.learners.base``)."""

    def __init__(
        self,
        actor: SquashedGaussianActor,
        critics: QCritics,
        v_reward: ValueCritic,
        v_cost: ValueCritic,
        cfg: SACLagConfig,
        obs_dim: int,
        act_dim: int,
        episode_steps: int,
        pid: PIDConfig | None = None,
    ) -> None:
        self.cfg = cfg
        if cfg.multiplier == "pid" and pid is None:
            raise ValueError("sac.multiplier=pid needs the run's PID settings")
        self.pid = PIDLagrangian(pid) if cfg.multiplier == "pid" and pid is not None else None
        super().__init__(actor, critics, v_reward, v_cost, cfg, obs_dim, act_dim)
        self.lam = float(cfg.lambda_init)
        self.qc_threshold = qc_threshold(cfg.cost_limit, cfg.gamma, episode_steps)
        self.average = WeightAverage(cfg.actor_average)
        self.average.follow(actor)  # from the initial actor
        self.log_alpha: torch.Tensor | None = None
        self.target_entropy = (
            -float(act_dim) if cfg.target_entropy is None else float(cfg.target_entropy)
        )
        if cfg.learn_alpha:
            self.log_alpha = torch.tensor(math.log(cfg.alpha), requires_grad=True)
            self.alpha_optim = torch.optim.Adam([self.log_alpha], lr=cfg.alpha_lr)

    @property
    def alpha(self) -> float:
        """The entropy weight now: ``cfg.alpha``, or the learned one."""
        return self.cfg.alpha if self.log_alpha is None else float(self.log_alpha.detach().exp())

    @property
    def saved_actor(self) -> SquashedGaussianActor:
        return self.average.saved(self.actor)

    @property
    def multiplier(self) -> float:
        return self.lam if self.pid is None else self.pid.multiplier

    def end_epoch(self, mean_episode_cost: float | None) -> None:
        """The epoch's finished episodes' mean cost (None: none finished) for the PID."""
        if self.pid is not None and mean_episode_cost is not None:
            self.pid.update(mean_episode_cost)

    def update(
        self,
        batch: dict[str, np.ndarray],
        generator: torch.Generator,
        actor_obs: ActorObs | None = None,
    ) -> dict[str, float]:
        """One gradient step: critics, actor, multiplier, then the targets' polyak average.
        ``actor_obs`` (adversarial training): what the actor sees of the batch's true states;
        its actions are still scored by the critics at the true states."""
        cfg = self.cfg
        b = {k: torch.as_tensor(v) for k, v in batch.items()}
        loss_q = critic_step(
            self.actor,
            self.critics,
            self.target,
            self.critic_optim,
            b,
            generator,
            cfg.gamma,
            self.alpha,
            cfg.floor_cost_targets,
        )

        seen = b["obs"] if actor_obs is None else actor_obs(b["obs"])
        act, logp = self.actor.sample(seen, generator)
        # The critics' weights take no gradient from the actor's loss (the gradient still flows
        # through them to the action): their backward pass would be wasted work.
        self.critics.requires_grad_(False)
        try:
            q_r = self.critics.q_reward(b["obs"], act)
            q_c = self.critics.q_cost(b["obs"], act)
        finally:
            self.critics.requires_grad_(True)
        loss_pi = actor_loss(logp, q_r, q_c, self.alpha, self.multiplier, cfg.rescale)
        self.actor_optim.zero_grad(set_to_none=True)
        loss_pi.backward()
        self.actor_optim.step()
        if self.log_alpha is not None:
            loss_alpha = alpha_loss(self.log_alpha, logp.detach(), self.target_entropy)
            self.alpha_optim.zero_grad(set_to_none=True)
            loss_alpha.backward()
            self.alpha_optim.step()

        qc_estimate = float(q_c.detach().mean())
        if self.pid is None:
            self.lam = lagrange_step(self.lam, qc_estimate, self.qc_threshold, cfg.lambda_lr)
        self.update_target(cfg.polyak)
        self.average.follow(self.actor)
        return {
            "loss_q": loss_q,
            "loss_pi": float(loss_pi.detach()),
            "q_reward": float(q_r.detach().mean()),
            "q_cost": qc_estimate,
            "entropy": float(-logp.detach().mean()),
            **({} if self.log_alpha is None else {"alpha": self.alpha}),
        }

    def state_dict(self) -> dict:
        return {
            **self.networks_state(),
            "lam": self.lam,
            **({} if self.pid is None else {"pid": self.pid.state_dict()}),
            **self.average.state_dict(),
            **(
                {}
                if self.log_alpha is None
                else {
                    "log_alpha": self.log_alpha.detach().clone(),
                    "alpha_optim": self.alpha_optim.state_dict(),
                }
            ),
        }

    def load_state_dict(self, d: dict) -> None:
        self.load_networks_state(d)
        self.lam = float(d["lam"])
        if self.pid is not None:
            self.pid.load_state_dict(d["pid"])
        if self.average.net is not None:  # kept from the start: a resumed run has one
            self.average.load_state_dict(d, self.actor)
        if self.log_alpha is not None:
            with torch.no_grad():
                self.log_alpha.copy_(d["log_alpha"])
            self.alpha_optim.load_state_dict(d["alpha_optim"])
