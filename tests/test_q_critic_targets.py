"""The attackers' Q critics (paper appendix C.3, Eq. 13-17) against numbers computed by hand.

    target_r = r       + gamma (1 - terminated) min(Q_r1', Q_r2')(s', a'),  a' ~ pi(.|s')
    target_c = c / 5   + gamma (1 - terminated) Q_c'(s', a')
    target  <- 0.995 target + 0.005 live   after every gradient step

All networks are single linear layers (no hidden layer) whose weights are set by hand, with
obs_dim = act_dim = 1, so Q(s, a) = w_s s + w_a a + b.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from robustsafe.buffers import Rollout
from robustsafe.config import CriticConfig
from robustsafe.critics import CriticTrainer, QCritics
from robustsafe.nets import GaussianActor


def _set(layer: nn.Module, w_s: float, w_a: float, b: float) -> None:
    assert isinstance(layer, nn.Linear)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor([[w_s, w_a]]))
        layer.bias.fill_(b)


def _heads(critics: QCritics) -> tuple[nn.Module, nn.Module, nn.Module]:
    return critics.q_reward.heads[0][0], critics.q_reward.heads[1][0], critics.q_cost.heads[0][0]


def _trainer(updates: int = 1, lr: float = 0.0) -> CriticTrainer:
    """Live and target critics set by hand; lr 0 (the default here) keeps the live critics
    fixed, so the only change to the targets is the polyak average."""
    # the defaults under test: gamma 0.99, polyak 0.995, cost scale 5 (the original code's)
    cfg = CriticConfig(lr=lr, batch_size=4, updates_per_epoch=updates)
    trainer = CriticTrainer(QCritics(1, 1, hidden=()), 1, 1, cfg)
    live_r1, live_r2, live_c = _heads(trainer.critics)
    _set(live_r1, 1.0, 1.0, 0.0)  # Q_r1 = s + a
    _set(live_r2, 2.0, 0.0, 0.0)  # Q_r2 = 2 s
    _set(live_c, 0.5, 1.0, 0.0)  # Q_c = 0.5 s + a
    tgt_r1, tgt_r2, tgt_c = _heads(trainer.target)
    _set(tgt_r1, 1.0, 2.0, 1.0)  # Q_r1' = s' + 2 a' + 1
    _set(tgt_r2, 3.0, 0.0, 0.5)  # Q_r2' = 3 s' + 0.5
    _set(tgt_c, 2.0, 1.0, 0.0)  # Q_c' = 2 s' + a'
    return trainer


def _actor() -> GaussianActor:
    """pi(.|s) = N(0.5, e^-20): the mean is -1 + 2 sigmoid(ln 3) = -1 + 2 * 3/4 = 0.5 for any s,
    and the noise (2e-9) is far below the tolerances, so a' = 0.5."""
    actor = GaussianActor(1, 1, hidden=(), init_log_std=-20.0)
    with torch.no_grad():
        actor.net[0].weight.zero_()
        actor.net[0].bias.fill_(float(np.log(3.0)))
    return actor


def _one_transition(terminated: bool, truncated: bool) -> Rollout:
    """One step of one env: s = 1, a = -1, r = 2, c = 5, s' = 2."""

    def arr(x, dtype=np.float32):
        return np.full((1, 1, 1), x, dtype)

    return Rollout(
        obs=arr(1.0),
        true_obs=arr(1.0),
        act=arr(-1.0),
        logp=np.zeros((1, 1), np.float32),
        reward=np.full((1, 1), 2.0),
        cost=np.full((1, 1), 5.0),
        next_obs=arr(2.0),
        terminated=np.full((1, 1), terminated),
        truncated=np.full((1, 1), truncated),
    )


# At s' = 2, a' = 0.5: Q_r1' = 2 + 1 + 1 = 4, Q_r2' = 6 + 0.5 = 6.5 -> min 4; Q_c' = 4 + 0.5 = 4.5
# Bootstrapped:  target_r = 2 + 0.99 * 4 = 5.96,  target_c = 5 / 5 + 0.99 * 4.5 = 5.455
# Terminated:    target_r = 2,                   target_c = 1
# At s = 1, a = -1 the live critics give Q_r1 = 0, Q_r2 = 2, Q_c = -0.5, and the reported losses
# are the sum over heads of the squared errors (one distinct transition in the batch):
#   bootstrapped: loss_r = (0 - 5.96)^2 + (2 - 5.96)^2 = 35.5216 + 15.6816 = 51.2032
#                 loss_c = (-0.5 - 5.455)^2 = 35.462025
#   terminated:   loss_r = (0 - 2)^2 + (2 - 2)^2 = 4,  loss_c = (-0.5 - 1)^2 = 2.25
@pytest.mark.parametrize(
    "terminated, truncated, loss_r, loss_c",
    [
        (False, False, 51.2032, 35.462025),
        (False, True, 51.2032, 35.462025),  # a time-limit truncation still bootstraps
        (True, False, 4.0, 2.25),
        (True, True, 4.0, 2.25),
    ],
)
def test_td_targets_hand_values(terminated, truncated, loss_r, loss_c):
    trainer = _trainer()
    trainer.add_rollout(_one_transition(terminated, truncated))
    # the replay holds the cost divided by the cost scale 5, and "done" is the termination only
    assert trainer.replay.cost[0] == pytest.approx(1.0)
    assert trainer.replay.done[0] == float(terminated)
    torch.manual_seed(0)  # a' is drawn from pi with torch's global generator
    metrics = trainer.update(_actor(), np.random.default_rng(0))
    assert metrics["loss_q_reward"] == pytest.approx(loss_r, rel=1e-6)
    assert metrics["loss_q_cost"] == pytest.approx(loss_c, rel=1e-6)


def test_a_squashed_actors_next_action_is_squashed():
    """SAC's and CVPO's actor: pi's draw u is pre-tanh, the action tanh(u). The TD target took
    u itself (fit-critics on an off-policy run), an action outside the box.

    pi = tanh(N(3, e^-20)): a' = tanh(3) = 0.99505 (u would be 3). At s' = 2, bootstrapped:
    Q_r1' = 2 + 2 a' + 1, Q_r2' = 6.5 -> min 3 + 2 a'; Q_c' = 4 + a';
    target_r = 2 + 0.99 (3 + 2 a'), target_c = 1 + 0.99 (4 + a'), against Q_r1 = 0, Q_r2 = 2,
    Q_c = -0.5 at s = 1, a = -1."""
    from robustsafe.nets import SquashedGaussianActor

    actor = SquashedGaussianActor(1, 1, ())
    with torch.no_grad():
        actor.net[0].weight.zero_()
        actor.net[0].bias.copy_(torch.tensor([3.0, -20.0]))
    trainer = _trainer()
    trainer.add_rollout(_one_transition(False, False))
    metrics = trainer.update(actor, np.random.default_rng(0))
    a = float(np.tanh(3.0))
    target_r, target_c = 2 + 0.99 * (3 + 2 * a), 1 + 0.99 * (4 + a)
    assert metrics["loss_q_reward"] == pytest.approx(target_r**2 + (2 - target_r) ** 2, rel=1e-5)
    assert metrics["loss_q_cost"] == pytest.approx((-0.5 - target_c) ** 2, rel=1e-5)


@pytest.mark.parametrize(
    "updates, rho",
    [(1, 0.995), (2, 0.995**2)],  # polyak after every step: rho^k of the target after k steps
)
def test_target_networks_follow_the_live_ones_by_polyak_averaging(updates, rho):
    # With the live critics fixed (lr 0), k steps give target = rho^k target + (1 - rho^k) live:
    #   Q_r1' weights (1, 2, 1) vs live (1, 1, 0): (1, 2 rho + (1 - rho), rho) = (1, 1 + rho, rho)
    #     one step: (1, 1.995, 0.995)
    #   Q_r2' (3, 0, 0.5) vs live (2, 0, 0): (2 + rho, 0, 0.5 rho); one step: (2.995, 0, 0.4975)
    #   Q_c'  (2, 1, 0)   vs live (0.5, 1, 0): (0.5 + 1.5 rho, 1, 0); one step: (1.9925, 1, 0)
    trainer = _trainer(updates)
    trainer.add_rollout(_one_transition(False, False))
    torch.manual_seed(0)
    trainer.update(_actor(), np.random.default_rng(0))
    got = [
        [*layer.weight.flatten().tolist(), float(layer.bias)] for layer in _heads(trainer.target)
    ]
    want = [[1.0, 1.0 + rho, rho], [2.0 + rho, 0.0, 0.5 * rho], [0.5 + 1.5 * rho, 1.0, 0.0]]
    for g, w in zip(got, want, strict=True):
        assert g == pytest.approx(w, abs=1e-6)
    if updates == 1:
        assert got[0][1:] == pytest.approx([1.995, 0.995], abs=1e-6)
    # the live critics were not averaged towards the targets
    assert _heads(trainer.critics)[0].bias.item() == 0.0


@torch.no_grad()
def _at_s1_a_minus1(trainer: CriticTrainer) -> list[float]:
    s_a = torch.tensor([[1.0]]), torch.tensor([[-1.0]])
    q_r = trainer.critics.q_reward.all_heads(*s_a)
    return [float(q_r[0]), float(q_r[1]), float(trainer.critics.q_cost(*s_a))]


def test_one_gradient_step_moves_the_live_critics_towards_their_targets():
    """Adam's first step moves every parameter by lr against the sign of its gradient. Every
    live head is below its target at (s = 1, a = -1) (0 < 5.96, 2 < 5.96, -0.5 < 5.455), so each
    head's bias and w_s rise by lr and its w_a (a = -1) falls by lr: each Q(1, -1) rises by 3 lr,
    and the TD loss falls."""
    lr = 0.01
    trainer = _trainer(lr=lr)
    trainer.add_rollout(_one_transition(terminated=False, truncated=False))
    assert _at_s1_a_minus1(trainer) == [0.0, 2.0, -0.5]
    losses = trainer.update(_actor(), np.random.default_rng(0))
    assert losses["loss_q_reward"] == pytest.approx(51.2032, rel=1e-5)  # before the step
    for layer, (w_s, w_a, b) in zip(
        _heads(trainer.critics), [(1.0, 1.0, 0.0), (2.0, 0.0, 0.0), (0.5, 1.0, 0.0)], strict=True
    ):
        assert layer.weight[0].tolist() == pytest.approx([w_s + lr, w_a - lr], abs=1e-6)
        assert float(layer.bias) == pytest.approx(b + lr, abs=1e-6)
    assert _at_s1_a_minus1(trainer) == pytest.approx([0.03, 2.03, -0.47], abs=1e-6)
    after = trainer.update(_actor(), np.random.default_rng(0))
    assert after["loss_q_reward"] < losses["loss_q_reward"]
    assert after["loss_q_cost"] < losses["loss_q_cost"]
