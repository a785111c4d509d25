"""Episodes that continue across epochs: bootstrapping, the multiplier, exact resume."""

import csv
import math
import warnings

import numpy as np
import pytest
import torch
from tiny_config import WalkToy, register_toy, tiny_config

from robustsafe.agent import load_agent
from robustsafe.config import RobustConfig, TrainConfig
from robustsafe.envs import VectorEnv
from robustsafe.nets import GaussianActor
from robustsafe.pid import PIDConfig
from robustsafe.rollout import Collector
from robustsafe.train import train


def _params(run_dir):
    agent = load_agent(run_dir)
    return torch.cat([p.flatten() for p in agent.actor.state_dict().values()])


def _rows(run_dir):
    return list(csv.DictReader((run_dir / "metrics.csv").open()))


def _actor(vec):
    torch.manual_seed(0)
    return GaussianActor(vec.obs_dim, vec.act_dim, (8,), -0.5, -1.0, 1.0)


def test_episodes_go_on_across_collect_calls(toy_env_id):
    # 20-step episodes, 8 steps per call: the first episode of each env ends at step 20,
    # i.e. in the third call, and the second call's first observation is the first call's
    # last next observation.
    with VectorEnv(toy_env_id, 2, seed=0) as vec:
        col = Collector(vec, seed=0)
        actor, gen = _actor(vec), torch.Generator().manual_seed(0)
        first = col.collect(actor, 8, gen)
        second = col.collect(actor, 8, gen)
        third = col.collect(actor, 8, gen)
    assert not first.episodes and not second.episodes
    np.testing.assert_array_equal(second.rollout.true_obs[0], first.rollout.next_obs[-1])
    assert [e.length for e in third.episodes] == [20, 20]
    assert third.rollout.truncated[3].all() and not third.rollout.truncated[:3].any()
    np.testing.assert_allclose(
        [e.ret for e in third.episodes],
        np.concatenate([r.rollout.reward for r in (first, second, third)])[:20].sum(0),
    )


def test_collector_state_replays_to_the_same_point(toy_env_id):
    with VectorEnv(toy_env_id, 3, seed=0) as vec:
        col = Collector(vec, seed=5)
        actor, gen = _actor(vec), torch.Generator().manual_seed(1)
        col.collect(actor, 13, gen)
        state = col.state_dict()
        gen_state = gen.get_state()
        ahead = col.collect(actor, 13, gen)
    with VectorEnv(toy_env_id, 3, seed=0) as vec:
        col = Collector(vec, seed=5)
        col.load_state_dict(state)
        gen = torch.Generator()
        gen.set_state(gen_state)
        again = col.collect(actor, 13, gen)
    for key in ("obs", "reward", "next_obs", "truncated"):
        np.testing.assert_array_equal(getattr(ahead.rollout, key), getattr(again.rollout, key))
    assert [(e.ret, e.length) for e in ahead.episodes] == [
        (e.ret, e.length) for e in again.episodes
    ]


class AlwaysCost(WalkToy):
    def cost(self, x: float) -> float:
        return 1.0


def test_multiplier_follows_episodes_longer_than_an_epoch(tmp_path):
    # 8 steps per env per epoch, 20-step episodes: epochs 1-2 finish none, epoch 3 finishes
    # one per env. A cost of 1 per step and a limit of 0 make every finished episode unsafe, so
    # lambda must leave 0 exactly when the first episodes finish (before, every epoch restarted
    # the episodes, none ever finished and lambda stayed 0 for good).
    env_id = register_toy("RobustSafeToyAlwaysCost-v0", AlwaysCost, 20)
    cfg = tiny_config(env_id, epochs=4, steps_per_epoch=32, num_envs=4, pid=PIDConfig(cost_limit=0))
    with pytest.warns(UserWarning, match="finished no episode"):
        run = train(cfg, tmp_path / "run", progress=False)
    rows = _rows(run)
    assert [int(r["episodes"]) for r in rows] == [0, 0, 4, 0]
    assert [float(r["lambda"]) > 0 for r in rows] == [False, False, True, True]
    assert math.isnan(float(rows[0]["ep_cost"])) and float(rows[2]["ep_length"]) == 20


@pytest.mark.filterwarnings("ignore:epoch 1 finished no episode")
def test_resume_mid_episode_is_exact(tmp_path, toy_env_id):
    # 15 steps per env per epoch, 20-step episodes: every epoch boundary but one cuts
    # episodes, so resuming must restore the envs mid-episode.
    cfg = tiny_config(toy_env_id, epochs=4, steps_per_epoch=60, num_envs=4, seed=2)
    full = _params(train(cfg, tmp_path / "full", progress=False))
    train(cfg, tmp_path / "cut", progress=False, stop_after_epoch=3)
    resumed = _params(train(cfg, tmp_path / "cut", resume=True, progress=False))
    assert torch.equal(full, resumed)
    learning = ("episodes", "ep_return", "ep_cost", "lambda", "approx_kl", "loss_v")
    assert [[r[k] for k in learning] for r in _rows(tmp_path / "cut")] == [
        [r[k] for k in learning] for r in _rows(tmp_path / "full")
    ]


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:epoch 1 finished no episode")
def test_resume_mid_episode_on_a_bullet_task_with_workers(tmp_path):
    # CarRun (200-step episodes), 150 steps per env per epoch, two worker processes: the
    # PyBullet simulation is restored by replay in another process and must match exactly.
    cfg = tiny_config(
        "SafetyCarRun-v0", epochs=2, steps_per_epoch=600, num_envs=4, workers=2, seed=1
    )
    full = _params(train(cfg, tmp_path / "full", progress=False))
    train(cfg, tmp_path / "cut", progress=False, stop_after_epoch=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # "did not replay its episodes exactly"
        resumed = _params(train(cfg, tmp_path / "cut", resume=True, progress=False))
    assert torch.equal(full, resumed)


def test_expected_clipped_action_against_hand_computed_values():
    from robustsafe.nets import expected_clipped_action

    t = torch.tensor
    # mean 1, std 1 in [-1, 1]: alpha = -2, beta = 0;
    # -Phi(-2) + (1 - Phi(0)) + (Phi(0) - Phi(-2)) + (phi(-2) - phi(0))
    # = -0.0227501 + 0.5 + 0.4772499 + (0.0539910 - 0.3989423) = 0.6095485
    got = expected_clipped_action(t([1.0]), t([1.0]), t([-1.0]), t([1.0]))
    assert float(got) == pytest.approx(0.6095485, abs=1e-6)
    # symmetric around 0 -> 0; a tiny std -> the clipped mean
    assert float(expected_clipped_action(t([0.0]), t([0.7]), t([-1.0]), t([1.0]))) == 0.0
    small = expected_clipped_action(t([0.3, 1.0]), t([1e-4, 1e-4]), t([-1.0]), t([1.0]))
    assert small.tolist() == pytest.approx([0.3, 1.0 - 1e-4 / math.sqrt(2 * math.pi)], abs=1e-7)


def test_deterministic_action_is_the_expected_executed_action(toy_env_id):
    # The default deterministic action is E[clip(a)]; "mean" keeps the Gaussian's mean.
    torch.manual_seed(0)
    actor = GaussianActor(2, 1, (8,), -1.0, 1.0, init_log_std=-0.5)
    with torch.no_grad():
        actor.net[-1].bias.fill_(4.0)  # mean near the upper bound: clipping matters
    obs = torch.randn(5, 2)
    mean = actor.mean_action(obs)
    expected = actor.deterministic_action(obs)
    samples = (mean + actor.log_std.exp() * torch.randn(200_000, 5, 1)).clamp(-1, 1).mean(0)
    assert torch.allclose(expected, samples, atol=3e-3)
    assert (mean - expected).min() > 0.05
    actor.deterministic = "mean"
    assert torch.equal(actor.deterministic_action(obs), mean)


def test_mixed_rollouts_attack_only_the_first_envs(toy_env_id):
    from robustsafe.robust import RobustHooks

    robust = RobustConfig(mode="random", epsilon=0.1, attacked_fraction=0.5, schedule="constant")
    hooks = RobustHooks(
        TrainConfig(env_id=toy_env_id, robust=robust),
        GaussianActor(2, 1, (8,)),
        None,
        torch.Generator().manual_seed(0),
    )
    obs = torch.zeros(4, 2)
    seen = hooks.rollout_perturbation(1, 4)(obs)
    assert (seen[:2] != 0).all() and seen[:2].abs().max() <= 0.1
    assert torch.equal(seen[2:], obs[2:])


def test_presets_cover_the_paper_tasks_and_episode_lengths():
    from robustsafe.presets import preset

    # AntCircle is cut at the paper's 300 steps (1.4.0: 500); fast epochs hold one episode
    # per env; a task without a preset gets one episode per env from its registered length.
    for name in ("paper", "fast"):
        assert preset("SafetyAntCircle-v0", name).episode_steps == 300
        assert preset("SafetyDroneRun-v0", name).episode_steps is None
    assert preset("SafetyAntCircle-v0", "fast").steps_per_epoch == 20 * 300
    assert preset("SafetyBallRun-v0", "fast").steps_per_epoch == 20 * 100
    assert preset("SafetyCarGather-v0", "fast").steps_per_epoch == 20 * 500
    assert preset(TOY, "fast").steps_per_epoch == 20 * 20
    with VectorEnv("SafetyAntCircle-v0", 1, env_kwargs={"max_episode_steps": 300}) as vec:
        assert vec.max_episode_steps == 300


TOY = "RobustSafeToyCost-v0"


def test_training_attacker_restarts_follow_the_setting(toy_env_id):
    from robustsafe.robust import RobustHooks

    def hooks(mode="adv-mc", **kw):
        robust = RobustConfig(mode=mode, **kw)
        return RobustHooks(TrainConfig(env_id=toy_env_id, robust=robust), None, None, None)

    assert hooks().attacker.config.restarts == 8  # the evaluated attacker's default
    assert hooks(attack_restarts=1).attacker.config.restarts == 1
    # SA-PPOL's regulariser: one start by default (the original code's), any on request
    for mode in ("sa-mad", "sa-mc", "sa-mr"):
        assert hooks(mode).attacker.config.restarts == 1
        assert hooks(mode, attack_restarts=8).attacker.config.restarts == 8
    assert hooks("adv-mr").attacker.config.restarts == 8


class _FallingToy(WalkToy):
    """Falls (terminates) when |x| > 0.3."""

    start = 0.1

    def fallen(self, x: float) -> bool:
        return abs(x) > 0.3


FALLING = register_toy("RobustSafeToyFalling-v0", _FallingToy, 10)


def test_survival_bonus_rewards_the_learner_for_steps_that_do_not_fall():
    """The learner's reward is the env's plus the bonus on every step that is not a termination
    (truncations count as survived); the episodes' returns stay the env's. Same seed and
    actions with and without the bonus, so the difference is exactly the bonus."""
    got = {}
    for bonus in (0.0, 0.25):
        with VectorEnv(FALLING, 3, seed=0) as vec:
            col = Collector(vec, seed=0, survival_bonus=bonus)
            actor, gen = _actor(vec), torch.Generator().manual_seed(0)
            got[bonus] = col.collect(actor, 40, gen)
    plain, shaped = got[0.0].rollout, got[0.25].rollout
    np.testing.assert_array_equal(plain.terminated, shaped.terminated)
    assert plain.terminated.any() and plain.truncated.any()  # both ways of ending occur
    np.testing.assert_allclose(shaped.reward - plain.reward, 0.25 * ~plain.terminated)
    assert [e.ret for e in got[0.25].episodes] == [e.ret for e in got[0.0].episodes]
    with pytest.raises(ValueError, match="survival_bonus"):
        tiny_config(FALLING, survival_bonus=float("nan"))
