"""``robustsafe evaluate``: natural and attacked episodes of an agent or a foreign policy."""

from __future__ import annotations

import argparse
from pathlib import Path

from robustsafe.choices import DETERMINISTIC_ACTIONS
from robustsafe.cli._common import (
    CLIError,
    _agent_eval_fields,
    _load_run_agent,
    _open_vec_env,
    _write_or_keep,
    add_allow_large_eps_option,
    add_allow_other_env_option,
    add_attack_seed_option,
    add_env_workers_option,
    check_attack_seed,
    check_epsilon_budget,
    check_eval_outputs,
    run_agent_env,
    set_deterministic_action,
    sweep_prefix,
)
from robustsafe.cli.policy_source import _add_policy_options, _foreign_policy, _one_policy_source
from robustsafe.experiments.launchers import recorded_path
from robustsafe.provenance import code_version

SAMPLED_LABEL = "sampled from pi(.|s~) (a diagnostic; attacks aim at the deterministic action)"


def cmd_evaluate(args: argparse.Namespace) -> int:
    import torch

    torch.set_num_threads(1)  # small-batch inference beside busy env workers
    _check_shared_options(args)
    if args.run is None:
        _refuse_run_only_options(args)
        return _evaluate_foreign(args)
    agent, env_id = _load_checked_agent(args)
    if args.episodes < 1:
        raise CLIError(f"--episodes must be >= 1, got {args.episodes}")
    attacks = _attack_list(args.attacks)
    if args.eps is None:  # the budget the run was trained and tabulated at
        args.eps = repr(float(agent.config.robust.epsilon))  # every digit: the run's own budget
    out = Path(args.out) if args.out else None
    if out is not None:  # before any episode runs: a bad path must not waste the work
        check_eval_outputs(out, args.force, args.eps)
    epsilons = _checked_epsilons(args, attacks)
    _check_video(args, attacks, epsilons, env_id, agent.config.env_kwargs)
    results = _run_agent_episodes(args, agent, env_id, attacks, epsilons)
    payload = _run_payload(args, agent, env_id, results)
    _print_run_results(args, agent, env_id, results)
    _save_results(out, payload, results, attacks, epsilons, env_id)
    return _record_videos(args, agent, env_id, attacks, epsilons, agent.config.env_kwargs)


def _check_shared_options(args: argparse.Namespace) -> None:
    """The checks of every evaluation, --run or foreign policy, in their order."""
    _one_policy_source(args)
    _import_attacker_modules(args.attacker_module or [])
    if not 0.0 < args.xi <= 1.0:
        raise CLIError(
            f"--xi must be in (0, 1] (the fraction of states AMAD attacks), got {args.xi}"
        )
    check_attack_seed(args)


def _refuse_run_only_options(args: argparse.Namespace) -> None:
    """Refuse the options that only a --run agent takes."""
    if args.sample_actions:
        raise CLIError(
            "--sample-actions applies to --run agents (their own Gaussian actor); a "
            "--policy or --sb3 policy is evaluated with its deterministic action"
        )
    if args.deterministic_action is not None:
        raise CLIError(
            "--deterministic-action applies to --run agents; a --policy or --sb3 policy "
            "acts as its own code decides"
        )


def _load_checked_agent(args: argparse.Namespace) -> tuple:
    """The --run agent, set up as asked, and the env it is evaluated on."""
    agent = _load_run_agent(args.run)
    set_deterministic_action(agent, args.deterministic_action)
    if args.sample_actions and args.video is not None:
        raise CLIError("--video records deterministic actions: leave out --sample-actions")
    env_id = run_agent_env(args, agent, "its numbers there would describe")
    return agent, env_id


def _checked_epsilons(args: argparse.Namespace, attacks: list[str]) -> list[float]:
    """The epsilons of --eps, checked with every attacker's name before any episode runs."""
    from robustsafe.evaluate import parse_epsilons

    try:
        epsilons = parse_epsilons(args.eps)
        check_epsilon_budget(epsilons, args.allow_large_eps, attacks)
        from robustsafe.attacks import make_attacker

        for name in attacks:  # check every name before any episode runs
            if name != "amad":
                make_attacker(name)
    except (ValueError, TypeError) as err:
        raise CLIError(_attacker_hint(str(err))) from None
    return epsilons


def _check_video(
    args: argparse.Namespace,
    attacks: list[str],
    epsilons: list[float],
    env_id: str,
    env_kwargs: dict | None,
) -> None:
    """Check a --video request, and that the env renders, before any episode runs."""
    if args.video is None:
        return
    from robustsafe.video import check_renders, check_video_request

    try:
        check_video_request(attacks, max(epsilons), args.video, args.video_episodes, args.video_fps)
        check_renders(env_id, env_kwargs)
    except ValueError as err:
        raise CLIError(f"--video: {err}") from None


def _run_agent_episodes(args: argparse.Namespace, agent, env_id, attacks, epsilons) -> list:
    """The agent's paired episodes under every attacker, with a progress bar unless told not."""
    from robustsafe.evaluate import evaluate_agent

    num_envs = min(args.num_envs, args.episodes)
    vec = _open_vec_env(args, env_id, num_envs, agent.config.env_kwargs)
    bar = None if args.no_progress else _episode_bar(args, vec, attacks, epsilons)
    try:
        return evaluate_agent(
            agent,
            vec,
            episodes=args.episodes,
            seed=args.seed,
            attacks=attacks,
            epsilons=epsilons,
            attack_seed=args.attack_seed,
            attack_space=args.attack_space,
            xi=args.xi,
            on_step=None if bar is None else bar.update,
            sample_seed=args.seed if args.sample_actions else None,
        )
    except ValueError as err:
        raise CLIError(str(err)) from None
    finally:
        vec.close()
        if bar is not None:
            bar.close()


def _episode_bar(args: argparse.Namespace, vec, attacks, epsilons):
    """A tqdm bar over the env steps of every (attacker, epsilon) run."""
    from tqdm import tqdm

    n_runs = 1 + sum(len([e for e in epsilons if e > 0]) for a in attacks if a != "none")
    per_run = args.episodes * (vec.max_episode_steps or 1000)
    return tqdm(total=n_runs * per_run, unit="step", desc="evaluate", dynamic_ncols=True)


def _run_payload(args: argparse.Namespace, agent, env_id, results) -> dict:
    """What --out records of a --run evaluation."""
    return {
        "agent": recorded_path(str(args.run)),  # (a Ray task: the driver's)
        "env_id": env_id,
        **_agent_eval_fields(args, agent),
        **({"actions": SAMPLED_LABEL} if args.sample_actions else {}),
        "xi": args.xi,
        "cost_limit": agent.config.cost_limit,
        "results": [r.to_dict() for r in results],
    }


def _print_run_results(args: argparse.Namespace, agent, env_id, results) -> None:
    """The heading and table of a --run evaluation, printed before any file is written."""
    from robustsafe.evaluate import format_table

    print(  # first: whatever happens to the files, the numbers are on screen
        f"{env_id}: {args.episodes} paired episodes, seed {args.seed}, agent epoch "
        f"{agent.epoch}, epsilon in {args.attack_space} observation units"
        + (
            ", actions sampled from pi(.|s~) (not the paper's protocol)"
            if args.sample_actions
            else ""
        )
    )
    print(format_table(results))


def _save_results(out: Path | None, payload, results, attacks, epsilons, env_id) -> None:
    """Write --out and, for a sweep, its files (``payload`` less env_id and results as the
    sweep's metadata); without --out say how to keep them. Both --run and foreign policies."""
    from robustsafe.evaluate import write_sweep
    from robustsafe.files import write_json_atomic

    if out is None:
        print("not saved: pass --out FILE.json to keep every episode (and a sweep's figure)")
        return
    _write_or_keep(out, lambda path: write_json_atomic(path, payload))
    print(f"written to {out}")
    if len(epsilons) > 1 and any(a != "none" for a in attacks):
        meta = {k: v for k, v in payload.items() if k not in ("env_id", "results")}
        files = write_sweep(results, sweep_prefix(out), f"{env_id}", meta)
        print("sweep written to " + ", ".join(str(f) for f in files))


def _attacker_hint(message: str) -> str:
    """``message``, and for an unknown attacker how to name one's own here."""
    if message.startswith("unknown attacker"):
        return f"{message}; --attacker-module MODULE imports the module that registers it"
    return message


def _import_attacker_modules(targets: list[str]) -> None:
    """Import each ``--attacker-module`` (its ``register_attacker`` calls name its attackers)."""
    from robustsafe.user_code import import_user_module

    for target in targets:
        try:
            import_user_module(target, f"--attacker-module {target!r}")
        except ValueError as err:
            raise CLIError(str(err)) from None


def _attack_list(text: str) -> list[str]:
    """The attackers of ``--attacks``; an empty list is a user error."""
    attacks = [a.strip() for a in text.split(",") if a.strip()]
    if not attacks:
        raise CLIError("--attacks is empty: name the attackers, e.g. none,mad,mc (none: natural)")
    return attacks


def _record_videos(args: argparse.Namespace, agent, env_id, attacks, epsilons, env_kwargs) -> int:
    """``evaluate --video DIR``: natural and attacked episodes side by side, at the largest
    epsilon (robustsafe.video); ``agent`` a run's or a foreign policy's (``policy_as_agent``)."""
    if args.video is None:
        return 0
    from robustsafe.video import record_videos

    eps = max(epsilons)
    print(f"recording {args.video_episodes} paired episode(s) per attacker at epsilon {eps:g}")
    try:
        paths = record_videos(
            agent,
            env_id,
            attacks,
            eps,
            args.video,
            episodes=args.video_episodes,
            seed=args.seed,
            attack_seed=args.attack_seed,
            attack_space=args.attack_space,
            xi=args.xi,
            fps=args.video_fps,
            env_kwargs=env_kwargs,
        )
    except ValueError as err:
        raise CLIError(f"--video: {err}") from None
    if any(p.suffix == ".gif" for p in paths):
        print("imageio-ffmpeg is not installed (pip install robustsafe[video]): wrote GIFs")
    print("videos written: " + ", ".join(str(p) for p in paths))
    return 0


def _evaluate_foreign(args: argparse.Namespace) -> int:
    from robustsafe.envs import VectorEnv
    from robustsafe.evaluate import (
        evaluate_policy,
        format_paired_table,
        parse_epsilons,
        policy_as_agent,
    )
    from robustsafe.fit_critics import load_critics

    if args.episodes < 1:
        raise CLIError(f"--episodes must be >= 1, got {args.episodes}")
    if args.attack_space != "raw":
        raise CLIError("--policy/--sb3: epsilon is in raw observation units (--attack-space raw)")
    policy = _foreign_policy(args)
    if args.eps is None:
        from robustsafe.presets import paper_epsilon

        args.eps = f"{paper_epsilon(args.env):g}"
    attacks = _attack_list(args.attacks)
    if "none" not in attacks:
        attacks.insert(0, "none")
    out = Path(args.out) if args.out else None
    if out is not None:  # before any episode runs, as for --run
        check_eval_outputs(out, args.force, args.eps)
    try:
        critics = load_critics(args.critics) if args.critics else None
        epsilons = parse_epsilons(args.eps)
        check_epsilon_budget(epsilons, args.allow_large_eps, attacks)
        from robustsafe.evaluate import check_attacks_for

        check_attacks_for(policy, attacks, critics)
        _check_video(args, attacks, epsilons, args.env, None)
        vec = VectorEnv(
            args.env, min(args.num_envs, args.episodes), seed=args.seed, workers=args.env_workers
        )
    except (FileNotFoundError, ValueError, TypeError) as err:
        raise CLIError(_attacker_hint(str(err))) from None
    try:
        results = evaluate_policy(
            policy,
            vec,
            attacks=attacks,
            epsilons=epsilons,
            critics=critics,
            episodes=args.episodes,
            seed=args.seed,
            attack_seed=args.attack_seed,
            xi=args.xi,
        )
    except (ValueError, TypeError) as err:
        raise CLIError(str(err)) from None
    finally:
        vec.close()
    source = f"--sb3 {args.sb3}" if args.sb3 else f"--policy {args.policy}"
    print(f"{args.env}: {args.episodes} paired episodes, seed {args.seed}, policy {source}")
    print(format_paired_table(results))
    payload = {
        "policy": source,
        "env_id": args.env,
        "critics": args.critics,
        "episodes": args.episodes,
        "seed": args.seed,
        "attack_seed": args.attack_seed,
        "actions": "deterministic",
        "epsilon_space": "raw",
        "code": code_version(),
        "xi": args.xi,
        "results": [r.to_dict() for r in results],
    }
    _save_results(out, payload, results, attacks, epsilons, args.env)
    return _record_videos(args, policy_as_agent(policy, critics), args.env, attacks, epsilons, None)


def add_evaluate(sub: argparse._SubParsersAction) -> None:
    e = sub.add_parser("evaluate", help="evaluate an agent with deterministic actions")
    _add_policy_options(e)
    e.add_argument(
        "--critics",
        help="--policy/--sb3: critics file from fit-critics, for mc, mr, amad, ... (default: none)",
    )
    e.add_argument("--episodes", type=int, default=50, help="paired episodes per attacker")
    e.add_argument(
        "--deterministic-action",
        choices=DETERMINISTIC_ACTIONS,
        help="--run with a Gaussian actor (ppol, focops): the action evaluated and attacked: "
        "expected = E[clip(a)], the expected executed action (RobustSafe's default); mean = the "
        "Gaussian's mean (the paper's and the original code's) (default: the agent's own)",
    )
    e.add_argument(
        "--sample-actions",
        action="store_true",
        help="--run: execute actions sampled from the agent's policy pi(.|s~), as in training, "
        "instead of its deterministic action (a diagnostic, not the paper's protocol; the "
        "attackers still aim at the deterministic action; episode i's noise is the same under "
        "every attacker)",
    )
    e.add_argument("--seed", type=int, default=0, help="seed of the evaluation episodes")
    e.add_argument("--env", help="environment id (default: the agent's)")
    e.add_argument("--out", help="JSON file to write (default: print only)")
    e.add_argument("--force", action="store_true", help="replace an existing --out file")
    add_allow_other_env_option(e, "evaluate a --run agent")
    add_allow_large_eps_option(e)
    e.add_argument(
        "--attacks",
        default="none",
        help="comma-separated attackers: none,random,mad,amad,mc,mr,minr,mix:W, and your own "
        "(--attacker-module) (default: none, the natural episodes only)",
    )
    e.add_argument(
        "--attacker-module",
        action="append",
        metavar="MODULE",
        help="import MODULE (pkg.mod or path/file.py) first, so that the attackers it registers "
        "with robustsafe.attacks.register_attacker can be named in --attacks; repeatable. Runs "
        "that code: name only code you trust (default: none)",
    )
    e.add_argument(
        "--eps",
        help="epsilon: 0.05, a list 0.02,0.05 or a sweep 0:0.1:11 (default: the run's "
        "robust.epsilon, the task's budget; --policy/--sb3: the paper's budget for --env, "
        "0.05 on Car, 0.025 on Drone and Ant)",
    )
    e.add_argument(
        "--attack-space",
        default="raw",
        choices=("raw", "normalized"),
        help="units of epsilon: raw observations (paper) or normaliser std",
    )
    e.add_argument("--xi", type=float, default=0.1, help="AMAD: fraction of states attacked")
    add_attack_seed_option(e)
    e.add_argument(
        "--num-envs", type=int, default=10, help="parallel environments (at most --episodes)"
    )
    add_env_workers_option(e, default=2)
    e.add_argument("--no-progress", action="store_true", help="no progress bar")
    e.add_argument(
        "--video",
        metavar="DIR",
        help="also record natural and attacked episodes side by side, one MP4 per attacker at "
        "the largest --eps, in DIR (Bullet's offscreen renderer; the `video` extra) "
        "(default: no videos)",
    )
    e.add_argument(
        "--video-episodes",
        type=int,
        default=1,
        help="paired episodes per video (the first ones of --seed)",
    )
    e.add_argument("--video-fps", type=int, default=30, help="frames per second")
    e.set_defaults(func=cmd_evaluate)
