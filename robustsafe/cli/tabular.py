"""``robustsafe tabular``: the exact finite-CMDP toolkit."""

from __future__ import annotations

import argparse
from pathlib import Path


def cmd_tabular_demo(args: argparse.Namespace) -> int:
    from robustsafe.tabular.demo import run_demo

    print(run_demo(Path(args.out)))
    return 0


def add_tabular(sub: argparse._SubParsersAction) -> None:
    tab = sub.add_parser("tabular", help="the exact finite-CMDP toolkit")
    tab_sub = tab.add_subparsers(dest="tabular_command", required=True)
    demo = tab_sub.add_parser("demo", help="the worked grid-world example")
    demo.add_argument("--out", default="runs/tabular", help="folder for the figure")
    demo.set_defaults(func=cmd_tabular_demo)
