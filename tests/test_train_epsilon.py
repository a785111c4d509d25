"""``robust.train_epsilon``: the training attacker's budget apart from the evaluation's."""

from dataclasses import replace

import pytest
import torch
from tiny_config import tiny_config

from robustsafe.agent import build_networks, load_agent
from robustsafe.config import RobustConfig, TrainConfig
from robustsafe.robust import RobustHooks
from robustsafe.rundir import train_metrics
from robustsafe.schedule import drawn_fraction
from robustsafe.settings_io import apply_sets
from robustsafe.train import train

OBS, ACT = 6, 2


def _hooks(**robust) -> RobustHooks:
    cfg = TrainConfig(robust=RobustConfig(schedule="constant", schedule_start=0, **robust))
    torch.manual_seed(1)
    actor, _, _, critics, _ = build_networks(cfg, OBS, ACT)
    return RobustHooks(cfg, actor, critics, torch.Generator().manual_seed(2))


def test_unset_it_is_epsilon_and_bad_values_are_refused_in_one_line():
    assert RobustConfig(epsilon=0.025).training_epsilon == 0.025
    assert RobustConfig(epsilon=0.025, train_epsilon=0.0375).training_epsilon == 0.0375
    cfg = apply_sets(TrainConfig(), ["robust.train_epsilon=0.0375"])
    assert (cfg.robust.epsilon, cfg.robust.train_epsilon) == (0.05, 0.0375)
    for bad, rule in (("-0.01", ">= 0"), ("2", "<= 1")):
        with pytest.raises(ValueError, match=f"^robust.train_epsilon must be {rule}"):
            apply_sets(TrainConfig(), [f"robust.train_epsilon={bad}"])


@pytest.mark.parametrize("mode", ["adv-mc", "adv-mr", "random"])
def test_the_rollout_attack_uses_the_training_budget(mode):
    hooks = _hooks(mode=mode, epsilon=0.02, train_epsilon=0.05)
    assert hooks.epsilon(3) == 0.05
    obs = torch.randn(8, OBS, generator=torch.Generator().manual_seed(4))
    gap = (hooks.rollout_perturbation(3, 8)(obs) - obs).abs().max()
    assert 0.03 < gap <= 0.05 + 1e-6  # past the evaluation's 0.02, inside the training ball


def test_sa_regularises_at_the_training_budget():
    assert _hooks(mode="sa-mad", epsilon=0.02, train_epsilon=0.05).epsilon(1) == 0.05
    assert _hooks(mode="sa-mad", epsilon=0.02).epsilon(1) == 0.02


def _actor(run_dir) -> torch.Tensor:
    return torch.cat([p.flatten() for p in load_agent(run_dir).actor.state_dict().values()])


def test_a_run_trains_at_it_as_one_whose_epsilon_it_is(tmp_path, toy_env_id):
    # epsilon 0.02 with train_epsilon 0.06 trains bit for bit as epsilon 0.06: only the
    # evaluation's budget differs (and unlike a run at 0.02)
    runs = {}
    for name, eps, train_eps in (("apart", 0.02, 0.06), ("same", 0.06, None), ("low", 0.02, None)):
        robust = RobustConfig(
            mode="adv-mc", epsilon=eps, train_epsilon=train_eps, schedule="constant"
        )
        cfg = tiny_config(toy_env_id, epochs=2, robust=robust)
        runs[name] = train(cfg, tmp_path / name, progress=False)
    rows = train_metrics(runs["apart"])
    assert [float(r["epsilon"]) for r in rows] == pytest.approx([0.06, 0.06])
    assert torch.equal(_actor(runs["apart"]), _actor(runs["same"]))
    assert not torch.equal(_actor(runs["apart"]), _actor(runs["low"]))


# ---- robust.train_epsilon_min: each epoch's budget drawn from a range


def test_the_drawn_fraction_is_uniform_on_its_range_and_a_function_of_seed_and_epoch():
    draws = [drawn_fraction(3, epoch, 0.5) for epoch in range(1, 401)]
    assert all(0.5 <= d < 1.0 for d in draws)
    # uniform on [0.5, 1): mean 0.75, each quarter of the range about a quarter of the draws
    assert abs(sum(draws) / len(draws) - 0.75) < 0.02
    quarters = [sum(0.5 + q * 0.125 <= d < 0.5 + (q + 1) * 0.125 for d in draws) for q in range(4)]
    assert min(quarters) > 70
    assert draws == [drawn_fraction(3, epoch, 0.5) for epoch in range(1, 401)]
    assert draws != [drawn_fraction(4, epoch, 0.5) for epoch in range(1, 401)]
    assert drawn_fraction(3, 7, 1.0) == 1.0
    with pytest.raises(ValueError, match="^need 0 <= low <= 1"):
        drawn_fraction(3, 7, 1.5)


def test_a_range_outside_the_training_budget_or_with_sa_is_refused_in_one_line():
    adv = TrainConfig(robust=RobustConfig(mode="adv-mc"))
    assert apply_sets(adv, ["robust.train_epsilon_min=0.02"]).robust.train_epsilon_min == 0.02
    for mode, value, rule in (
        ("adv-mc", "-0.01", r"must be in \[0, the training budget 0.05\], got -0.01"),
        ("random", "0.06", r"must be in \[0, the training budget 0.05\], got 0.06"),
        ("sa-mc", "0.01", "applies to the random and adv-\\* modes"),
    ):
        cfg = TrainConfig(robust=RobustConfig(mode=mode))
        with pytest.raises(ValueError, match=f"^robust.train_epsilon_min {rule}"):
            apply_sets(cfg, [f"robust.train_epsilon_min={value}"])
    # the bound is the training budget, not the evaluation's
    RobustConfig(mode="adv-mc", epsilon=0.025, train_epsilon=0.0375, train_epsilon_min=0.03)


def test_each_epoch_attacks_at_its_drawn_budget_inside_the_range():
    hooks = _hooks(mode="adv-mc", epsilon=0.025, train_epsilon=0.0375, train_epsilon_min=0.0125)
    budgets = [hooks.epsilon(epoch) for epoch in range(1, 61)]
    assert all(0.0125 - 1e-12 <= b <= 0.0375 + 1e-12 for b in budgets)
    assert min(budgets) < 0.0175 and max(budgets) > 0.0325  # the draws span the range
    assert budgets == [hooks.epsilon(epoch) for epoch in range(1, 61)]  # the same on a re-call
    obs = torch.randn(8, OBS, generator=torch.Generator().manual_seed(4))
    for epoch in (int(torch.tensor(budgets).argmin()) + 1, int(torch.tensor(budgets).argmax()) + 1):
        gap = (hooks.rollout_perturbation(epoch, 8)(obs) - obs).abs().max()
        assert 0.6 * hooks.epsilon(epoch) < gap <= hooks.epsilon(epoch) + 1e-6


def test_on_a_ramp_the_range_scales_with_the_schedule():
    robust = {"mode": "adv-mc", "epsilon": 0.04, "train_epsilon_min": 0.01}
    cfg = TrainConfig(
        robust=RobustConfig(schedule="linear", schedule_start=10, schedule_length=20, **robust)
    )
    torch.manual_seed(1)
    actor, _, _, critics, _ = build_networks(cfg, OBS, ACT)
    hooks = RobustHooks(cfg, actor, critics, torch.Generator().manual_seed(2))
    assert hooks.epsilon(5) == 0.0  # before the schedule starts
    for epoch, scheduled in ((20, 0.02), (25, 0.03), (40, 0.04)):
        assert 0.25 * scheduled - 1e-12 <= hooks.epsilon(epoch) <= scheduled + 1e-12


def test_a_run_with_a_range_logs_its_draws_and_resumes_exactly(tmp_path, toy_env_id):
    robust = RobustConfig(
        mode="adv-mc", epsilon=0.02, train_epsilon=0.06, train_epsilon_min=0.02, schedule="constant"
    )
    cfg = tiny_config(toy_env_id, epochs=3, robust=robust, seed=5)
    full = train(cfg, tmp_path / "full", progress=False)
    logged = [float(r["epsilon"]) for r in train_metrics(full)]
    assert logged == pytest.approx([0.06 * drawn_fraction(5, e, 1 / 3) for e in (1, 2, 3)])
    assert len(set(logged)) == 3 and all(0.02 <= b <= 0.06 for b in logged)
    train(cfg, tmp_path / "cut", progress=False, stop_after_epoch=2)
    resumed = train(cfg, tmp_path / "cut", resume=True, progress=False)
    assert torch.equal(_actor(full), _actor(resumed))
    robust = replace(robust, train_epsilon_min=None)
    fixed = tiny_config(toy_env_id, epochs=3, robust=robust, seed=5)
    assert not torch.equal(_actor(full), _actor(train(fixed, tmp_path / "fixed", progress=False)))
