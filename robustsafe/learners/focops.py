"""FOCOPS: First Order Constrained Optimization in Policy Space (Zhang, Vuong & Ross, NeurIPS
2020), an ``OnPolicyLearner`` (``robustsafe.learners.base``).

One epoch, with pi_k the policy that collected the rollout, A and A_C its GAE advantages for
reward and cost (both normalised by default; ``normalize_cost_advantage`` False centres A_C
only, ``zero_cost_advantage_without_cost`` sets it to 0 in a rollout without cost), J_c the
mean undiscounted cost of the episodes that finished this epoch and b the cost limit per
episode (the same J_c and b as PPO-Lagrangian's PID):

1. The cost multiplier, by projected gradient descent on the dual (Algorithm 1):

       nu <- clip(nu - nu_lr * (b - J_c), 0, nu_max)

   nu grows while the episodes cost more than b, shrinks while they cost less. With
   ``multiplier="pid"`` (an option) nu is instead the output of the PID controller of
   PPO-Lagrangian (``robustsafe.pid``, the run's ``pid`` gains) fed the same J_c against b.

2. The actor. For a temperature lambda, the best policy in the non-parametric space is
   pi*(a|s) ~ pi_k(a|s) exp((A(s, a) - nu A_C(s, a)) / lambda) (Theorem 1); FOCOPS moves
   pi_theta towards it by minimising E_s KL(pi_theta || pi*)[s], which up to a constant is,
   per sampled (s_i, a_i), with r_i = pi_theta(a_i|s_i) / pi_k(a_i|s_i):

       L(theta) = mean_i [ KL(pi_theta || pi_k)[s_i] - (1/lambda) r_i (A_i - nu A_C,i) ]
                         * 1[ KL(pi_theta || pi_k)[s_i] <= delta ]

   The KL term keeps its gradient (it is the trust region's pull back to pi_k); the indicator
   (without gradient) drops the states where pi_theta has already left the delta-ball. After
   every pass over the minibatches the passes stop once the mean KL over the batch exceeds
   delta. Both policies are diagonal Gaussians (state-independent std), so the KL is analytic.

3. V_r and V_c regress the GAE returns on the true states, as in PPO-Lagrangian.

Checked against the FOCOPS paper (Theorem 1, the sample-based loss above and Algorithm 1) and,
for facts only, its authors' reference implementation: the same KL direction KL(new || old)
in the loss, the indicator and the early stop; the indicator on the detached per-state KL;
the multiplier step nu += nu_lr (J_c - b) clipped to [0, nu_max], taken once per epoch before
the actor update; both advantages normalised; the defaults lambda 1.5, nu_lr 0.01, nu_max 2,
delta 0.02. Differences from that code: J_c is the undiscounted episode cost (the constraint
of the robust-safe-RL paper, limit 5 per episode) rather than a discounted one; the critics
train after the actor for their own passes, without L2 regularisation and learning-rate decay.
The robust-safe-RL authors' FOCOPS had a wrong temperature and a KL term without gradient;
this module is not derived from it.

With ``actor_average`` > 0 the agent file holds a per-epoch weight average of the actor
(``OnPolicyNetworks``); the envs are stepped with the last actor either way.

``extra_actor_loss`` (SA's smoothness regulariser) is added to L on every minibatch, outside
the indicator, so the SA modes work for FOCOPS as for PPO-Lagrangian.
"""

from __future__ import annotations

import numpy as np
import torch

from robustsafe.buffers import Rollout
from robustsafe.config import FOCOPSConfig
from robustsafe.learners.base import (
    ExtraActorLoss,
    OnPolicyNetworks,
    minibatches,
    rollout_advantages,
)
from robustsafe.nets import GaussianActor, ValueCritic
from robustsafe.pid import PIDConfig, PIDLagrangian


def diagonal_gaussian_kl(
    mean_p: torch.Tensor, log_std_p: torch.Tensor, mean_q: torch.Tensor, log_std_q: torch.Tensor
) -> torch.Tensor:
    """KL(N(mean_p, diag s_p^2) || N(mean_q, diag s_q^2)) per row (batch on the first axis):

    sum_i [ log(s_q,i / s_p,i) + (s_p,i^2 + (mean_p,i - mean_q,i)^2) / (2 s_q,i^2) - 1/2 ]
    """
    var_p, var_q = torch.exp(2.0 * log_std_p), torch.exp(2.0 * log_std_q)
    per_dim = log_std_q - log_std_p + (var_p + (mean_p - mean_q) ** 2) / (2.0 * var_q) - 0.5
    return per_dim.sum(-1)


def focops_loss(
    kl: torch.Tensor,
    log_ratio: torch.Tensor,
    adv_r: torch.Tensor,
    adv_c: torch.Tensor,
    nu: float,
    temperature: float,
    kl_bound: float,
) -> torch.Tensor:
    """The FOCOPS actor loss on one (mini)batch (see the module text): per state,
    (KL(pi_theta || pi_k)[s] - r (A - nu A_C) / lambda) * 1[KL(pi_theta || pi_k)[s] <= delta],
    averaged over the batch (states outside the bound count as zeros)."""
    ratio = log_ratio.exp()
    inside = (kl.detach() <= kl_bound).to(kl.dtype)
    return ((kl - ratio * (adv_r - nu * adv_c) / temperature) * inside).mean()


def nu_step(nu: float, episode_cost: float, cfg: FOCOPSConfig) -> float:
    """One projected dual step: clip(nu - nu_lr * (b - J_c), 0, nu_max). Pure."""
    return min(max(nu - cfg.nu_lr * (cfg.cost_limit - episode_cost), 0.0), cfg.nu_max)


class FOCOPS(OnPolicyNetworks):
    """An ``OnPolicyLearner`` (``robustsafe.learners.base``)."""

    def __init__(
        self,
        actor: GaussianActor,
        v_reward: ValueCritic,
        v_cost: ValueCritic,
        cfg: FOCOPSConfig,
        pid: PIDConfig | None = None,
    ) -> None:
        super().__init__(actor, v_reward, v_cost, cfg)
        self.cfg = cfg
        self.nu = cfg.nu_init
        self.pid: PIDLagrangian | None = None
        if cfg.multiplier == "pid":
            if pid is None:
                raise ValueError("focops.multiplier=pid needs the run's PID settings")
            self.pid = PIDLagrangian(pid)

    @property
    def multiplier(self) -> float:
        return self.nu

    def update(
        self,
        ro: Rollout,
        mean_episode_cost: float | None,
        generator: torch.Generator,
        extra_actor_loss: ExtraActorLoss | None = None,
    ) -> dict[str, float]:
        """One epoch's update: nu, then the actor, then the value critics."""
        cfg = self.cfg
        if mean_episode_cost is not None:  # no finished episode: keep nu
            if self.pid is None:
                self.nu = nu_step(self.nu, mean_episode_cost, cfg)
            else:
                self.nu = self.pid.update(mean_episode_cost)
        data = rollout_advantages(ro, self.v_reward, self.v_cost, cfg.gamma, cfg.gae_lambda)
        a_r, a_c = data["adv_r"], data["adv_c"]
        data["adv_r"] = (a_r - a_r.mean()) / (a_r.std() + 1e-8)
        data["adv_c"] = a_c - a_c.mean()
        if cfg.normalize_cost_advantage:
            data["adv_c"] = data["adv_c"] / (a_c.std() + 1e-8)
        if cfg.zero_cost_advantage_without_cost and not np.any(ro.cost):
            data["adv_c"] = torch.zeros_like(a_c)
        obs, n = data["obs"], data["obs"].shape[0]
        with torch.no_grad():  # pi_k, the policy that collected the rollout
            old_mean = self.actor.mean_action(obs)
            old_log_std = self.actor.log_std.detach().clone()

        passes, kl_mean, inside_sum, steps, extra_sum = 0, 0.0, 0.0, 0, 0.0
        for _ in range(cfg.passes):
            for idx in minibatches(n, cfg.minibatch_size, generator):
                mean = self.actor.mean_action(obs[idx])
                kl = diagonal_gaussian_kl(mean, self.actor.log_std, old_mean[idx], old_log_std)
                log_ratio = self.actor.log_prob(obs[idx], data["act"][idx]) - data["logp"][idx]
                loss = focops_loss(
                    kl,
                    log_ratio,
                    data["adv_r"][idx],
                    data["adv_c"][idx],
                    self.nu,
                    cfg.temperature,
                    cfg.kl_bound,
                )
                extra_sum += self.actor_step(loss, idx, extra_actor_loss, cfg.actor_max_grad_norm)
                inside_sum += float((kl.detach() <= cfg.kl_bound).float().mean())
                steps += 1
            passes += 1
            with torch.no_grad():  # early stop on the mean KL over the whole batch
                mean = self.actor.mean_action(obs)
                kl_all = diagonal_gaussian_kl(mean, self.actor.log_std, old_mean, old_log_std)
                kl_mean = float(kl_all.mean())
            if kl_mean > cfg.kl_bound:
                break

        critic_loss = self.fit_critics(
            data, cfg.critic_passes, cfg.minibatch_size, cfg.critic_max_grad_norm, generator
        )
        self.average.follow(self.actor)  # the weight average's epoch step
        metrics = {
            "nu": self.nu,
            "kl": kl_mean,
            "kl_inside_fraction": inside_sum / max(steps, 1),
            "actor_passes": float(passes),
            "loss_v": critic_loss,
            "log_std": float(self.actor.log_std.detach().mean()),
        }
        if extra_actor_loss is not None:
            metrics["extra_actor_loss"] = extra_sum
        return metrics

    # ------------------------------------------------------------------ state

    def state_dict(self) -> dict:
        pid = {} if self.pid is None else {"pid": self.pid.state_dict()}
        return {**self.networks_state(), "nu": self.nu, **pid}

    def load_state_dict(self, d: dict) -> None:
        self.load_networks_state(d)
        self.nu = float(d["nu"])
        if self.pid is not None:
            self.pid.load_state_dict(d["pid"])
