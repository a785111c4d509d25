"""``evaluate --sample-actions``: episodes that execute actions drawn from pi(.|s~).

On the toy walk the reward of a step is the executed action clipped to [-1, 1]. An actor
whose mean is 0 at every state (its last layer zeroed) and whose std is 0.5 then earns, in
episode i, exactly sum_t clip(0.5 z_t, -1, 1), z_t the standard normal draws of episode i's
noise stream: computable by hand, whatever the observation (so whatever the attacker).
"""

import json
import math

import pytest
import torch
from tiny_config import tiny_config

from robustsafe.agent import load_agent, save_agent
from robustsafe.cli import main
from robustsafe.envs import VectorEnv
from robustsafe.evaluate import action_noise_generator, evaluate_agent, sampled_action
from robustsafe.nets import GaussianActor, SquashedGaussianActor
from robustsafe.policy import TorchPolicy
from robustsafe.train import train

STEPS = 20  # the toy walk's episode length
STD = 0.5


@pytest.fixture(scope="module")
def zero_mean_agent_dir(tmp_path_factory, toy_env_id):
    ppo = {"hidden": (16, 16), "actor_passes": 2, "critic_passes": 2}
    cfg = tiny_config(toy_env_id, ppo, epochs=2, steps_per_epoch=80, num_envs=4)
    run = train(cfg, tmp_path_factory.mktemp("agent") / "run", progress=False)
    agent = load_agent(run)
    last = agent.actor.net[-1]
    with torch.no_grad():
        last.weight.zero_()
        last.bias.zero_()  # sigmoid(0) = 0.5: the middle of [-1, 1]
        agent.actor.log_std.fill_(math.log(STD))
    path = run / "zero_mean.pt"
    a = agent
    save_agent(path, a.config, a.actor, a.v_reward, a.v_cost, a.critics, a.epoch)
    return path


def _hand_rewards(seed: int, episodes: int) -> list[float]:
    out = []
    for i in range(episodes):
        gen = action_noise_generator(seed, i)
        z = [torch.randn(1, generator=gen, dtype=torch.float64).item() for _ in range(STEPS)]
        out.append(sum(min(1.0, max(-1.0, float(torch.tensor(STD * v).float()))) for v in z))
    return out


@pytest.mark.parametrize("num_envs", [1, 3])
def test_sampled_episodes_draw_each_episodes_own_noise(zero_mean_agent_dir, toy_env_id, num_envs):
    agent = load_agent(zero_mean_agent_dir)
    with VectorEnv(toy_env_id, num_envs, seed=0) as vec:
        sampled = evaluate_agent(
            agent, vec, episodes=4, seed=7, attacks=["random"], epsilons=[0.5], sample_seed=7
        )
        deterministic = evaluate_agent(agent, vec, episodes=4, seed=7)
    hand = _hand_rewards(7, 4)
    for result in sampled:  # natural, then random: the same noise, episode by episode
        assert [e.reward for e in result.episodes] == pytest.approx(hand, abs=1e-5)
    assert len(set(hand)) == 4  # each episode its own stream
    assert [e.reward for e in deterministic[0].episodes] == pytest.approx([0.0] * 4, abs=1e-6)


def test_sampled_action_by_hand():
    torch.manual_seed(0)
    obs = torch.randn(3, 4, dtype=torch.float64)
    gauss = GaussianActor(4, 2, hidden=(8,), init_log_std=-1.0).double()
    squashed = SquashedGaussianActor(4, 2, hidden=(8,)).double()
    for actor in (gauss, squashed):
        rows = [torch.Generator().manual_seed(s) for s in (1, 2, 3)]
        copies = [torch.Generator().manual_seed(s) for s in (1, 2, 3)]
        with torch.no_grad():
            got = sampled_action(actor, obs, rows)
            z = torch.stack([torch.randn(2, generator=g, dtype=torch.float64) for g in copies])
            if actor is gauss:
                want = actor.mean_action(obs) + math.exp(-1.0) * z
            else:
                mu, log_std = actor.gaussian(obs)
                want = -1.0 + 2.0 * (torch.tanh(mu + log_std.exp() * z) + 1.0) / 2.0
        assert torch.allclose(got, want, atol=1e-12, rtol=0)
        assert not torch.allclose(got, actor.deterministic_action(obs).detach(), atol=1e-3)


def test_foreign_policies_are_refused(toy_env_id):
    policy = TorchPolicy(torch.nn.Linear(2, 1), action_std=0.3)
    from robustsafe.evaluate import check_samplable

    with pytest.raises(ValueError, match="sampled actions are for RobustSafe agents"):
        check_samplable(policy)


def test_cli_records_sampled_actions(zero_mean_agent_dir, tmp_path, capsys):
    out = tmp_path / "ev.json"
    common = ["evaluate", "--env-workers", "0", "--num-envs", "2", "--episodes", "2"]
    args = [*common, "--run", str(zero_mean_agent_dir), "--sample-actions", "--seed", "5"]
    assert main([*args, "--out", str(out), "--no-progress"]) == 0
    data = json.loads(out.read_text())
    assert data["actions"].startswith("sampled from pi(.|s~)")
    rewards = [e["reward"] for e in data["results"][0]["episodes"]]
    assert rewards == pytest.approx(_hand_rewards(5, 2), abs=1e-5)
    spec = "--policy", "mod:attr", "--env", "SafetyCarRun-v0", "--sample-actions"
    capsys.readouterr()
    assert main([*common, *spec]) == 2
    assert "--sample-actions applies to --run agents" in capsys.readouterr().err
