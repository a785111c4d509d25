"""The attackers through their public interface: ball, optimality, AMAD's selection, seeds,
statelessness and leaving the networks alone."""

from __future__ import annotations

import functools

import pytest
import torch
from attack_nets import PeakedCost, linear_actor, linear_critics, random_agent
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robustsafe.attacks import (
    AMADAttacker,
    AttackConfig,
    RowGenerators,
    amad_threshold,
    cost_values,
    episode_generator,
    gaussian_kl,
    make_attacker,
)
from robustsafe.nets import ObsNormalizer

ALL_NAMES = ["none", "random", "mad", "amad", "mc", "mr", "minr", "mix:0.3", "mix:1", "mix:0"]


def build(name, actor, critics, obs, **kwargs):
    if name == "amad" and "threshold" not in kwargs:
        kwargs["threshold"] = float(cost_values(actor, critics, obs).median())
    return make_attacker(name, **kwargs)


@functools.cache
def _agent(obs_dim: int):
    return random_agent(obs_dim, seed=obs_dim)


# ---------------------------------------------------------------------------------------------
# Every output lies in the ball


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(ALL_NAMES),
    norm=st.sampled_from(["linf", "l2"]),
    optimizer=st.sampled_from(["pgd", "adam"]),
    batch=st.integers(1, 9),
    obs_dim=st.integers(1, 6),
    epsilon=st.one_of(st.just(0.0), st.floats(1e-4, 2.0)),
    magnitude=st.sampled_from([1.0, 100.0, 3000.0]),
    use_scale=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
)
def test_outputs_always_inside_the_ball(
    name, norm, optimizer, batch, obs_dim, epsilon, magnitude, use_scale, seed
):
    actor, critics = _agent(obs_dim)
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(batch, obs_dim, generator=g) * magnitude
    scale = torch.rand(obs_dim, generator=g) * 5 + 0.01 if use_scale else None
    attacker = build(name, actor, critics, obs, norm=norm, optimizer=optimizer, steps=4)
    out = attacker(actor, critics, obs, epsilon, g, scale)
    assert out.shape == obs.shape and out.dtype == obs.dtype
    assert not out.requires_grad
    diff = out.double() - obs.double()
    if scale is not None:
        diff = diff / scale.double()
    length = diff.abs().amax(-1) if norm == "linf" else torch.linalg.vector_norm(diff, dim=-1)
    assert float(length.max()) <= epsilon  # exact: no tolerance


def test_normaliser_scale_measures_epsilon_in_normalised_units():
    norm = ObsNormalizer(3)
    norm.update(torch.randn(1000, 3) * torch.tensor([0.1, 1.0, 10.0]))
    actor, critics = random_agent(3)
    actor.obs_normalizer = norm
    obs = torch.randn(32, 3)
    out = make_attacker("mc")(actor, critics, obs, 0.5, torch.Generator(), norm.std)
    moved = ((out - obs) / norm.std).abs().amax(0)
    assert float(moved.max()) <= 0.5
    raw = (out - obs).abs().amax(0)
    assert float(raw[2]) > 1.0  # 0.5 std of a coordinate with std 10


# ---------------------------------------------------------------------------------------------
# Known optima


def _corner_case(act_dim: int = 2):
    torch.manual_seed(0)
    obs_dim = 5
    row = torch.tensor([0.8, -1.5, 0.3, -0.2, 1.1])
    weight = torch.stack([row * (k + 1) for k in range(act_dim)])  # same sign pattern per action
    actor = linear_actor(weight)
    # Q_c also depends on s, against the actions' direction: were it evaluated at the perturbed
    # state rather than the clean one (appendix C.1), the optimum would flip to -sign(W).
    critics = linear_critics(
        obs_dim, cost_act=torch.linspace(1.0, 2.0, act_dim), cost_obs=-20.0 * row
    )
    obs = torch.randn(16, obs_dim) * 0.5
    return actor, critics, obs, row


@pytest.mark.parametrize("optimizer", ["pgd", "adam"])
def test_mc_reaches_the_corner_of_the_box_on_a_linear_critic(optimizer):
    actor, critics, obs, row = _corner_case()
    eps = 0.05
    out = make_attacker("mc", optimizer=optimizer)(actor, critics, obs, eps, torch.Generator())
    optimum = obs + eps * row.sign()  # every action grows with W s: push along sign(W)
    assert torch.allclose(out, optimum, atol=1e-6)
    q = critics.q_cost(obs, actor.deterministic_action(out))
    q_opt = critics.q_cost(obs, actor.deterministic_action(optimum))
    assert torch.allclose(q, q_opt, atol=1e-6)


def test_mc_corner_with_scale_and_l2_optimum():
    actor, critics, obs, row = _corner_case(act_dim=1)
    scale = torch.tensor([1.0, 2.0, 0.5, 3.0, 1.0])
    out = make_attacker("mc")(actor, critics, obs, 0.05, torch.Generator(), scale)
    assert torch.allclose(out, obs + 0.05 * scale * row.sign(), atol=1e-6)
    # l_2: the best direction for sigmoid(w . s) is w itself
    out2 = make_attacker("mc", norm="l2", steps=20)(actor, critics, obs, 0.05, torch.Generator())
    assert torch.allclose(out2, obs + 0.05 * row / row.norm(), atol=1e-5)


def test_mr_and_minr_go_opposite_ways_on_a_linear_critic():
    actor, _, obs, row = _corner_case()
    critics = linear_critics(5, cost_act=torch.ones(2), reward_act=torch.tensor([1.0, 0.5]))
    up = make_attacker("mr")(actor, critics, obs, 0.05, torch.Generator())
    down = make_attacker("minr")(actor, critics, obs, 0.05, torch.Generator())
    assert torch.allclose(up, obs + 0.05 * row.sign(), atol=1e-6)
    assert torch.allclose(down, obs - 0.05 * row.sign(), atol=1e-6)


def test_mix_weights_pick_the_stronger_term():
    actor, _, obs, row = _corner_case()
    # Q_c rises with the actions, Q_r falls twice as fast: mix:0.9 follows Q_c, mix:0.1 Q_r
    critics = linear_critics(5, cost_act=torch.ones(2), reward_act=-2 * torch.ones(2))
    a = make_attacker("mix:0.9")(actor, critics, obs, 0.05, torch.Generator())
    b = make_attacker("mix:0.1")(actor, critics, obs, 0.05, torch.Generator())
    assert torch.allclose(a, obs + 0.05 * row.sign(), atol=1e-6)
    assert torch.allclose(b, obs - 0.05 * row.sign(), atol=1e-6)


def test_the_mixture_reads_q_c_in_the_attackers_units_whatever_the_critics():
    """An off-policy learner's own critics learn raw costs (``cost_scale`` 1), the attackers'
    costs / 5: in W Q_c + (1 - W) Q_r their Q_c counts a fifth, so the same critic values mean
    the same W on every agent. Alone (MC) the scale changes nothing."""
    from robustsafe.attacks.critic_attacks import critic_objective

    actor, _, obs, row = _corner_case()
    critics = linear_critics(5, cost_act=torch.ones(2), reward_act=-2 * torch.ones(2))
    raw = linear_critics(5, cost_act=torch.ones(2), reward_act=-2 * torch.ones(2))
    raw.cost_scale = 1.0
    assert critics.cost_scale == 5.0
    act = actor.deterministic_action(obs)
    q_c, q_r = critics.q_cost(obs, act), critics.q_reward(obs, act)
    mixed = critic_objective(actor, raw, obs, obs, 0.5, 0.5)
    assert torch.allclose(mixed, 0.5 * q_c / 5 + 0.5 * q_r)
    assert torch.allclose(critic_objective(actor, critics, obs, obs, 0.5, 0.5), 0.5 * (q_c + q_r))
    assert torch.equal(critic_objective(actor, raw, obs, obs, 1.0, 0.0), q_c)
    # 0.8 * 1 - 0.2 * 2 > 0 follows Q_c; 0.8 * 1 / 5 - 0.2 * 2 < 0 follows Q_r
    a = make_attacker("mix:0.8")(actor, critics, obs, 0.05, torch.Generator())
    b = make_attacker("mix:0.8")(actor, raw, obs, 0.05, torch.Generator())
    assert torch.allclose(a, obs + 0.05 * row.sign(), atol=1e-6)
    assert torch.allclose(b, obs - 0.05 * row.sign(), atol=1e-6)


# ---------------------------------------------------------------------------------------------
# Best iterate, minimum reward, MAD strength


def _objective(name, actor, critics, clean, adv):
    """What attacker ``name`` maximises, per state."""
    with torch.no_grad():
        if name == "mad":
            p, q = actor.distribution(clean), actor.distribution(adv)
            return gaussian_kl(p.loc, p.scale, q.loc, q.scale)
        a = actor.deterministic_action(adv)
        if name == "mc":
            return critics.q_cost(clean, a)
        return (-1.0 if name == "minr" else 1.0) * critics.q_reward(clean, a)


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(["mc", "mr", "minr", "mad"]),
    optimizer=st.sampled_from(["pgd", "adam"]),
    step_size=st.sampled_from([0.1, 0.5, 2.0]),
    random_start=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_more_restarts_never_end_lower_per_state(name, optimizer, step_size, random_start, seed):
    # Replaces "the objective never ends below no attack", which could not fail (the clean
    # observation is always a candidate). With one generator per row, the starts of
    # ``restarts=R`` are the first R starts of ``restarts=R+1`` (row i draws them in order from
    # its own stream) and every start's search is deterministic (no noise), so keeping the best
    # start per state must give an objective that never decreases with R, state by state. This
    # fails if a restart's result is kept other than by its objective (last start, first start,
    # batch-wide choice, mixed rows).
    actor, critics = random_agent(4, seed=seed, hidden=(32,), gain=6.0)
    actor.double()
    critics.double()
    obs = torch.randn(48, 4, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    values = []
    for restarts in (1, 2, 3, 5):
        cfg = AttackConfig(
            steps=5,
            step_size=step_size,
            optimizer=optimizer,
            random_start=random_start or name == "mad",
            restarts=restarts,
        )
        gens = RowGenerators.from_seeds(range(seed, seed + 48))
        out = make_attacker(name, cfg)(actor, critics, obs, 0.3, gens)
        values.append(_objective(name, actor, critics, obs, out))
    for fewer, more in zip(values, values[1:], strict=False):
        assert bool((more >= fewer - 1e-12).all())
    assert bool((values[-1] > values[0] + 1e-9).any())  # restarts do find better states


def _trap_critic():
    """A 1-d state, mu(s~) = -1 + 2 sigmoid(10 s~), and Q_c(s, a) = -a + 20 relu(a - 0.1).

    At the clean state s = 0 the gradient of Q_c(s, mu(s~)) points to s~ = -eps (the local
    maximum, Q_c = mu(eps) = 0.462 at eps = 0.1); the global maximum is the other corner,
    s~ = +eps: Q_c = -0.462 + 20 (0.462 - 0.1) = 6.78. Sign steps reach it only from starts
    with mu(s~) > 0.1, i.e. s~ > 0.02 (40% of the random starts in the box).
    """
    actor = linear_actor(torch.tensor([[10.0]]))
    actor.deterministic = "mean"  # the hand-computed values use mu itself
    critics = linear_critics(1, cost_act=torch.zeros(1))

    class Trap(torch.nn.Module):
        def forward(self, obs, act):
            return (-act + 20.0 * torch.relu(act - 0.1)).sum(-1)

    critics.q_cost = Trap()
    return actor, critics


def test_restarts_find_the_global_optimum_a_clean_start_misses():
    actor, critics = _trap_critic()
    obs = torch.zeros(8, 1)
    mu = float(-1 + 2 * torch.sigmoid(torch.tensor(1.0)))  # mu(0.1) = 0.4621
    single = make_attacker("mc", restarts=1)(
        actor, critics, obs, 0.1, torch.Generator().manual_seed(0)
    )
    assert torch.allclose(single, torch.full_like(obs, -0.1))
    assert torch.allclose(_objective("mc", actor, critics, obs, single), torch.full((8,), mu))
    many = make_attacker("mc", restarts=16)(
        actor, critics, obs, 0.1, torch.Generator().manual_seed(0)
    )
    assert torch.allclose(many, torch.full_like(obs, 0.1))
    expected = -mu + 20.0 * (mu - 0.1)  # 6.78
    assert torch.allclose(
        _objective("mc", actor, critics, obs, many), torch.full((8,), expected), atol=1e-5
    )


def test_mc_returns_the_clean_state_when_no_move_helps():
    actor, critics = random_agent(4, gain=4.0)
    critics.q_cost = PeakedCost(actor)  # maximal at the clean action
    obs = torch.randn(20, 4)
    cfg = AttackConfig(steps=6, step_size=1.0, random_start=True)
    out = make_attacker("mc", cfg)(actor, critics, obs, 0.1, torch.Generator().manual_seed(0))
    assert torch.equal(out, obs)


def test_minr_lowers_the_reward_value():
    actor, critics = random_agent(6, seed=3)
    obs = torch.randn(256, 6)
    out = make_attacker("minr")(actor, critics, obs, 0.1, torch.Generator())
    before = _objective("mr", actor, critics, obs, obs)
    after = _objective("mr", actor, critics, obs, out)
    assert bool((after <= before + 1e-6).all())
    assert float((before - after).mean()) > 1e-3


def test_mad_beats_random_noise_in_kl():
    actor, critics = random_agent(6, seed=4)
    obs = torch.randn(256, 6)
    g = torch.Generator().manual_seed(0)
    p = actor.distribution(obs)

    def kl(adv):
        with torch.no_grad():
            q = actor.distribution(adv)
            return gaussian_kl(p.loc, p.scale, q.loc, q.scale)

    kl_mad = kl(make_attacker("mad")(actor, None, obs, 0.1, g))
    kl_rand = kl(make_attacker("random")(actor, None, obs, 0.1, g))
    assert float(kl_mad.mean()) > 2.0 * float(kl_rand.mean()) > 0


def test_gaussian_kl_matches_torch():
    p = torch.distributions.Normal(torch.randn(5, 3), torch.rand(5, 3) + 0.1)
    q = torch.distributions.Normal(torch.randn(5, 3), torch.rand(5, 3) + 0.1)
    expected = torch.distributions.kl_divergence(p, q).sum(-1)
    assert torch.allclose(gaussian_kl(p.loc, p.scale, q.loc, q.scale), expected, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# AMAD


def _amad_case():
    # Q_c(s, a) = s_0, so the cost value of a state is its first coordinate.
    torch.manual_seed(0)
    obs_dim = 3
    actor = linear_actor(torch.tensor([[1.0, -2.0, 0.5], [0.3, 0.2, -1.0]]))
    critics = linear_critics(obs_dim, cost_act=torch.zeros(2), cost_obs=torch.tensor([1.0, 0, 0]))
    obs = torch.randn(100, obs_dim) * 0.3
    obs[:, 0] = torch.randperm(100).float() / 100.0  # 100 distinct cost values 0.00 .. 0.99
    return actor, critics, obs


def test_amad_threshold_is_the_quantile():
    actor, critics, obs = _amad_case()
    assert abs(amad_threshold(actor, critics, obs, xi=0.1) - 0.891) < 1e-6
    assert abs(amad_threshold(actor, critics, obs, xi=0.5) - 0.495) < 1e-6
    with pytest.raises(ValueError, match="xi"):
        amad_threshold(actor, critics, obs, xi=1.5)


def test_amad_perturbs_exactly_the_top_decile():
    actor, critics, obs = _amad_case()
    threshold = amad_threshold(actor, critics, obs, xi=0.1)
    attacker = make_attacker("amad", threshold=threshold)
    out = attacker(actor, critics, obs, 0.05, torch.Generator().manual_seed(0))
    changed = (out != obs).any(dim=1)
    expected = obs[:, 0] >= 0.9 - 1e-6  # the 10 largest cost values
    assert int(expected.sum()) == 10
    assert torch.equal(changed, expected)


def test_amad_includes_states_exactly_at_the_threshold():
    actor, critics, obs = _amad_case()
    at = float(cost_values(actor, critics, obs)[obs[:, 0] == 0.95])
    out = AMADAttacker(threshold=at)(actor, critics, obs, 0.05, torch.Generator())
    changed = (out != obs).any(dim=1)
    assert int(changed.sum()) == 5  # 0.95 .. 0.99
    assert bool(changed[obs[:, 0] == 0.95])


# ---------------------------------------------------------------------------------------------
# Determinism and statelessness


@pytest.mark.parametrize("random_start", [False, True])
def test_mix_one_equals_mc(random_start):
    actor, critics = random_agent(5, seed=7)
    obs = torch.randn(128, 5)
    kwargs = {"random_start": random_start, "sgld_beta": 1e4 if random_start else None}
    mc = make_attacker("mc", **kwargs)(actor, critics, obs, 0.1, torch.Generator().manual_seed(1))
    mix = make_attacker("mix:1", **kwargs)(
        actor, critics, obs, 0.1, torch.Generator().manual_seed(1)
    )
    assert torch.equal(mc, mix)
    mix0 = make_attacker("mix:0.0", **kwargs)(
        actor, critics, obs, 0.1, torch.Generator().manual_seed(1)
    )
    mr = make_attacker("mr", **kwargs)(actor, critics, obs, 0.1, torch.Generator().manual_seed(1))
    assert torch.equal(mix0, mr)
    assert not torch.equal(mc, mr)


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [("random", {}), ("mad", {}), ("amad", {}), ("mc", {"random_start": True})],
)
def test_same_seed_same_perturbation_different_seed_different(name, kwargs):
    actor, critics = random_agent(4, seed=2)
    obs = torch.randn(64, 4)
    attacker = build(name, actor, critics, obs, **kwargs)
    a = attacker(actor, critics, obs, 0.1, torch.Generator().manual_seed(5))
    b = attacker(actor, critics, obs, 0.1, torch.Generator().manual_seed(5))
    c = attacker(actor, critics, obs, 0.1, torch.Generator().manual_seed(6))
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


@pytest.mark.parametrize("name", ["mc", "mad", "mix:0.5"])
def test_no_state_survives_between_calls(name):
    # The original warm-started every call from the previous one; here a call after other calls
    # must equal a call on a fresh attacker.
    actor, critics = random_agent(4, seed=9)
    obs_a, obs_b = torch.randn(32, 4), torch.randn(32, 4)
    attacker = make_attacker(name)
    attacker(actor, critics, obs_a, 0.1, torch.Generator().manual_seed(0))
    after = attacker(actor, critics, obs_b, 0.1, torch.Generator().manual_seed(3))
    fresh = make_attacker(name)(actor, critics, obs_b, 0.1, torch.Generator().manual_seed(3))
    assert torch.equal(after, fresh)


def test_states_are_attacked_independently_of_their_batch():
    actor, critics = random_agent(4, seed=11)
    obs = torch.randn(16, 4)
    attacker = make_attacker("mc", restarts=1)  # one clean start draws no random number
    together = attacker(actor, critics, obs, 0.1, torch.Generator())
    alone = torch.cat([attacker(actor, critics, s[None], 0.1, torch.Generator()) for s in obs])
    assert torch.allclose(together, alone, atol=1e-6)


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("random", {}),
        ("mad", {}),
        ("mad", {"restarts": 3, "sgld_beta": 1e3}),  # hot noise: every step draws and matters
        ("amad", {"restarts": 2}),
        ("mc", {"restarts": 4}),
        ("mix:0.5", {"random_start": True, "restarts": 2, "sgld_beta": 1e4}),
    ],
)
def test_with_row_generators_a_row_does_not_depend_on_its_batch(name, kwargs):
    # Issue 10 item 6: with one generator per row, every random number of a row (starts, noise)
    # comes from its own stream and every stopping rule is per row, so a row's result is the same
    # alone, in any batch, at any position. float64 so that batched matrix products round alike.
    actor, critics = random_agent(4, seed=13)
    actor.double()
    critics.double()
    obs = torch.randn(9, 4, dtype=torch.float64)
    attacker = build(name, actor, critics, obs, **kwargs)

    def streams(rows):
        return RowGenerators.from_seeds([100 + int(r) for r in rows])

    together = attacker(actor, critics, obs, 0.1, streams(range(9)))
    alone = torch.cat([attacker(actor, critics, obs[[i]], 0.1, streams([i])) for i in range(9)])
    order = torch.tensor([5, 2, 8, 0])
    subset = attacker(actor, critics, obs[order], 0.1, streams(order))
    assert torch.allclose(together, alone, rtol=0, atol=1e-12)
    assert torch.allclose(together[order], subset, rtol=0, atol=1e-12)
    assert not torch.equal(together, obs)
    # The per-row streams are streams: a second call on the same generators draws new numbers.
    if name != "mc":
        gens = streams(range(9))
        first = attacker(actor, critics, obs, 0.1, gens)
        assert not torch.equal(attacker(actor, critics, obs, 0.1, gens), first)


def test_row_generators_must_match_the_batch():
    actor, critics = random_agent(4)
    obs = torch.randn(3, 4)
    with pytest.raises(ValueError, match="row generators"):
        make_attacker("mad")(actor, critics, obs, 0.1, RowGenerators.from_seeds([1, 2]))


def test_episode_generators_are_distinct_and_reproducible():
    a = torch.rand(4, generator=episode_generator(0, 7))
    assert torch.equal(a, torch.rand(4, generator=episode_generator(0, 7)))
    assert not torch.equal(a, torch.rand(4, generator=episode_generator(0, 8)))
    assert not torch.equal(a, torch.rand(4, generator=episode_generator(1, 7)))


# ---------------------------------------------------------------------------------------------
# The networks are left alone


@pytest.mark.parametrize("name", ALL_NAMES)
def test_networks_parameters_grads_and_modes_unchanged(name):
    actor, critics = random_agent(4, seed=1)
    actor.train()
    critics.eval()
    params = list(actor.parameters()) + list(critics.parameters())
    for i, p in enumerate(params):
        p.grad = torch.full_like(p, float(i)) if i % 2 == 0 else None
    before = [p.detach().clone() for p in params]
    grads = [None if p.grad is None else p.grad.clone() for p in params]
    obs = torch.randn(32, 4)
    build(name, actor, critics, obs)(actor, critics, obs, 0.1, torch.Generator())
    for p, b, g in zip(params, before, grads, strict=True):
        assert torch.equal(p, b)
        assert p.requires_grad
        assert (p.grad is None) if g is None else torch.equal(p.grad, g)
    assert actor.training and all(m.training for m in actor.modules())
    assert not any(m.training for m in critics.modules())


def test_works_under_no_grad_and_inference_mode():
    actor, critics = random_agent(4, seed=1)
    obs = torch.randn(8, 4)
    expected = make_attacker("mc")(actor, critics, obs, 0.1, torch.Generator())
    assert not torch.equal(expected, obs)
    with torch.no_grad():
        assert torch.equal(
            make_attacker("mc")(actor, critics, obs, 0.1, torch.Generator()), expected
        )
    with torch.inference_mode():
        inf_obs = obs.clone()
        got = make_attacker("mc")(actor, critics, inf_obs, 0.1, torch.Generator())
    assert torch.equal(got, expected)


def test_input_checks():
    actor, critics = random_agent(4)
    obs = torch.randn(3, 4)
    g = torch.Generator()
    with pytest.raises(ValueError, match="critics"):
        make_attacker("mc")(actor, None, obs, 0.1, g)
    with pytest.raises(ValueError, match="epsilon"):
        make_attacker("random")(actor, None, obs, -0.1, g)
    with pytest.raises(ValueError, match="obs"):
        make_attacker("random")(actor, None, obs[0], 0.1, g)
    with pytest.raises(ValueError, match="scale"):
        make_attacker("random")(actor, None, obs, 0.1, g, torch.ones(3))
    with pytest.raises(ValueError, match="scale"):
        make_attacker("random")(actor, None, obs, 0.1, g, torch.tensor([1.0, 0.0, 1.0, 1.0]))
    with pytest.raises(TypeError, match="generator"):
        make_attacker("random")(actor, None, obs, 0.1, 0)
    with pytest.raises(ValueError, match="NaN"):
        make_attacker("random")(actor, None, obs * float("nan"), 0.1, g)
    empty = torch.zeros(0, 4)
    assert make_attacker("mc")(actor, critics, empty, 0.1, g).shape == (0, 4)
