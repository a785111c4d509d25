"""The policy of ``evaluate`` and ``fit-critics``: a run (``--run``) or a foreign policy
(``--policy``, ``--sb3``)."""

from __future__ import annotations

import argparse

from robustsafe.cli._common import CLIError


def _one_policy_source(args: argparse.Namespace) -> None:
    given = [f"--{k}" for k in ("run", "policy", "sb3") if getattr(args, k) is not None]
    if len(given) > 1:
        raise CLIError(f"give one of --run, --policy, --sb3, not {' and '.join(given)}")
    if args.run is not None and getattr(args, "critics", None) is not None:
        raise CLIError("--critics is for --policy/--sb3; a --run agent has its own critics")
    if args.trust_pickle and args.sb3 is None:  # an option that does nothing is a mistake
        raise CLIError("--trust-pickle is for --sb3 (how its zip is loaded); drop it")
    if args.action_std is not None and args.policy is None:
        raise CLIError("--action-std is for --policy (a torch module's exploration); drop it")


def _foreign_policy(args: argparse.Namespace):
    """The policy of --policy or --sb3 (both need --env)."""
    from robustsafe.policy import load_policy_spec, load_sb3

    if args.policy is None and args.sb3 is None:
        raise CLIError("give the policy: --run (a RobustSafe agent), --policy or --sb3")
    if not args.env:
        raise CLIError("--policy and --sb3 need --env (the environment id the policy acts in)")
    try:
        if args.sb3 is not None:
            try:
                import stable_baselines3  # noqa: F401
            except ImportError:
                raise CLIError(
                    "--sb3 needs Stable-Baselines3: pip install 'robustsafe[sb3]'"
                ) from None
            return load_sb3(args.sb3, env_id=args.env, trust_pickle=args.trust_pickle)
        return load_policy_spec(args.policy, action_std=args.action_std)
    except (FileNotFoundError, ValueError, TypeError) as err:
        raise CLIError(str(err)) from None


def _add_policy_options(p: argparse.ArgumentParser) -> None:
    """``--run``, ``--policy``, ``--sb3``, ``--trust-pickle``, ``--action-std``."""
    p.add_argument(
        "--run",
        help="run directory or agent .pt file (default: none; give one of --run, --policy, --sb3)",
    )
    p.add_argument(
        "--policy",
        metavar="MODULE:ATTR",
        help="your own policy instead of --run: module:attr or file.py:attr (attr() calls it); "
        "a torch.nn.Module, a robustsafe Policy or a numpy callable (black box). Runs that "
        "code: name only code you trust. Needs --env (default: none)",
    )
    p.add_argument(
        "--sb3",
        metavar="ZIP",
        help="a Stable-Baselines3 PPO/A2C/SAC model file; needs --env (default: none)",
    )
    p.add_argument(
        "--trust-pickle",
        action="store_true",
        help="--sb3: load the zip with SB3's own loader, which unpickles it (can run code "
        "from the file). Without it only the weights are read (weights_only), for MlpPolicy "
        "models with plain settings",
    )
    p.add_argument(
        "--action-std",
        type=float,
        help="--policy with a torch module: std of the Gaussian around its action that MAD "
        "measures (without it MAD and AMAD are refused) and fit-critics explores with "
        "(default: none)",
    )
