"""``robustsafe fit-critics``: the attackers' Q critics for an agent or a foreign policy."""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

from robustsafe.cli._common import (
    CLIError,
    _check_output,
    _load_run_agent,
    _open_vec_env,
    _write_or_keep,
    add_allow_other_env_option,
    add_env_workers_option,
    run_agent_env,
)
from robustsafe.cli.policy_source import _add_policy_options, _foreign_policy, _one_policy_source
from robustsafe.runstate import RunLockedError, check_unlocked, run_lock


def cmd_fit_critics(args: argparse.Namespace) -> int:
    import torch

    from robustsafe.agent import save_agent
    from robustsafe.fit_critics import fit_critics

    torch.set_num_threads(1)
    _one_policy_source(args)
    if args.run is None:
        return _fit_critics_foreign(args)
    if args.exploration_std is not None:
        raise CLIError(
            "--exploration-std is for --policy/--sb3: a --run agent explores with its own std"
        )
    agent = _load_run_agent(args.run)
    if args.steps < 1:
        raise CLIError(f"--steps must be >= 1, got {args.steps}")
    run = Path(args.run)
    src = run / "agent.pt" if run.is_dir() else run
    if args.out is None and not args.force:
        raise CLIError(
            f"fit-critics writes a new agent file: pass --out FILE.pt, or --force to replace {src}"
        )
    out = Path(args.out) if args.out else src
    _check_output(out, args.force, "agent-critics.pt", own=("agent.pt",))
    # an agent written into a run directory: not while a training writes there
    run_dir = out.parent if (out.parent / "config.yaml").is_file() else None
    if run_dir is not None:
        try:
            check_unlocked(run_dir)
        except RunLockedError as err:
            raise CLIError(str(err)) from None
    env_id = run_agent_env(args, agent, "its attackers' critics would be fitted on")
    vec = _open_vec_env(args, env_id, args.num_envs, agent.config.env_kwargs)
    try:
        history = fit_critics(
            agent,
            vec,
            steps=args.steps,
            seed=args.seed,
            on_epoch=lambda m: print(
                f"steps {m['env_steps']:>8.0f}  TD loss Q_r {m['loss_q_reward']:.4f}  "
                f"Q_c {m['loss_q_cost']:.4f}",
                flush=True,
            ),
        )
    except ValueError as err:
        raise CLIError(str(err)) from None
    finally:
        vec.close()
    nets = (agent.actor, agent.v_reward, agent.v_cost, agent.critics)
    with contextlib.ExitStack() as held:
        if run_dir is not None:  # held while writing: a training cannot start meanwhile
            try:
                held.enter_context(run_lock(run_dir))
            except RunLockedError as err:
                raise CLIError(f"{err}; the fitted agent was not written") from None
        _write_or_keep(out, lambda path: save_agent(path, agent.config, *nets, agent.epoch))
    print(f"fitted Q_r and Q_c on {history[-1]['env_steps']:.0f} steps; agent written to {out}")
    return 0


def _fit_critics_foreign(args: argparse.Namespace) -> int:
    from robustsafe.fit_critics import fit_policy_critics, resolve_exploration_std, save_critics

    if args.steps < 1:
        raise CLIError(f"--steps must be >= 1, got {args.steps}")
    if args.out is None:
        raise CLIError("--policy/--sb3: pass --out FILE.pt, the critics file to write")
    out = Path(args.out)
    _check_output(out, args.force, "critics.pt")
    policy = _foreign_policy(args)
    vec = _open_vec_env(args, args.env, args.num_envs)
    try:
        std = resolve_exploration_std(policy, vec.act_dim, args.exploration_std)
        print(
            f"exploration noise std {[round(float(x), 4) for x in std]} around the policy's action"
        )
        critics = fit_policy_critics(
            policy,
            vec,
            steps=args.steps,
            exploration_std=std,
            seed=args.seed,
            on_epoch=lambda m: print(
                f"steps {m['env_steps']:>8.0f}  TD loss Q_r {m['loss_q_reward']:.4f}  "
                f"Q_c {m['loss_q_cost']:.4f}",
                flush=True,
            ),
        )
    except (ValueError, TypeError) as err:
        raise CLIError(str(err)) from None
    finally:
        vec.close()
    _write_or_keep(
        out, lambda path: save_critics(path, critics, vec.obs_dim, vec.act_dim, args.env)
    )
    print(f"critics written to {out}; use them with evaluate --critics {out}")
    return 0


def add_fit_critics(sub: argparse._SubParsersAction) -> None:
    f = sub.add_parser("fit-critics", help="fit the attackers' Q critics for an agent")
    _add_policy_options(f)
    f.add_argument(
        "--exploration-std",
        type=float,
        help="--policy/--sb3: Gaussian noise std around the policy's action while fitting "
        "(default: the policy's own std if it has one, else 0.3)",
    )
    f.add_argument(
        "--steps",
        type=int,
        default=200_000,
        help="on-policy env steps to collect, rounded up to whole rollouts (--num-envs episodes)",
    )
    f.add_argument(
        "--out",
        help="agent file to write (default: none, required unless --force); with --policy/--sb3 "
        "the critics file (evaluate --critics)",
    )
    f.add_argument(
        "--force", action="store_true", help="replace --out if it exists (or the input agent)"
    )
    f.add_argument("--env", help="environment id (default: the agent's)")
    add_allow_other_env_option(f, "fit a --run agent's critics")
    f.add_argument("--seed", type=int, default=0, help="seed of the environments")
    f.add_argument("--num-envs", type=int, default=20, help="parallel environments")
    add_env_workers_option(f, default=2)
    f.set_defaults(func=cmd_fit_critics)
