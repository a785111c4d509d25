"""Adversarial training of the off-policy learners (``robust.actor_update_attack``): the actor's
loss sees the attacked observations of a replay batch, the critics learn on the true states,
and the hooks attack exactly the batch's first ``attacked_fraction`` rows."""

from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np
import pytest
import torch

from robustsafe.agent import build_networks
from robustsafe.config import RobustConfig, SACLagConfig, TrainConfig
from robustsafe.learners import make_learner
from robustsafe.robust import RobustHooks

OBS, ACT, BATCH = 5, 2, 32


def _learner(algo: str):
    torch.manual_seed(7)  # the same initial networks for every call
    cfg = TrainConfig(algo=algo, ppo=replace(TrainConfig().ppo, hidden=(16, 16)))
    actor, v_r, v_c, critics, _ = build_networks(cfg, OBS, ACT)
    return make_learner(cfg, actor, v_r, v_c, critics, OBS, ACT, 100)


def _batch() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    return {
        "obs": rng.normal(size=(BATCH, OBS)).astype(np.float32),
        "act": rng.uniform(-1, 1, size=(BATCH, ACT)).astype(np.float32),
        "reward": rng.normal(size=BATCH).astype(np.float32),
        "cost": (rng.uniform(size=BATCH) < 0.3).astype(np.float32),
        "next_obs": rng.normal(size=(BATCH, OBS)).astype(np.float32),
        "done": np.zeros(BATCH, dtype=np.float32),
    }


def _step(algo: str, actor_obs):
    learner = _learner(algo)
    learner.update(_batch(), torch.Generator().manual_seed(0), actor_obs)
    return learner


def _params(net: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in net.parameters()]


@pytest.mark.parametrize("algo", ["sac-lag", "cvpo"])
def test_the_actor_loss_sees_actor_obs_and_the_critics_the_true_states(algo):
    clean = _step(algo, None)
    same = _step(algo, lambda obs: obs.clone())
    shifted = _step(algo, lambda obs: obs + 0.5)
    # an identity view of the batch is the clean update, bit for bit
    for a, b in zip(_params(clean.actor), _params(same.actor), strict=True):
        assert torch.equal(a, b)
    # a shifted view moves the actor elsewhere ...
    assert not all(
        torch.equal(a, b) for a, b in zip(_params(clean.actor), _params(shifted.actor), strict=True)
    )
    # ... and leaves the critics' step (taken on the true states) as it was
    for a, b in zip(_params(clean.critics), _params(shifted.critics), strict=True):
        assert torch.equal(a, b)


def test_sac_lag_scores_the_actions_of_the_view_at_the_true_states():
    """Q = 2 s for both critics (one linear layer on (s, a), weights (2, 0)), every true state
    1, the actor's view 1.5, learning rates too small to move anything: the actor's Q_r and Q_c
    are 2 x 1 = 2 (scored at the true state), not 2 x 1.5 = 3 (at the view)."""
    from robustsafe.critics import QCritics
    from robustsafe.learners.sac_lag import SACLagrangian
    from robustsafe.nets import SquashedGaussianActor, ValueCritic

    actor = SquashedGaussianActor(1, 1, ())
    critics = QCritics(1, 1, ())
    with torch.no_grad():
        actor.net[0].weight.zero_()
        actor.net[0].bias.copy_(torch.tensor([0.1, -0.7]))
        for head in [*critics.q_reward.heads, *critics.q_cost.heads]:
            head[0].weight.copy_(torch.tensor([[2.0, 0.0]]))
            head[0].bias.zero_()
    cfg = SACLagConfig(critic_lr=1e-12, actor_lr=1e-12, multiplier="gradient")
    learner = SACLagrangian(actor, critics, ValueCritic(1, ()), ValueCritic(1, ()), cfg, 1, 1, 2)
    ones = np.ones((4, 1), np.float32)
    batch = {
        "obs": ones,
        "act": 0 * ones,
        "reward": ones[:, 0],
        "cost": ones[:, 0],
        "next_obs": ones,
        "done": 0 * ones[:, 0],
    }
    metrics = learner.update(batch, torch.Generator().manual_seed(0), lambda obs: obs + 0.5)
    assert metrics["q_reward"] == pytest.approx(2.0, abs=1e-6)
    assert metrics["q_cost"] == pytest.approx(2.0, abs=1e-6)


@pytest.mark.parametrize("algo", ["sac-lag", "cvpo"])
def test_the_critics_bootstrap_action_is_taken_on_the_batchs_next_actor_obs(algo):
    def critics_after(next_actor_obs):
        batch = _batch()
        if next_actor_obs is not None:
            batch["next_actor_obs"] = next_actor_obs(batch["next_obs"])
        learner = _learner(algo)
        learner.update(batch, torch.Generator().manual_seed(0))
        return _params(learner.critics)

    clean = critics_after(None)
    # the true next states as the actor's view: the clean step, bit for bit
    same = critics_after(lambda x: x.copy())
    assert all(torch.equal(a, b) for a, b in zip(clean, same, strict=True))
    # a shifted view changes a', so the targets, so the critics' step
    shifted = critics_after(lambda x: x + np.float32(0.5))
    assert not all(torch.equal(a, b) for a, b in zip(clean, shifted, strict=True))


def test_cvpo_samples_and_fits_the_policy_on_the_view_and_scores_at_the_true_state():
    torch.manual_seed(7)
    cfg = TrainConfig(algo="cvpo", ppo=replace(TrainConfig().ppo, hidden=(16, 16)))
    cfg = replace(cfg, cvpo=replace(cfg.cvpo, mstep_iters=1))
    actor, v_r, v_c, critics, _ = build_networks(cfg, OBS, ACT)
    learner = make_learner(cfg, actor, v_r, v_c, critics, OBS, ACT, 100)
    batch, view = _batch(), (lambda obs: obs + 0.5)
    # the E-step's expected Q_r by hand: the critics' step first draws from the same generator
    twin = make_learner(cfg, *_copies(actor, v_r, v_c, critics), OBS, ACT, 100)
    gen = torch.Generator().manual_seed(0)
    b = {k: torch.as_tensor(v) for k, v in batch.items()}
    twin._critic_step(b, gen)
    with torch.no_grad():
        mu, log_std = twin.target_actor.gaussian(view(b["obs"]))  # pi_old on the view
        u = mu + log_std.exp() * torch.randn((32, BATCH, ACT), generator=gen, dtype=mu.dtype)
        acts = twin.target_actor.squash(u).reshape(32 * BATCH, ACT)
        at_true = b["obs"].expand(32, BATCH, OBS).reshape(32 * BATCH, OBS)
        q_r = twin.target.q_reward(at_true, acts).double().mean()  # scored at the true states
    m = learner.update(batch, torch.Generator().manual_seed(0), view)
    assert m["q_reward"] == pytest.approx(float(q_r), rel=1e-6, abs=1e-9)
    # the trust region is around pi_old(.|s~): before the first M-step iteration pi_theta is
    # pi_old, so its KL is 0 (around pi_old(.|s) it would be the gap the view opens)
    assert m["kl_mean"] == 0.0 and m["kl_std"] == 0.0


def _copies(*nets):
    return [copy.deepcopy(n) for n in nets]


def _hooks(**robust) -> tuple[RobustHooks, torch.Tensor]:
    cfg = TrainConfig(
        algo="sac-lag",
        robust=RobustConfig(schedule="constant", schedule_start=0, **robust),
    )
    torch.manual_seed(1)
    actor, _, _, critics, _ = build_networks(cfg, OBS, ACT)
    hooks = RobustHooks(cfg, actor, critics, torch.Generator().manual_seed(2))
    obs = torch.randn(8, OBS, generator=torch.Generator().manual_seed(4))
    return hooks, obs


@pytest.mark.parametrize("mode", ["adv-mc", "adv-mr", "random"])
def test_the_update_attack_perturbs_the_first_fraction_of_the_batch_within_the_ball(mode):
    hooks, obs = _hooks(mode=mode, epsilon=0.05, attacked_fraction=0.5)
    view = hooks.update_perturbation(epoch=3, batch_size=8)
    assert view is not None
    seen = view(obs)
    gap = (seen - obs).abs()
    assert torch.equal(seen[4:], obs[4:])  # the clean half
    assert gap[:4].max() > 0.01  # the attacked half moved ...
    assert gap.max() <= 0.05 + 1e-6  # ... inside the l_inf ball
    if mode != "random":  # one start per state: the update attacks every batch
        assert hooks.update_attacker.config.restarts == 1


def test_the_critics_view_is_off_by_default_and_attacks_the_first_fraction_when_asked():
    assert _hooks(mode="adv-mc")[0].critic_perturbation(3, 8) is None
    hooks, obs = _hooks(
        mode="adv-mc", epsilon=0.05, attacked_fraction=0.5, critic_update_attack=True
    )
    view = hooks.critic_perturbation(3, 8)
    seen = view(obs)
    assert torch.equal(seen[4:], obs[4:]) and 0.01 < (seen - obs).abs().max() <= 0.05 + 1e-6
    assert _hooks(mode="vanilla", critic_update_attack=True)[0].critic_perturbation(3, 8) is None


def test_the_update_attack_is_off_when_asked_in_vanilla_and_at_zero_budget():
    assert _hooks(mode="adv-mc", actor_update_attack=False)[0].update_perturbation(3, 8) is None
    assert _hooks(mode="vanilla")[0].update_perturbation(3, 8) is None
    late, _ = _hooks(mode="adv-mc")
    late.cfg = replace(late.cfg, schedule="exp", schedule_start=10)
    assert late.update_perturbation(3, 8) is None  # the budget is still 0 at epoch 3
    assert late.update_perturbation(60, 8) is not None
