"""The ``robustsafe`` command.

One module per group of commands; each adds its subcommands to the parser with an
``add_<command>(sub)`` function and holds their ``cmd_*`` functions:

- ``train``: ``robustsafe train``
- ``evaluate``: ``robustsafe evaluate`` (natural and attacked episodes, videos)
- ``fit_critics``: ``robustsafe fit-critics``
- ``policy_source``: ``--run`` / ``--policy`` / ``--sb3`` of evaluate and fit-critics
- ``grid``: ``robustsafe grid``, ``table``, ``report``
- ``plot``: ``robustsafe plot curves|sweep``, ``xi-sweep``
- ``tabular``: ``robustsafe tabular demo`` and ``robustsafe tabular definitions``
- ``_common``: what they share: the one-line user error, the output-file checks, the agent of
  ``--run``, the environments and the agent fields of an evaluation file
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys

from robustsafe import __version__
from robustsafe.cli._common import CLIError, Parser, _os_reason
from robustsafe.cli.evaluate import add_evaluate
from robustsafe.cli.fit_critics import add_fit_critics
from robustsafe.cli.grid import add_grid, add_report, add_table
from robustsafe.cli.plot import add_plot, add_xi_sweep
from robustsafe.cli.tabular import add_tabular
from robustsafe.cli.train import add_train

__all__ = ["CLIError", "build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="robustsafe",
        description="Safe RL under observational attacks: train, attack, evaluate.",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for add in (
        add_train,
        add_evaluate,
        add_fit_critics,
        add_grid,
        add_table,
        add_xi_sweep,
        add_plot,
        add_report,
        add_tabular,
    ):
        add(sub)
    return p


_NEGATIVE_VALUE = re.compile(r"^-\.?\d")  # -1,0 / -0.05,0.1 / -.5: a value, not an option


def join_negative_values(argv: list[str]) -> list[str]:
    """``--seeds -1,0`` as ``--seeds=-1,0``: argparse takes a lone negative number for a value
    but reads a negative comma list as an unknown option (and answers with the whole usage); the
    joined form reaches the option's own check, whose one-line error names the bad value."""
    out: list[str] = []
    for tok in argv:
        prev = out[-1] if out else ""
        is_option = prev.startswith("--") and prev != "--" and "=" not in prev
        if is_option and _NEGATIVE_VALUE.match(tok):
            out[-1] = f"{prev}={tok}"
        else:
            out.append(tok)
    return out


def main(argv: list[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # a path that is not UTF-8 prints as \xff
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(errors="backslashreplace")
    parser = build_parser()
    args = parser.parse_args(join_negative_values(sys.argv[1:] if argv is None else argv))
    try:
        return int(args.func(args))
    except CLIError as err:
        lines = str(err).strip().splitlines() or [""]
        more = " [...]" if len(lines) > 1 else ""  # one line, whatever raised it (torch's dumps)
        print(f"robustsafe {args.command}: error: {lines[0]}{more}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C (grid answers it itself): one line, not a traceback
        print(
            f"robustsafe {args.command}: interrupted (what was already written is kept)",
            file=sys.stderr,
        )
        return 130
    except MemoryError as err:  # a setting too large for this machine: one line, no trace
        reason = (str(err).strip().splitlines() or ["no detail"])[0]
        print(f"robustsafe {args.command}: error: out of memory ({reason})", file=sys.stderr)
        return 2
    except OSError as err:  # the machine's fault (disk full, permissions): one line, no trace
        where = f": {err.filename}" if err.filename else ""
        print(f"robustsafe {args.command}: error: {_os_reason(err)}{where}", file=sys.stderr)
        return 2
