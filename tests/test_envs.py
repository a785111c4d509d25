import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest

from robustsafe.envs import BULLET_IDS, VectorEnv, make


def _starts(env_id, seed, index=0, n=3):
    env = make(env_id, seed=seed, index=index)
    try:
        return np.stack([env.reset() for _ in range(n)])
    finally:
        env.close()


@pytest.mark.slow
def test_same_seed_same_starts_and_distinct_streams():
    a = _starts("SafetyCarCircle-v0", seed=7)
    b = _starts("SafetyCarCircle-v0", seed=7)
    np.testing.assert_array_equal(a, b)
    assert a.dtype == np.float32
    assert not np.allclose(a[0], a[1])  # successive episodes differ
    c = _starts("SafetyCarCircle-v0", seed=8)
    d = _starts("SafetyCarCircle-v0", seed=7, index=1)
    assert not np.allclose(a, c) and not np.allclose(a, d)


@pytest.mark.slow
def test_global_random_state_does_not_leak_into_starts():
    env = make("SafetyCarCircle-v0", seed=3)
    first = env.reset()
    env.seed(3)
    np.random.seed(12345)  # what Bullet-Safety-Gym would otherwise read
    assert np.array_equal(env.reset(), first)
    env.close()


@pytest.mark.slow
def test_subprocess_workers_match_in_process_and_differ_from_each_other():
    actions = np.random.default_rng(0).uniform(-1, 1, (30, 4, 2)).astype(np.float32)
    outs = []
    for workers in (0, 2):
        with VectorEnv("SafetyCarCircle-v0", 4, seed=5, workers=workers) as vec:
            obs = [vec.reset()]
            for a in actions:
                obs.append(vec.step(a).obs)
            outs.append(np.stack(obs))
    np.testing.assert_array_equal(outs[0], outs[1])
    starts = outs[0][0]
    assert len({tuple(np.round(s, 6)) for s in starts}) == 4  # every worker starts differently


class _EarlyEndEnv(gym.Env):
    """A 1-D walk x += 0.1 a from a start drawn from numpy's global state (as Bullet-Safety-Gym
    draws), terminated once |x| > 1: episode lengths depend on the actions."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(-10.0, 10.0, (1,), np.float64)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.x = 0.0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x = float(np.random.uniform(-0.5, 0.5))
        return np.array([self.x]), {}

    def step(self, action):
        self.x += 0.1 * float(action[0])
        return np.array([self.x]), float(action[0]), abs(self.x) > 1.0, False, {}


EARLY_END_ID = "RobustSafeToyEarlyEnd-v0"
if EARLY_END_ID not in gym.registry:
    gym.register(EARLY_END_ID, entry_point=_EarlyEndEnv, max_episode_steps=20)


def _episode_starts(actions: list[float], steps: int = 60):
    """Per env: the x of each episode's start, and the lengths of its finished episodes."""
    n = len(actions)
    with VectorEnv(EARLY_END_ID, n, seed=1) as vec:
        vec.seed(1)
        obs = vec.reset()
        starts = {i: [float(obs[i, 0])] for i in range(n)}
        lengths: dict[int, list[int]] = {i: [] for i in range(n)}
        act = np.array(actions, np.float32)[:, None]
        for _ in range(steps):
            step = vec.step(act)
            for e in step.episodes:
                starts[e.env_index].append(float(step.obs[e.env_index, 0]))
                lengths[e.env_index].append(e.length)
    return starts, lengths


def test_episode_statistics_and_pairing_survive_different_episode_lengths(toy_env_id):
    # The k-th episode of env i starts from the same state whatever the lengths of the earlier
    # episodes of env i and of the other envs, and however many envs run beside it. Pushing
    # right or left ends an episode once |x| > 1 (after 6-16 steps); action 0 runs to the
    # 20-step limit. Every run has its episodes end at different times.
    a_starts, a_len = _episode_starts([1.0, 1.0])
    b_starts, b_len = _episode_starts([0.0, -1.0])
    c_starts, c_len = _episode_starts([-1.0, 0.0, 1.0])
    assert b_len[0] == [20, 20, 20] and c_len[1] == [20, 20, 20]
    assert a_len[0] != b_len[0] and a_len[1] != b_len[1] and a_len[1] != c_len[1]
    assert a_len[0] != a_len[1]  # the two envs of run A reset at different steps
    for i in (0, 1):
        k = 4  # starts of the first 4 episodes (every run has at least 4 of each env)
        assert a_starts[i][:k] == b_starts[i][:k] == c_starts[i][:k], i
        assert len(set(a_starts[i][:k])) == k  # successive episodes differ
    assert a_starts[0][:4] != a_starts[1][:4]  # and so do envs
    # episode statistics: return = sum of actions, cost counted where |x| > 1
    with VectorEnv(toy_env_id, 2, seed=1) as vec:
        vec.reset()
        eps = []
        while not eps:
            eps = vec.step(np.array([[1.0], [-1.0]], np.float32)).episodes
    assert [(e.env_index, e.length, e.ret) for e in eps] == [(0, 20, 20.0), (1, 20, -20.0)]


def test_cost_is_float_and_zero_when_missing(toy_env_id):
    env = make(toy_env_id, seed=0)
    obs = env.reset()
    assert obs.dtype == np.float32
    costs = []
    for _ in range(20):
        obs, r, c, term, trunc, info = env.step(np.array([1.0], np.float32))
        assert isinstance(c, float)
        costs.append(c)
    assert costs[0] == 0.0 and costs[-1] == 1.0  # x goes past 1 after about 10 steps


def test_unknown_id_lists_valid_ids():
    with pytest.raises(ValueError) as err:
        make("SafetyCarJump-v0")
    msg = str(err.value)
    assert "SafetyCarJump-v0" in msg
    for env_id in ("SafetyCarRun-v0", "SafetyAntCircle-v0"):
        assert env_id in msg
    assert len(BULLET_IDS) == 16


def test_bad_vector_arguments(toy_env_id):
    with pytest.raises(ValueError, match="num_envs"):
        VectorEnv(toy_env_id, 0)
    with VectorEnv(toy_env_id, 2) as vec:
        vec.reset()
        with pytest.raises(ValueError, match="shape"):
            vec.step(np.zeros((3, 1)))


@pytest.mark.slow
def test_worker_errors_reach_the_parent():
    # bad input (a ValueError in the worker) is the same one-line ValueError as without workers
    with pytest.raises(ValueError) as in_process:
        VectorEnv("SafetyCarJump-v0", 1, workers=0)
    with pytest.raises(ValueError) as in_workers:
        VectorEnv("SafetyCarJump-v0", 2, workers=2)
    assert str(in_workers.value) == str(in_process.value)
    assert "Traceback" not in str(in_workers.value)
    # any other failure comes back with the worker's traceback
    with pytest.raises(RuntimeError, match="worker failed:(.|\n)*Traceback(.|\n)*no_such_kwarg"):
        VectorEnv("SafetyCarRun-v0", 2, workers=2, env_kwargs={"no_such_kwarg": 1})


@pytest.mark.slow
@pytest.mark.parametrize("env_id", ["SafetyCarRun-v0", "SafetyDroneCircle-v0"])
def test_episodes_do_not_depend_on_the_env_history(env_id):
    # Bullet-Safety-Gym restores a snapshot taken at the first reset and keeps motor commands
    # across resets; a used env must still replay a fresh env's episode exactly.
    fresh = make(env_id, seed=5)
    used = make(env_id, seed=9)
    acts = np.random.default_rng(0).uniform(-1, 1, (60, fresh.act_dim)).astype(np.float32)
    used.reset()
    for a in acts[::-1]:
        used.step(a)
    trajectories = []
    for env in (fresh, used):
        env.seed(5)
        obs = [env.reset()]
        obs += [env.step(a)[0] for a in acts]
        trajectories.append(np.stack(obs))
        env.close()
    np.testing.assert_array_equal(trajectories[0], trajectories[1])


def test_workers_exit_quietly_when_the_parent_is_killed():
    """A killed training (SIGTERM) must not fill its log with the workers' tracebacks."""
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    script = (
        "import numpy as np\n"
        "from robustsafe.envs import VectorEnv\n"
        "v = VectorEnv('tests.experiments.toy_env:RobustSafeGridToy-v0', 2, seed=0, workers=2)\n"
        "v.reset()\n"
        "print('ready', flush=True)\n"
        "while True:\n"
        "    v.step(np.zeros((2, 1), np.float32))\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(0.5)  # killed while stepping: results may sit unread in the pipes
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)  # returns once the workers closed stderr too
    assert proc.returncode == -signal.SIGTERM
    assert "Traceback" not in err, err


@pytest.mark.slow
def test_bullet_envs_build_under_warnings_as_errors():
    # gymnasium 1.x warns about Bullet-Safety-Gym's out-of-range float32 box bounds.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make("SafetyCarRun-v0").close()


def test_an_env_id_from_a_file_imports_no_module_it_names(tmp_path, monkeypatch):
    """``module:Id`` from a file is refused until the module is imported by the caller."""
    from robustsafe.envs import env_id_from_file

    marker = tmp_path / "imported"
    (tmp_path / "filemod.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match=r"agent\.pt names the environment 'filemod:X-v0'"):
        env_id_from_file("filemod:X-v0", "agent.pt")
    assert not marker.exists()
    assert env_id_from_file("SafetyCarRun-v0", "agent.pt") == "SafetyCarRun-v0"
    import filemod  # noqa: F401  (the caller's own import: then the id goes)

    assert marker.exists() and env_id_from_file("filemod:X-v0", "agent.pt") == "filemod:X-v0"
    monkeypatch.delitem(sys.modules, "filemod")


def test_env_workers_leave_ctrl_c_to_the_parent():
    """A terminal's Ctrl-C reaches every process of the group; the parent answers it (one line)
    and closes the workers. A worker that took it stopped (mid-step, with the simulator's
    traceback): here one is sent SIGINT alone and the envs still step."""
    import os
    import signal
    import time

    with VectorEnv("SafetyCarRun-v0", 2, seed=0, workers=2) as vec:
        vec.reset()
        os.kill(vec._procs[0].pid, signal.SIGINT)
        time.sleep(0.5)
        step = vec.step(np.zeros((2, vec.act_dim)))
        assert vec._procs[0].is_alive() and step.obs.shape[0] == 2
