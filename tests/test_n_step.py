"""n-step transitions for the off-policy learners: the sums by hand, chunks against one
rollout, the window's resumable state, the targets' discount, and a resumed n-step run."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from test_sac_lag_training import sac_train
from tiny_config import full_and_resumed, replay_batch

from robustsafe.buffers import NStepWindow, ReplayBuffer, Rollout, n_step_sums
from robustsafe.config import CVPOConfig, SACLagConfig
from robustsafe.critics import QCritics
from robustsafe.learners.cvpo import CVPO
from robustsafe.learners.sac_lag import SACLagrangian, critic_step, q_targets
from robustsafe.nets import SquashedGaussianActor, ValueCritic
from robustsafe.runstate import load_state


def test_n_step_sums_by_hand():
    # one env, 4 steps; the episode ends after step 1; gamma 0.5, n 3
    reward = np.array([[1.0], [2.0], [3.0], [4.0]])
    cost = np.array([[0.0], [1.0], [0.0], [1.0]])
    end = np.array([[False], [True], [False], [False]])
    r, c, k = n_step_sums(reward, cost, end, 3, 0.5)
    # t0: steps 0-1 (the end); t1: step 1; t2: steps 2-3 (the rollout's end); t3: step 3
    assert r[:, 0].tolist() == [2.0, 2.0, 5.0, 4.0]
    assert c[:, 0].tolist() == [0.5, 1.0, 0.5, 1.0]
    assert k[:, 0].tolist() == [2, 1, 2, 1]
    r1, c1, k1 = n_step_sums(reward, cost, end, 1, 0.5)
    assert (r1 == reward).all() and (c1 == cost).all() and (k1 == 1).all()


def _rollout(T: int, N: int, seed: int, ends: dict[tuple[int, int], str]) -> Rollout:
    """A random rollout whose ``next_obs`` of step t is the true state of step t + 1 (an
    episode's end: an unrelated final state) and whose acted-on ``obs`` differ from the true
    ones; ``ends[(t, env)]`` is "term" or "trunc"."""
    rng = np.random.default_rng(seed)
    obs = rng.normal(size=(T + 1, N, 3)).astype(np.float32)
    next_obs = obs[1:].copy()
    terminated = np.zeros((T, N), bool)
    truncated = np.zeros((T, N), bool)
    for (t, env), kind in ends.items():
        (terminated if kind == "term" else truncated)[t, env] = True
        next_obs[t, env] = 100.0 + t  # the final observation, not the next start
    return Rollout(
        obs=obs[:T] + 0.5,  # what the policy acted on (attacked): never stored
        true_obs=obs[:T],
        act=rng.normal(size=(T, N, 2)).astype(np.float32),
        logp=np.zeros((T, N), np.float32),
        reward=rng.normal(size=(T, N)).astype(np.float32),
        cost=rng.random(size=(T, N)).astype(np.float32),
        next_obs=next_obs,
        terminated=terminated,
        truncated=truncated,
    )


def _split(ro: Rollout, cut: int) -> tuple[Rollout, Rollout]:
    fields = ro.__dataclass_fields__
    first = Rollout(**{f: getattr(ro, f)[:cut] for f in fields})
    return first, Rollout(**{f: getattr(ro, f)[cut:] for f in fields})


def test_a_transition_by_hand_termination_and_truncation():
    ro = _rollout(6, 2, 0, {(1, 0): "term", (2, 1): "trunc"})
    obs, act, r, c, next_obs, done, k = NStepWindow(3, 0.9).transitions(ro)
    # 6 - 2 = 4 steps complete, 2 envs each, time-major: row 2 t + env
    assert k.tolist() == [2, 3, 1, 2, 3, 1, 3, 3]
    g = 0.9
    # env 0 at t=0: steps 0, 1; terminated at 1: no bootstrap
    assert r[0] == pytest.approx(ro.reward[0, 0] + g * ro.reward[1, 0], rel=1e-6)
    assert done[0] == 1 and (next_obs[0] == ro.next_obs[1, 0]).all()
    # env 1 at t=1: steps 1, 2; truncated at 2: bootstraps from the final observation
    assert c[3] == pytest.approx(ro.cost[1, 1] + g * ro.cost[2, 1], rel=1e-6)
    assert done[3] == 0 and (next_obs[3] == 102.0).all()
    # env 0 at t=2: three whole steps, s' = the state of step 5
    want = ro.reward[2, 0] + g * ro.reward[3, 0] + g * g * ro.reward[4, 0]
    assert r[4] == pytest.approx(want, rel=1e-6)
    assert (next_obs[4] == ro.true_obs[5, 0]).all() and (obs[4] == ro.true_obs[2, 0]).all()
    assert (act[4] == ro.act[2, 0]).all()


def test_chunks_give_the_transitions_of_one_rollout_and_resume_from_the_state():
    ro = _rollout(11, 3, 1, {(3, 0): "term", (4, 2): "trunc", (8, 1): "term"})
    whole = NStepWindow(3, 0.97).transitions(ro)
    first, rest = _split(ro, 4)
    middle, last = _split(rest, 3)
    window = NStepWindow(3, 0.97)
    parts = [window.transitions(first), window.transitions(middle)]
    # resume: a fresh window from the saved state finishes the same way
    resumed = NStepWindow(3, 0.97)
    resumed.load_state_dict(window.state_dict())
    parts.append(resumed.transitions(last))
    for i, field in enumerate(zip(*parts, strict=True)):
        assert np.array_equal(np.concatenate(field), whole[i]), i
    # the sums cross the chunks' ends: transitions of 3 steps start in the last 2 of a chunk
    assert (np.concatenate([p[6] for p in parts])[6:12] == 3).any()


def test_one_step_window_is_the_rollouts_own_transitions():
    ro = _rollout(5, 2, 2, {(2, 1): "term"})
    window = NStepWindow(1, 0.99)
    out = window.transitions(ro)  # n = 1: the rollout's own one-step transitions
    T, N = ro.reward.shape
    assert np.array_equal(out[0], ro.true_obs.reshape(T * N, 3))
    assert np.array_equal(out[4], ro.next_obs.reshape(T * N, 3))
    assert np.array_equal(out[2], ro.reward.reshape(-1)) and (out[6] == 1).all()
    assert out[5].tolist() == ro.terminated.reshape(-1).tolist()
    # the n-step path at n = 1 gives the same transitions, bit for bit
    general = window._n_step(ro)
    for a, b in zip(general, out, strict=True):
        assert np.array_equal(a, b) and a.dtype == b.dtype and a.shape == b.shape


def _reference(ro: Rollout, n: int, gamma: float) -> list[tuple]:
    """n-step transitions by the definition, one (t, env) at a time, over the whole rollout,
    for the steps with n - 1 steps after them (what a window has handed over at its end)."""
    T, N = ro.reward.shape
    out = []
    for t in range(T - (n - 1)):
        for e in range(N):
            r = c = 0.0
            k = 0
            while k < n:
                r += gamma**k * float(ro.reward[t + k, e])
                c += gamma**k * float(ro.cost[t + k, e])
                k += 1
                if ro.terminated[t + k - 1, e] or ro.truncated[t + k - 1, e]:
                    break
            last = t + k - 1
            done = ro.terminated[last, e]
            out.append((ro.true_obs[t, e], ro.act[t, e], r, c, ro.next_obs[last, e], done, k))
    return out


@pytest.mark.parametrize("n", [2, 3, 5])
def test_random_chunks_give_the_transitions_of_the_definition(n):
    rng = np.random.default_rng(n)
    for trial in range(10):
        T = 14
        ends = {
            (int(t), int(e)): ("term" if rng.random() < 0.5 else "trunc")
            for t, e in zip(rng.integers(0, T, 5), rng.integers(0, 3, 5), strict=True)
        }
        ro = _rollout(T, 3, 100 + trial, ends)
        window = NStepWindow(n, 0.9)
        parts, start = [], 0
        while start < T:  # chunks of 1-4 steps: some shorter than n - 1, the first too
            cut = min(T, start + int(rng.integers(1, 5)))
            chunk = _split(_split(ro, cut)[0], start)[1]
            resumed = NStepWindow(n, 0.9)
            resumed.load_state_dict(window.state_dict())
            window = resumed
            parts.append(window.transitions(chunk))
            start = cut
        got = [np.concatenate(field) for field in zip(*parts, strict=True)]
        want = _reference(ro, n, 0.9)
        assert len(got[0]) == len(want)
        for i, (obs, act, r, c, next_obs, done, k) in enumerate(want):
            assert np.array_equal(got[0][i], obs) and np.array_equal(got[1][i], act)
            assert got[2][i] == pytest.approx(r, rel=1e-5, abs=1e-6)
            assert got[3][i] == pytest.approx(c, rel=1e-5, abs=1e-6)
            assert np.array_equal(got[4][i], next_obs)
            assert bool(got[5][i]) == bool(done) and got[6][i] == k


def test_a_first_chunk_shorter_than_the_window_hands_over_nothing_yet():
    ro = _rollout(6, 2, 4, {})
    first, rest = _split(ro, 2)
    window = NStepWindow(4, 0.9)
    out = window.transitions(first)
    assert [a.shape for a in out] == [(0, 3), (0, 2), (0,), (0,), (0, 3), (0,), (0,)]
    ReplayBuffer(3, 2, 10).add(*out)  # and the replay takes it
    assert len(window.transitions(rest)[0]) == 2 * (6 - 3)


@pytest.mark.parametrize("alpha", [0.001, 0.0])  # SAC-Lag's soft targets, CVPO's plain ones
def test_the_critic_step_bootstraps_by_gamma_to_the_transitions_steps(alpha):
    torch.manual_seed(0)
    actor = SquashedGaussianActor(2, 1, (4,))
    critics = QCritics(2, 1, (4,))
    batch = replay_batch(6)

    def grads(steps: float | None, gamma: float) -> list[torch.Tensor]:
        net = copy.deepcopy(critics)
        target = copy.deepcopy(critics)
        b = {k: torch.as_tensor(v) for k, v in batch.items()}
        if steps is not None:
            b["steps"] = torch.full((6,), steps)
        optim = torch.optim.SGD(net.parameters(), lr=0.0)
        gen = torch.Generator().manual_seed(1)
        critic_step(actor, net, target, optim, b, gen, gamma, alpha)
        return [p.grad.clone() for p in net.parameters()]

    two, squared = grads(2.0, 0.9), grads(None, 0.81)
    assert all(
        torch.allclose(a, b, rtol=1e-5, atol=1e-7) for a, b in zip(two, squared, strict=True)
    )
    one, plain = grads(1.0, 0.9), grads(None, 0.9)
    assert all(torch.equal(a, b) for a, b in zip(one, plain, strict=True))
    assert not all(torch.allclose(a, b) for a, b in zip(two, one, strict=True))


def _learner(algo: str, gamma: float, n_step: int) -> SACLagrangian | CVPO:
    """A learner on the rollouts of ``_rollout`` (3-d observations, 2-d actions), its networks
    the same for every call."""
    torch.manual_seed(0)
    nets = (
        SquashedGaussianActor(3, 2, (8,)),
        QCritics(3, 2, (8,)),
        ValueCritic(3, ()),
        ValueCritic(3, ()),
    )
    if algo == "sac-lag":
        cfg = SACLagConfig(gamma=gamma, n_step=n_step, multiplier="gradient")
        return SACLagrangian(*nets, cfg, 3, 2, 10)
    cfg = CVPOConfig(gamma=gamma, n_step=n_step, sample_actions=8, mstep_iters=1)
    return CVPO(*nets, cfg, 3, 2, episode_steps=10)


@pytest.mark.parametrize("algo", ["sac-lag", "cvpo"])
def test_a_learner_stores_n_step_transitions_and_its_update_discounts_them(algo):
    """Through the learner: ``add`` stores 2-step sums at the run's gamma from the true states,
    the replay hands the steps back, and ``update`` bootstraps by gamma^2: its critic loss is
    that of one-step transitions at gamma^2 = 0.81 (and not that at 0.9)."""
    ro = _rollout(6, 2, 5, {})
    learner = _learner(algo, 0.9, 2)
    learner.add(ro)
    buf = learner.replay
    assert buf.size == 2 * 5 and (buf.steps[:10] == 2.0).all()
    assert np.array_equal(buf.obs[:10], ro.true_obs[:5].reshape(10, 3))  # not the acted-on obs
    assert np.array_equal(buf.next_obs[:10], ro.next_obs[1:].reshape(10, 3))
    want = ro.reward[:5] + 0.9 * ro.reward[1:]
    assert np.allclose(buf.reward[:10], want.reshape(10), rtol=1e-6)
    batch = buf.sample(8, np.random.default_rng(0))
    assert (batch["steps"] == 2.0).all()
    one_step = {k: v for k, v in batch.items() if k != "steps"}

    def loss_q(learner, batch) -> float:
        return learner.update(batch, torch.Generator().manual_seed(3))["loss_q"]

    got = loss_q(learner, batch)
    assert got == pytest.approx(loss_q(_learner(algo, 0.81, 1), one_step), rel=1e-5)
    assert got != pytest.approx(loss_q(_learner(algo, 0.9, 1), one_step), rel=1e-3)


def test_replay_keeps_steps_and_reads_a_state_saved_before_them():
    buf = ReplayBuffer(3, 2, 10)
    ro = _rollout(6, 2, 3, {})
    buf.add(*NStepWindow(2, 0.9).transitions(ro))
    assert buf.size == 10 and set(buf.steps[:10].tolist()) == {2.0}
    state = buf.state_dict()
    old = {k: v for k, v in state.items() if k != "steps"}
    fresh = ReplayBuffer(3, 2, 10)
    fresh.steps[:] = 7.0
    fresh.load_state_dict(old)
    assert (fresh.steps[:10] == 1.0).all()


def test_q_targets_discount_each_transition_by_its_own_gamma_power():
    done = torch.tensor([0.0, 0.0, 1.0])
    disc = 0.5 ** torch.tensor([1.0, 2.0, 2.0])
    y_r, y_c = q_targets(
        torch.tensor([1.0, 1.0, 1.0]),
        torch.tensor([0.0, 2.0, 2.0]),
        done,
        torch.tensor([4.0, 4.0, 4.0]),
        torch.tensor([8.0, 8.0, 8.0]),
        torch.zeros(3),
        disc,
        0.0,
    )
    assert y_r.tolist() == [3.0, 2.0, 1.0] and y_c.tolist() == [4.0, 4.0, 2.0]


@pytest.mark.parametrize("bad", [0, 1.5, True])
def test_n_step_must_be_a_positive_integer(bad):
    for cls in (SACLagConfig, CVPOConfig):
        with pytest.raises(ValueError, match=r"n_step must be an integer in \[1, 100\]"):
            cls(n_step=bad)


def test_an_n_step_sac_lag_run_resumes_bit_identically(tmp_path):
    def train(out, *extra):
        return sac_train(out, "--set", "sac.n_step=3", *extra)

    full, cut = full_and_resumed(train, tmp_path, "vanilla")
    a, b = (load_state(d / "state.pt")["learner"] for d in (full, cut))
    for key in ("obs", "reward", "next_obs", "steps"):
        assert np.array_equal(a["replay"][key], b["replay"][key]), key
    assert np.array_equal(a["n_step_pending"]["reward"], b["n_step_pending"]["reward"])
    # 3-step transitions, and shorter ones where an episode (20 steps) ends
    assert set(a["replay"]["steps"].tolist()) == {1.0, 2.0, 3.0}


def test_newest_obs_draws_only_from_the_newest_transitions_across_the_wrap():
    buf = ReplayBuffer(1, 1, capacity=5)
    for i in range(7):  # obs i; 0 and 1 are overwritten, 5 and 6 sit at rows 0 and 1
        z = np.zeros(1, np.float32)
        buf.add(np.full((1, 1), i, np.float32), z[:, None], z, z, z[:, None], z)
    g = torch.Generator().manual_seed(0)
    assert set(buf.newest_obs(200, 2, g)[:, 0].tolist()) == {5.0, 6.0}
    assert set(buf.newest_obs(200, 3, g)[:, 0].tolist()) == {4.0, 5.0, 6.0}
    assert set(buf.newest_obs(400, 100, g)[:, 0].tolist()) == {2.0, 3.0, 4.0, 5.0, 6.0}
    partial = ReplayBuffer(1, 1, capacity=10)  # not yet full: the newest rows end at pos - 1
    col, z = np.arange(4, dtype=np.float32)[:, None], np.zeros(4, np.float32)
    partial.add(col, col, z, z, col, z)
    assert set(partial.newest_obs(200, 2, g)[:, 0].tolist()) == {2.0, 3.0}
    with pytest.raises(ValueError, match="empty"):
        ReplayBuffer(1, 1, 3).newest_obs(1, 1, g)
