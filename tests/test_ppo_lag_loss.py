"""The PPO-Lagrangian actor loss (paper Eq. 11, appendix C.2) and the KL early stop, against
numbers computed by hand on batches of a few samples.

    L = ( -mean(min(r A_r, clip(r, 1 - c, 1 + c) A_r)) + lam * mean(r A_c) ) / (1 + lam)
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from robustsafe.config import PPOLagConfig
from robustsafe.learners.ppo_lag import PPOLagrangian, ppo_lagrangian_loss
from robustsafe.nets import ValueCritic
from robustsafe.pid import PIDConfig

CLIP = 0.2
# Six samples that cover every clipping case (c = 0.2, band [0.8, 1.2]):
#   i  r    A_r  r A_r  clip(r) A_r  min    d min / d r
#   0  1.0   1    1.0     1.0         1.0    1   (inside the band)
#   1  1.5   1    1.5     1.2         1.2    0   (clipped: r > 1 + c with A > 0)
#   2  1.5  -1   -1.5    -1.2        -1.5   -1   (not clipped: the min keeps the worse r A)
#   3  0.5   1    0.5     0.8         0.5    1   (not clipped: the min keeps the worse r A)
#   4  0.5  -1   -0.5    -0.8        -0.8    0   (clipped: r < 1 - c with A < 0)
#   5  1.1  -2   -2.2    -2.2        -2.2   -2   (inside the band)
RATIO = [1.0, 1.5, 1.5, 0.5, 0.5, 1.1]
ADV_R = [1.0, 1.0, -1.0, 1.0, -1.0, -2.0]
ADV_C = [1.0, 0.0, 0.0, 2.0, 0.0, -1.0]
# mean of min = (1 + 1.2 - 1.5 + 0.5 - 0.8 - 2.2) / 6 = -1.8 / 6 = -0.3   -> reward loss 0.3
# mean(r A_c) = (1*1 + 0 + 0 + 0.5*2 + 0 + 1.1*(-1)) / 6 = 0.9 / 6 = 0.15  -> cost loss 0.15


def _loss(lam: float, ratio=RATIO, adv_r=ADV_R, adv_c=ADV_C) -> tuple[torch.Tensor, torch.Tensor]:
    """The loss and its input log-ratio (float64, so that hand values match to 1e-12)."""
    log_ratio = torch.tensor(ratio, dtype=torch.float64).log().requires_grad_(True)
    t = lambda x: torch.tensor(x, dtype=torch.float64)  # noqa: E731
    return ppo_lagrangian_loss(log_ratio, t(adv_r), t(adv_c), lam, CLIP), log_ratio


@pytest.mark.parametrize(
    "lam, want",
    [
        (0.0, 0.3),  # (0.3 + 0) / 1
        (1.0, 0.225),  # (0.3 + 0.15) / 2
        (3.0, 0.1875),  # (0.3 + 3 * 0.15) / 4 = 0.75 / 4
        (99.0, 0.1515),  # (0.3 + 14.85) / 100: tends to the cost loss 0.15 as lam grows
    ],
)
def test_loss_hand_values_and_the_one_over_one_plus_lambda_scaling(lam, want):
    loss, _ = _loss(lam)
    assert float(loss.detach()) == pytest.approx(want, abs=1e-12)


def test_clipping_zeroes_exactly_the_clipped_samples_gradients():
    # lam = 0: dL/d log r_i = r_i * dL/dr_i = -r_i * (d min / d r)_i / 6 with the table above:
    #   i0: -1 * 1 / 6 = -1/6      i1: 0 (clipped)      i2: -1.5 * (-1) / 6 = 0.25
    #   i3: -0.5 * 1 / 6 = -1/12   i4: 0 (clipped)      i5: -1.1 * (-2) / 6 = 11/30
    loss, log_ratio = _loss(0.0)
    loss.backward()
    want = [-1 / 6, 0.0, 0.25, -1 / 12, 0.0, 11 / 30]
    assert log_ratio.grad.tolist() == pytest.approx(want, abs=1e-12)


def test_the_cost_term_is_not_clipped():
    # One sample with r = 1.5, A_r = 1 (clipped: no reward gradient) and A_c = 2, lam = 3:
    #   dL/d log r = r * (-0 + lam * A_c) / (1 + lam) = 1.5 * 3 * 2 / 4 = 2.25
    loss, log_ratio = _loss(3.0, ratio=[1.5], adv_r=[1.0], adv_c=[2.0])
    loss.backward()
    assert float(log_ratio.grad[0]) == pytest.approx(2.25, abs=1e-12)


@pytest.mark.parametrize(
    "lam, want",
    [(0.0, 0.0), (1.0, 0.25), (3.0, 0.375), (9.0, 0.45)],  # lam / (1 + lam) * 1 / 2
)
def test_a_larger_multiplier_pushes_harder_away_from_the_costly_action(lam, want):
    # Two actions, no reward advantage, the costly one with A_c = +1, the safe one with -1, both
    # at r = 1: dL/d log pi(a) = lam / (1 + lam) * A_c / 2. Gradient descent therefore lowers
    # the costly action's log-probability (positive gradient) and raises the safe one's, by a
    # step that grows with lam but stays below 1/2 (the 1 / (1 + lam) scaling).
    loss, log_ratio = _loss(lam, ratio=[1.0, 1.0], adv_r=[0.0, 0.0], adv_c=[1.0, -1.0])
    loss.backward()
    assert log_ratio.grad.tolist() == pytest.approx([want, -want], abs=1e-12)


class _ScriptedActor(nn.Module):
    """Stands in for GaussianActor in ``PPOLagrangian.update``: the k-th ``log_prob`` call
    returns ``theta - kl[k]`` for every sample, so with old log-probabilities 0 the approximate
    KL, mean(old_logp - logp), is exactly ``kl[k] - theta``."""

    def __init__(self, kl: list[float], theta_has_gradient: bool = True) -> None:
        super().__init__()
        self.theta = nn.Parameter(torch.zeros(()))
        self.log_std = nn.Parameter(torch.zeros(1))
        self.kl = kl
        self.calls = 0
        self.scale = 1.0 if theta_has_gradient else 0.0

    def log_prob(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        k, self.calls = self.calls, self.calls + 1
        return self.scale * self.theta.expand(obs.shape[0]) - self.kl[k]


def _learner(actor: _ScriptedActor, adv_r: list[float], adv_c: list[float], **ppo) -> PPOLagrangian:
    n = len(adv_r)
    cfg = PPOLagConfig(hidden=(4,), critic_passes=1, actor_max_grad_norm=None, **ppo)
    # kp 1, no I or D term, limit 0: the multiplier is the epoch's mean episode cost
    pid = PIDConfig(kp=1.0, ki=0.0, kd=0.0, cost_limit=0.0)
    learner = PPOLagrangian(actor, ValueCritic(1, (4,)), ValueCritic(1, (4,)), cfg, pid)  # type: ignore[arg-type]
    data = {
        "obs": torch.zeros(n, 1),
        "true_obs": torch.zeros(n, 1),
        "act": torch.zeros(n, 1),
        "logp": torch.zeros(n),
        "adv_r": torch.tensor(adv_r),
        "adv_c": torch.tensor(adv_c),
        "ret_r": torch.zeros(n),
        "ret_c": torch.zeros(n),
    }
    learner.advantages = lambda ro: data  # type: ignore[method-assign]
    return learner


def test_update_steps_on_the_lagrangian_loss_with_the_new_multiplier():
    # One full-batch pass, plain SGD with lr 1, all ratios 1 at theta = 0 (log_ratio = theta):
    #   dL/dtheta = (-mean(A_r) + lam * mean(A_c)) / (1 + lam)
    # mean(A_r) = (1 - 1 + 2 + 0) / 4 = 0.5, mean(A_c) = (1 + 1 + 0 + 2) / 4 = 1, and the PID
    # turns this epoch's cost 3 into lam = 3 before the actor step:
    #   dL/dtheta = (-0.5 + 3) / 4 = 0.625  ->  theta = 0 - 1 * 0.625 = -0.625
    actor = _ScriptedActor([0.0])
    learner = _learner(actor, [1.0, -1.0, 2.0, 0.0], [1.0, 1.0, 0.0, 2.0], actor_passes=1)
    learner.actor_optim = torch.optim.SGD(actor.parameters(), lr=1.0)
    metrics = learner.update(None, 3.0, torch.Generator().manual_seed(0))  # type: ignore[arg-type]
    assert metrics["lambda"] == 3.0
    assert float(actor.theta.detach()) == pytest.approx(-0.625, abs=1e-6)


def test_kl_early_stop_counts_the_passes_completed():
    # target_kl 0.25, factor 2: stop once approx KL > 0.5 (strictly). Full batch, one check per
    # pass: KL 0, 0.25, 0.5 pass (0.5 is not above the threshold), the 4th check sees 0.75 and
    # stops before stepping: 3 passes done, 4 checks.
    actor = _ScriptedActor([0.0, 0.25, 0.5, 0.75, 1.0], theta_has_gradient=False)
    learner = _learner(
        actor, [1.0] * 4, [0.0] * 4, actor_passes=10, target_kl=0.25, kl_stop_factor=2.0
    )
    metrics = learner.update(None, None, torch.Generator().manual_seed(0))  # type: ignore[arg-type]
    assert (metrics["actor_passes"], actor.calls, metrics["approx_kl"]) == (3.0, 4, 0.75)


def test_kl_early_stop_inside_a_pass_does_not_count_that_pass():
    # Two minibatches of 2 per pass: checks 0, 0 (pass 1 done), 0.25, then 0.75 > 0.5 stops
    # in the middle of pass 2: 1 pass completed.
    actor = _ScriptedActor([0.0, 0.0, 0.25, 0.75, 1.0], theta_has_gradient=False)
    learner = _learner(
        actor,
        [1.0] * 4,
        [0.0] * 4,
        actor_passes=10,
        minibatch_size=2,
        target_kl=0.25,
        kl_stop_factor=2.0,
    )
    metrics = learner.update(None, None, torch.Generator().manual_seed(0))  # type: ignore[arg-type]
    assert (metrics["actor_passes"], actor.calls, metrics["approx_kl"]) == (1.0, 4, 0.75)


@pytest.mark.parametrize(
    "flags, want_r, want_c",
    [
        # default: reward advantage normalised (torch's std, n - 1), cost advantage raw
        ({}, [(a - 2.75) / (4.75 / 3) ** 0.5 for a in (4, 3, 3, 1)], [2.0, 2.0, 1.0, 1.0]),
        ({"normalize_reward_advantage": False}, [4.0, 3.0, 3.0, 1.0], [2.0, 2.0, 1.0, 1.0]),
        ({"center_cost_advantage": True}, None, [0.5, 0.5, -0.5, -0.5]),
        ({"normalize_cost_advantage": True}, None, [0.5 * 3**0.5] * 2 + [-0.5 * 3**0.5] * 2),
    ],
)
def test_advantages_of_a_rollout_by_hand(flags, want_r, want_c):
    """PPO-Lagrangian's own advantage processing on a real rollout (the update tests above
    bypass it): V = 0, gamma = lambda = 1, so the advantages are the rewards-to-go. Rewards
    1, 0, 2, 1 -> 4, 3, 3, 1 (mean 2.75, sample variance 4.75 / 3); costs 0, 1, 0, 1 -> 2, 2,
    1, 1 (mean 1.5, sample std sqrt(1/3))."""
    import numpy as np

    from robustsafe.buffers import Rollout

    cfg = PPOLagConfig(hidden=(4,), gamma=1.0, gae_lambda=1.0, **flags)
    critics = [ValueCritic(1, (4,)) for _ in range(2)]
    for critic in critics:
        for p in critic.parameters():
            torch.nn.init.zeros_(p)
    pid = PIDConfig(kp=1.0, ki=0.0, kd=0.0, cost_limit=0.0)
    learner = PPOLagrangian(_ScriptedActor([0.0]), *critics, cfg, pid)  # type: ignore[arg-type]
    zeros = np.zeros((4, 1, 1), np.float32)
    no = np.zeros((4, 1), bool)
    ro = Rollout(
        zeros, zeros, zeros, np.zeros((4, 1), np.float32), np.array([[1.0], [0.0], [2.0], [1.0]]),
        np.array([[0.0], [1.0], [0.0], [1.0]]), zeros, no, no,
    )  # fmt: skip
    out = learner.advantages(ro)
    if want_r is not None:
        assert out["adv_r"].tolist() == pytest.approx(want_r, abs=1e-5)
    assert out["adv_c"].tolist() == pytest.approx(want_c, abs=1e-5)
