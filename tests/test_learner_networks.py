"""What the learners of one kind share (``learners.base``): the frozen copies an off-policy
learner keeps (Q targets, CVPO's pi_old, SAC-Lag's weight average) see observations through the
live normaliser, and a learner's state carries what the next step needs."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from robustsafe.agent import build_networks
from robustsafe.config import CriticConfig, PPOLagConfig, TrainConfig
from robustsafe.learners import make_learner

OBS, ACT = 5, 2


def _learner(algo: str):
    cfg = TrainConfig(algo=algo, obs_normalization=True)
    if algo == "sac-lag":
        cfg = replace(cfg, sac=replace(cfg.sac, actor_average=0.9))
    actor, v_r, v_c, critics, norm = build_networks(cfg, OBS, ACT)
    return make_learner(cfg, actor, v_r, v_c, critics, OBS, ACT, 100), norm


@pytest.mark.parametrize("algo", ["sac-lag", "cvpo"])
def test_frozen_copies_follow_the_live_normaliser(algo):
    learner, norm = _learner(algo)
    copies = [("target", learner.target, learner.critics)]
    if algo == "cvpo":
        copies.append(("target_actor", learner.target_actor, learner.actor))
    else:
        copies.append(("actor_average", learner.average.net, learner.actor))
    g = torch.Generator().manual_seed(0)
    norm.update(3.0 + 2.0 * torch.randn(64, OBS, generator=g))  # the live statistics move
    obs = torch.randn(8, OBS, generator=g)
    act = torch.rand(8, ACT, generator=g) * 2 - 1
    for name, copy, live in copies:
        assert not any(p.requires_grad for p in copy.parameters()), name
        if name == "target":
            for q_copy, q_live in ((copy.q_reward, live.q_reward), (copy.q_cost, live.q_cost)):
                assert torch.equal(q_copy(obs, act), q_live(obs, act)), name
        else:
            assert torch.equal(copy.mean_action(obs), live.mean_action(obs)), name
    # and the copies' weights are their own: a step of the live networks leaves them behind
    with torch.no_grad():
        for p in learner.critics.parameters():
            p.add_(0.1)
    q_live = learner.critics.q_reward(obs, act)
    assert not torch.allclose(learner.target.q_reward(obs, act), q_live)


@pytest.mark.parametrize(("algo", "other"), [("ppol", "cvpo"), ("sac-lag", "focops")])
def test_a_learner_given_the_other_kind_of_actor_says_which_it_trains(algo, other):
    actor, v_r, v_c, critics, _ = build_networks(TrainConfig(algo=other), OBS, ACT)
    wanted = "GaussianActor" if algo == "ppol" else "SquashedGaussianActor"
    with pytest.raises(TypeError, match=f"{algo} trains a {wanted}, got a "):
        make_learner(TrainConfig(algo=algo), actor, v_r, v_c, critics, OBS, ACT, 100)


def _move_multiplier(learner) -> None:
    if getattr(learner, "pid", None) is not None:
        learner.pid.update(40.0)  # an episode cost far above the limit raises lambda
    elif hasattr(learner, "nu"):
        learner.nu = 0.7
    else:
        learner.lam = 0.3


@pytest.mark.parametrize("algo", ["ppol", "focops", "sac-lag", "cvpo"])
def test_state_round_trip_restores_networks_optimisers_and_multiplier(algo):
    a, _ = _learner(algo)
    b, _ = _learner(algo)
    obs = torch.randn(16, OBS, generator=torch.Generator().manual_seed(1))
    a.actor_optim.zero_grad()
    a.actor.mean_action(obs).pow(2).sum().backward()
    a.actor_optim.step()  # a's actor and its Adam moments move; b's stay fresh
    _move_multiplier(a)
    assert a.multiplier != b.multiplier
    b.load_state_dict(a.state_dict())
    assert torch.equal(b.actor.mean_action(obs), a.actor.mean_action(obs))
    assert b.multiplier == a.multiplier
    moments_a = [s["exp_avg"] for s in a.actor_optim.state_dict()["state"].values()]
    moments_b = [s["exp_avg"] for s in b.actor_optim.state_dict()["state"].values()]
    assert len(moments_a) > 0
    assert all(torch.equal(x, y) for x, y in zip(moments_a, moments_b, strict=True))


def test_value_critics_regress_the_returns_on_the_true_states_by_hand():
    """One full-batch SGD step (lr 0.1) of V_r and V_c, linear V(s) = w s + b from zero, on
    true states 1, 2 (the policy saw 5, 7) and returns ret_r 1, 3, ret_c 0, 2 (the advantages,
    unlike them, -9): loss mean((V - ret)^2) per critic, so dL/db = 2 mean(V - ret) and
    dL/dw = 2 mean((V - ret) s):
      V_r: db = -4, dw = -(1 + 6) = -7  -> b 0.4, w 0.7
      V_c: db = -2, dw = -(0 + 4) = -4  -> b 0.2, w 0.4"""
    from robustsafe.learners.ppo_lag import PPOLagrangian
    from robustsafe.nets import GaussianActor, ValueCritic
    from robustsafe.pid import PIDConfig

    v_r, v_c = ValueCritic(1, ()), ValueCritic(1, ())
    for p in (*v_r.parameters(), *v_c.parameters()):
        torch.nn.init.zeros_(p)
    learner = PPOLagrangian(GaussianActor(1, 1, ()), v_r, v_c, PPOLagConfig(), PIDConfig())
    learner.critic_optim = torch.optim.SGD(learner.critic_params, lr=0.1)
    col = lambda *x: torch.tensor(x)[:, None]  # noqa: E731
    data = {
        "obs": col(5.0, 7.0),
        "true_obs": col(1.0, 2.0),
        "ret_r": torch.tensor([1.0, 3.0]),
        "ret_c": torch.tensor([0.0, 2.0]),
        "adv_r": torch.tensor([-9.0, -9.0]),
        "adv_c": torch.tensor([-9.0, -9.0]),
    }
    learner.fit_critics(data, 1, None, None, torch.Generator())
    for critic, (w, b) in ((v_r, (0.7, 0.4)), (v_c, (0.4, 0.2))):
        linear = critic.net[0]
        assert (float(linear.weight), float(linear.bias)) == pytest.approx((w, b), abs=1e-6)


def test_an_agents_critics_know_the_units_of_their_cost_values():
    """The attackers' critics (PPOL, FOCOPS) learn costs / ``critics.cost_scale``; SAC-Lag's and
    CVPO's own critics raw costs: the MC / MR mixture reads each in the same units."""
    from robustsafe.agent import build_networks

    scales = {
        algo: build_networks(TrainConfig(algo=algo), 3, 2)[3].cost_scale
        for algo in ("ppol", "focops", "sac-lag", "cvpo")
    }
    assert scales == {"ppol": 5.0, "focops": 5.0, "sac-lag": 1.0, "cvpo": 1.0}
    cfg = TrainConfig(critics=CriticConfig(cost_scale=2.0))
    assert build_networks(cfg, 3, 2)[3].cost_scale == 2.0


def test_the_observation_normaliser_merges_batches_into_the_moments_of_all_of_them():
    # [1, 3] then [5, 7, 9]: the moments of 1, 3, 5, 7, 9 (mean 5, population variance
    # (16 + 4 + 0 + 4 + 16) / 5 = 8), whatever the split; an observation of 9 normalises to
    # 4 / sqrt(8), and one of 100 is clipped at 10.
    from robustsafe.nets import ObsNormalizer

    norm = ObsNormalizer(1)
    norm.update(torch.tensor([[1.0], [3.0]]))
    assert float(norm.mean) == 2.0 and float(norm.var) == 1.0
    norm.update(torch.tensor([[5.0], [7.0], [9.0]]))
    assert float(norm.count) == 5.0
    assert float(norm.mean) == pytest.approx(5.0, abs=1e-12)
    assert float(norm.var) == pytest.approx(8.0, abs=1e-12)
    out = norm(torch.tensor([[9.0], [100.0]]))
    assert out[0, 0].item() == pytest.approx(4.0 / 8.0**0.5, rel=1e-6)
    assert out[1, 0].item() == 10.0
