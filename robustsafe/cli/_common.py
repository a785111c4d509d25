"""What the commands share: the one-line user error, the help formatter, output checks, the
agent of ``--run`` and the environments it acts in."""

from __future__ import annotations

import argparse
import errno
import glob
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from robustsafe.config import MAX_EPSILON
from robustsafe.provenance import code_version


class CLIError(Exception):
    """A user error: printed as one line, exit status 2."""


def check_env_module(env_id: str, source: str) -> None:
    """CLIError for an env id read from a file (``source``) whose ``module:`` part is not imported
    yet (``envs.env_id_from_file``); the same id given with ``--env`` on the command line is the
    user's word, and goes."""
    from robustsafe.envs import env_id_from_file

    try:
        env_id_from_file(env_id, source)
    except ValueError as err:
        raise CLIError(f"{err}: give --env {env_id} to allow it") from None


def run_agent_env(args: argparse.Namespace, agent, doing: str) -> str:
    """The env id a ``--run`` agent acts in (``--env``, else its own task); CLIError for
    another task unless ``--allow-other-env``, and for the agent's own ``module:Id`` task unless
    ``--env`` names it. ``doing``: what it would do there."""
    if args.env is None:
        check_env_module(agent.config.env_id, "the agent file")
    env_id = args.env or agent.config.env_id
    if env_id != agent.config.env_id and not args.allow_other_env:
        raise CLIError(
            f"the agent was trained on {agent.config.env_id}, not {env_id}: {doing} a task it "
            "never saw. Pass --allow-other-env to go on anyway"
        )
    return env_id


def add_allow_other_env_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--allow-other-env", action="store_true", help=f"{what} on an --env other than its own"
    )


def add_derived_force_option(parser: argparse.ArgumentParser) -> None:
    """The ``--force`` of table, plot and report."""
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace files at --out that robustsafe did not write (its own are rebuilt in place)",
    )


def add_allow_large_eps_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--allow-large-eps",
        action="store_true",
        help=f"accept epsilons above {MAX_EPSILON:g} (observation units)",
    )


def check_epsilon_budget(
    epsilons: Sequence[float], allow_large: bool, attacks: Sequence[str] = ()
) -> None:
    """CLIError for a budget above MAX_EPSILON without --allow-large-eps (a typo, most likely),
    or for attackers (``attacks`` other than ``none``) at a budget of 0 alone."""
    if epsilons and max(epsilons) <= 0 and any(a != "none" for a in attacks):
        raise CLIError(
            f"--eps {max(epsilons):g}: a budget of 0 leaves every observation as it is, so no "
            "attack would run; give a budget > 0, or --attacks none"
        )
    too_large = [e for e in epsilons if e > MAX_EPSILON]
    if too_large and not allow_large:
        raise CLIError(
            f"epsilon {max(too_large):g} is larger than {MAX_EPSILON:g}: the paper's budgets are "
            "0.025-0.05 observation units. Pass --allow-large-eps if you mean it"
        )


def parse_epsilons_quietly(text: str) -> list[float]:
    """The epsilons of ``--eps``, or [] if it does not parse (reported later, in order)."""
    from robustsafe.evaluate import parse_epsilons

    try:
        return parse_epsilons(text)
    except ValueError:
        return []


def sweep_prefix(out: Path) -> Path:
    """The prefix of the sweep files an evaluation writes beside ``--out`` (``a.b.json`` ->
    ``a.b_sweep``, whose files are ``a.b_sweep.csv`` / ``.png`` / ``.pdf``)."""
    return out.with_name(out.stem + "_sweep")


def _sweep_files(out: Path) -> list[Path]:
    prefix = sweep_prefix(out)
    return [prefix.with_name(prefix.name + ext) for ext in (".csv", ".png", ".pdf")]


def check_eval_outputs(out: Path, force: bool, eps_text: str) -> None:
    """Refuse, before any episode runs, an evaluation's ``--out`` and, with several epsilons,
    the sweep files written beside it, where one exists (without --force) or cannot be
    written."""
    _check_output(out, force, "eval.json")
    if len(parse_epsilons_quietly(eps_text)) > 1:
        for sweep in _sweep_files(out):
            _check_output(sweep, force, "eval.json")


# What a training writes and no other command may replace (but fit-critics --force, which
# rewrites a run's agent file with new critics: its ``own``).
_TRAINING_FILES = (
    "agent.pt",
    "config.yaml",
    "metrics.csv",
    "state.pt",
    "status.json",
    "provenance.json",
    "timings.json",
)


def _check_output(path: Path, force: bool, example: str, own: tuple[str, ...] = ()) -> None:
    """Refuse, before any work, an output file that cannot be written or would replace one;
    ``example`` is a file name the command would write (named when ``path`` is a directory);
    ``own``: the names of a run's training files the command may replace (with ``force``)."""
    if path.is_dir():
        raise CLIError(f"--out {path} is a directory; give a file name, e.g. {path / example}")
    in_run = (path.parent / "config.yaml").is_file()
    if in_run and path.name in _TRAINING_FILES and path.name not in own:
        raise CLIError(  # even with --force: a run's history and state are not outputs
            f"--out {path} is the {path.name} of the run in {path.parent}; choose another --out"
        )
    if path.exists() and not force:
        raise CLIError(f"{path} already exists; pass --force to replace it, or another --out")
    blocking = _file_in_the_way(path.parents)
    if blocking is not None:
        raise CLIError(f"--out {path}: {blocking} is a file, not a directory")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path.parent):
            pass
    except OSError as err:
        raise CLIError(f"cannot write {path}: {_os_reason(err)}") from None


def _file_in_the_way(folders: Sequence[Path]) -> Path | None:
    """The nearest of ``folders`` (nearest first) that exists, if it is a file, else None."""
    for folder in folders:
        if folder.exists():
            return None if folder.is_dir() else folder
    return None


def check_out_dir(out: str | Path) -> None:
    """CLIError if ``--out``, or a folder above it, is an existing file where a directory goes
    (before any work)."""
    blocking = _file_in_the_way([Path(out), *Path(out).parents])
    if blocking is not None:
        inner = "" if blocking == Path(out) else f": {blocking}"
        raise CLIError(f"--out {out}{inner} is a file, not a directory")


# How the derived files of table, plot and report begin: an existing file at their --out that
# does not is someone else's, replaced only with --force. A derived CSV is a command's own if
# its columns and the command's agree as far as both go, at least _OWN_COLUMNS of them (a column
# added at the end later keeps an older file the command's own); every derived CSV begins with
# env,method.
_DERIVED_CSV_HEAD = b"env,method,"
_OWN_COLUMNS = 3
_REPORT_HEAD = b"<title>RobustSafe report"


def _check_derived_output(
    path: Path, suffixes: tuple[str, ...], force: bool = False, header: Sequence[str] = ()
) -> None:
    """Refuse, before any work, a derived output (table, figure, page: rebuilt in place) that
    would replace measured data or trained state: an existing file with a suffix other than
    ``suffixes`` (the command's own), or a run directory's ``metrics.csv``; or a path under a
    file. Without ``force``, also an existing CSV or HTML page that is not the command's own: a
    CSV whose first columns are not those of ``header`` (the command's CSV columns), a page
    without the report's title."""
    blocking = _file_in_the_way(path.parents)
    if blocking is not None:
        raise CLIError(f"--out: {blocking} is a file, not a directory, so {path} cannot be written")
    if not path.exists():
        return
    if path.suffix.lower() not in suffixes or (
        path.name == "metrics.csv" and (path.parent / "config.yaml").exists()
    ):
        raise CLIError(
            f"--out would replace {path}, which this command does not write "
            "(measured data or another file); choose another --out"
        )
    head = _file_head(path)
    if path.suffix.lower() != ".csv":
        ours = _REPORT_HEAD in head
    else:
        ours = _csv_columns_match(head, header)
    if not (force or ours):
        whose = (
            "another command's output"
            if path.suffix.lower() == ".csv" and head.startswith(_DERIVED_CSV_HEAD)
            else "which robustsafe did not write"
        )
        raise CLIError(
            f"--out would replace {path}, {whose}; choose another --out, or pass --force to "
            "replace it"
        )


def _csv_columns_match(head: bytes, header: Sequence[str]) -> bool:
    """Whether a CSV beginning with ``head`` has the columns ``header`` (see _OWN_COLUMNS)."""
    columns = head.split(b"\n", 1)[0].rstrip(b"\r").split(b",")
    ours = [c.encode() for c in header]
    common = min(len(columns), len(ours))
    return common >= _OWN_COLUMNS and columns[:common] == ours[:common]


def _file_head(path: Path) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(512)
    except OSError:
        return b""


def prefix_arg(text: str) -> Path:
    """An ``--out`` file prefix as typed; CLIError for one ending in a path separator (a folder
    the files would land beside, not in)."""
    if text.endswith(("/", os.sep)):
        raise CLIError(f"--out {text} names a folder; give a file prefix, e.g. {text}table")
    return Path(text)


def check_derived_prefix(
    prefix: Path,
    force: bool = False,
    others: tuple[str, ...] = (),
    side_files: bool = False,
    *,
    header: Sequence[str],
) -> Path:
    """``prefix`` of a command's derived files (PREFIX.csv and PREFIX + each of ``others``;
    ``side_files``: PREFIX-*.csv/.md/.tex/.png/.pdf too), refused before any work if it names no
    file (``.``, ``..``, ``/``) or its CSV would replace measured data; without ``force``, also
    if PREFIX.csv is not one of ours (``header``: the command's CSV columns), or, where there
    is none, another of those files exists (every command writes the CSV with the others)."""
    if prefix.name in ("", ".", "..") or prefix.is_dir():
        raise CLIError(
            f"--out {prefix} names a folder; give a file prefix, e.g. {prefix / 'table'}"
        )
    csv = prefix.with_name(prefix.name + ".csv")
    _check_derived_output(csv, (".csv",), force, header)
    if force or csv.exists():
        return prefix
    candidates = [prefix.with_name(prefix.name + suffix) for suffix in others]
    if side_files and prefix.parent.is_dir():
        candidates += sorted(
            p
            for p in prefix.parent.glob(glob.escape(prefix.name) + "-*")
            if p.suffix.lower() in (".csv", ".md", ".tex", ".png", ".pdf")
        )
    for other in candidates:
        if other.is_file():
            raise CLIError(
                f"--out would replace {other}, which robustsafe did not write (no "
                f"{csv.name} of ours beside it); choose another --out, or pass --force"
            )
    return prefix


def _os_reason(err: OSError) -> str:
    if err.errno == errno.ENOSPC:
        return "no space left on device"
    return err.strerror or str(err)


def _write_or_keep(path: Path, write: Callable[[Path], None]) -> None:
    """``write(path)``; if that fails, write to a fresh temporary folder and say where."""
    try:
        write(path)
    except OSError as err:
        reason = _os_reason(err)
        try:
            fallback = Path(tempfile.mkdtemp(prefix="robustsafe-")) / path.name
            write(fallback)
        except OSError:
            raise CLIError(f"cannot write {path}: {reason} (and no fallback copy)") from None
        raise CLIError(
            f"cannot write {path}: {reason}; the results were saved in {fallback} instead"
        ) from None


# ----------------------------------------------------------------------------- agents


def _load_run_agent(run: str):
    """The agent of ``--run`` (a run directory or agent .pt file); a missing or unreadable one
    is a user error."""
    from robustsafe.agent import load_agent

    try:
        return load_agent(run)
    except (FileNotFoundError, ValueError) as err:
        raise CLIError(str(err)) from None


def _open_vec_env(args: argparse.Namespace, env_id: str, num_envs: int, env_kwargs=None):
    """``num_envs`` environments seeded with ``--seed`` and stepped by ``--env-workers``
    subprocesses; an unknown id or a bad count is a user error."""
    from robustsafe.envs import VectorEnv

    try:
        return VectorEnv(
            env_id, num_envs, seed=args.seed, workers=args.env_workers, env_kwargs=env_kwargs
        )
    except ValueError as err:
        raise CLIError(str(err)) from None


DETERMINISTIC_LABELS = {
    "expected": "deterministic (E[clip(a)], the expected executed action)",
    "mean": "deterministic (mean)",
}
SQUASHED_LABEL = "deterministic (squashed mean)"


def deterministic_label(actor) -> str:
    """The deterministic action an evaluation of ``actor`` executes, as its file records it:
    a Gaussian actor's setting (``deterministic``), else a squashed Gaussian's mean."""
    kind = getattr(actor, "deterministic", None)
    return DETERMINISTIC_LABELS.get(kind, SQUASHED_LABEL)


def set_deterministic_action(agent, kind: str | None) -> None:
    """``--deterministic-action``: override the action a run's Gaussian actor evaluates (and is
    attacked at); ``None`` keeps the agent's own. Squashed actors (sac-lag, cvpo) have one."""
    if kind is None:
        return
    if getattr(agent.actor, "deterministic", None) is None:
        raise CLIError(
            f"--deterministic-action applies to Gaussian actors (ppol, focops); this "
            f"{agent.config.algo} agent's deterministic action is its squashed mean"
        )
    agent.actor.deterministic = kind


def _agent_eval_fields(args: argparse.Namespace, agent) -> dict:
    """What an evaluation file (evaluate, xi-sweep) records of the agent, of its episodes and of
    the code that ran them, in this order."""
    return {
        "agent_epoch": agent.epoch,
        "train_algo": agent.config.algo,
        "train_alpha": agent.config.sac.alpha if agent.config.algo == "sac-lag" else None,
        # a learned alpha: train_alpha is only where it started (the table's own group)
        "train_alpha_learned": agent.config.sac.learn_alpha
        if agent.config.algo == "sac-lag"
        else None,
        "train_mode": agent.config.robust.mode,
        # the robust training's budget, for the table's check against the evaluation's
        "train_epsilon": None
        if agent.config.robust.mode == "vanilla"
        else agent.config.robust.training_epsilon,
        "train_seed": agent.config.seed,
        "train_preset": agent.config.preset,
        "episodes": args.episodes,
        "seed": args.seed,
        "attack_seed": args.attack_seed,
        "actions": deterministic_label(agent.actor),
        "epsilon_space": args.attack_space,
        "code": code_version(),
    }


# ----------------------------------------------------------------------------- parsing


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """``--help`` shows every option's default: ``(default: X)`` after its help, unless the help
    already says what the default is (a default that depends on other settings, such as the
    agent's env or the preset's epochs, is said in words there)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "default" in text or any(action.default is x for x in (None, False, argparse.SUPPRESS)):
            return text
        return super()._get_help_string(action)


class Parser(argparse.ArgumentParser):
    """The parser of ``robustsafe`` and of every subcommand (``add_subparsers`` makes its
    subparsers of the parent's class): the help formatter above."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)


class _DeprecatedAlias(argparse.Action):
    """An option's old spelling: stores into the new option's destination and prints a one-line
    deprecation warning on stderr."""

    def __init__(self, option_strings, dest, new: str, **kwargs) -> None:
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print(
            f"{parser.prog}: warning: {option_string} is deprecated and will be removed in the "
            f"next release; use {self.new}",
            file=sys.stderr,
        )
        setattr(namespace, self.dest, values)


def add_renamed_option(
    parser: argparse.ArgumentParser, new: str, old: str, **kwargs
) -> argparse.Action:
    """Option ``new``, and ``old`` as its deprecated alias for one release (same value, and a
    one-line warning when used)."""
    action = parser.add_argument(new, **kwargs)
    parser.add_argument(
        old,
        dest=action.dest,
        type=kwargs.get("type"),
        metavar=action.metavar or new.lstrip("-").replace("-", "_").upper(),
        action=_DeprecatedAlias,
        new=new,
        default=argparse.SUPPRESS,
        help=f"deprecated spelling of {new}",
    )
    return action


def add_env_workers_option(parser: argparse.ArgumentParser, **kwargs) -> argparse.Action:
    """``--env-workers K``: the subprocesses stepping the environments (0: in this process);
    ``--workers`` is its deprecated spelling."""
    kwargs.setdefault("help", "subprocesses stepping the environments (0: in this process)")
    return add_renamed_option(parser, "--env-workers", "--workers", type=int, **kwargs)


def add_attack_seed_option(parser: argparse.ArgumentParser) -> None:
    """``--attack-seed N`` (N >= 0): the seed of the attackers' random numbers."""
    parser.add_argument(
        "--attack-seed",
        type=int,
        default=0,
        help="seed of the attackers' random numbers (each episode gets its own stream from it)",
    )


def check_attack_seed(args: argparse.Namespace) -> None:
    if args.attack_seed < 0:
        raise CLIError(f"--attack-seed must be >= 0, got {args.attack_seed}")
