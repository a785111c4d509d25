"""Evaluation: deterministic actions (the actor's ``deterministic_action``), paired episodes,
optionally under attack.

Paired episodes: episode i always starts from the reset seed ``episode_seed(seed, i)``, so
episode i of every attacker starts from the same initial state, whatever the number of
environments or workers (environment k plays episodes k, k + N, k + 2N, ...).

Per-episode numbers do not depend on ``num_envs`` or ``workers`` either:

- every random number an attack uses on episode i's observations comes from episode i's own
  stream, ``episode_generator(attack_seed, i)`` (a ``RowGenerators`` holds one per env), and
  every rule of the attacks (restarts, early stopping) is per row;
- the actor, the critics and the attacks run in float64 (a copy of the agent; actions are
  rounded to float32 for the environment). In float32, a matrix product's rounding depends on
  the batch size (on the zoo CarRun agent, up to 4.8e-7 in the mean action between single rows
  and batches of 10-100), and the Bullet tasks amplify such differences: natural
  SafetyCarRun-v0 episodes differ by up to 0.31 in reward and 1 in cost between ``num_envs``
  1, 3 and 4 (``benchmarks/batch_invariance.py``). In float64 the differences are about 1e-16,
  and rounding the action to float32 removes them.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from robustsafe.agent import Agent
from robustsafe.attacks.rng import RowGenerators, episode_generator
from robustsafe.choices import unique_entries
from robustsafe.envs import VectorEnv, episode_seed

if TYPE_CHECKING:
    from robustsafe.attacks.base import Attacker

# (agent, observations, one random generator per row) -> the observations the agent sees
ObservationAttack = Callable[[Agent, torch.Tensor, RowGenerators], torch.Tensor]


@dataclass
class EpisodeRecord:
    reward: float
    cost: float
    length: int


@dataclass
class EvalResult:
    attack: str
    epsilon: float
    episodes: list[EpisodeRecord] = field(default_factory=list)
    xi: float | None = None  # AMAD's, when one evaluation ran it at several (``evaluate_agent``)

    @property
    def label(self) -> str:
        """The attacker as the printed tables name it (with its xi where it has one)."""
        return self.attack if self.xi is None else f"{self.attack} xi={self.xi:g}"

    def summary(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for key in ("reward", "cost", "length"):
            vals = np.array([getattr(e, key) for e in self.episodes], dtype=np.float64)
            out[f"{key}_mean"] = float(vals.mean()) if len(vals) else math.nan
            out[f"{key}_std"] = float(vals.std()) if len(vals) else math.nan
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "attack": self.attack,
            "epsilon": self.epsilon,
            **self.summary(),
            "episodes": [e.__dict__ for e in self.episodes],
            **({} if self.xi is None else {"xi": self.xi}),
        }


_POLICY_TASK = "its training task"  # a foreign policy's task (not recorded)


def check_compatible(agent: Agent, vec: VectorEnv) -> None:
    """The agent's (or policy's) observation and action sizes match ``vec``'s where stated."""
    dims = (agent.obs_dim, agent.act_dim)
    if any(d is not None and d != e for d, e in zip(dims, (vec.obs_dim, vec.act_dim), strict=True)):
        named = zip(("observation", "action"), dims, strict=True)
        sizes = ", ".join(f"{what} size {d}" for what, d in named if d is not None)
        task = agent.config.env_id
        who = "the policy" if task == _POLICY_TASK else f"the agent was trained on {task}"
        raise ValueError(
            f"{who} ({sizes}); {vec.env_id} has observation size {vec.obs_dim} and "
            f"action size {vec.act_dim}"
        )


def _modules(agent: Agent) -> list[torch.nn.Module]:
    parts = (agent.actor, agent.v_reward, agent.v_cost, agent.critics)
    return [m for m in parts if isinstance(m, torch.nn.Module)]


def float64_agent(agent: Agent) -> Agent:
    """A copy of ``agent`` whose networks compute in float64 (``agent`` itself if they do).

    A black-box policy (not an ``nn.Module``) is shared by the copy, not copied."""
    params = [p for m in _modules(agent) for p in m.parameters() if p.is_floating_point()]
    if all(p.dtype == torch.float64 for p in params):
        return agent
    memo: dict[int, Any] = {}
    if not isinstance(agent.actor, torch.nn.Module):
        memo[id(agent.actor)] = agent.actor
    agent = copy.deepcopy(agent, memo)  # one copy keeps the normaliser shared between networks
    for module in _modules(agent):
        module.double()
    return agent


def action_noise_generator(seed: int, episode: int) -> torch.Generator:
    """The action-noise stream of episode ``episode`` of a sampled-action evaluation with
    sample seed ``seed``; disjoint from the attacks' streams (another tag)."""
    return episode_generator(seed, episode, tag=0x5A3B1E)


def check_samplable(actor: Any) -> None:
    """Sampled actions need a RobustSafe actor (Gaussian or squashed Gaussian)."""
    from robustsafe.nets import GaussianActor, SquashedGaussianActor

    if not isinstance(actor, (GaussianActor, SquashedGaussianActor)):
        raise ValueError(
            "sampled actions are for RobustSafe agents (ppol, focops, sac-lag, cvpo); this "
            f"policy ({type(actor).__name__}) is evaluated with its deterministic action"
        )


def sampled_action(actor: Any, obs: torch.Tensor, rows: Sequence[torch.Generator]) -> torch.Tensor:
    """An action drawn from pi(.|obs) per row, row i's standard normal noise from ``rows[i]``:
    a Gaussian actor's mean + std * noise (the env clips it, as in training), a squashed
    actor's squash(mu + sigma * noise)."""
    from robustsafe.nets import SquashedGaussianActor

    act_dim = int(actor.act_dim)
    z = torch.stack([torch.randn(act_dim, generator=g, dtype=torch.float64) for g in rows])
    if isinstance(actor, SquashedGaussianActor):
        mu, log_std = actor.gaussian(obs)
        return actor.squash(mu + log_std.exp() * z.to(mu.dtype))
    mean = actor.mean_action(obs)
    return mean + actor.log_std.exp().to(mean.dtype) * z.to(mean.dtype)


@torch.no_grad()
def run_episodes(
    agent: Agent,
    vec: VectorEnv,
    episodes: int,
    seed: int,
    attack: ObservationAttack | None = None,
    attack_seed: int = 0,
    on_step: Callable[[int], None] | None = None,
    observations: list[np.ndarray] | None = None,
    sample_seed: int | None = None,
) -> list[EpisodeRecord]:
    """Play ``episodes`` paired episodes with deterministic actions; returns them in episode
    order.

    ``attack`` receives the float64 agent, the float64 observations and one generator per
    row: episode i's rows draw from ``episode_generator(attack_seed, i)``, which starts afresh
    with the episode. ``observations``, if given, receives the true observations met (for
    AMAD's threshold). ``sample_seed`` (a diagnostic, not the paper's protocol): execute
    actions sampled from pi(.|s~) instead, episode i's noise drawn from
    ``action_noise_generator(sample_seed, i)`` (the same noise under every attacker); the
    attackers still aim at the deterministic action.
    """
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    check_compatible(agent, vec)
    if sample_seed is not None:
        check_samplable(agent.actor)
    agent = float64_agent(agent)
    n = vec.num_envs
    current = np.arange(n)  # the episode number each env is playing
    records: dict[int, EpisodeRecord] = {}
    obs = vec.reset([episode_seed(seed, int(i)) for i in current])
    upcoming = np.array([episode_seed(seed, int(j)) for j in current + n], dtype=np.uint64)
    streams = (
        [episode_generator(attack_seed, int(i)) for i in current] if attack is not None else []
    )
    noise = (
        [action_noise_generator(sample_seed, int(i)) for i in current]
        if sample_seed is not None
        else []
    )
    while len(records) < episodes:
        if observations is not None:
            observations.append(obs[current < episodes])
        obs_t = torch.from_numpy(obs).to(torch.float64)
        if attack is not None:
            with torch.enable_grad():
                obs_t = attack(agent, obs_t, RowGenerators(streams))
        if sample_seed is None:
            act = agent.actor.deterministic_action(obs_t).to(torch.float32)
        else:
            act = sampled_action(agent.actor, obs_t, noise).to(torch.float32)
        if not bool(torch.isfinite(act).all()):  # the env would fail deep inside its physics
            raise ValueError(
                f"the policy returned a non-finite action (NaN or inf) for observation "
                f"{obs_t[~torch.isfinite(act).all(dim=1)][0].tolist()}"
            )
        step = vec.step(act.numpy(), reset_seeds=upcoming)
        for ep in step.episodes:
            k = ep.env_index
            if current[k] < episodes:
                records[int(current[k])] = EpisodeRecord(ep.ret, ep.cost, ep.length)
            current[k] += n
            upcoming[k] = episode_seed(seed, int(current[k] + n))
            if attack is not None:
                streams[k] = episode_generator(attack_seed, int(current[k]))
            if sample_seed is not None:
                noise[k] = action_noise_generator(sample_seed, int(current[k]))
        if on_step is not None:
            on_step(n)
        obs = step.obs
    return [records[i] for i in range(episodes)]


def evaluate_agent(
    agent: Agent,
    vec: VectorEnv,
    episodes: int = 50,
    seed: int = 0,
    attacks: Sequence[str] = ("none",),
    epsilons: Sequence[float] = (0.05,),
    attack_seed: int = 0,
    attack_space: str = "raw",
    xi: float | Sequence[float] = 0.1,
    on_step: Callable[[int], None] | None = None,
    sample_seed: int | None = None,
) -> list[EvalResult]:
    """Paired evaluation of ``agent``: natural episodes, then every attacker at every epsilon.

    The natural (``none``) result always comes first: AMAD's threshold is the (1 - xi) quantile
    of Q_c(s, mu(s)) over the observations of these natural episodes. Several ``xi`` values
    (the appendix's sweep) give one AMAD result per value, each with its ``xi``, from the same
    natural episodes. ``attack_space`` is
    ``raw`` (epsilon in observation units, the paper) or ``normalized`` (epsilon in units of the
    agent's observation normaliser's std; the agent must have one). ``sample_seed``: execute
    sampled actions (``run_episodes``).
    """
    from robustsafe.attacks import amad_threshold, make_attacker

    names = unique_entries(attacks)  # an attacker named twice runs once
    # name check; AMAD's attackers join later, one per xi, keyed ("amad", xi)
    attackers: dict[str | tuple[str, float], Attacker] = {
        n: make_attacker(n) for n in names if n not in ("none", "amad")
    }
    if attack_space not in ("raw", "normalized"):
        raise ValueError(f"attack_space must be 'raw' or 'normalized', got {attack_space!r}")
    scale = None
    if attack_space == "normalized":
        if agent.obs_normalizer is None:
            raise ValueError(
                "attack_space 'normalized' needs an agent trained with an observation "
                "normaliser (--obs-norm); this one has none: use 'raw'"
            )
        scale = agent.obs_normalizer.std.detach().clone()
    for eps in epsilons:
        if not eps >= 0.0:
            raise ValueError(f"epsilon must be >= 0, got {eps}")
    sweep, xis = _xi_values(xi, "amad" in names)
    agent = float64_agent(agent)
    natural_obs: list[np.ndarray] = []
    natural = EvalResult(
        "none",
        0.0,
        run_episodes(
            agent, vec, episodes, seed, None, attack_seed, on_step, natural_obs, sample_seed
        ),
    )
    results = [natural]
    runs: list[tuple[str, float | None]] = [(n, None) for n in names if n not in ("none", "amad")]
    if "amad" in names:
        obs_all = torch.from_numpy(np.concatenate(natural_obs)).to(torch.float64)
        for x in xis:
            threshold = amad_threshold(agent.actor, agent.critics, obs_all, x)
            attackers[("amad", x)] = make_attacker("amad", threshold=threshold)
        at = names.index("amad")  # AMAD in its place among the attackers
        before = len([n for n in names[:at] if n not in ("none", "amad")])
        runs[before:before] = [("amad", x) for x in xis]
    for name, x in runs:
        attacker = attackers[name if x is None else (name, x)]
        recorded_xi = x if sweep else None
        for eps in epsilons:
            if eps == 0.0:  # every attacker is the identity at epsilon 0: reuse natural
                results.append(EvalResult(name, 0.0, list(natural.episodes), recorded_xi))
                continue

            def attack(
                ag: Agent, obs: torch.Tensor, gen: RowGenerators, _a=attacker, _e=eps
            ) -> torch.Tensor:
                return _a(ag.actor, ag.critics, obs, _e, gen, scale)

            recs = run_episodes(
                agent, vec, episodes, seed, attack, attack_seed, on_step, None, sample_seed
            )
            results.append(EvalResult(name, float(eps), recs, recorded_xi))
    return results


def _xi_values(xi: float | Sequence[float], amad: bool) -> tuple[bool, list[float]]:
    """(whether ``xi`` is a sweep, its values): one number, or several, each in (0, 1] and given
    once, checked before any episode runs."""
    # by shape, not by whether float() takes it: a tensor of several values raises ValueError
    # there, and numpy takes an array of one value as a number
    one = isinstance(xi, str | bytes) or not isinstance(xi, Iterable)
    one = one or getattr(xi, "ndim", None) == 0
    values = [_decimal(xi)] if one else [_decimal(x) for x in xi]  # type: ignore[union-attr]
    if amad and not values:
        raise ValueError("xi: give AMAD at least one value")
    for x in values:  # one number too (was: xi 1.5 refused by AMAD after the natural episodes)
        if not 0.0 < x <= 1.0:
            raise ValueError(f"xi must be in (0, 1], got {x}")
    if len(set(values)) < len(values):
        raise ValueError(f"xi: a value given twice ({values})")
    return not one, values


def _decimal(x: Any) -> float:
    """``float(x)``; a value held in fewer than 64 bits (a float32 tensor's or array's) as the
    shortest decimal that reads back to it: ``torch.linspace(0.05, 0.1, 2)`` gives the xi 0.05
    and 0.1 that a list gives, not 0.05000000074505806."""
    if isinstance(x, torch.Tensor) and x.dtype in (torch.float16, torch.bfloat16, torch.float32):
        x = np.float32(x.item())  # bfloat16 and float16 values are float32 values too
    if isinstance(x, np.float16 | np.float32):
        return float(str(x))
    return float(x)


def parse_epsilons(text: str) -> list[float]:
    """``0.05``, ``0.02,0.05`` or a sweep ``start:stop:count`` (``0:0.1:11``); a value given
    twice counts once (as an attacker named twice)."""
    try:
        if ":" in text:
            start, stop, count = text.split(":")
            n = int(count)
            if n < 2:
                raise ValueError
            return [float(x) for x in np.linspace(float(start), float(stop), n)]
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ValueError(
            f"cannot read epsilon {text!r}: give a number (0.05), a list (0.02,0.05) or a "
            "sweep start:stop:count with count >= 2 (0:0.1:11)"
        ) from None
    if not values or any(not v >= 0 for v in values):
        raise ValueError(f"epsilons must be >= 0, got {text!r}")
    return list(dict.fromkeys(values))


def write_sweep(
    results: Sequence[EvalResult],
    out_prefix: Path,
    title: str,
    meta: dict[str, Any] | None = None,
) -> list[Path]:
    """The paper's Figure 2 for one agent: reward and cost against epsilon per attacker, as
    ``<prefix>.png``, ``.pdf`` and ``.csv`` (``robustsafe.experiments.plots``, the figure of
    ``robustsafe plot sweep``). ``title``: the env id; ``meta``: the evaluation's other fields
    (``train_mode``, ``train_algo``, ``train_seed``, ``cost_limit``, ``xi``), as in its JSON."""
    from robustsafe.experiments.plots import SweepRun, write_sweep_figure

    payload = {"env_id": title, **(meta or {}), "results": [r.to_dict() for r in results]}
    return write_sweep_figure([SweepRun.from_payload(payload)], out_prefix)


def format_table(results: Sequence[EvalResult]) -> str:
    w = max([10, *(len(r.label) for r in results)])
    head = f"{'attack':<{w}} {'epsilon':>8} {'reward':>18} {'cost':>16} {'length':>8} {'n':>4}"
    lines = [head, "-" * len(head)]
    for r in results:
        s = r.summary()
        lines.append(
            f"{r.label:<{w}} {r.epsilon:>8.4g} "
            f"{s['reward_mean']:>9.1f} ± {s['reward_std']:<6.1f} "
            f"{s['cost_mean']:>7.2f} ± {s['cost_std']:<6.2f} "
            f"{s['length_mean']:>8.1f} {len(r.episodes):>4}"
        )
    return "\n".join(lines)


def _stderr(d: np.ndarray, width: int, digits: int) -> str:
    """The standard error of the mean of ``d``, formatted; a dash for one value (undefined)."""
    if len(d) < 2:
        return f"{'-':<{width}}"
    return f"{float(d.std(ddof=1) / np.sqrt(len(d))):<{width}.{digits}f}"


# ----------------------------------------------------------------------------- any policy


@dataclass
class _PolicyConfig:
    env_id: str


@dataclass
class PolicyAgent:
    """A foreign ``Policy`` and its Q critics, shaped like an ``Agent`` for the evaluation."""

    actor: Any
    critics: Any
    config: _PolicyConfig
    obs_normalizer: Any = None
    v_reward: Any = None
    v_cost: Any = None

    @property
    def obs_dim(self) -> int | None:
        return getattr(self.actor, "obs_dim", None)

    @property
    def act_dim(self) -> int | None:
        return getattr(self.actor, "act_dim", None)


def check_attacks_for(policy: Any, attacks: Sequence[str], critics: Any) -> None:
    """Refuse, before any episode runs, an attacker the policy or the critics cannot serve."""
    from robustsafe.attacks import make_attacker
    from robustsafe.policy import black_box_error

    for name in dict.fromkeys(attacks):
        attacker = make_attacker(name, threshold=0.0) if name == "amad" else make_attacker(name)
        if attacker.needs_gradients and not getattr(policy, "differentiable", True):
            raise black_box_error(name, policy)
        if attacker.needs_critics and critics is None:
            raise ValueError(
                f"attacker {name!r} needs Q critics of this policy: fit them with "
                "robustsafe.fit_critics.fit_policy_critics (or `robustsafe fit-critics "
                "--policy/--sb3 ... --out critics.pt`) and pass them (critics= in Python, "
                "--critics critics.pt on the command line)"
            )


def policy_as_agent(policy: Any, critics: Any = None) -> PolicyAgent:
    """A foreign policy (a ``Policy`` or what ``as_policy`` adapts) and its Q critics as the
    agent that ``evaluate_agent`` and ``robustsafe.video.record_videos`` play; no check of its
    sizes (``evaluate_policy`` makes them)."""
    from robustsafe.policy import as_policy

    return PolicyAgent(as_policy(policy), critics, _PolicyConfig(_POLICY_TASK))


def evaluate_policy(
    policy: Any,
    env: str | VectorEnv,
    attacks: Sequence[str] = ("none",),
    epsilons: Sequence[float] = (0.05,),
    critics: Any = None,
    episodes: int = 50,
    seed: int = 0,
    attack_seed: int = 0,
    xi: float = 0.1,
    num_envs: int = 10,
    workers: int = 0,
    on_step: Callable[[int], None] | None = None,
) -> list[EvalResult]:
    """Paired evaluation of any policy, natural and attacked: ``evaluate_agent`` for a foreign one.

    ``policy`` is a ``robustsafe.policy.Policy`` or what ``as_policy`` adapts (a torch module, a
    Stable-Baselines3 model, a numpy callable). ``env`` is an env id (a ``VectorEnv`` of
    ``min(num_envs, episodes)`` envs on ``workers`` processes is built and closed) or a
    ``VectorEnv``. ``critics`` (``QCritics`` or a critics file from ``save_critics``) serve
    ``mc``, ``mr``, ``minr``, ``mix:W`` and ``amad``. Epsilon is in raw observation units.
    """
    from robustsafe.critics import QCritics
    from robustsafe.fit_critics import load_critics
    from robustsafe.policy import as_policy, check_policy_output

    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes must be an integer >= 1, got {episodes!r}")
    policy = as_policy(policy)
    if isinstance(critics, (str, Path)):
        critics = load_critics(critics)
    if critics is not None and not isinstance(critics, QCritics):
        raise TypeError(f"critics must be QCritics or a critics file, got {type(critics).__name__}")
    check_attacks_for(policy, attacks, critics)
    own = isinstance(env, str)
    vec = (
        VectorEnv(env, min(num_envs, episodes), seed=seed, workers=workers)
        if isinstance(env, str)
        else env
    )
    try:
        if critics is not None:  # before any episode: critics fitted on another task
            fitted_on = getattr(critics, "env_id", None)  # recorded in their file
            if fitted_on is not None and fitted_on != vec.env_id:
                raise ValueError(
                    f"the critics were fitted on {fitted_on}, not {vec.env_id}: fit them on "
                    "this task (fit-critics --env)"
                )
            first = next(m for m in critics.q_cost.modules() if isinstance(m, torch.nn.Linear))
            if first.in_features != vec.obs_dim + vec.act_dim:
                raise ValueError(
                    f"the critics take {first.in_features} inputs (observation + action), "
                    f"the env {vec.obs_dim} + {vec.act_dim}: they were fitted on another task"
                )
        agent = policy_as_agent(policy, critics)
        check_compatible(agent, vec)  # type: ignore[arg-type]  # sizes first: the clearer word
        # as the episodes will run it: in float64 (a module that insists on float32 fails here)
        actor = float64_agent(agent).actor  # type: ignore[arg-type]
        check_policy_output(actor, vec.obs_dim, vec.act_dim, torch.float64)
        return evaluate_agent(
            agent,  # type: ignore[arg-type]
            vec,
            episodes=episodes,
            seed=seed,
            attacks=attacks,
            epsilons=epsilons,
            attack_seed=attack_seed,
            xi=xi,
            on_step=on_step,
        )
    finally:
        if own:
            vec.close()


def format_paired_table(results: Sequence[EvalResult]) -> str:
    """Per attacker and epsilon: mean reward and cost, and their paired change against natural
    (episode i attacked minus episode i natural: mean and its standard error)."""
    natural = results[0]
    r0 = np.array([e.reward for e in natural.episodes])
    c0 = np.array([e.cost for e in natural.episodes])
    w = max([10, *(len(r.label) for r in results)])
    head = (
        f"{'attack':<{w}} {'epsilon':>8} {'reward':>9} {'Δreward (paired)':>18} "
        f"{'cost':>8} {'Δcost (paired)':>16} {'n':>4}"
    )
    lines = [head, "-" * len(head)]
    for r in results:
        rr = np.array([e.reward for e in r.episodes])
        cc = np.array([e.cost for e in r.episodes])
        n = len(rr)
        dr, dc = rr - r0[:n], cc - c0[:n]
        lines.append(
            f"{r.label:<{w}} {r.epsilon:>8.4g} {rr.mean():>9.1f} "
            f"{dr.mean():>+9.1f} ± {_stderr(dr, 6, 1)} {cc.mean():>8.2f} "
            f"{dc.mean():>+8.2f} ± {_stderr(dc, 5, 2)} {n:>4}"
        )
    return "\n".join(lines)
