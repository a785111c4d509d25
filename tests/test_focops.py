"""FOCOPS (Zhang et al. 2020): the loss, its indicator and the nu step against hand-computed
numbers; the learner's update against the same loss assembled by hand."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch
from torch.distributions import Normal, kl_divergence

from robustsafe.buffers import Rollout
from robustsafe.config import FOCOPSConfig, TrainConfig
from robustsafe.learners.focops import FOCOPS, diagonal_gaussian_kl, focops_loss, nu_step
from robustsafe.nets import GaussianActor, ValueCritic

# ----------------------------------------------------------------------------- the KL


def test_diagonal_gaussian_kl_by_hand_and_in_the_right_direction():
    # KL(N(1, 1) || N(0, 2^2)) = log 2 + (1 + 1) / 8 - 1/2
    p = diagonal_gaussian_kl(
        torch.tensor([[1.0]]),
        torch.tensor([0.0]),
        torch.tensor([[0.0]]),
        torch.tensor([math.log(2)]),
    )
    assert p.item() == pytest.approx(math.log(2) + 0.25 - 0.5, abs=1e-6)
    # the other direction, KL(N(0, 2^2) || N(1, 1)) = log(1/2) + (4 + 1) / 2 - 1/2, differs
    q = diagonal_gaussian_kl(
        torch.tensor([[0.0]]),
        torch.tensor([math.log(2)]),
        torch.tensor([[1.0]]),
        torch.tensor([0.0]),
    )
    assert q.item() == pytest.approx(-math.log(2) + 2.5 - 0.5, abs=1e-6)


def test_diagonal_gaussian_kl_sums_dimensions_like_torch():
    g = torch.Generator().manual_seed(0)
    mp, mq = torch.randn(5, 3, generator=g), torch.randn(5, 3, generator=g)
    sp, sq = torch.randn(3, generator=g) * 0.3, torch.randn(3, generator=g) * 0.3
    ours = diagonal_gaussian_kl(mp, sp, mq, sq)
    ref = kl_divergence(Normal(mp, sp.exp()), Normal(mq, sq.exp())).sum(-1)
    torch.testing.assert_close(ours, ref)


# ----------------------------------------------------------------------------- the loss

# Four states: (KL, ratio, A, A_C), nu = 0.5, lambda = 2, delta = 0.02.
#   0: KL 0.01 inside:   0.01 - 1   * (1 - 0.5 * 0.5) / 2 = -0.365
#   1: KL 0.03 outside:  0 (the indicator drops it)
#   2: KL 0    inside:   0    - 0.5 * (-1 - 0.5 * 2) / 2 =  0.5
#   3: KL 0.02 on the bound, inside (<=): 0.02 - 1 * (0 - 0.5 * 1) / 2 = 0.27
# mean over the batch = (-0.365 + 0 + 0.5 + 0.27) / 4 = 0.10125
KL = [0.01, 0.03, 0.0, 0.02]
RATIO = [1.0, 2.0, 0.5, 1.0]
ADV_R = [1.0, 2.0, -1.0, 0.0]
ADV_C = [0.5, 1.0, 2.0, 1.0]


def _loss_inputs():
    kl = torch.tensor(KL, dtype=torch.float64, requires_grad=True)
    log_ratio = torch.tensor(RATIO, dtype=torch.float64).log().requires_grad_(True)
    return kl, log_ratio, torch.tensor(ADV_R, dtype=torch.float64), torch.tensor(ADV_C).double()


def test_focops_loss_by_hand():
    kl, log_ratio, adv_r, adv_c = _loss_inputs()
    loss = focops_loss(kl, log_ratio, adv_r, adv_c, nu=0.5, temperature=2.0, kl_bound=0.02)
    assert loss.item() == pytest.approx(0.10125, abs=1e-12)


def test_focops_loss_gradients_by_hand():
    """The KL term keeps its gradient (1/N inside the bound, 0 outside); the indicator has none;
    d/d log r of -(1/lambda) r (A - nu A_C) / N."""
    kl, log_ratio, adv_r, adv_c = _loss_inputs()
    focops_loss(kl, log_ratio, adv_r, adv_c, nu=0.5, temperature=2.0, kl_bound=0.02).backward()
    assert kl.grad.tolist() == pytest.approx([0.25, 0.0, 0.25, 0.25])
    # -r (A - nu A_C) / (lambda N): -0.75/8, 0 (outside), -(0.5)(-2)/8, -(1)(-0.5)/8
    assert log_ratio.grad.tolist() == pytest.approx([-0.09375, 0.0, 0.125, 0.0625])


# ----------------------------------------------------------------------------- nu


@pytest.mark.parametrize(
    ("nu", "cost", "expected"),
    [
        (0.5, 15.0, 0.6),  # above the limit 5: nu grows by 0.01 * 10
        (0.5, 0.0, 0.45),  # below: nu shrinks by 0.01 * 5
        (0.01, 0.0, 0.0),  # projected onto nu >= 0
        (1.95, 20.0, 2.0),  # projected onto nu <= nu_max
        (0.3, 5.0, 0.3),  # at the limit: no change
    ],
)
def test_nu_step_by_hand(nu, cost, expected):
    cfg = FOCOPSConfig(nu_lr=0.01, nu_max=2.0, cost_limit=5.0)
    assert nu_step(nu, cost, cfg) == pytest.approx(expected, abs=1e-12)


# ----------------------------------------------------------------------------- the learner


def _rollout(actor: GaussianActor, T: int = 6, N: int = 2, seed: int = 0) -> Rollout:
    rng = np.random.default_rng(seed)
    obs = rng.normal(size=(T, N, 3)).astype(np.float32)
    with torch.no_grad():
        dist = actor.distribution(torch.from_numpy(obs.reshape(T * N, 3)))
        act = dist.sample()
        logp = dist.log_prob(act).sum(-1)
    term = np.zeros((T, N), bool)
    trunc = np.zeros((T, N), bool)
    trunc[-1] = True
    return Rollout(
        obs=obs,
        true_obs=obs,
        act=act.numpy().reshape(T, N, 2),
        logp=logp.numpy().reshape(T, N),
        reward=rng.normal(size=(T, N)),
        cost=rng.integers(0, 2, size=(T, N)).astype(np.float64),
        next_obs=rng.normal(size=(T, N, 3)).astype(np.float32),
        terminated=term,
        truncated=trunc,
    )


def _learner(cfg: FOCOPSConfig) -> FOCOPS:
    torch.manual_seed(1)
    actor = GaussianActor(3, 2, (8,), init_log_std=-0.5)
    return FOCOPS(actor, ValueCritic(3, (8,)), ValueCritic(3, (8,)), cfg)


@pytest.mark.parametrize("scale_cost", [True, False])
def test_update_follows_the_loss_assembled_by_hand(scale_cost):
    """Five full-batch actor steps equal Adam steps on KL(pi_theta || pi_k) - r (A - nu A_C) /
    lambda with the indicator, written out here with torch's own Gaussian KL: this fails if the
    KL loses its gradient, points the other way, the temperature or nu enter differently, or
    nu is stepped after the actor rather than before (Algorithm 1). A is centred and scaled;
    A_C too, or only centred with ``normalize_cost_advantage`` False.
    Large steps (lr 0.05): the two KL directions agree to second order near pi_k."""
    cfg = FOCOPSConfig(
        passes=5,
        minibatch_size=None,
        kl_bound=10.0,
        temperature=1.5,
        nu_init=0.4,
        actor_lr=0.05,
        normalize_cost_advantage=scale_cost,
    )
    learner = _learner(cfg)
    ro = _rollout(learner.actor)
    ro.cost[:] *= 4.0  # costs of 0 or 4: A_C's std far from 1
    twin = _learner(cfg)
    # this epoch's cost 25 steps nu before the actor: 0.4 + 0.01 * (25 - 5) = 0.6
    learner.update(ro, mean_episode_cost=25.0, generator=torch.Generator().manual_seed(0))
    assert learner.nu == pytest.approx(0.6)

    # the same five steps, by hand, on the twin
    from robustsafe.learners.base import rollout_advantages

    data = rollout_advantages(ro, twin.v_reward, twin.v_cost, cfg.gamma, cfg.gae_lambda)
    adv_r = (data["adv_r"] - data["adv_r"].mean()) / (data["adv_r"].std() + 1e-8)
    adv_c = data["adv_c"] - data["adv_c"].mean()
    if scale_cost:
        adv_c = adv_c / (data["adv_c"].std() + 1e-8)
    assert abs(float(data["adv_c"].std()) - 1.0) > 0.5  # the two cases differ here
    with torch.no_grad():
        old = Normal(twin.actor.mean_action(data["obs"]), twin.actor.log_std.exp())
    optim = torch.optim.Adam(twin.actor.parameters(), lr=cfg.actor_lr)
    for _ in range(5):
        new = twin.actor.distribution(data["obs"])
        kl = kl_divergence(new, old).sum(-1)
        ratio = (new.log_prob(data["act"]).sum(-1) - data["logp"]).exp()
        loss = (kl - ratio * (adv_r - 0.6 * adv_c) / 1.5).mean()  # all inside the bound
        optim.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(twin.actor.parameters(), cfg.actor_max_grad_norm)
        optim.step()
    for ours, ref in zip(learner.actor.parameters(), twin.actor.parameters(), strict=True):
        torch.testing.assert_close(ours, ref, rtol=1e-5, atol=1e-6)


def test_a_rollout_without_cost_has_a_zero_cost_advantage_when_asked():
    """``zero_cost_advantage_without_cost``: with no cost in the rollout A_C is 0, so nu no
    longer changes the update (without it, V_c's error scaled to unit std does); a rollout
    with a cost is updated as without the option."""

    def trained(ro, nu, zero, scale=True):
        cfg = FOCOPSConfig(
            passes=3,
            minibatch_size=None,
            kl_bound=10.0,
            nu_init=nu,
            normalize_cost_advantage=scale,
            zero_cost_advantage_without_cost=zero,
        )
        learner = _learner(cfg)
        learner.update(ro, None, torch.Generator().manual_seed(0))  # None: nu kept
        return torch.cat([p.detach().flatten() for p in learner.actor.parameters()])

    ro = _rollout(_learner(FOCOPSConfig()).actor)
    costly = copy.deepcopy(ro)
    ro.cost[:] = 0.0
    for scale in (True, False):
        assert torch.equal(trained(ro, 1.5, True, scale), trained(ro, 0.0, True, scale))
        assert not torch.equal(trained(ro, 1.5, False, scale), trained(ro, 0.0, False, scale))
    assert torch.equal(trained(costly, 1.5, True), trained(costly, 1.5, False))
    assert not torch.equal(trained(costly, 1.5, True), trained(costly, 0.0, True))


def test_update_steps_nu_and_stops_early_on_the_mean_kl():
    cfg = FOCOPSConfig(passes=5, minibatch_size=4, kl_bound=1e-9, actor_lr=1e-2, nu_init=1.0)
    learner = _learner(cfg)
    metrics = learner.update(
        _rollout(learner.actor), mean_episode_cost=25.0, generator=torch.Generator()
    )
    assert learner.nu == pytest.approx(1.2) and metrics["nu"] == pytest.approx(1.2)
    assert metrics["actor_passes"] == 1.0  # the first pass left the (tiny) KL bound: stop
    wide = _learner(FOCOPSConfig(passes=5, minibatch_size=4, kl_bound=10.0, nu_init=1.0))
    metrics = wide.update(_rollout(wide.actor), None, torch.Generator())
    assert metrics["actor_passes"] == 5.0
    assert wide.nu == 1.0  # no finished episode this epoch: nu kept


def test_state_dict_round_trip_keeps_nu_and_optimisers():
    cfg = FOCOPSConfig(passes=2, minibatch_size=4)
    a = _learner(cfg)
    a.update(_rollout(a.actor), 12.0, torch.Generator().manual_seed(0))
    b = _learner(cfg)
    b.load_state_dict(copy.deepcopy(a.state_dict()))  # as from state.pt: no shared tensors
    assert b.nu == a.nu > 0
    ro = _rollout(a.actor, seed=1)
    a.update(ro, 3.0, torch.Generator().manual_seed(5))
    b.update(ro, 3.0, torch.Generator().manual_seed(5))
    for pa, pb in zip(a.actor.parameters(), b.actor.parameters(), strict=True):
        assert torch.equal(pa, pb)


def test_the_actor_average_follows_every_epoch_and_is_the_saved_policy():
    """actor_average 0.75: the first epoch's actor, then after each epoch's update avg <- 0.75
    avg + 0.25 actor, by hand; the saved policy is the average (the last actor without it), and
    the average is in the resumable state."""
    cfg = FOCOPSConfig(passes=2, minibatch_size=4, actor_lr=0.05, actor_average=0.75)
    learner = _learner(cfg)
    assert learner.saved_actor is learner.actor  # nothing to average before the first epoch
    expected: list[torch.Tensor] = []
    for epoch in range(3):
        learner.update(_rollout(learner.actor, seed=epoch), 8.0, torch.Generator().manual_seed(0))
        live = [p.detach().clone() for p in learner.actor.parameters()]
        if not expected:
            expected = live
        else:
            expected = [0.75 * e + 0.25 * p for e, p in zip(expected, live, strict=True)]
    got = list(learner.saved_actor.parameters())
    assert learner.saved_actor is learner.average.net is not learner.actor
    assert not torch.allclose(got[-1], list(learner.actor.parameters())[-1])  # it lags the actor
    for e, g in zip(expected, got, strict=True):
        assert torch.allclose(e, g, atol=1e-7)
    assert all(not p.requires_grad for p in got)
    resumed = _learner(cfg)
    resumed.load_state_dict(copy.deepcopy(learner.state_dict()))
    for a, b in zip(resumed.saved_actor.parameters(), got, strict=True):
        assert torch.equal(a, b)
    plain = _learner(FOCOPSConfig(passes=2, minibatch_size=4))
    plain.update(_rollout(plain.actor), 8.0, torch.Generator().manual_seed(0))
    assert plain.saved_actor is plain.actor and "actor_average" not in plain.state_dict()
    with pytest.raises(ValueError, match="actor_average"):
        FOCOPSConfig(actor_average=1.0)


def test_make_learner_builds_the_configured_learner_behind_one_interface():
    from robustsafe.learners import OnPolicyLearner, PPOLagrangian, make_learner

    nets = (GaussianActor(3, 2, (8,)), ValueCritic(3, (8,)), ValueCritic(3, (8,)))
    ppol = make_learner(TrainConfig(), *nets)
    focops = make_learner(TrainConfig(algo="focops", focops=FOCOPSConfig(nu_init=0.3)), *nets)
    assert isinstance(ppol, PPOLagrangian) and isinstance(focops, FOCOPS)
    assert focops.multiplier == 0.3 and ppol.multiplier == 0.0
    for learner in (ppol, focops):
        assert isinstance(learner, OnPolicyLearner)
        assert learner.actor is nets[0] and learner.v_cost is nets[2]


def test_the_pid_multiplier_is_the_controllers_output_by_hand_and_resumes():
    """``multiplier="pid"``: nu = max(0, KP max(0, e) + KI I + KD D) on J_c against b = 5, with
    I = max(0, I + e) and D = max(0, e - e_prev): the FOCOPS step's nu_lr / nu_max play no part."""
    from robustsafe.pid import PIDConfig

    cfg = FOCOPSConfig(passes=1, minibatch_size=4, multiplier="pid", nu_lr=0.5, nu_max=0.2)
    pid = PIDConfig(kp=0.1, ki=0.01, kd=0.001)

    def learner() -> FOCOPS:
        torch.manual_seed(1)
        actor = GaussianActor(3, 2, (8,), init_log_std=-0.5)
        return FOCOPS(actor, ValueCritic(3, (8,)), ValueCritic(3, (8,)), cfg, pid)

    a = learner()
    a.update(_rollout(a.actor), 15.0, torch.Generator())  # e 10, I 10, D 10
    assert a.nu == pytest.approx(0.1 * 10 + 0.01 * 10 + 0.001 * 10)  # 1.11, above nu_max
    a.update(_rollout(a.actor, seed=1), 0.0, torch.Generator())  # e -5, I 5, D 0, P 0
    assert a.nu == pytest.approx(0.01 * 5)
    a.update(_rollout(a.actor, seed=2), None, torch.Generator())  # no finished episode
    assert a.nu == pytest.approx(0.05)
    b = learner()
    b.load_state_dict(copy.deepcopy(a.state_dict()))
    for x in (a, b):  # e 3, I 8, D 3 - (-5) = 8: the restored controller's memory
        x.update(_rollout(x.actor, seed=3), 8.0, torch.Generator())
        assert x.nu == pytest.approx(0.1 * 3 + 0.01 * 8 + 0.001 * 8)
    with pytest.raises(ValueError, match="needs the run's PID settings"):
        FOCOPS(GaussianActor(3, 2, (8,)), ValueCritic(3, (8,)), ValueCritic(3, (8,)), cfg)


def test_focops_multiplier_settings_are_checked():
    with pytest.raises(ValueError, match="multiplier must be 'dual' or 'pid', got 'gradient'"):
        FOCOPSConfig(multiplier="gradient")
    focops = FOCOPSConfig(multiplier="pid", cost_limit=10.0)
    with pytest.raises(ValueError, match=r"pid.cost_limit \(5.0\) must equal focops.cost_limit"):
        TrainConfig(algo="focops", focops=focops)
    TrainConfig(algo="ppol", focops=focops)  # a PPOL run never reads the FOCOPS group
