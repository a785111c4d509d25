"""SAC-Lagrangian's math against hand-computed values: the Q targets, the critic, actor and
multiplier losses, the Q_c threshold, the tanh log-probability correction, and one whole
gradient step on hand-set networks."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch
from tiny_config import replay_batch

from robustsafe.config import SACLagConfig
from robustsafe.critics import QCritics
from robustsafe.learners.sac_lag import (
    SACLagrangian,
    actor_loss,
    alpha_loss,
    critic_loss,
    critic_step,
    lagrange_step,
    q_targets,
    qc_threshold,
)
from robustsafe.nets import SquashedGaussianActor, ValueCritic, tanh_log_det

T = torch.tensor


def test_qc_threshold_spreads_the_episode_limit_over_its_steps():
    # 5 per 2-step episode: 2.5 per step, discounted 2.5 + 0.5 * 2.5 = 3.75.
    assert qc_threshold(5.0, 0.5, 2) == pytest.approx(3.75)
    # CarRun-like: 5 * (1 - 0.99^200) / 0.01 / 200.
    assert qc_threshold(5.0, 0.99, 200) == pytest.approx(2.1651, abs=1e-4)


def test_q_targets_bootstrap_the_soft_value_unless_done():
    y_r, y_c = q_targets(
        reward=T([1.0, 2.0]),
        cost=T([0.0, 1.0]),
        done=T([0.0, 1.0]),
        q_r_next=T([3.0, 5.0]),
        q_c_next=T([2.0, 4.0]),
        logp_next=T([-1.0, 0.5]),
        discount=0.9,
        alpha=0.1,
    )
    # y_r = 1 + 0.9 (3 - 0.1 * -1) = 3.79; done: 2. y_c = 0 + 0.9 * 2 = 1.8; done: 1.
    assert torch.allclose(y_r, T([3.79, 2.0]))
    assert torch.allclose(y_c, T([1.8, 1.0]))


def test_floored_cost_targets_bootstrap_no_less_than_zero():
    args = dict(
        reward=T([1.0, 1.0, 1.0]),
        cost=T([0.0, 1.0, 1.0]),
        done=T([0.0, 0.0, 1.0]),
        q_r_next=T([0.0, 0.0, 0.0]),
        q_c_next=T([-2.0, 3.0, -4.0]),
        logp_next=T([0.0, 0.0, 0.0]),
        discount=0.5,
        alpha=0.0,
    )
    # plain: 0 + 0.5 * -2 = -1, 1 + 0.5 * 3 = 2.5, done: 1
    assert torch.allclose(q_targets(**args)[1], T([-1.0, 2.5, 1.0]))
    # floored: the negative bootstrap counts as 0; a positive one and a done row are unchanged
    y_r, y_c = q_targets(**args, floor_cost=True)
    assert torch.allclose(y_c, T([0.0, 2.5, 1.0]))
    assert torch.allclose(y_r, q_targets(**args)[0])  # the reward target is untouched


@pytest.mark.parametrize("floor", [False, True])
def test_the_learner_floors_the_cost_target_when_configured(floor):
    """``sac.floor_cost_targets`` reaches the critic step: with the target Q_c at -2 (the live
    one at 0.5) the cost part of the critic loss is mean((0.5 - y_c)^2), y_c = c + 0.9 * -2
    plainly and y_c = c with the floor."""
    cfg = SACLagConfig(
        gamma=0.9, critic_lr=1e-12, actor_lr=1e-12, multiplier="gradient", floor_cost_targets=floor
    )
    critics = QCritics(1, 1, ())
    for head in [*critics.q_reward.heads, *critics.q_cost.heads]:
        with torch.no_grad():
            head[0].weight.zero_()
            head[0].bias.fill_(0.5)
    learner = SACLagrangian(
        _actor(0.0, 0.0), critics, ValueCritic(1, ()), ValueCritic(1, ()), cfg, 1, 1, 2
    )
    with torch.no_grad():
        for head in learner.target.q_reward.heads:
            head[0].bias.fill_(0.0)
        learner.target.q_cost.heads[0][0].bias.fill_(-2.0)
    batch = _constant_batch(4, obs=0.0, cost=1.0)
    batch["reward"] = np.full(4, 0.5, np.float32)  # with alpha 0.001 y_r is about 0.5: no r loss
    m = learner.update(batch, torch.Generator().manual_seed(0))
    y_c = 1.0 if floor else 1.0 + 0.9 * -2.0
    assert m["loss_q"] == pytest.approx((0.5 - y_c) ** 2, abs=1e-3)
    with pytest.raises(ValueError, match="floor_cost_targets"):
        SACLagConfig(floor_cost_targets="yes")


def test_critic_loss_sums_the_heads_and_the_cost_critic():
    heads = T([[1.0, 2.0], [3.0, 4.0]])  # (heads, batch)
    loss = critic_loss(heads, T([0.0, 1.0]), y_r=T([2.0, 2.0]), y_c=T([1.0, 1.0]))
    # head 1: (1 + 0) / 2; head 2: (1 + 4) / 2; cost: (1 + 0) / 2.
    assert float(loss) == pytest.approx(0.5 + 2.5 + 0.5)


def test_actor_loss_has_the_entropy_reward_and_cost_terms():
    loss = actor_loss(T([-1.0, 2.0]), T([3.0, 1.0]), T([2.0, 0.0]), alpha=0.5, lam=2.0)
    # (0.5 * -1 - 3 + 2 * 2 + 0.5 * 2 - 1 + 0) / 2
    assert float(loss) == pytest.approx(0.25)
    # The entropy term alone: alpha mean(logp).
    assert float(actor_loss(T([-1.0, 2.0]), T([0.0, 0.0]), T([0.0, 0.0]), 0.1, 0.0)) == (
        pytest.approx(0.05)
    )


def test_rescaled_actor_loss_divides_by_one_plus_lambda():
    args = (T([-1.0, 2.0]), T([3.0, 1.0]), T([2.0, 0.0]))
    # The loss above, 0.25, over 1 + 2.
    assert float(actor_loss(*args, alpha=0.5, lam=2.0, rescale=True)) == pytest.approx(0.25 / 3)
    # lambda = 0: nothing to rescale.
    plain = actor_loss(*args, alpha=0.5, lam=0.0)
    assert float(actor_loss(*args, alpha=0.5, lam=0.0, rescale=True)) == float(plain)


def test_lagrange_step_ascends_and_projects_onto_nonnegative():
    assert lagrange_step(1.0, qc_estimate=5.0, threshold=3.75, lr=0.1) == pytest.approx(1.125)
    assert lagrange_step(1.0, qc_estimate=3.0, threshold=3.75, lr=0.1) == pytest.approx(0.925)
    assert lagrange_step(0.1, qc_estimate=1.0, threshold=3.75, lr=0.1) == 0.0


def test_tanh_log_det_is_exact_and_stable():
    u = T([0.0, 1.0, -30.0, 30.0], dtype=torch.float64)
    expected = [
        0.0,
        -2 * math.log(math.cosh(1.0)),
        -2 * (30 - math.log(2)),
        -2 * (30 - math.log(2)),
    ]
    assert torch.allclose(tanh_log_det(u), T(expected, dtype=torch.float64), atol=1e-9)


def _actor(mu: float, log_std: float, low: float = -1.0, high: float = 1.0):
    """A one-layer actor with constant outputs: pre-tanh N(mu, exp(log_std)^2) everywhere."""
    actor = SquashedGaussianActor(1, 1, (), low, high)
    with torch.no_grad():
        actor.net[0].weight.zero_()
        actor.net[0].bias.copy_(T([mu, log_std]))
    return actor


def _learner(cfg: SACLagConfig, actor: SquashedGaussianActor) -> SACLagrangian:
    """A learner on 1-d observations and actions with constant (bias-only) critics."""
    return SACLagrangian(
        actor, QCritics(1, 1, ()), ValueCritic(1, ()), ValueCritic(1, ()), cfg, 1, 1, 2
    )


def _constant_batch(n: int, obs: float, cost: float) -> dict[str, np.ndarray]:
    """``n`` identical transitions: observation ``obs`` to ``obs``, action 0, reward 1."""
    return {
        "obs": np.full((n, 1), obs, np.float32),
        "act": np.zeros((n, 1), np.float32),
        "reward": np.ones(n, np.float32),
        "cost": np.full(n, cost, np.float32),
        "next_obs": np.full((n, 1), obs, np.float32),
        "done": np.zeros(n, np.float32),
    }


@torch.no_grad()
def test_squashed_log_prob_has_the_tanh_and_box_corrections():
    actor = _actor(0.5, math.log(0.5), low=-2.0, high=2.0)
    u = 0.3
    act = T([[2.0 * math.tanh(u)]])
    gauss = -0.5 * ((u - 0.5) / 0.5) ** 2 - math.log(0.5) - 0.5 * math.log(2 * math.pi)
    expected = gauss - math.log(1 - math.tanh(u) ** 2) - math.log(2.0)  # box half-width 2
    assert float(actor.log_prob(T([[0.0]]), act)) == pytest.approx(expected, abs=1e-5)
    # The deterministic action is the squashed mean; distribution is the pre-tanh Gaussian.
    assert float(actor.deterministic_action(T([[0.0]]))) == pytest.approx(2 * math.tanh(0.5))
    dist = actor.distribution(T([[0.0]]))
    assert float(dist.loc) == pytest.approx(0.5) and float(dist.scale) == pytest.approx(0.5)


def test_sample_gives_its_actions_log_probability():
    actor = _actor(-0.2, math.log(0.8), low=-2.0, high=2.0)
    act, logp = actor.sample(torch.zeros(5, 1), torch.Generator().manual_seed(3))
    assert torch.allclose(logp, actor.log_prob(torch.zeros(5, 1), act), atol=1e-4)
    assert (act.abs() < 2).all()
    # against torch's own density of 2 tanh(u), u ~ N(-0.2, 0.8): a path independent of ours
    from torch.distributions import AffineTransform, Normal, TanhTransform, TransformedDistribution

    squashed = TransformedDistribution(
        Normal(T([-0.2]), T([0.8])), [TanhTransform(), AffineTransform(0.0, 2.0)]
    )
    assert torch.allclose(logp, squashed.log_prob(act).sum(-1), atol=1e-4)


def test_one_gradient_step_on_hand_set_networks():
    """Constant critics (Q_r heads 1 and 2, Q_c 0.5), a constant actor: the step's losses and
    the multiplier follow the formulas with the step's own noise."""
    gamma, alpha, lam0, lam_lr = 0.9, 0.2, 0.3, 0.1
    cfg = SACLagConfig(
        alpha=alpha,
        gamma=gamma,
        lambda_init=lam0,
        lambda_lr=lam_lr,
        critic_lr=1e-12,  # the critics stay (numerically) where they are set
        actor_lr=1e-12,
        cost_limit=1.0,
        multiplier="gradient",  # the per-step ascent on Q_c that this test computes by hand
    )
    actor = _actor(0.1, math.log(0.5))
    critics = QCritics(1, 1, ())
    with torch.no_grad():
        for head, value in zip(
            [*critics.q_reward.heads, *critics.q_cost.heads], (1.0, 2.0, 0.5), strict=True
        ):
            head[0].weight.zero_()
            head[0].bias.fill_(value)
    learner = SACLagrangian(actor, critics, ValueCritic(1, ()), ValueCritic(1, ()), cfg, 1, 1, 2)
    # the targets apart from the live critics (heads 3 and 5, Q_c 1.5): the bootstrap must use
    # them, and the step must average them towards the live ones
    targets = [*learner.target.q_reward.heads, *learner.target.q_cost.heads]
    with torch.no_grad():
        for head, value in zip(targets, (3.0, 5.0, 1.5), strict=True):
            head[0].bias.fill_(value)
    batch = {
        "obs": np.zeros((3, 1), np.float32),
        "act": np.zeros((3, 1), np.float32),
        "reward": np.array([1.0, 0.0, 2.0], np.float32),
        "cost": np.array([0.0, 1.0, 1.0], np.float32),
        "next_obs": np.zeros((3, 1), np.float32),
        "done": np.array([0.0, 0.0, 1.0], np.float32),
    }
    gen = torch.Generator().manual_seed(7)
    twin = torch.Generator()
    twin.set_state(gen.get_state())
    with torch.no_grad():  # the step draws a' ~ pi(s') first, then a~ ~ pi(s)
        _, logp_next = actor.sample(torch.zeros(3, 1), twin)
        _, logp = actor.sample(torch.zeros(3, 1), twin)
    m = learner.update(batch, gen)

    r, c, d = (torch.as_tensor(batch[k]) for k in ("reward", "cost", "done"))
    y_r = r + gamma * (1 - d) * (3.0 - alpha * logp_next)  # min of the target heads: 3
    y_c = c + gamma * (1 - d) * 1.5
    loss_q = ((1.0 - y_r) ** 2).mean() + ((2.0 - y_r) ** 2).mean() + ((0.5 - y_c) ** 2).mean()
    assert m["loss_q"] == pytest.approx(float(loss_q), rel=1e-5)
    loss_pi = (alpha * logp - 1.0 + lam0 * 0.5).mean() / (1.0 + lam0)  # sac.rescale
    assert m["loss_pi"] == pytest.approx(float(loss_pi), rel=1e-5)
    thr = qc_threshold(1.0, gamma, 2)  # 0.95
    assert learner.multiplier == pytest.approx(max(0.0, lam0 + lam_lr * (0.5 - thr)), rel=1e-5)
    # target <- 0.995 target + 0.005 live, per head (the live ones moved by ~1e-12)
    for head, old, live in zip(targets, (3.0, 5.0, 1.5), (1.0, 2.0, 0.5), strict=True):
        want = cfg.polyak * old + (1 - cfg.polyak) * live
        assert float(head[0].bias) == pytest.approx(want, abs=1e-6)


def test_the_actor_average_follows_every_step_and_is_the_saved_policy():
    """actor_average 0.75: after each gradient step avg <- 0.75 avg + 0.25 actor, by hand; the
    saved policy is the average, and without it the last actor."""
    cfg = SACLagConfig(actor_lr=0.1, actor_average=0.75, multiplier="gradient")
    actor = _actor(0.1, math.log(0.5))
    learner = _learner(cfg, actor)
    assert learner.saved_actor is learner.average.net is not actor
    batch = _constant_batch(4, obs=1.0, cost=1.0)
    gen = torch.Generator().manual_seed(3)
    expected = [p.detach().clone() for p in actor.parameters()]
    for _ in range(3):
        learner.update(batch, gen)
        live = actor.parameters()
        expected = [0.75 * e + 0.25 * p.detach() for e, p in zip(expected, live, strict=True)]
    got = list(learner.average.net.parameters())
    assert not torch.allclose(got[-1], list(actor.parameters())[-1])  # the actor moved on
    for e, g in zip(expected, got, strict=True):
        assert torch.allclose(e, g, atol=1e-7)
    assert all(not p.requires_grad for p in got)
    resumed = SACLagrangian(
        _actor(0.0, 0.0), QCritics(1, 1, ()), ValueCritic(1, ()), ValueCritic(1, ()), cfg, 1, 1, 2
    )
    resumed.load_state_dict(learner.state_dict())
    for a, b in zip(resumed.average.net.parameters(), got, strict=True):
        assert torch.equal(a, b)
    plain = SACLagConfig(multiplier="gradient")
    last = SACLagrangian(
        actor, QCritics(1, 1, ()), ValueCritic(1, ()), ValueCritic(1, ()), plain, 1, 1, 2
    )
    assert last.saved_actor is actor and "actor_average" not in last.state_dict()
    with pytest.raises(ValueError, match="actor_average"):
        SACLagConfig(actor_average=1.0)


def test_the_actor_step_leaves_the_critics_gradients_to_the_critic_loss():
    """After a step the critics hold the gradients of their own loss only: the actor's loss is
    differentiated through Q but adds nothing to the critics' weight gradients (work saved)."""
    torch.manual_seed(0)
    cfg = SACLagConfig(multiplier="gradient", lambda_init=0.5)
    actor = SquashedGaussianActor(2, 1, (4,))
    learner = SACLagrangian(
        actor, QCritics(2, 1, (4,)), ValueCritic(2, ()), ValueCritic(2, ()), cfg, 2, 1, 2
    )
    batch = replay_batch(5)
    twin = copy.deepcopy(learner)
    gen = torch.Generator().manual_seed(1)
    twin_gen = torch.Generator().manual_seed(1)
    learner.update(batch, gen)
    b = {k: torch.as_tensor(v) for k, v in batch.items()}
    critic_step(twin.actor, twin.critics, twin.target, twin.critic_optim, b, twin_gen, 0.99, 0.001)
    got = [p.grad for p in learner.critics.parameters()]
    want = [p.grad for p in twin.critics.parameters()]
    assert all(g is not None for g in got)
    for g, w in zip(got, want, strict=True):
        assert torch.equal(g, w)


def test_alpha_loss_gradient_is_the_entropy_excess_over_the_target():
    log_alpha = torch.tensor(0.3, requires_grad=True)
    logp = T([1.0, 3.0])  # entropy estimate -2
    loss = alpha_loss(log_alpha, logp, target_entropy=-1.5)
    # -(0.3 (1 - 1.5) + 0.3 (3 - 1.5)) / 2 = -0.15
    assert float(loss) == pytest.approx(-0.15)
    loss.backward()
    # d/d log alpha = -mean(logp + target) = -0.5: descent raises alpha (entropy -2 < -1.5)
    assert float(log_alpha.grad) == pytest.approx(-0.5)


@pytest.mark.parametrize(("target", "direction"), [(-1.0, -1.0), (40.0, 1.0)])
def test_a_learned_alpha_takes_one_adam_step_towards_the_target_entropy(target, direction):
    """Adam's first step moves log alpha by its learning rate against the gradient's sign: up
    when the policy's entropy is under the target, down when above."""
    cfg = SACLagConfig(
        alpha=0.05, learn_alpha=True, target_entropy=target, alpha_lr=0.01, multiplier="gradient"
    )
    # a 1-d squashed N(0.1, 0.25): entropy about 0.5
    learner = _learner(cfg, _actor(0.1, math.log(0.5)))
    assert learner.alpha == pytest.approx(0.05)
    m = learner.update(_constant_batch(64, obs=0.0, cost=0.0), torch.Generator().manual_seed(0))
    assert m["alpha"] == pytest.approx(0.05 * math.exp(direction * 0.01), rel=1e-5)
    assert learner.alpha == pytest.approx(m["alpha"])
    assert "log_alpha" in learner.state_dict()


def test_the_losses_use_the_learned_alpha_of_the_moment():
    """A learned alpha of 0.5 (log alpha set after a start at 0.05) and a fixed alpha of 0.5 take
    the same critic and actor step, bit for bit: both losses use the alpha learned so far, not
    the configured start; the fixed 0.05 gives another step."""

    def stepped(cfg: SACLagConfig, log_alpha: float | None = None):
        torch.manual_seed(0)
        actor = SquashedGaussianActor(2, 1, (4,))
        learner = SACLagrangian(
            actor, QCritics(2, 1, (4,)), ValueCritic(2, ()), ValueCritic(2, ()), cfg, 2, 1, 2
        )
        if log_alpha is not None:
            with torch.no_grad():
                learner.log_alpha.fill_(log_alpha)
        learner.update(replay_batch(16), torch.Generator().manual_seed(1))
        nets = (learner.actor, learner.critics)
        return [p.detach().clone() for net in nets for p in net.parameters()]

    learned = stepped(
        SACLagConfig(alpha=0.05, learn_alpha=True, multiplier="gradient"), math.log(0.5)
    )
    fixed = stepped(SACLagConfig(alpha=0.5, multiplier="gradient"))
    start = stepped(SACLagConfig(alpha=0.05, multiplier="gradient"))
    assert all(torch.equal(a, b) for a, b in zip(learned, fixed, strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(learned, start, strict=True))


def test_a_fixed_alpha_is_not_learned_nor_in_the_state():
    # (the losses' use of the fixed alpha: test_one_gradient_step_on_hand_set_networks)
    learner = _learner(SACLagConfig(alpha=0.05, multiplier="gradient"), _actor(0.1, -0.7))
    learner.update(_constant_batch(8, obs=0.0, cost=0.0), torch.Generator().manual_seed(0))
    assert learner.log_alpha is None and "log_alpha" not in learner.state_dict()


def test_the_default_entropy_target_is_minus_the_action_dimension():
    cfg = SACLagConfig(learn_alpha=True, multiplier="gradient")
    actor = SquashedGaussianActor(3, 2, (4,))
    learner = SACLagrangian(
        actor, QCritics(3, 2, (4,)), ValueCritic(3, ()), ValueCritic(3, ()), cfg, 3, 2, 2
    )
    assert learner.target_entropy == -2.0
