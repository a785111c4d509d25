"""PPO-Lagrangian with a PID multiplier (paper section 4.2, appendix C.2, Eq. 11).

Actor loss on a (mini)batch, with r = pi(a|s) / pi_old(a|s):

    L = ( -mean(min(r A_r, clip(r, 1 - c, 1 + c) A_r)) + lambda * mean(r A_c) ) / (1 + lambda)

The reward advantage is normalised; the cost advantage is raw (the original code), optionally
centred. The actor passes stop early when the approximate KL exceeds ``kl_stop_factor *
target_kl``. The value critics V_r and V_c regress the GAE returns.

Under adversarial rollouts the actor learns on the observation it acted on, while V_r and V_c
see the true state (``Rollout.true_obs``), as they do for the next state. A baseline may depend
on the true state (it does not depend on the action), so the policy gradient stays unbiased.

With ``actor_average`` > 0 the agent file holds a per-epoch weight average of the actor
(``OnPolicyNetworks``); the envs are stepped with the last actor either way.
The original code fed the perturbed observation to V: perturbations of 0.05 on observation
dimensions whose natural spread is ~1e-4 put V far outside its data; in an early run of ours
with that choice (files not kept) V's loss exploded and ADV-PPOL(MR) on CarRun collapsed.
"""

from __future__ import annotations

import torch

from robustsafe.buffers import Rollout
from robustsafe.config import PPOLagConfig
from robustsafe.learners.base import (
    ExtraActorLoss,
    OnPolicyNetworks,
    minibatches,
    rollout_advantages,
)
from robustsafe.nets import GaussianActor, ValueCritic
from robustsafe.pid import PIDConfig, PIDLagrangian


def ppo_lagrangian_loss(
    log_ratio: torch.Tensor,
    adv_r: torch.Tensor,
    adv_c: torch.Tensor,
    lam: float,
    clip_ratio: float,
) -> torch.Tensor:
    """The PPO-Lagrangian actor loss (paper Eq. 11, appendix C.2) on one (mini)batch.

    With r = exp(log_ratio) = pi(a|s) / pi_old(a|s):

        L = ( -mean(min(r A_r, clip(r, 1 - c, 1 + c) A_r)) + lam * mean(r A_c) ) / (1 + lam)

    Only the reward term is clipped (the original code). Dividing by 1 + lam keeps the step
    size bounded as lam grows: the loss moves from pure reward (lam = 0) to pure cost.
    """
    ratio = log_ratio.exp()
    surrogate = torch.min(ratio * adv_r, ratio.clamp(1 - clip_ratio, 1 + clip_ratio) * adv_r).mean()
    return (-surrogate + lam * (ratio * adv_c).mean()) / (1.0 + lam)


class PPOLagrangian(OnPolicyNetworks):
    """An ``OnPolicyLearner`` (``robustsafe.learners.base``)."""

    def __init__(
        self,
        actor: GaussianActor,
        v_reward: ValueCritic,
        v_cost: ValueCritic,
        cfg: PPOLagConfig,
        pid: PIDConfig,
    ) -> None:
        super().__init__(actor, v_reward, v_cost, cfg)
        self.cfg = cfg
        self.pid = PIDLagrangian(pid)

    @property
    def multiplier(self) -> float:
        return self.pid.multiplier

    # ------------------------------------------------------------------ advantages

    def advantages(self, ro: Rollout) -> dict[str, torch.Tensor]:
        """Flattened training tensors with GAE advantages and returns for reward and cost."""
        cfg = self.cfg
        out = rollout_advantages(ro, self.v_reward, self.v_cost, cfg.gamma, cfg.gae_lambda)
        if self.cfg.normalize_reward_advantage:
            a = out["adv_r"]
            out["adv_r"] = (a - a.mean()) / (a.std() + 1e-8)
        if self.cfg.center_cost_advantage or self.cfg.normalize_cost_advantage:
            out["adv_c"] = out["adv_c"] - out["adv_c"].mean()
        if self.cfg.normalize_cost_advantage:
            out["adv_c"] = out["adv_c"] / (out["adv_c"].std() + 1e-8)
        return out

    # ------------------------------------------------------------------ update

    def update(
        self,
        ro: Rollout,
        mean_episode_cost: float | None,
        generator: torch.Generator,
        extra_actor_loss: ExtraActorLoss | None = None,
    ) -> dict[str, float]:
        """One epoch's learner update: multiplier (PID), then actor, then value critics."""
        cfg = self.cfg
        if mean_episode_cost is not None:  # no finished episode: keep the multiplier
            self.pid.update(mean_episode_cost)
        lam = self.pid.multiplier
        data = self.advantages(ro)
        n = data["obs"].shape[0]

        stop = False
        kl = 0.0
        passes = 0
        extra_sum = 0.0
        for _ in range(cfg.actor_passes):
            for idx in minibatches(n, cfg.minibatch_size, generator):
                logp = self.actor.log_prob(data["obs"][idx], data["act"][idx])
                log_ratio = logp - data["logp"][idx]
                kl = float((-log_ratio).detach().mean())
                if kl > cfg.kl_stop_factor * cfg.target_kl:
                    stop = True
                    break
                loss = ppo_lagrangian_loss(
                    log_ratio, data["adv_r"][idx], data["adv_c"][idx], lam, cfg.clip_ratio
                )
                extra_sum += self.actor_step(loss, idx, extra_actor_loss, cfg.actor_max_grad_norm)
            if stop:
                break
            passes += 1

        critic_loss = self.fit_critics(
            data, cfg.critic_passes, cfg.minibatch_size, cfg.critic_max_grad_norm, generator
        )
        self.average.follow(self.actor)  # the weight average's epoch step
        metrics = {
            "lambda": lam,
            "approx_kl": kl,
            "actor_passes": float(passes),
            "loss_v": critic_loss,
            "log_std": float(self.actor.log_std.detach().mean()),
        }
        if extra_actor_loss is not None:
            metrics["extra_actor_loss"] = extra_sum
        return metrics

    # ------------------------------------------------------------------ state

    def state_dict(self) -> dict:
        return {**self.networks_state(), "pid": self.pid.state_dict()}

    def load_state_dict(self, d: dict) -> None:
        self.load_networks_state(d)
        self.pid.load_state_dict(d["pid"])
