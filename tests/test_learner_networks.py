"""What the learners of one kind share (``learners.base``): the frozen copies an off-policy
learner keeps (Q targets, CVPO's pi_old, SAC-Lag's weight average) see observations through the
live normaliser, and a learner's state carries what the next step needs."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from robustsafe.agent import build_networks
from robustsafe.config import TrainConfig
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
        copies.append(("actor_average", learner.actor_average, learner.actor))
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
