"""Bring your own policy: the ``Policy`` protocol the attacks and the evaluation use, and adapters.

The protocol (what ``robustsafe.attacks``, ``evaluate_policy`` and ``fit_policy_critics`` call):

- ``deterministic_action(obs) -> actions``: a batch of observations, a floating
  ``(batch, obs_dim)`` torch tensor, in; the actions the policy executes when evaluated, a
  ``(batch, act_dim)`` tensor of the same dtype, out. For the gradient attacks (``mc``, ``mr``,
  ``minr``, ``mix:W``, ``mad``, ``amad``) it must be torch-differentiable with respect to
  ``obs``. The evaluation runs it in float64 (see ``robustsafe.evaluate``): an ``nn.Module``
  policy is copied and converted with ``.double()``.
- ``differentiable: bool``: False for a black box; the gradient attackers then refuse it.
- ``obs_dim`` / ``act_dim``: ``int``, or ``None`` where unknown (then the environment's are
  used and nothing is checked).
- ``distribution(obs) -> torch.distributions.Normal`` (MAD and AMAD only): the diagonal
  Gaussian whose KL divergence MAD maximises. It may live in a latent space linked to the
  actions by a fixed bijection (SAC's pre-tanh Gaussian): KL divergence is invariant under
  such a map. A policy without one may raise; MAD and AMAD then fail with its message.
- ``squash(u) -> actions`` (optional): the fixed bijection from ``distribution``'s space to
  actions where that distribution is latent (SAC's ``low + (high - low) (tanh(u) + 1) / 2``);
  a sampled action is ``squash`` of a draw (``sample_actions``). Without it a draw is an action.
- ``action_std`` (optional): a float or ``(act_dim,)`` tensor, the Gaussian exploration noise
  ``fit_policy_critics`` adds to the deterministic action when it collects data and when it
  samples the TD target's next action. A foreign policy without one gets
  ``DEFAULT_EXPLORATION_STD`` unless the caller gives ``exploration_std``.

The project's own ``GaussianActor`` satisfies the protocol. Adapters:

- ``TorchPolicy(module, action_std=None)``: a plain ``torch.nn.Module`` mapping observations to
  actions. Without ``action_std`` MAD and AMAD are refused (no distribution: MAD's objective
  would be an arbitrary choice); with it, MAD uses ``N(module(obs), action_std^2)``, whose KL is
  ``|a - a~|^2 / (2 std^2)`` per dimension.
- ``SB3Policy(model)``: a Stable-Baselines3 PPO, A2C or SAC model (or its ``.policy``), through
  its own torch modules; ``load_sb3`` reads a saved ``.zip``.
- ``BlackBoxPolicy(fn)``: any callable from a numpy batch to a numpy batch of actions; only
  the attackers ``none`` and ``random`` work on it.

``as_policy(obj)`` picks the adapter.
"""

from __future__ import annotations

import inspect
import json
import pickle
import zipfile
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch
from torch import Tensor, nn
from torch.distributions import Normal

from robustsafe.runstate import load_error_reason
from robustsafe.user_code import error_line, import_user_module

# The attackers that never differentiate through the policy (the black box's choice).
GRADIENT_FREE_ATTACKERS = ("none", "random")
# Exploration noise (std, in action units) for fitting critics to a policy that has none.
DEFAULT_EXPLORATION_STD = 0.3


@runtime_checkable
class Policy(Protocol):
    """What an attacked policy provides (see the module docstring)."""

    differentiable: bool

    @property
    def obs_dim(self) -> int | None: ...

    @property
    def act_dim(self) -> int | None: ...

    def deterministic_action(self, obs: Tensor) -> Tensor: ...

    def distribution(self, obs: Tensor) -> Normal: ...


def black_box_error(attacker: str, policy: object) -> TypeError:
    return TypeError(
        f"attacker {attacker!r} follows gradients through the policy, but "
        f"{type(policy).__name__} is a black box (not torch-differentiable). Attackers that "
        f"work on a black box: {', '.join(GRADIENT_FREE_ATTACKERS)}. For the others, wrap a "
        "torch module with TorchPolicy (or a Stable-Baselines3 model with SB3Policy)"
    )


def policy_dtype(policy: object) -> torch.dtype | None:
    """The floating dtype of ``policy``'s parameters (None: no parameters, e.g. a black box)."""
    if isinstance(policy, nn.Module):
        for p in policy.parameters():
            if p.is_floating_point():
                return p.dtype
        for b in policy.buffers():
            if b.is_floating_point():
                return b.dtype
    return None


def _std_tensor(std: float | Sequence[float] | Tensor, act_dim: int | None) -> Tensor:
    t = torch.as_tensor(std, dtype=torch.float32).reshape(-1)
    if not bool(torch.all(torch.isfinite(t) & (t > 0))):
        raise ValueError(f"action_std must be finite and > 0, got {std}")
    if act_dim is not None and t.numel() not in (1, act_dim):
        raise ValueError(f"action_std has {t.numel()} entries for {act_dim} action dimensions")
    return t


class TorchPolicy(nn.Module):
    """A plain ``nn.Module`` (``(batch, obs_dim)`` -> ``(batch, act_dim)``) as a ``Policy``.

    ``obs_dim`` defaults to the ``in_features`` of the module's first ``nn.Linear`` (None if it
    has none). Actions leave the module as they are: the environment clips them to its box, so a
    module whose output can leave the box should include the clipping, for the critics and the
    attacks to see the executed action. ``action_std`` (float or per dimension) gives the
    Gaussian MAD and AMAD use, and the exploration noise of ``fit_policy_critics``.
    """

    differentiable = True
    _std: Tensor | None  # a buffer (register_buffer below)

    def __init__(
        self,
        module: nn.Module,
        action_std: float | Sequence[float] | Tensor | None = None,
        obs_dim: int | None = None,
        act_dim: int | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(module, nn.Module):
            raise TypeError(f"TorchPolicy wraps a torch.nn.Module, got {type(module).__name__}")
        self.module = module
        if obs_dim is None:
            first = next((m for m in module.modules() if isinstance(m, nn.Linear)), None)
            obs_dim = None if first is None else int(first.in_features)
        self._obs_dim = obs_dim
        self._act_dim = act_dim
        if action_std is None:
            self.register_buffer("_std", None)
        else:
            self.register_buffer("_std", _std_tensor(action_std, act_dim))

    @property
    def obs_dim(self) -> int | None:
        return self._obs_dim

    @property
    def act_dim(self) -> int | None:
        return self._act_dim

    @property
    def action_std(self) -> Tensor | None:
        return self._std

    def deterministic_action(self, obs: Tensor) -> Tensor:
        return self.module(obs)

    def forward(self, obs: Tensor) -> Tensor:
        return self.deterministic_action(obs)

    def distribution(self, obs: Tensor) -> Normal:
        if self._std is None:
            raise ValueError(
                "MAD and AMAD maximise the KL divergence of the policy's action distribution, "
                "and this TorchPolicy has none: give it one (TorchPolicy(module, "
                "action_std=...) in Python, --action-std on the command line; MAD then uses "
                "N(module(obs), action_std^2)), or use the critic attackers mc, mr, minr, mix:W"
            )
        mean = self.deterministic_action(obs)
        return Normal(mean, self._std.to(mean.dtype).expand_as(mean))


class BlackBoxPolicy:
    """A numpy callable as a ``Policy``: ``fn(obs (batch, obs_dim) ndarray) -> (batch, act_dim)``.

    Not differentiable: only the attackers ``none`` and ``random`` work on it (the others are
    refused with a message that says so). The evaluation passes float64 observations.
    """

    differentiable = False

    def __init__(
        self,
        fn: Callable[[np.ndarray], Any],
        obs_dim: int | None = None,
        act_dim: int | None = None,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"BlackBoxPolicy wraps a callable, got {type(fn).__name__}")
        self.fn = fn
        self.obs_dim = obs_dim
        self.act_dim = act_dim

    def deterministic_action(self, obs: Tensor) -> Tensor:
        x = obs.detach().cpu().numpy()
        act = np.asarray(self.fn(x), dtype=np.float64)
        if act.ndim != 2 or act.shape[0] != x.shape[0]:
            raise ValueError(
                f"the black-box policy returned shape {act.shape} for {x.shape[0]} observations; "
                "it must return a (batch, act_dim) array"
            )
        return torch.as_tensor(act, dtype=obs.dtype, device=obs.device)

    def __call__(self, obs: Tensor) -> Tensor:
        return self.deterministic_action(obs)

    def distribution(self, obs: Tensor) -> Normal:
        raise black_box_error("mad", self)


# ----------------------------------------------------------------------------- SB3


def _sb3_policy(model: Any) -> Any:
    """The torch policy of an SB3 model (or the policy itself), typed Any: SB3's own modules."""
    policy = getattr(model, "policy", model)
    if not isinstance(policy, nn.Module):
        raise TypeError(f"not a Stable-Baselines3 model or policy: {type(model).__name__}")
    return policy


class SB3Policy(nn.Module):
    """A Stable-Baselines3 PPO / A2C (``ActorCriticPolicy``) or SAC policy as a ``Policy``.

    The actions are computed with the model's own torch modules, differentiably, and equal
    ``model.predict(obs, deterministic=True)``:

    - PPO / A2C: ``clip(mean, low, high)``. SB3 samples from an unbounded Gaussian and clips
      the action to the box when it acts (``squash_output=False``); its deterministic action is
      the clipped mean. The clip has zero gradient where the mean is outside the box, as the
      executed action does. ``distribution`` is the unclipped Gaussian N(mean, exp(log_std)^2)
      SB3 samples from; ``action_std`` (fit_policy_critics' exploration) is exp(log_std).
    - SAC: ``low + (tanh(mu) + 1) (high - low) / 2`` (tanh squashing, rescaled to the box).
      ``distribution`` is the pre-tanh Gaussian N(mu, exp(log_std)^2) with log_std clamped to
      SB3's [-20, 2]: the KL of the squashed distributions equals its KL (a bijection).
      No fixed ``action_std``: fit_policy_critics uses its exploration_std.

    Only flat Box observations with SB3's ``FlattenExtractor`` and no gSDE (``use_sde``) are
    supported. Observation normalisation done outside the model (``VecNormalize``) is not part
    of it: wrap the policy in a module that applies it, or the attack sees other inputs.
    """

    differentiable = True
    act_low: Tensor  # buffers (register_buffer below)
    act_high: Tensor
    extractor: nn.Module  # the SB3 actor's modules, shared with the model
    latent: nn.Module
    mu: nn.Module
    log_std: nn.Parameter  # PPO / A2C
    log_std_net: nn.Module  # SAC

    def __init__(self, model: Any) -> None:
        super().__init__()
        from stable_baselines3.common.torch_layers import FlattenExtractor

        policy = _sb3_policy(model)
        if hasattr(policy, "action_net") and hasattr(policy, "mlp_extractor"):
            self.kind = "actor_critic"
            extractor = policy.pi_features_extractor
        elif hasattr(getattr(policy, "actor", None), "mu"):
            self.kind = "sac"
            extractor = policy.actor.features_extractor
        else:
            raise TypeError(
                f"unsupported Stable-Baselines3 policy {type(policy).__name__}: PPO, A2C "
                "(ActorCriticPolicy) and SAC are supported"
            )
        if getattr(policy, "use_sde", False) or getattr(
            getattr(policy, "actor", None), "use_sde", False
        ):
            raise ValueError("SB3 policies with gSDE (use_sde=True) are not supported")
        if not isinstance(extractor, FlattenExtractor):
            raise ValueError(
                f"only SB3's FlattenExtractor (flat Box observations) is supported, "
                f"got {type(extractor).__name__}"
            )
        space = policy.action_space
        if not hasattr(space, "low") or len(space.shape) != 1:
            raise ValueError(f"only flat Box action spaces are supported, got {space}")
        # Only the actor's modules (shared with the model, not copied): the evaluation deep-copies
        # the policy, and a trained SB3 policy holds non-leaf tensors (its last distribution).
        if self.kind == "actor_critic":
            self.extractor = policy.pi_features_extractor
            self.latent = policy.mlp_extractor.policy_net  # MlpExtractor.forward_actor
            self.mu = policy.action_net
            self.log_std = policy.log_std
        else:
            self.extractor = policy.actor.features_extractor
            self.latent = policy.actor.latent_pi
            self.mu = policy.actor.mu
            self.log_std_net = policy.actor.log_std
        self.eval()
        self.register_buffer("act_low", torch.as_tensor(space.low, dtype=torch.float32))
        self.register_buffer("act_high", torch.as_tensor(space.high, dtype=torch.float32))
        self._obs_dim = int(np.prod(policy.observation_space.shape))
        self._act_dim = int(space.shape[0])

    @property
    def obs_dim(self) -> int:
        return self._obs_dim

    @property
    def act_dim(self) -> int:
        return self._act_dim

    @property
    def action_std(self) -> Tensor | None:
        if self.kind == "actor_critic":
            return self.log_std.detach().exp()
        return None

    def _gaussian(self, obs: Tensor) -> tuple[Tensor, Tensor]:
        # SB3's extract_features would cast to float32 (preprocess_obs); call the modules.
        latent = self.latent(self.extractor(obs))
        mean = self.mu(latent)
        if self.kind == "actor_critic":
            return mean, self.log_std.exp().expand_as(mean)
        log_std = self.log_std_net(latent).clamp(-20.0, 2.0)  # SB3's LOG_STD_MIN, LOG_STD_MAX
        return mean, log_std.exp()

    def deterministic_action(self, obs: Tensor) -> Tensor:
        mean, _ = self._gaussian(obs)
        if self.kind == "actor_critic":
            low, high = self.act_low.to(mean.dtype), self.act_high.to(mean.dtype)
            return torch.maximum(torch.minimum(mean, high), low)
        return self.squash(mean)

    def squash(self, u: Tensor) -> Tensor:
        """A draw of ``distribution`` as an action: SAC's tanh rescaled to the box; PPO's and
        A2C's draw as it is (SB3 clips it when it acts, as the environment does)."""
        if self.kind == "actor_critic":
            return u
        low, high = self.act_low.to(u.dtype), self.act_high.to(u.dtype)
        return low + 0.5 * (torch.tanh(u) + 1.0) * (high - low)

    def forward(self, obs: Tensor) -> Tensor:
        return self.deterministic_action(obs)

    def distribution(self, obs: Tensor) -> Normal:
        mean, std = self._gaussian(obs)
        return Normal(mean, std)


def _sb3_algo(data: dict) -> str:
    if "target_entropy" in data:
        return "sac"
    if "clip_range" in data:
        return "ppo"
    if "gae_lambda" in data:
        return "a2c"
    raise ValueError("cannot tell the SB3 algorithm of this file (PPO, A2C and SAC are supported)")


def load_sb3(path: str | Path, env_id: str | None = None, trust_pickle: bool = False) -> SB3Policy:
    """A saved Stable-Baselines3 model (``model.save(path)``) as an ``SB3Policy``.

    SB3 zips hold pickles (cloudpickle: the policy class, the spaces, non-JSON settings), and
    unpickling a file can run any code in it. By default nothing is unpickled: the policy is
    rebuilt from the JSON settings in the zip and the spaces of ``env_id`` (required then),
    and only its weights (``policy.pth``) are read, with ``torch.load(weights_only=True)``.
    That works for SB3's ``MlpPolicy`` with JSON-plain ``policy_kwargs`` (``net_arch`` etc.);
    a model with pickled settings (a custom activation or extractor, ...) is refused unless
    ``trust_pickle=True``, which loads it with SB3's own ``load`` (run only on files you trust).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no Stable-Baselines3 model at {path}")
    from stable_baselines3 import A2C, PPO, SAC

    try:
        with zipfile.ZipFile(path) as zf:
            data = json.loads(zf.read("data"))
            if not isinstance(data, dict):
                raise ValueError(f"{path}: its 'data' is not a JSON object of settings")
            algo = _sb3_algo(data)
            if trust_pickle:
                cls: Any = {"ppo": PPO, "a2c": A2C, "sac": SAC}[algo]
                return SB3Policy(cls.load(path, device="cpu"))
            with zf.open("policy.pth") as f:
                import io

                raw = f.read()
            try:
                state = torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)
            except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError) as err:
                raise ValueError(
                    f"{path}: its policy.pth cannot be read ({load_error_reason(err)})"
                ) from None
    except (zipfile.BadZipFile, KeyError, json.JSONDecodeError, zlib.error, EOFError) as err:
        # zlib.error / EOFError: a member whose compressed bytes are damaged or cut short
        raise ValueError(f"{path} is not a Stable-Baselines3 model file ({err})") from None
    kwargs = data.get("policy_kwargs") or {}
    if not isinstance(kwargs, dict) or ":serialized:" in json.dumps(kwargs):
        raise ValueError(
            f"{path} has pickled policy settings ({sorted(kwargs)}), which cannot be read "
            "without running code from the file; pass trust_pickle=True (--trust-pickle) if "
            "you trust it"
        )
    if env_id is None:
        raise ValueError("loading an SB3 model without unpickling needs the env id (env_id=)")
    from robustsafe.envs import make

    env = make(env_id)
    try:
        obs_space, act_space = env.env.observation_space, env.env.action_space
    finally:
        env.close()
    if algo == "sac":
        from stable_baselines3.sac.policies import SACPolicy as cls
    else:
        from stable_baselines3.common.policies import ActorCriticPolicy as cls
    try:
        policy = cls(obs_space, act_space, lambda _: 0.0, **kwargs)
        policy.load_state_dict(state)
    except (RuntimeError, TypeError, ValueError) as err:
        raise ValueError(
            f"{path}: its weights do not fit an SB3 {algo.upper()} MlpPolicy on {env_id} "
            f"({str(err).splitlines()[0]}): was it trained on another task? If it was trained "
            "here with other network settings, trust_pickle=True (--trust-pickle) loads them "
            "from the file, which runs the file's code: only for a file you trust"
        ) from None
    return SB3Policy(policy)


# ----------------------------------------------------------------------------- helpers


def _is_sb3(obj: object) -> bool:
    mod = type(obj).__module__ or ""
    pol = type(getattr(obj, "policy", None)).__module__ or ""
    return mod.startswith("stable_baselines3") or pol.startswith("stable_baselines3")


def as_policy(obj: object, action_std: float | Sequence[float] | None = None) -> Policy:
    """``obj`` as a ``Policy``: returned as is if it is one; an SB3 model -> ``SB3Policy``; an
    ``nn.Module`` -> ``TorchPolicy(obj, action_std)``; another callable -> ``BlackBoxPolicy``."""
    if _is_sb3(obj):
        return SB3Policy(obj)
    if isinstance(obj, Policy) and hasattr(obj, "deterministic_action"):
        return obj
    if isinstance(obj, nn.Module):
        return TorchPolicy(obj, action_std)
    if callable(obj):
        return BlackBoxPolicy(obj)
    raise TypeError(
        f"cannot use a {type(obj).__name__} as a policy: give a Policy, a torch.nn.Module, a "
        "Stable-Baselines3 model or a numpy callable"
    )


def load_policy_spec(spec: str, action_std: float | None = None) -> Policy:
    """``module:attr`` or ``path/file.py:attr`` (``attr()`` calls it first) -> a ``Policy``.

    This imports and runs the named Python code: name only code you trust (your own).
    """
    target, sep, attr = spec.rpartition(":")
    if not sep or not target or not attr:
        raise ValueError(f"--policy {spec!r}: give module:attr or path/to/file.py:attr")
    call = attr.endswith("()")
    attr = attr[:-2] if call else attr
    module = import_user_module(target, f"--policy {spec!r}")
    try:
        obj = getattr(module, attr)
    except AttributeError as err:
        raise ValueError(f"--policy {spec!r}: {err}") from None
    if call:
        try:
            obj = obj()
        except Exception as err:
            why = error_line(err)
            raise ValueError(f"--policy {spec!r}: calling {attr}() raised {why}") from None
    elif isinstance(obj, type) or (inspect.isfunction(obj) and _takes_no_argument(obj)):
        raise ValueError(  # a class or a factory named without its () call
            f"--policy {spec!r}: {attr} takes no observation; if it builds the policy, call "
            f"it: {target}:{attr}()"
        )
    return as_policy(obj, action_std)


def check_policy_output(policy: Policy, obs_dim: int, act_dim: int, dtype: torch.dtype) -> None:
    """ValueError, one line, unless ``policy`` maps a batch of two observations (made up, in
    ``dtype``: no env is stepped; neither all zeros, where a policy dividing by the observation's
    norm would be NaN) to a finite (2, ``act_dim``) tensor of actions: a policy that returns a
    list, the wrong width, NaN, or fails on ``dtype``, before any episode runs."""
    probe = torch.stack([torch.full((obs_dim,), 0.5), torch.linspace(-1.0, 1.0, obs_dim) + 0.1])
    try:
        with torch.no_grad():
            act = policy.deterministic_action(probe.to(dtype))
    except Exception as err:
        raise ValueError(
            f"the policy fails on a batch of {dtype} observations ({error_line(err)})"
        ) from None
    if not isinstance(act, Tensor):
        raise ValueError(f"the policy returned a {type(act).__name__}, not a tensor of actions")
    if tuple(act.shape) != (2, act_dim):
        raise ValueError(
            f"the policy returned actions of shape {tuple(act.shape)} for 2 observations; the "
            f"env takes ({act_dim},) each"
        )
    bad = ~torch.isfinite(act).all(dim=1)
    if bool(bad.any()):
        raise ValueError(
            "the policy returned a non-finite action (NaN or inf) for observation "
            f"{probe[bad][0].tolist()}"
        )


def _takes_no_argument(fn: Any) -> bool:
    try:
        return not inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def sample_actions(policy: Policy, obs: Tensor) -> Tensor:
    """Actions drawn from the policy: a draw of ``distribution(obs)``, mapped by the policy's
    ``squash`` where it has one (a squashed Gaussian's draw is pre-tanh, not an action)."""
    draw = policy.distribution(obs).sample()
    squash = getattr(policy, "squash", None)
    return draw if squash is None else squash(draw)


@torch.no_grad()
def predict(policy: Policy, obs: Any, deterministic: bool = True) -> np.ndarray:
    """Actions (float32 numpy) for observations of any float or int dtype, one or a batch.

    ``deterministic=False`` samples the policy (``sample_actions``; a Gaussian's draw
    unclipped: the environment clips). Observations are cast to the policy's dtype (float64
    is numpy's default).
    """
    x = np.asarray(obs)
    if x.dtype.kind not in "fiu":
        raise TypeError(f"observations must be numbers, got dtype {x.dtype}")
    single = x.ndim == 1
    if x.ndim not in (1, 2):
        raise ValueError(f"observations must be (obs_dim,) or (batch, obs_dim), got {x.shape}")
    t = torch.as_tensor(np.atleast_2d(x))
    t = t.to(policy_dtype(policy) or torch.float64)
    if deterministic:
        act = policy.deterministic_action(t)
    else:
        act = sample_actions(policy, t)
    out = act.detach().cpu().numpy().astype(np.float32)
    return out[0] if single else out
