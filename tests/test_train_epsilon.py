"""``robust.train_epsilon``: the training attacker's budget apart from the evaluation's."""

import pytest
import torch
from tiny_config import tiny_config

from robustsafe.agent import build_networks, load_agent
from robustsafe.config import RobustConfig, TrainConfig, apply_sets
from robustsafe.robust import RobustHooks
from robustsafe.train import train, train_metrics

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
