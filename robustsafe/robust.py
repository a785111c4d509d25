"""Robust training (paper section 4, Algorithm 1): what a training mode adds to the loop.

``vanilla`` adds nothing; ``random`` and ``adv-*`` perturb the observations the policy acts on
during rollouts (at the scheduled budget), and for an off-policy learner also what its actor's
loss sees of each replay batch; ``sa-*`` keep rollouts clean and add a smoothness
term to the actor loss. Both work through the learner interface, so every on-policy learner
(PPO-Lagrangian, FOCOPS) trains in every mode.
"""

from __future__ import annotations

import torch

from robustsafe.config import TrainConfig
from robustsafe.nets import Actor, GaussianActor
from robustsafe.rollout import Perturbation
from robustsafe.schedule import drawn_fraction, epsilon_at


def gaussian_kl(mean_p: torch.Tensor, mean_q: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    """KL(N(mean_p, s) || N(mean_q, s)) per row for a shared diagonal std s = exp(log_std).

    Both policies share the state-independent std, so the log-ratio and variance terms cancel
    and KL = sum_i (mean_p_i - mean_q_i)^2 / (2 s_i^2).
    """
    return ((mean_p - mean_q) ** 2 / (2.0 * torch.exp(2.0 * log_std))).sum(-1)


class RobustHooks:
    """What a training mode changes: the rollout perturbation and SA's regulariser.

    Learner-independent: the perturbation acts in the collector, the regulariser is an extra
    actor loss that any ``OnPolicyLearner`` adds to its own.
    """

    def __init__(self, cfg: TrainConfig, actor: Actor, critics, generator) -> None:
        from robustsafe.attacks import make_attacker

        self.cfg = cfg.robust
        self.seed = cfg.seed
        self.actor = actor
        self.critics = critics
        self.generator = generator
        name = self.cfg.attacker_name
        starts = self.cfg.training_restarts
        restarts = {} if starts is None else {"restarts": starts}
        self.attacker = None if name is None else make_attacker(name, **restarts)
        # an off-policy actor's update attacks every batch: one start unless attack_restarts
        one = {"restarts": 1 if starts is None else starts}
        self.update_attacker = None if name is None else make_attacker(name, **one)
        self.sa = self.cfg.mode.startswith("sa-")

    def epsilon(self, epoch: int) -> float:
        if self.attacker is None:
            return 0.0
        r = self.cfg
        if self.sa:  # SA-PPOL regularises at the full budget from the start
            return r.training_epsilon
        full = r.training_epsilon
        eps = epsilon_at(epoch, full, r.schedule, r.schedule_start, r.schedule_length)
        if r.train_epsilon_min is None or full == 0.0:
            return eps
        return eps * drawn_fraction(self.seed, epoch, r.train_epsilon_min / full)

    def rollout_perturbation(self, epoch: int, num_envs: int) -> Perturbation | None:
        """nu for this epoch's rollout: the attacker at the scheduled budget, applied to the
        first ``attacked_fraction`` of the envs (all by default)."""
        return self._perturbation(self.attacker, epoch, num_envs)

    def update_perturbation(self, epoch: int, batch_size: int) -> Perturbation | None:
        """What an off-policy actor's loss sees of a replay batch this epoch
        (``RobustConfig.actor_update_attack``): the first ``attacked_fraction`` of its rows
        attacked at the scheduled budget with one start; None: the true states."""
        if not self.cfg.actor_update_attack:
            return None
        return self._perturbation(self.update_attacker, epoch, batch_size)

    def critic_perturbation(self, epoch: int, batch_size: int) -> Perturbation | None:
        """What an off-policy actor sees of a replay batch's next states when it picks the
        critics' bootstrap action (``RobustConfig.critic_update_attack``): as
        ``update_perturbation``; None: the true next states."""
        if not self.cfg.critic_update_attack:
            return None
        return self._perturbation(self.update_attacker, epoch, batch_size)

    def _perturbation(self, attacker, epoch: int, rows: int) -> Perturbation | None:
        eps = self.epsilon(epoch)
        if attacker is None or self.sa or eps == 0.0:
            return None
        actor, critics, gen = self.actor, self.critics, self.generator
        attacked = max(1, round(self.cfg.attacked_fraction * rows))
        if attacked == rows:
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
        eps = self.cfg.training_epsilon
        s_adv = self.attacker(self.actor, self.critics, obs, eps, self.generator)
        beta, form = self.cfg.sa_beta, self.cfg.sa_regularizer

        def extra(actor: GaussianActor, idx: torch.Tensor) -> torch.Tensor:
            with torch.no_grad():
                clean_mean = actor.mean_action(obs[idx])
            adv_mean = actor.mean_action(s_adv[idx])
            if form == "kl":
                return beta * gaussian_kl(clean_mean, adv_mean, actor.log_std).mean()
            return beta * ((clean_mean - adv_mean) ** 2).sum(-1).mean()

        return extra
