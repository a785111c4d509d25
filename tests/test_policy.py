"""Bring your own policy: the Policy protocol, its adapters, and the attacks on foreign policies."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import torch
from torch import nn

from robustsafe.attacks import make_attacker
from robustsafe.config import CriticConfig, TrainConfig
from robustsafe.critics import QCritics
from robustsafe.nets import GaussianActor
from robustsafe.policy import (
    BlackBoxPolicy,
    Policy,
    SB3Policy,
    TorchPolicy,
    as_policy,
    load_sb3,
    predict,
)

GRADIENT_ATTACKS = ("mad", "mc", "mr", "minr", "mix:0.5")


def _tanh_module(obs_dim: int = 4, act_dim: int = 2) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(obs_dim, 16), nn.Tanh(), nn.Linear(16, act_dim), nn.Tanh())


def _numpy_fn(obs: np.ndarray) -> np.ndarray:
    return np.tanh(obs[:, :2])


def _check_conformance(
    policy, dims: tuple[int | None, int | None], obs_dim: int, act_dim: int, differentiable: bool
) -> None:
    """``dims``: the (obs_dim, act_dim) the policy reports (None where it cannot know)."""
    assert isinstance(policy, Policy)
    assert (policy.obs_dim, policy.act_dim) == dims
    assert policy.differentiable is differentiable
    for dtype in (torch.float32, torch.float64):
        p = policy.double() if dtype == torch.float64 and isinstance(policy, nn.Module) else policy
        obs = torch.randn(5, obs_dim, dtype=dtype, requires_grad=differentiable)
        act = p.deterministic_action(obs)
        assert act.shape == (5, act_dim) and act.dtype == dtype
        if differentiable:
            (grad,) = torch.autograd.grad(act.sum(), obs)
            assert float(grad.abs().sum()) > 0
    if isinstance(policy, nn.Module):
        policy.float()
    out = predict(policy, np.random.default_rng(0).normal(size=(3, obs_dim)))  # float64 in
    assert out.shape == (3, act_dim) and out.dtype == np.float32


def test_own_actor_torch_module_and_black_box_conform():
    _check_conformance(GaussianActor(4, 2, (8,)), (4, 2), 4, 2, True)
    # a plain module: its first layer tells the observation size; its output size only a call
    _check_conformance(TorchPolicy(_tanh_module()), (4, None), 4, 2, True)
    _check_conformance(BlackBoxPolicy(_numpy_fn, 4, 2), (4, 2), 4, 2, False)
    assert isinstance(as_policy(_tanh_module()), TorchPolicy)
    assert isinstance(as_policy(_numpy_fn), BlackBoxPolicy)
    actor = GaussianActor(4, 2, (8,))
    assert as_policy(actor) is actor


def test_torch_policy_distribution_needs_action_std():
    obs = torch.randn(6, 4)
    plain = TorchPolicy(_tanh_module())
    with pytest.raises(ValueError, match="action_std"):
        make_attacker("mad")(plain, None, obs, 0.1, torch.Generator().manual_seed(0))
    gaussian = TorchPolicy(_tanh_module(), action_std=0.5)
    dist = gaussian.distribution(obs)
    assert torch.allclose(dist.loc, gaussian.deterministic_action(obs))
    assert torch.allclose(dist.scale, torch.full((6, 2), 0.5))
    attacked = make_attacker("mad")(gaussian, None, obs, 0.1, torch.Generator().manual_seed(0))
    assert not torch.equal(attacked, obs)


def test_gradient_attackers_refuse_a_black_box_with_a_clear_message():
    policy = BlackBoxPolicy(_numpy_fn, 4, 2)
    critics = QCritics(4, 2, (8,))
    obs = torch.randn(3, 4)
    gen = torch.Generator().manual_seed(0)
    for name in GRADIENT_ATTACKS:
        with pytest.raises(TypeError, match=r"black box.*none, random"):
            make_attacker(name)(policy, critics, obs, 0.05, gen)
    with pytest.raises(TypeError, match="black box"):
        make_attacker("amad", threshold=0.0)(policy, critics, obs, 0.05, gen)
    out = make_attacker("random")(policy, None, obs, 0.05, gen)
    assert float((out - obs).abs().max()) <= 0.05 + 1e-7


def test_evaluate_and_fit_critics_refuse_a_black_box_before_any_episode():
    from robustsafe.evaluate import evaluate_policy
    from robustsafe.fit_critics import fit_policy_critics

    policy = BlackBoxPolicy(_numpy_fn, 4, 2)
    # an env id that cannot be built: the refusal must come first
    with pytest.raises(TypeError, match=r"'mc'.*black box.*none, random"):
        evaluate_policy(
            policy, "NoSuchEnv-v0", attacks=["none", "mc"], critics=QCritics(4, 2, (8,))
        )
    with pytest.raises(TypeError, match="black box"):
        fit_policy_critics(policy, "NoSuchEnv-v0")
    with pytest.raises(ValueError, match="fit_policy_critics"):
        evaluate_policy(TorchPolicy(_tanh_module()), "NoSuchEnv-v0", attacks=["mr"])


def test_a_policy_returning_nan_actions_is_named_before_the_env_steps(toy_env_id):
    from robustsafe.evaluate import evaluate_policy

    def broken(obs: np.ndarray) -> np.ndarray:
        act = np.zeros((len(obs), 1))
        act[obs[:, 0] > 0] = np.nan  # some states only
        return act

    policy = BlackBoxPolicy(broken, 2, 1)
    with pytest.raises(
        ValueError, match=r"non-finite action \(NaN or inf\) for observation \[0\.\d"
    ):
        evaluate_policy(policy, toy_env_id, episodes=4, num_envs=2)


def test_agent_predict_takes_float64_and_single_observations():
    from robustsafe.agent import build_networks
    from robustsafe.evaluate import PolicyAgent  # noqa: F401  (the public shim exists)

    cfg = TrainConfig()
    actor, v_r, v_c, critics, norm = build_networks(cfg, 7, 2)
    from robustsafe.agent import Agent

    agent = Agent(cfg, actor, v_r, v_c, critics, norm, 0).eval()
    obs64 = np.random.default_rng(0).normal(size=(4, 7))
    out = agent.predict(obs64)
    assert out.dtype == np.float32 and out.shape == (4, 2)
    with torch.no_grad():
        ref = actor.deterministic_action(torch.as_tensor(obs64, dtype=torch.float32)).numpy()
    np.testing.assert_allclose(out, ref, atol=1e-6)
    assert agent.predict(obs64[0]).shape == (2,)
    np.testing.assert_allclose(agent.predict(obs64.astype(np.float16)), out, atol=5e-3)
    assert agent.predict(obs64, deterministic=False).shape == (4, 2)


def _zoo_states(agent, n: int = 120) -> torch.Tensor:
    from robustsafe.envs import make

    env = make("SafetyCarRun-v0", seed=0)
    obs = [env.reset()]
    for _ in range(n):
        obs.append(env.step(agent.predict(obs[-1]))[0])
    env.close()
    return torch.from_numpy(np.stack(obs))


class _ZooModule(nn.Module):
    """A plain module with the zoo actor's weights: mean action -1 + 2 sigmoid(net(obs))."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.tanh(0.5 * self.net(obs))


@pytest.mark.slow
def test_mc_on_a_plain_torch_module_raises_its_cost_value():
    import copy
    from pathlib import Path

    from robustsafe.agent import load_agent

    zoo = Path(__file__).resolve().parents[1] / "zoo" / "SafetyCarRun-v0" / "vanilla" / "agent.pt"
    agent = load_agent(zoo)
    policy = TorchPolicy(_ZooModule(copy.deepcopy(agent.actor.net)).eval().requires_grad_(False))
    obs = _zoo_states(agent)
    # one start, from the clean state: only the gradient through the module can move it
    mc = make_attacker("mc", restarts=1, random_start=False)
    attacked = mc(policy, agent.critics, obs, 0.05, torch.Generator().manual_seed(0))
    assert float((attacked - obs).abs().max()) <= 0.05 + 1e-6
    with torch.no_grad():
        clean = agent.critics.q_cost(obs, policy.deterministic_action(obs))
        under = agent.critics.q_cost(obs, policy.deterministic_action(attacked))
    # measured on zoo/SafetyCarRun-v0/vanilla: mean Q_c 0.242 clean -> 0.346 under MC (eps 0.05),
    # 99% of the states gain
    assert float(under.mean() - clean.mean()) > 0.01
    assert float((under > clean + 1e-4).float().mean()) > 0.5


# ----------------------------------------------------------------------------- SB3


def _spaces(low: float = -2.0, high: float = 2.0):
    import gymnasium as gym

    return (
        gym.spaces.Box(-10.0, 10.0, (5,), np.float64),
        gym.spaces.Box(low, high, (2,), np.float32),
    )


def test_sb3_ppo_and_sac_policies_conform_and_match_predict(sb3):
    from stable_baselines3.common.policies import ActorCriticPolicy
    from stable_baselines3.sac.policies import SACPolicy

    obs_space, act_space = _spaces()
    torch.manual_seed(0)
    ppo = ActorCriticPolicy(obs_space, act_space, lambda _: 1e-3)
    with torch.no_grad():
        ppo.action_net.bias.copy_(torch.tensor([2.5, -0.5]))  # some means outside the box
    sac = SACPolicy(obs_space, act_space, lambda _: 1e-3)
    obs = np.random.default_rng(0).normal(size=(8, 5)) * 3
    for sb3_policy in (ppo, sac):
        adapted = SB3Policy(sb3_policy)
        ref = sb3_policy.predict(obs.astype(np.float32), deterministic=True)[0]
        np.testing.assert_allclose(predict(adapted, obs), ref, atol=1e-5)
        _check_conformance(adapted, (5, 2), 5, 2, True)
        dist = adapted.distribution(torch.as_tensor(obs, dtype=torch.float32))
        assert dist.loc.shape == (8, 2) and bool((dist.scale > 0).all())
    assert SB3Policy(ppo).action_std is not None and SB3Policy(sac).action_std is None


def test_sampled_actions_of_squashed_policies_are_actions(sb3):
    """A SAC policy's distribution is its pre-tanh Gaussian; predict(deterministic=False)
    returned its draw u, not tanh(u) in the box (for our SAC/CVPO actor and SB3's SAC). The
    draws now follow the policy's own sampling: SB3's predict(deterministic=False) as reference."""
    from stable_baselines3.sac.policies import SACPolicy

    from robustsafe.nets import SquashedGaussianActor

    actor = SquashedGaussianActor(5, 2, ())
    with torch.no_grad():
        actor.net[0].weight.zero_()
        actor.net[0].bias.copy_(torch.tensor([3.0, -3.0, 0.0, 0.0]))  # mu (3, -3), sigma 1
    obs = np.zeros((4000, 5))
    drawn = predict(actor, obs, deterministic=False)
    assert drawn.min() >= -1.0 and drawn.max() <= 1.0
    # E[tanh(u)], u ~ N(3, 1): 0.9716 by quadrature; N(-3, 1): -0.9716
    np.testing.assert_allclose(drawn.mean(axis=0), [0.9716, -0.9716], atol=0.01)
    obs_space, act_space = _spaces()
    torch.manual_seed(0)
    sac = SACPolicy(obs_space, act_space, lambda _: 1e-3)
    with torch.no_grad():
        sac.actor.mu.bias.copy_(torch.tensor([2.0, -1.0]))
    row = np.random.default_rng(0).normal(size=(1, 5))
    batch = np.repeat(row, 4000, axis=0)
    ours = predict(SB3Policy(sac), batch, deterministic=False)
    theirs = sac.predict(batch.astype(np.float32), deterministic=False)[0]
    assert ours.min() >= -2.0 and ours.max() <= 2.0
    np.testing.assert_allclose(ours.mean(axis=0), theirs.mean(axis=0), atol=0.05)
    np.testing.assert_allclose(ours.std(axis=0), theirs.std(axis=0), atol=0.05)


def test_load_sb3_reads_weights_only_and_needs_trust_for_pickled_settings(tmp_path, sb3):
    from stable_baselines3 import PPO

    from robustsafe.envs import make

    env = make("SafetyCarRun-v0").env
    plain = PPO("MlpPolicy", env, n_steps=64, batch_size=32, seed=0, device="cpu")
    plain.save(tmp_path / "plain.zip")
    custom = PPO("MlpPolicy", env, seed=0, device="cpu", policy_kwargs={"activation_fn": nn.ReLU})
    custom.save(tmp_path / "custom.zip")
    obs = np.random.default_rng(0).normal(size=(4, 7))
    loaded = load_sb3(tmp_path / "plain.zip", env_id="SafetyCarRun-v0")
    np.testing.assert_allclose(
        predict(loaded, obs),
        plain.predict(obs.astype(np.float32), deterministic=True)[0],
        atol=1e-6,
    )
    with pytest.raises(ValueError, match=r"pickled policy settings.*trust_pickle"):
        load_sb3(tmp_path / "custom.zip", env_id="SafetyCarRun-v0")
    # another task's sizes: the message asks about the task before it mentions the pickle
    with pytest.raises(ValueError, match=r"do not fit .* another task\?.*only for a file you"):
        load_sb3(tmp_path / "plain.zip", env_id="SafetyCarCircle-v0")
    trusted = load_sb3(tmp_path / "custom.zip", trust_pickle=True)
    np.testing.assert_allclose(
        predict(trusted, obs),
        custom.predict(obs.astype(np.float32), deterministic=True)[0],
        atol=1e-6,
    )


def test_fit_policy_critics_learns_the_reward_of_the_action(toy_env_id):
    """On the toy walk the reward is the action itself, and nothing else the action does changes
    later rewards: for any state, Q_r(s, 0.5) - Q_r(s, -0.5) = 1. The fitted critic of a policy
    that stands still (exploring with std 0.5) says so; an unfitted one does not."""
    from robustsafe.fit_critics import fit_policy_critics

    still = nn.Sequential(nn.Linear(2, 1), nn.Tanh())
    with torch.no_grad():
        still[0].weight.zero_()
        still[0].bias.zero_()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # 200 small updates: threads only slow them down
    try:
        fitted = fit_policy_critics(
            still,
            toy_env_id,
            steps=200,
            exploration_std=0.5,
            hidden=(16, 16),
            updates_per_1000_steps=1000,
            num_envs=2,
            seed=0,
            cfg=CriticConfig(batch_size=64),
        )
    finally:
        torch.set_num_threads(threads)
    torch.manual_seed(0)
    fresh = QCritics(2, 1, (16, 16))
    obs = torch.stack([torch.linspace(-0.5, 0.5, 11), torch.zeros(11)], dim=1)

    def gap(critics: QCritics) -> torch.Tensor:
        with torch.no_grad():
            q = critics.q_reward
            return q(obs, torch.full((11, 1), 0.5)) - q(obs, torch.full((11, 1), -0.5))

    assert gap(fitted).sub(1.0).abs().max() < 0.2
    assert gap(fresh).abs().max() < 0.5  # so the check above is not met before fitting


# ----------------------------------------------------------------------------- CLI

POLICY_FILE = """
import torch
from torch import nn

torch.manual_seed(0)
policy = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1), nn.Tanh())


def blackbox(obs):
    return obs[:, :1] * 0.5


class _NoGrad(nn.Module):  # a torch module whose action is computed outside autograd
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(2, 1)

    def forward(self, obs):
        with torch.no_grad():
            return torch.tanh(self.net(obs))


nograd = _NoGrad()


def make_policy():
    return policy


def broken_factory():
    raise RuntimeError("no weights here")


class _Out(nn.Module):  # a policy whose output is wrong in one of several ways
    def __init__(self, kind):
        super().__init__()
        self.kind = kind
        self.net = nn.Linear(2, 3 if kind == "wide" else 1)

    def forward(self, obs):
        if self.kind == "float32":  # fine in float32, fails on a float64 copy
            return torch.tanh(self.net(obs.float()))
        act = torch.tanh(self.net(obs))
        if self.kind == "list":
            return act[:, 0].tolist()
        return act * float("nan") if self.kind == "nan" else act


out_list, out_wide, out_nan, out_float32 = (_Out(k) for k in ("list", "wide", "nan", "float32"))
"""


def test_cli_fit_critics_and_evaluate_a_module_policy(tmp_path, toy_env_id, capsys):
    from robustsafe.cli import main

    src = tmp_path / "mypolicy.py"
    src.write_text(POLICY_FILE)
    critics = tmp_path / "critics.pt"
    common = ["--env", toy_env_id, "--env-workers", "0"]
    fit = ["fit-critics", "--policy", f"{src}:policy", *common, "--steps", "80", "--num-envs", "2"]
    assert main([*fit, "--out", str(critics)]) == 0
    assert "exploration noise std [0.3]" in capsys.readouterr().out
    ev = ["evaluate", "--policy", f"{src}:policy", *common, "--episodes", "2", "--num-envs", "2"]
    out = tmp_path / "eval.json"
    assert main([*ev, "--critics", str(critics), "--attacks", "mc,mr", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "mc" in printed and "Δcost" in printed
    assert out.exists()
    # an attack at budget 0 alone is refused here as for --run agents
    assert main([*ev, "--attacks", "mad", "--eps", "0"]) == 2
    assert "a budget of 0" in capsys.readouterr().err
    # a module cut from autograd: MAD refuses it instead of reporting its starting points
    nograd = ["evaluate", "--policy", f"{src}:nograd", *common, "--episodes", "2"]
    assert main([*nograd, "--num-envs", "2", "--attacks", "mad", "--action-std", "0.3"]) == 2
    err = capsys.readouterr().err
    assert "outside autograd" in err and len(err.strip().splitlines()) == 1, err
    # a black box: gradient attackers refused with the clear message, random works
    bb = ["evaluate", "--policy", f"{src}:blackbox", *common, "--episodes", "2"]
    assert main([*bb, "--attacks", "random"]) == 0
    assert main([*bb, "--attacks", "mc", "--critics", str(critics)]) == 2
    assert "none, random" in capsys.readouterr().err
    # MAD on a module without --action-std is refused; errors of usage
    assert main([*ev, "--attacks", "mad"]) == 2
    assert "--action-std on the command line" in capsys.readouterr().err
    # on a task of other sizes: what is known of the policy, nothing that is not
    other = ["evaluate", "--policy", f"{src}:policy", "--env", "SafetyCarCircle-v0"]
    assert main([*other, "--env-workers", "0", "--episodes", "1", "--num-envs", "1"]) == 2
    err = capsys.readouterr().err
    assert "the policy (observation size" in err and "None" not in err
    assert main(["evaluate", "--policy", f"{src}:policy", "--episodes", "1"]) == 2
    assert "--env" in capsys.readouterr().err
    assert main(["evaluate", "--run", str(tmp_path), "--policy", f"{src}:policy"]) == 2
    assert "one of" in capsys.readouterr().err
    assert main(["evaluate", "--env", toy_env_id]) == 2


def test_damaged_policy_and_critics_files_and_sweep_files(tmp_path, toy_env_id, capsys):
    """A foreign policy's inputs that cannot be used get a one-line error (no traceback), and
    evaluate --policy keeps an existing sweep file without --force."""
    from robustsafe.cli import main
    from robustsafe.fit_critics import load_critics

    src = tmp_path / "mypolicy.py"
    src.write_text(POLICY_FILE)
    common = ["--env", toy_env_id, "--env-workers", "0", "--num-envs", "1", "--episodes", "1"]
    # several budgets: the sweep files beside --out are checked before any episode
    out, sweep = tmp_path / "e.json", tmp_path / "e_sweep.csv"
    sweep.write_text("precious")
    ev = ["evaluate", "--policy", f"{src}:policy", *common, "--attacks", "random"]
    assert main([*ev, "--eps", "0.01,0.02", "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert "--force" in captured.err and "reward" not in captured.out
    assert sweep.read_text() == "precious" and not out.exists()
    # a policy file that is not Python
    (tmp_path / "bad.py").write_text("def f(:\n")
    assert main(["evaluate", "--policy", f"{tmp_path / 'bad.py'}:f", *common]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "invalid syntax" in err and "line 1" in err
    # a critics file edited by hand: a one-line error from load_critics
    critics = tmp_path / "critics.pt"
    fit = ["fit-critics", "--policy", f"{src}:policy", "--env", toy_env_id, "--env-workers", "0"]
    assert main([*fit, "--steps", "40", "--num-envs", "1", "--out", str(critics)]) == 0
    # with --force the sweep is written with the evaluation's own fields, as a --run sweep's:
    # the CSV names AMAD's xi (the foreign path passed none, and its rows had an empty xi)
    amad = [
        *ev[:-1],
        "amad",
        "--action-std",
        "0.3",
        "--xi",
        "0.3",
        "--critics",
        str(critics),
        "--eps",
        "0.01,0.02",
    ]
    assert main([*amad, "--out", str(out), "--force"]) == 0
    with sweep.open() as f:
        rows = [r for r in csv.DictReader(f) if r["attack"] == "amad"]
    assert [r["xi"] for r in rows] == ["0.3", "0.3"]
    saved = torch.load(critics, weights_only=True)
    # its Q_c's units travel with it (costs / 5); a file saved before they did was fitted so
    assert saved["cost_scale"] == 5.0 == load_critics(critics).cost_scale
    older = {k: v for k, v in saved.items() if k != "cost_scale"}
    torch.save({**older, "critics": saved["critics"]}, tmp_path / "older.pt")
    assert load_critics(tmp_path / "older.pt").cost_scale == 5.0
    torch.save({**saved, "cost_scale": 2.0}, tmp_path / "scaled.pt")
    assert load_critics(tmp_path / "scaled.pt").cost_scale == 2.0
    for edit in ({"hidden": [16, 16]}, {"obs_dim": 9}, {"act_dim": None}):
        torch.save({**saved, **edit}, tmp_path / "edited.pt")
        with pytest.raises(ValueError, match="damaged or inconsistent"):
            load_critics(tmp_path / "edited.pt")
    del saved["obs_dim"]
    torch.save(saved, tmp_path / "edited.pt")
    with pytest.raises(ValueError, match="no 'obs_dim'"):
        load_critics(tmp_path / "edited.pt")


def test_damaged_sb3_zips_get_one_line_errors(tmp_path, sb3):
    """SB3 zips whose weights are no tensors (no advice to unpickle), are cut short, whose
    settings are no object, or whose compressed bytes are damaged: a ValueError naming the
    file, in one line."""
    import json
    import pickle
    import zipfile

    cases = {
        "pickled.zip": ({"clip_range": 0.2}, pickle.dumps(object())),
        "garbage.zip": ({"clip_range": 0.2}, b"garbage"),
        "list.zip": ("clip_range", b""),
    }
    for name, (data, weights) in cases.items():
        with zipfile.ZipFile(tmp_path / name, "w") as zf:
            zf.writestr("data", json.dumps(data))
            zf.writestr("policy.pth", weights)
    with zipfile.ZipFile(tmp_path / "deflated.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("data", json.dumps({"clip_range": 0.2, "pad": "x" * 400}))
        zf.writestr("policy.pth", b"y" * 400)
    raw = bytearray((tmp_path / "deflated.zip").read_bytes())
    start = raw.index(b"data") + 4  # the first member's name, then its compressed bytes
    raw[start + 2 : start + 12] = b"\xff" * 10
    (tmp_path / "deflated.zip").write_bytes(bytes(raw))
    for name in (*cases, "deflated.zip"):
        with pytest.raises(ValueError) as raised:
            load_sb3(tmp_path / name, env_id="SafetyCarRun-v0")
        text = str(raised.value)
        assert name in text and "weights_only" not in text and "\n" not in text, text


def test_a_policy_module_that_fails_is_a_one_line_error(tmp_path, toy_env_id, capsys):
    """The user's code raising while imported or while building the policy, or a factory
    named without its call: one line naming --policy, not a traceback."""
    from robustsafe.cli import main

    src = tmp_path / "mypolicy.py"
    src.write_text(POLICY_FILE)
    bad = tmp_path / "raises.py"
    bad.write_text("raise RuntimeError('cannot load the checkpoint')\n")
    common = ["--env", toy_env_id, "--env-workers", "0", "--episodes", "1", "--num-envs", "1"]
    for spec, words in (
        (f"{bad}:policy", "importing it raised RuntimeError: cannot load the checkpoint"),
        (f"{src}:broken_factory()", "calling broken_factory() raised RuntimeError: no weights"),
        (f"{src}:make_policy", f"call it: {src}:make_policy()"),
    ):
        assert main(["evaluate", "--policy", spec, *common]) == 2, spec
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and words in err and "--policy" in err, err
    assert main(["evaluate", "--policy", f"{src}:make_policy()", *common]) == 0
    assert "reward" in capsys.readouterr().out
    # --video is checked for a foreign policy as for a run: the toy env draws no picture,
    # which is said before any episode (no table printed)
    video = ["--attacks", "random", "--video", str(tmp_path / "v")]
    assert main(["evaluate", "--policy", f"{src}:make_policy()", *common, *video]) == 2
    printed = capsys.readouterr()
    assert "--video: " in printed.err and "renders no RGB frame" in printed.err
    assert "reward" not in printed.out


def test_critics_of_another_task_are_refused_before_any_episode(tmp_path, toy_env_id):
    from torch import nn

    from robustsafe.critics import QCritics
    from robustsafe.evaluate import evaluate_policy
    from robustsafe.fit_critics import save_critics

    other = tmp_path / "other.pt"  # a task with 5-dimensional observations; the toy has 2
    save_critics(other, QCritics(5, 1, (8, 8)), 5, 1)
    policy = nn.Sequential(nn.Linear(2, 1), nn.Tanh())
    with pytest.raises(ValueError, match="take 6 inputs .* the env 2 \\+ 1: .*another task"):
        evaluate_policy(policy, toy_env_id, attacks=("mc",), critics=other, episodes=1)


def test_a_policy_with_bad_actions_is_refused_before_any_episode(tmp_path, toy_env_id, capsys):
    from robustsafe.cli import main

    src = tmp_path / "mypolicy.py"
    src.write_text(POLICY_FILE)
    common = ["--env", toy_env_id, "--env-workers", "0", "--num-envs", "1"]
    cases = {
        "list": "returned a list, not a tensor",
        "wide": "shape (2, 3) for 2 observations; the env takes (1,)",
        "nan": "non-finite action",
        "float32": "fails on a batch of torch.float64 observations",
    }
    for kind, words in cases.items():
        spec = f"{src}:out_{kind}"
        commands = [["evaluate", "--policy", spec, *common, "--episodes", "1"]]
        if kind != "float32":  # fit-critics runs a module in its own dtype: float32 is fine
            fit = ["fit-critics", "--policy", spec, *common, "--steps", "40"]
            commands.append([*fit, "--out", str(tmp_path / "c.pt")])
        for argv in commands:
            assert main(argv) == 2, (kind, argv[0])
            err = capsys.readouterr().err
            assert len(err.strip().splitlines()) == 1 and words in err, (kind, err)


def test_the_output_probe_does_not_feed_all_zero_observations():
    """A policy that divides by the observation's norm is fine on every real observation; the
    probe must not refuse it as NaN."""
    import torch
    from torch import nn

    from robustsafe.policy import as_policy, check_policy_output

    class Direction(nn.Module):
        def forward(self, obs):
            return (obs / obs.norm(dim=1, keepdim=True))[:, :1]

    check_policy_output(as_policy(Direction()), 2, 1, torch.float64)
    with pytest.raises(ValueError, match="shape \\(2, 1\\) for 2 observations; the env takes"):
        check_policy_output(as_policy(Direction()), 2, 3, torch.float64)


def test_critics_record_their_task_and_another_task_refuses_them(tmp_path, toy_env_id, capsys):
    from torch import nn

    from robustsafe.cli import main
    from robustsafe.critics import QCritics
    from robustsafe.evaluate import evaluate_policy
    from robustsafe.fit_critics import load_critics, save_critics

    src = tmp_path / "mypolicy.py"
    src.write_text(POLICY_FILE)
    fitted = tmp_path / "critics.pt"
    fit = ["fit-critics", "--policy", f"{src}:policy", "--env", toy_env_id, "--env-workers", "0"]
    assert main([*fit, "--steps", "40", "--num-envs", "2", "--out", str(fitted)]) == 0
    assert load_critics(fitted).env_id == toy_env_id
    other = tmp_path / "other.pt"  # the same sizes, fitted on another task
    save_critics(other, QCritics(2, 1, (8, 8)), 2, 1, env_id="SafetyBallRun-v0")
    policy = nn.Sequential(nn.Linear(2, 1), nn.Tanh())
    with pytest.raises(ValueError, match=f"fitted on SafetyBallRun-v0, not {toy_env_id}"):
        evaluate_policy(policy, toy_env_id, attacks=("mc",), critics=other, episodes=1)
    old = tmp_path / "old.pt"  # a file from before the task was recorded: accepted
    save_critics(old, QCritics(2, 1, (8, 8)), 2, 1)
    assert load_critics(old).env_id is None
    evaluate_policy(policy, toy_env_id, attacks=("mc",), critics=old, episodes=1)
