"""Environments: ``make``, cost extraction, real seeding, and vector envs.

Bullet-Safety-Gym 1.4.0 ignores ``reset(seed=...)`` and draws every reset from numpy's and
Python's GLOBAL random state. We therefore give each environment its own
random generator, seeded from ``SeedSequence(seed, spawn_key=(index,))``, and seed the global
states from it right before each reset. Consequences:

- the k-th episode of environment ``index`` starts from the same state for the same seed, no
  matter how many environments run beside it, in which process, or how long earlier episodes
  lasted (this is what paired evaluation relies on);
- different indices start differently.

Randomness an environment draws *during* an episode (Reach and Gather tasks resample goals) comes
from the global state seeded at the last reset in that process; it is deterministic for a fixed
vector layout, but not isolated between environments of one process. The Run and Circle tasks
draw none.
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing as mp
import random
import signal
import sys
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

ROBOTS = ("Ball", "Car", "Drone", "Ant")
TASKS = ("Run", "Circle", "Gather", "Reach")
BULLET_IDS: tuple[str, ...] = tuple(f"Safety{r}{t}-v0" for r in ROBOTS for t in TASKS)


@contextlib.contextmanager
def _real_std_streams() -> Iterator[None]:
    """Bullet-Safety-Gym silences PyBullet by redirecting the C-level stream behind
    ``sys.stdout`` / ``sys.stderr`` and needs them to be the real process streams (it fails
    under output capture, e.g. pytest's); swap them in while it builds."""
    saved = sys.stdout, sys.stderr
    if sys.__stdout__ is not None and sys.__stderr__ is not None:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def _register_bullet() -> None:
    with _real_std_streams():
        import bullet_safety_gym  # noqa: F401  (registers the Safety* ids with gymnasium)


def episode_seed(seed: int, episode: int) -> int:
    """The reset seed of episode number ``episode`` of an evaluation seeded with ``seed``."""
    return int(np.random.SeedSequence([seed, 0xE7A1], spawn_key=(episode,)).generate_state(1)[0])


def env_seed_sequence(seed: int, index: int) -> np.random.SeedSequence:
    """The seed sequence of environment ``index`` in a run seeded with ``seed``."""
    if seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed}")
    return np.random.SeedSequence(seed, spawn_key=(index,))


class SafeEnv:
    """One environment with float32 observations, a float cost per step, and own seeding.

    ``step`` returns ``(obs, reward, cost, terminated, truncated, info)``.
    """

    def __init__(self, env: gym.Env, seed: int = 0, index: int = 0) -> None:
        self.env = env
        space = env.observation_space
        if not isinstance(space, gym.spaces.Box) or len(space.shape) != 1:
            raise ValueError(f"only flat Box observation spaces are supported, got {space}")
        act = env.action_space
        if not isinstance(act, gym.spaces.Box) or len(act.shape) != 1:
            raise ValueError(f"only flat Box action spaces are supported, got {act}")
        self.obs_dim = int(space.shape[0])
        self.act_dim = int(act.shape[0])
        self.act_low = act.low.astype(np.float32)
        self.act_high = act.high.astype(np.float32)
        spec = env.spec
        self.max_episode_steps = spec.max_episode_steps if spec is not None else None
        # Bullet-Safety-Gym snapshots the simulation at its FIRST reset and restores that
        # snapshot at every later one, so later episodes depend on the first episode's random
        # start. A priming reset from a fixed seed makes the snapshot the same for every env.
        self._reset_with(0)
        self.seed(seed, index)

    def seed(self, seed: int, index: int = 0) -> None:
        """Restart this environment's reset sequence (see the module docstring)."""
        self._rng = np.random.Generator(np.random.PCG64(env_seed_sequence(seed, index)))

    def _reset_with(self, s: int) -> np.ndarray:
        # PyBullet's saved states do not hold motor commands, so the last action of the
        # previous episode would leak into the next start; command the neutral action first.
        # (The Drone's neutral action depends on its velocity: restore the snapshot first.)
        base = self.env.unwrapped
        agent = getattr(base, "agent", None)
        if agent is not None and hasattr(agent, "apply_action"):
            if getattr(base, "stored_state_id", -1) >= 0:
                base.bc.restoreState(base.stored_state_id)
            agent.apply_action(np.zeros(self.act_dim))
        np.random.seed(s)
        random.seed(s)
        obs, _ = self.env.reset(seed=s)
        return np.asarray(obs, dtype=np.float32)

    def reset(self, seed: int | None = None) -> np.ndarray:
        """Start an episode: from ``seed`` if given, else from this env's own stream."""
        if seed is None:
            seed = int(self._rng.integers(0, 2**32 - 1))
        return self._reset_with(int(seed))

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, float, bool, bool, dict]:
        action = np.clip(action, self.act_low, self.act_high)
        obs, reward, terminated, truncated, info = self.env.step(action)
        cost = float(info.get("cost", 0.0))  # Bullet-Safety-Gym omits the key when it is 0
        return (
            np.asarray(obs, dtype=np.float32),
            float(reward),
            cost,
            bool(terminated),
            bool(truncated),
            info,
        )

    def close(self) -> None:
        self.env.close()


def register_for(env_id: str) -> None:
    """Register with gymnasium the ids of the family ``env_id`` belongs to, only when one is
    asked for: importing Bullet-Safety-Gym takes a second, the others need optional extras."""
    if env_id.startswith("RobustSafe/Safety"):
        from robustsafe import velocity_envs

        velocity_envs.register()
    elif env_id.startswith("SafetyGymnasium/"):
        from robustsafe import safety_gymnasium_compat

        safety_gymnasium_compat.register(env_id)
    elif env_id.startswith("Safety") and "-v" in env_id:
        _register_bullet()


def _gym_make(env_id: str, **kwargs: Any) -> gym.Env:
    register_for(env_id)
    try:
        with _real_std_streams(), warnings.catch_warnings():
            # Bullet-Safety-Gym gives its observation box float64 bounds beyond float32's range;
            # gymnasium 1.x warns about the cast (harmless: they become +-inf).
            warnings.filterwarnings("ignore", "overflow encountered in cast", RuntimeWarning)
            return gym.make(env_id, disable_env_checker=True, **kwargs)
    except (gym.error.DependencyNotInstalled, ImportError) as err:
        raise ValueError(f"cannot build {env_id!r}: {err}") from None
    except gym.error.Error as err:
        raise ValueError(_unknown_id(env_id, err)) from None


def _unknown_id(env_id: str, err: Exception) -> str:
    return (
        f"unknown environment id {env_id!r} ({err}). Bullet-Safety-Gym ids: "
        f"{', '.join(BULLET_IDS)}; velocity tasks: RobustSafe/Safety{{Hopper,HalfCheetah,"
        f"Walker2d,Swimmer,Ant,Humanoid}}Velocity-v1; any other registered gymnasium id "
        f"that reports a per-step cost in info['cost'] works too."
    )


def env_id_from_file(env_id: str, source: str) -> str:
    """``env_id`` as read from a file (``source``: an agent, a run's config.yaml); ValueError if
    it is gymnasium's ``module:Id`` form and ``module`` is not imported yet, since building the
    env would import it, running its code, and loading a file never does that. Code that means
    it imports the module first (or passes the id itself)."""
    module = env_id.rsplit(":", 1)[0] if ":" in env_id else None
    if module and module not in sys.modules:
        raise ValueError(
            f"{source} names the environment {env_id!r}, whose module {module!r} would be "
            f"imported (running its code); a file alone never makes robustsafe import code"
        )
    return env_id


def check_env_id(env_id: str) -> None:
    """ValueError, one line naming the valid ids, unless ``env_id`` is a registered gymnasium id
    (after registering its family, and importing ``module`` of a ``module:Id`` id). Builds
    nothing: cheap enough for a plan (``robustsafe grid --dry-run``)."""
    module, name = env_id.rsplit(":", 1) if ":" in env_id else (None, env_id)
    try:
        register_for(env_id)
        if module is not None:
            importlib.import_module(module)
    except ImportError as err:
        raise ValueError(f"cannot use environment {env_id!r}: {err}") from None
    try:
        gym.spec(name)
    except gym.error.Error as err:
        raise ValueError(_unknown_id(env_id, err)) from None


def make(env_id: str, seed: int = 0, index: int = 0, **kwargs: Any) -> SafeEnv:
    """Create one seeded environment. ``index`` picks the stream of a vector's member."""
    return SafeEnv(_gym_make(env_id, **kwargs), seed=seed, index=index)


# ----------------------------------------------------------------------------- vector envs


@dataclass(frozen=True)
class Episode:
    """Statistics of one finished episode."""

    env_index: int
    ret: float
    cost: float
    length: int


@dataclass
class VecStep:
    """One step of every environment of a vector.

    ``obs`` is what the agent sees next (a fresh reset where an episode ended); ``next_obs``
    is the true next observation (the final one where an episode ended).
    """

    obs: np.ndarray
    next_obs: np.ndarray
    reward: np.ndarray
    cost: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    episodes: list[Episode] = field(default_factory=list)


class _EnvGroup:
    """Environments stepped one after the other in this process, with auto-reset."""

    def __init__(self, env_id: str, seed: int, indices: Sequence[int], kwargs: dict) -> None:
        self.envs = [make(env_id, seed=seed, index=i, **kwargs) for i in indices]
        self.indices = list(indices)

    def spaces(self) -> dict:
        e = self.envs[0]
        return {
            "obs_dim": e.obs_dim,
            "act_dim": e.act_dim,
            "act_low": e.act_low,
            "act_high": e.act_high,
            "max_episode_steps": e.max_episode_steps,
        }

    def seed(self, seed: int) -> None:
        for env, i in zip(self.envs, self.indices, strict=True):
            env.seed(seed, i)

    def reset(self, seeds: Sequence[int] | None = None) -> np.ndarray:
        if seeds is None:
            return np.stack([e.reset() for e in self.envs])
        return np.stack([e.reset(int(s)) for e, s in zip(self.envs, seeds, strict=True)])

    def step(self, actions: np.ndarray, reset_seeds: np.ndarray | None = None) -> tuple:
        n = len(self.envs)
        obs = np.empty((n, self.envs[0].obs_dim), np.float32)
        next_obs = np.empty_like(obs)
        reward = np.empty(n, np.float64)
        cost = np.empty(n, np.float64)
        term = np.empty(n, bool)
        trunc = np.empty(n, bool)
        for k, env in enumerate(self.envs):
            o, r, c, te, tr, _ = env.step(actions[k])
            next_obs[k] = o
            if te or tr:
                obs[k] = env.reset(None if reset_seeds is None else int(reset_seeds[k]))
            else:
                obs[k] = o
            reward[k], cost[k], term[k], trunc[k] = r, c, te, tr
        return obs, next_obs, reward, cost, term, trunc

    def replay(self, seeds: Sequence[int], actions: Sequence[np.ndarray]) -> tuple:
        """Reset env k from ``seeds[k]`` and step it through ``actions[k]`` (none may end
        the episode); returns the observations and each episode's return, cost and length."""
        n = len(self.envs)
        obs = np.empty((n, self.envs[0].obs_dim), np.float32)
        ret, cost = np.zeros(n), np.zeros(n)
        length = np.zeros(n, np.int64)
        for k, (env, s, acts) in enumerate(zip(self.envs, seeds, actions, strict=True)):
            obs[k] = env.reset(int(s))
            for a in acts:
                obs[k], r, c, te, tr, _ = env.step(a)
                ret[k] += r
                cost[k] += c
                length[k] += 1
                if te or tr:
                    raise RuntimeError(
                        f"environment {self.indices[k]} ended its episode while replaying it"
                    )
        return obs, ret, cost, length

    def close(self) -> None:
        for e in self.envs:
            e.close()


class VectorEnv:
    """``num_envs`` environments behind one batched interface, with episode bookkeeping.

    ``workers=0`` steps them in this process; ``workers=k`` spreads them over ``k`` subprocesses
    (each stepping its share one after the other), which is how to use several cores.
    """

    def __init__(
        self,
        env_id: str,
        num_envs: int,
        seed: int = 0,
        workers: int = 0,
        env_kwargs: dict | None = None,
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        if workers < 0:
            raise ValueError(f"workers must be >= 0, got {workers}")
        self.env_id = env_id
        self.num_envs = num_envs
        kwargs = dict(env_kwargs or {})
        self._workers = min(workers, num_envs)
        self._local: _EnvGroup | None = None
        self._pipes: list[Any] = []
        self._procs: list[Any] = []
        self._slices: list[slice] = []
        if self._workers == 0:
            self._local = _EnvGroup(env_id, seed, range(num_envs), kwargs)
            spaces = self._local.spaces()
        else:
            ctx = mp.get_context("spawn")
            bounds = np.linspace(0, num_envs, self._workers + 1).round().astype(int)
            for w in range(self._workers):
                lo, hi = int(bounds[w]), int(bounds[w + 1])
                parent, child = ctx.Pipe()
                proc = ctx.Process(
                    target=_worker, args=(child, env_id, seed, list(range(lo, hi)), kwargs)
                )
                proc.daemon = True
                proc.start()
                child.close()
                self._pipes.append(parent)
                self._procs.append(proc)
                self._slices.append(slice(lo, hi))
            replies = [self._recv(p) for p in self._pipes]
            spaces = replies[0]
        self.obs_dim: int = spaces["obs_dim"]
        self.act_dim: int = spaces["act_dim"]
        self.act_low: np.ndarray = spaces["act_low"]
        self.act_high: np.ndarray = spaces["act_high"]
        self.max_episode_steps: int | None = spaces["max_episode_steps"]
        self._ret = np.zeros(num_envs)
        self._cost = np.zeros(num_envs)
        self._len = np.zeros(num_envs, dtype=np.int64)

    @staticmethod
    def _recv(pipe: Any) -> Any:
        try:
            status, payload = pipe.recv()
        except EOFError:
            raise RuntimeError(
                "an environment worker exited unexpectedly (see its traceback above); with "
                "workers > 0 the main program must be importable (a file, not stdin) and guard "
                "its entry point with `if __name__ == '__main__':`"
            ) from None
        if status == "error":
            is_value_error, message, trace = payload
            if is_value_error:  # bad input (an env id, a seed): the same error as without workers
                raise ValueError(message)
            raise RuntimeError(f"environment worker failed:\n{trace}")
        return payload

    def _call(self, cmd: str, arg: Any = None) -> list[Any]:
        for p in self._pipes:
            p.send((cmd, arg))
        return [self._recv(p) for p in self._pipes]

    @property
    def local_envs(self) -> list[SafeEnv]:
        """The environments of an in-process vector (``workers=0``), e.g. to render them."""
        if self._local is None:
            raise ValueError("only an in-process vector (workers=0) exposes its environments")
        return self._local.envs

    def seed(self, seed: int) -> None:
        """Restart every environment's reset sequence; call ``reset`` afterwards."""
        if self._local is not None:
            self._local.seed(seed)
        else:
            self._call("seed", seed)

    def reset(self, seeds: Sequence[int] | None = None) -> np.ndarray:
        """Start new episodes in every env, from explicit per-env ``seeds`` if given."""
        self._ret[:] = 0.0
        self._cost[:] = 0.0
        self._len[:] = 0
        if seeds is not None and len(seeds) != self.num_envs:
            raise ValueError(f"reset needs {self.num_envs} seeds, got {len(seeds)}")
        if self._local is not None:
            return self._local.reset(seeds)
        for p, s in zip(self._pipes, self._slices, strict=True):
            p.send(("reset", None if seeds is None else list(seeds[s])))
        return np.concatenate([self._recv(p) for p in self._pipes])

    def replay(self, seeds: Sequence[int], actions: Sequence[np.ndarray]) -> np.ndarray:
        """Bring every env to the middle of an episode: env k resets from ``seeds[k]`` and
        takes ``actions[k]`` (shape ``(steps_k, act_dim)``); the episode statistics resume from
        there. Returns the observations. Exact for deterministic simulators (resuming a run)."""
        if len(seeds) != self.num_envs or len(actions) != self.num_envs:
            raise ValueError(f"replay needs {self.num_envs} seeds and action sequences")
        if self._local is not None:
            obs, ret, cost, length = self._local.replay(seeds, actions)
        else:
            for p, s in zip(self._pipes, self._slices, strict=True):
                p.send(("replay", (list(seeds[s]), list(actions[s]))))
            replies = [self._recv(p) for p in self._pipes]
            obs, ret, cost, length = (np.concatenate(x) for x in zip(*replies, strict=True))
        self._ret[:], self._cost[:], self._len[:] = ret, cost, length
        return obs

    def step(self, actions: np.ndarray, reset_seeds: np.ndarray | None = None) -> VecStep:
        """Step every env; an env whose episode ends restarts from ``reset_seeds[i]`` if
        given, else from its own stream."""
        actions = np.asarray(actions, dtype=np.float32)
        if actions.shape != (self.num_envs, self.act_dim):
            raise ValueError(
                f"actions must have shape {(self.num_envs, self.act_dim)}, got {actions.shape}"
            )
        if self._local is not None:
            parts = self._local.step(actions, reset_seeds)
        else:
            for p, s in zip(self._pipes, self._slices, strict=True):
                p.send(("step", (actions[s], None if reset_seeds is None else reset_seeds[s])))
            replies = [self._recv(p) for p in self._pipes]
            parts = tuple(np.concatenate(x) for x in zip(*replies, strict=True))
        obs, next_obs, reward, cost, term, trunc = parts
        self._ret += reward
        self._cost += cost
        self._len += 1
        episodes = []
        for i in np.flatnonzero(term | trunc):
            episodes.append(
                Episode(int(i), float(self._ret[i]), float(self._cost[i]), int(self._len[i]))
            )
            self._ret[i] = self._cost[i] = 0.0
            self._len[i] = 0
        return VecStep(obs, next_obs, reward, cost, term, trunc, episodes)

    def close(self) -> None:
        if self._local is not None:
            self._local.close()
            self._local = None
        for p in self._pipes:
            try:
                p.send(("close", None))
            except (BrokenPipeError, OSError):
                pass
        for proc in self._procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
        self._pipes, self._procs = [], []

    def __enter__(self) -> VectorEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _error_reply(err: Exception) -> tuple[str, tuple[bool, str, str]]:
    """A worker's report of ``err``: whether it is a ValueError, its message, its traceback."""
    import traceback

    return ("error", (isinstance(err, ValueError), str(err), traceback.format_exc()))


def _worker(pipe: Any, env_id: str, seed: int, indices: list[int], kwargs: dict) -> None:
    # Ctrl-C reaches the whole process group: the parent answers it (and closes the workers);
    # a worker stopped mid-step would print a traceback of the simulator instead
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        group = _EnvGroup(env_id, seed, indices, kwargs)
        pipe.send(("ok", group.spaces()))
    except Exception as err:  # report construction errors to the parent instead of hanging it
        pipe.send(_error_reply(err))
        return
    while True:
        try:
            cmd, arg = pipe.recv()
        except (EOFError, ConnectionResetError, KeyboardInterrupt):  # the parent is gone
            break
        try:
            if cmd == "step":
                pipe.send(("ok", group.step(*arg)))
            elif cmd == "reset":
                pipe.send(("ok", group.reset(arg)))
            elif cmd == "replay":
                pipe.send(("ok", group.replay(*arg)))
            elif cmd == "seed":
                group.seed(arg)
                pipe.send(("ok", None))
            elif cmd == "close":
                break
        except (BrokenPipeError, ConnectionResetError):  # the parent is gone
            break
        except Exception as err:
            pipe.send(_error_reply(err))
    group.close()
