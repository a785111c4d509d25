import numpy as np
import pytest

from robustsafe.buffers import ReplayBuffer, gae


def test_gae_hand_computed_single_env():
    # rewards 1, 2, 3; V = 0.5, 1.0, 1.5; V(s_3) = 2.0; gamma 0.9, lambda 0.5, no episode end.
    r = np.array([[1.0], [2.0], [3.0]])
    v = np.array([[0.5], [1.0], [1.5]])
    v_next = np.array([[1.0], [1.5], [2.0]])
    no = np.zeros((3, 1), bool)
    adv, ret = gae(r, v, v_next, no, no, gamma=0.9, lam=0.5)
    # deltas: 1 + .9*1 - .5 = 1.4 ; 2 + .9*1.5 - 1 = 2.35 ; 3 + .9*2 - 1.5 = 3.3
    # A2 = 3.3 ; A1 = 2.35 + .45*3.3 = 3.835 ; A0 = 1.4 + .45*3.835 = 3.12575
    np.testing.assert_allclose(adv[:, 0], [3.12575, 3.835, 3.3])
    np.testing.assert_allclose(ret, adv + v)


def test_gae_termination_and_truncation():
    # Two steps; the episode ends after step 0. Terminated: no bootstrap; truncated: bootstrap
    # from the final observation's value. Either way step 0 must not see step 1's advantage.
    r = np.array([[1.0, 1.0], [5.0, 5.0]])
    v = np.array([[0.0, 0.0], [0.0, 0.0]])
    v_next = np.array([[10.0, 10.0], [0.0, 0.0]])
    term = np.array([[True, False], [False, False]])
    end = np.array([[True, True], [False, False]])
    adv, _ = gae(r, v, v_next, term, end, gamma=0.5, lam=1.0)
    assert adv[0, 0] == pytest.approx(1.0)  # terminated: 1 + 0
    assert adv[0, 1] == pytest.approx(1.0 + 0.5 * 10.0)  # truncated: bootstrap V(final obs)
    np.testing.assert_allclose(adv[1], [5.0, 5.0])


def test_gae_lambda_one_is_discounted_return_minus_value():
    rng = np.random.default_rng(0)
    r = rng.normal(size=(6, 1))
    v = rng.normal(size=(6, 1))
    v_next = np.vstack([v[1:], [[0.0]]])
    term = np.zeros((6, 1), bool)
    term[-1] = True
    adv, _ = gae(r, v, v_next, term, term, gamma=0.9, lam=1.0)
    disc = np.array([sum(0.9**k * r[t + k, 0] for k in range(6 - t)) for t in range(6)])
    np.testing.assert_allclose(adv[:, 0], disc - v[:, 0], atol=1e-12)


def test_replay_ring_buffer_overwrites_oldest_and_round_trips():
    buf = ReplayBuffer(obs_dim=1, act_dim=1, capacity=4)
    for start in (0, 3):
        x = np.arange(start, start + 3, dtype=np.float32)[:, None]
        buf.add(x, x, x[:, 0], x[:, 0], x, np.zeros(3))
    assert buf.size == 4
    assert sorted(buf.obs[:, 0].tolist()) == [2.0, 3.0, 4.0, 5.0]
    other = ReplayBuffer(1, 1, 4)
    other.load_state_dict(buf.state_dict())
    rng1, rng2 = np.random.default_rng(1), np.random.default_rng(1)
    a, b = buf.sample(8, rng1), other.sample(8, rng2)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    with pytest.raises(ValueError, match="empty"):
        ReplayBuffer(1, 1, 2).sample(1, rng1)


def _hand_rollout():
    """T = 3 steps, N = 2 envs, 1-d observations (V(s) = s below). Both envs see the same data;
    env 0's episode is truncated after step 0, env 1's terminated there. The policy's inputs
    are the true observations + 100 (an attacked rollout): the critics must not see them."""
    from robustsafe.buffers import Rollout

    true_obs = np.array([1.0, 2.0, 3.0])[:, None, None].repeat(2, axis=1)
    next_obs = np.array([7.0, 3.0, 4.0])[:, None, None].repeat(2, axis=1)  # 7: the final obs
    ended = np.zeros((3, 2), bool)
    ended[0] = True
    return Rollout(
        obs=(true_obs + 100.0).astype(np.float32),
        true_obs=true_obs.astype(np.float32),
        act=np.zeros((3, 2, 1), np.float32),
        logp=np.zeros((3, 2), np.float32),
        reward=np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]),
        cost=np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]]),
        next_obs=next_obs.astype(np.float32),
        terminated=ended & np.array([False, True]),
        truncated=ended & np.array([True, False]),
    )


def test_rollout_advantages_by_hand():
    """The glue between a rollout and gae(): critics on the true (not the attacked) states,
    bootstrapping from V(next_obs) (the final observation at a truncation, none at a
    termination), no advantage flowing across an episode's end; flattened (time, env).

    V(s) = s, gamma 0.5, lambda 0.5 (so A_t = delta_t + 0.25 A_t+1 within an episode).
    Reward deltas r + 0.5 V(s') - V(s):
      env 0 (truncated at t0): t0 1 + 3.5 - 1 = 3.5, t1 2 + 1.5 - 2 = 1.5, t2 3 + 2 - 3 = 2
        A = 3.5 (ended), 1.5 + 0.25 * 2 = 2, 2; returns A + V = 4.5, 4, 5
      env 1 (terminated at t0): t0 1 - 1 = 0, then as env 0; returns 1, 4, 5
    Cost deltas: env 0: 0 + 3.5 - 1 = 2.5, 1 + 1.5 - 2 = 0.5, 0 + 2 - 3 = -1
        A = 2.5, 0.5 - 0.25 = 0.25, -1; returns 3.5, 2.25, 2;  env 1: t0 0 - 1 = -1, return 0.
    """
    import torch

    from robustsafe.learners.base import rollout_advantages

    def value(x):
        return x[:, 0]

    out = rollout_advantages(_hand_rollout(), value, value, gamma=0.5, gae_lambda=0.5)
    flat = lambda pairs: [x for pair in pairs for x in pair]  # noqa: E731  (t, env) order
    want = {
        "adv_r": flat([(3.5, 0.0), (2.0, 2.0), (2.0, 2.0)]),
        "ret_r": flat([(4.5, 1.0), (4.0, 4.0), (5.0, 5.0)]),
        "adv_c": flat([(2.5, -1.0), (0.25, 0.25), (-1.0, -1.0)]),
        "ret_c": flat([(3.5, 0.0), (2.25, 2.25), (2.0, 2.0)]),
    }
    for key, values in want.items():
        assert out[key].tolist() == pytest.approx(values, abs=1e-6), key
    assert out["obs"][:, 0].tolist() == [101.0, 101.0, 102.0, 102.0, 103.0, 103.0]
    assert torch.equal(out["true_obs"], out["obs"] - 100.0)
