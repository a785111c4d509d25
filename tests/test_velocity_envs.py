"""Velocity tasks (Safety-Gymnasium style) and the adapter for Safety-Gymnasium's 6-tuple API."""

from __future__ import annotations

import sys
import types

import gymnasium as gym
import numpy as np
import pytest

from robustsafe import envs, velocity_envs
from robustsafe.presets import _episode_length, preset
from robustsafe.safety_gymnasium_compat import SixTupleAdapter
from robustsafe.velocity_envs import TASKS, VelocityCost, VelocityTask, velocity_cost


class FakeMujoco(gym.Env):
    """Reports whatever velocity it is told to, like gymnasium's MuJoCo envs do in info."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float64)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.vx = self.vy = 0.0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(3), {}

    def step(self, action):
        info = {"x_velocity": self.vx, "y_velocity": self.vy}
        return np.zeros(3), 1.5, False, False, info


def _cost(task: VelocityTask, vx: float, vy: float = 0.0) -> tuple[float, dict]:
    inner = FakeMujoco()
    env = VelocityCost(inner, task)
    env.reset(seed=0)
    inner.vx, inner.vy = vx, vy
    _, reward, _, _, info = env.step(np.zeros(2, np.float32))
    assert reward == 1.5  # the reward passes through
    return info["cost"], info


def test_published_thresholds() -> None:
    # Safety-Gymnasium's v1 velocity tasks.
    expected = {
        "Hopper": 0.7402,
        "HalfCheetah": 3.2096,
        "Walker2d": 2.3415,
        "Swimmer": 0.2282,
        "Ant": 2.6222,
        "Humanoid": 1.4149,
    }
    assert {r: t.threshold for r, t in TASKS.items()} == expected
    assert {r for r, t in TASKS.items() if t.planar} == {"Ant", "Humanoid"}


@pytest.mark.parametrize("robot", sorted(TASKS))
def test_cost_is_one_exactly_above_the_threshold(robot: str) -> None:
    task = TASKS[robot]
    th = task.threshold
    for v in (0.0, 0.5 * th, th, np.nextafter(th, np.inf), 2 * th, -3 * th):
        cost, info = _cost(task, v)
        want = 1.0 if abs(v) > th and (task.planar or v > 0) else 0.0
        assert cost == want, (robot, v)
        assert info["cost"] == velocity_cost(task, v)


def test_planar_tasks_use_the_speed_and_forward_tasks_ignore_sideways_motion() -> None:
    ant, hopper = TASKS["Ant"], TASKS["Hopper"]
    # |(2.0, 2.0)| = 2.83 > 2.6222 although neither component is
    assert _cost(ant, 2.0, 2.0)[0] == 1.0
    assert _cost(ant, 1.0, 1.0)[0] == 0.0
    assert _cost(ant, -3.0, 0.0)[0] == 1.0  # backwards counts for the speed
    assert _cost(hopper, 0.5, 5.0)[0] == 0.0  # only vx counts
    assert _cost(hopper, -5.0, 0.0)[0] == 0.0  # signed, like Safety-Gymnasium


def test_registration_is_lazy_and_declares_the_episode_length() -> None:
    velocity_envs.register()
    velocity_envs.register()  # idempotent
    for robot in TASKS:
        spec = gym.spec(velocity_envs.env_id(robot))
        assert spec.max_episode_steps == 1000
        assert spec.kwargs == {"robot": robot}
    assert velocity_envs.VELOCITY_IDS[0] == "RobustSafe/SafetyHopperVelocity-v1"
    # the fast preset's fallback reads the length without building the env (no MuJoCo needed)
    assert _episode_length("RobustSafe/SafetySwimmerVelocity-v1") == 1000
    assert preset("RobustSafe/SafetySwimmerVelocity-v1", "fast").steps_per_epoch == 20 * 1000


def test_an_old_gymnasium_model_rejected_by_mujoco_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def rejected(*args, **kwargs):
        raise ValueError("XML Error: global coordinates no longer supported")

    monkeypatch.setattr(velocity_envs.gym, "make", rejected)
    monkeypatch.setattr(velocity_envs.gym, "__version__", "0.28.1")
    with pytest.raises(ImportError, match="needs mujoco 2.3.3"):
        velocity_envs.make_velocity_env("Hopper")
    monkeypatch.setattr(velocity_envs.gym, "__version__", "1.4.0")
    with pytest.raises(ValueError, match="global coordinates"):
        velocity_envs.make_velocity_env("Hopper")


def test_real_swimmer_cost_follows_the_simulated_velocity(mujoco) -> None:
    env = envs.make("RobustSafe/SafetySwimmerVelocity-v1", seed=0)
    assert env.max_episode_steps == 1000
    sim = env.env.unwrapped
    rng = np.random.default_rng(0)
    env.reset()
    costs = []
    for _ in range(150):
        x_before = float(sim.data.qpos[0])
        _, _, cost, _, _, info = env.step(rng.uniform(-1, 1, env.act_dim).astype(np.float32))
        vx = (float(sim.data.qpos[0]) - x_before) / sim.dt  # Safety-Gymnasium's velocity
        assert info["velocity"] == pytest.approx(vx, rel=1e-9, abs=1e-12)
        assert cost == float(vx > TASKS["Swimmer"].threshold)
        costs.append(cost)
    assert set(costs) == {0.0, 1.0}
    env.close()


# ----------------------------------------------------------------------------- 6-tuple adapter


class FakeSafetyGymnasiumEnv(gym.Env):
    """Safety-Gymnasium's step API: (obs, reward, cost, terminated, truncated, info)."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        cost = np.float64(self.t % 2)  # 1, 0, 1, 0, ...
        return np.full(2, self.t, np.float32), 0.5, cost, self.t >= 4, False, {"t": self.t}


def test_six_tuple_adapter_moves_the_cost_into_info() -> None:
    env = SixTupleAdapter(FakeSafetyGymnasiumEnv())
    env.reset(seed=0)
    out = env.step(np.zeros(1, np.float32))
    assert len(out) == 5
    obs, reward, terminated, truncated, info = out
    assert reward == 0.5 and not terminated and not truncated
    assert info == {"t": 1, "cost": 1.0} and isinstance(info["cost"], float)
    assert env.step(np.zeros(1, np.float32))[4]["cost"] == 0.0


def test_safety_gymnasium_ids_build_through_the_adapter(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("safety_gymnasium")
    made: list[str] = []

    def make(env_id: str, **kwargs):
        made.append(env_id)
        return FakeSafetyGymnasiumEnv()

    fake.make = make  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "safety_gymnasium", fake)
    env = envs.make("SafetyGymnasium/SafetyFakeTask-v0", seed=0)
    assert made == ["SafetyFakeTask-v0"]
    env.reset()
    costs = []
    for _ in range(4):
        _, reward, cost, terminated, _, _ = env.step(np.zeros(1, np.float32))
        costs.append(cost)
    assert costs == [1.0, 0.0, 1.0, 0.0] and terminated


def test_missing_safety_gymnasium_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "safety_gymnasium", None)  # import fails
    with pytest.raises(ValueError, match="needs the safety_gymnasium package"):
        envs.make("SafetyGymnasium/SafetyOtherTask-v0")
