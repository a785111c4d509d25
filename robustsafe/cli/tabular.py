"""``robustsafe tabular``: the exact finite-CMDP toolkit."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from robustsafe.cli._common import CLIError, check_derived_prefix, check_out_dir


def cmd_tabular_demo(args: argparse.Namespace) -> int:
    from robustsafe.tabular.demo import run_demo

    check_out_dir(args.out)
    print(run_demo(Path(args.out)))
    return 0


def cmd_tabular_definitions(args: argparse.Namespace) -> int:
    from robustsafe.tabular.metric_plane import (
        CSV_FIELDS,
        FIGURE_STEM,
        compute_metric_plane,
        format_metric_plane,
        save_metric_plane,
    )

    if not (math.isfinite(args.eps) and args.eps > 0):
        raise CLIError(f"--eps must be a finite number > 0, got {args.eps}")
    check_out_dir(args.out)
    # our own earlier files are rebuilt; a definitions.csv of someone else's needs --force
    prefix = check_derived_prefix(
        Path(args.out) / FIGURE_STEM, args.force, others=(".png", ".pdf"), header=CSV_FIELDS
    )
    plane = compute_metric_plane(epsilon=args.eps)
    paths = save_metric_plane(plane, prefix)
    print(format_metric_plane(plane))
    print("written: " + ", ".join(str(p) for p in paths))
    return 0


def add_tabular(sub: argparse._SubParsersAction) -> None:
    tab = sub.add_parser("tabular", help="the exact finite-CMDP toolkit")
    tab_sub = tab.add_subparsers(dest="tabular_command", required=True)
    demo = tab_sub.add_parser("demo", help="the worked grid-world example")
    demo.add_argument("--out", default="runs/tabular", help="folder for the figure")
    demo.set_defaults(func=cmd_tabular_demo)
    defs = tab_sub.add_parser(
        "definitions",
        help="the paper's Figure 1, exactly: every policy of the shortcut grid world in the "
        "(V_r, V_c) plane with feasibility, optimality, temptation and the attacks on pi*",
    )
    defs.add_argument("--out", default="runs/tabular", help="folder for definitions.{png,pdf,csv}")
    defs.add_argument("--eps", type=float, default=1.0, help="perturbation radius (grid cells)")
    defs.add_argument(
        "--force",
        action="store_true",
        help="replace definitions.{csv,png,pdf} in --out that robustsafe did not write",
    )
    defs.set_defaults(func=cmd_tabular_definitions)
