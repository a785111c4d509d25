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
