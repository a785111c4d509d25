"""Copy the small files of finished grid runs into the repository: results and zoo agents.

For every run ``<root>/<env>/<mode>/seed<S>/`` with an ``eval.json`` under the given grid roots:

- ``eval.json``, ``config.yaml`` and ``metrics.csv`` (and ``eval-appendix.json`` /
  ``eval-xi.json`` where ``grid --appendix`` wrote them, ``provenance.json`` and the grid's
  ``timings.json`` where the run has them) go to ``<results>/<env>/<mode>/seed<S>/``
  (what ``robustsafe table`` and ``benchmarks/training_time.py`` read, so the committed table
  can be regenerated from the committed files);
- for the zoo seed (default 0), also ``agent.pt``: ``zoo/<env>/<mode>/`` gets the agent, its
  config, metrics and evaluation;
- the copies' ``actions`` field names the action the run executed (its config's
  ``deterministic_action``; the squashed mean for sac-lag / cvpo), where code older than that
  label wrote "deterministic (mean)" whatever the setting (``relabel_actions``);
- the copies' ``agent`` field, the absolute path of the run on the machine that trained it,
  becomes ``<grid root's name>/<env>/<mode>/seed<S>`` (``relative_agent``), so that no
  machine's path is committed.

Then it writes ``<results>/table.{md,csv,tex}`` and ``table-costs.md``, and, with
``--readme FILE.md``, puts the costs table between that Markdown file's
``<!-- table1:start -->`` and ``<!-- table1:end -->`` lines. The committed Table 1 lives in
``docs/results.md`` (the README is the short user's page).

    python benchmarks/table1_export.py runs/t1a runs/t1b --results benchmarks/results/table1 \
        --readme docs/results.md
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

from robustsafe.choices import OFF_POLICY_ALGOS
from robustsafe.cli._common import DETERMINISTIC_LABELS, SQUASHED_LABEL
from robustsafe.experiments.table import collect_table
from robustsafe.experiments.table_format import format_markdown, write_tables
from robustsafe.files import read_yaml, write_json_atomic

RUN_FILES = ("eval.json", "config.yaml", "metrics.csv")
# The appendix's evaluations (grid --appendix), the code of each start (runs trained since
# provenance was recorded) and the grid's timings of each job (runs since timings were),
# copied where the run has them.
APPENDIX_FILES = ("eval-appendix.json", "eval-xi.json")
EXTRA_FILES = (*APPENDIX_FILES, "provenance.json", "timings.json")
README_START, README_END = "<!-- table1:start -->", "<!-- table1:end -->"
ZOO_FILES = ("agent.pt", *RUN_FILES)


def finished_runs(root: Path) -> list[Path]:
    """Run directories ``<env>/<mode>/seed<S>`` under ``root`` that have an evaluation."""
    return sorted(p.parent for p in root.glob("*/*/seed*/eval.json"))


def copy_files(src: Path, dst: Path, names: tuple[str, ...]) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    for name in names:
        if not (src / name).exists():
            raise FileNotFoundError(f"{src / name} is missing (an unfinished run?)")
        tmp = dst / f".{name}.tmp"
        shutil.copyfile(src / name, tmp)
        tmp.replace(dst / name)


def action_label(config: dict) -> str:
    """The deterministic action a run's evaluations executed, from its ``config.yaml``: the
    squashed mean for the off-policy learners, else its ``deterministic_action`` (a config from
    before that setting: the mean)."""
    if config.get("algo") in OFF_POLICY_ALGOS:
        return SQUASHED_LABEL
    return DETERMINISTIC_LABELS[config.get("deterministic_action", "mean")]


def replace_field(run: Path, field: str, old: set[str], new: str) -> list[Path]:
    """Set ``field`` to ``new`` in those of the run's evaluation files (``eval.json`` and the
    appendix's) where it is one of ``old``; other files are left as they are. Returns the files
    rewritten."""
    changed = []
    for name in ("eval.json", *APPENDIX_FILES):
        path = run / name
        if not path.exists():
            continue
        data = json.loads(path.read_text())
        if data.get(field) in old:
            data[field] = new
            write_json_atomic(path, data)
            changed.append(path)
    return changed


def relabel_actions(run: Path) -> list[Path]:
    """Correct the ``actions`` field of the run's evaluation files where older code wrote its
    fixed label, "deterministic (mean)", whatever action the run's config made it execute.
    A file with any other label is left as it is. Returns the files rewritten."""
    config = read_yaml(run / "config.yaml") or {}
    label, legacy = action_label(config), DETERMINISTIC_LABELS["mean"]
    if label == legacy:
        return []
    return replace_field(run, "actions", {legacy}, label)


def relative_agent(copy: Path, run: Path, root: Path) -> list[Path]:
    """Rewrite the ``agent`` field of the evaluation files in ``copy`` (exported from ``run``,
    a run under the grid root ``root``) from ``run``'s absolute path to the path relative to
    ``root``'s parent, the form the committed files use. A field naming anything else (another
    agent evaluated into this run) is left as it is. Returns the files rewritten."""
    absolute = {str(run.absolute()), str(run.resolve())}
    relative = str(run.resolve().relative_to(root.resolve().parent))
    return replace_field(copy, "agent", absolute, relative)


def export_run(run: Path, root: Path, dest: Path, names: tuple[str, ...]) -> None:
    """Copy ``names`` of ``run`` (under the grid root ``root``) to ``dest``, then correct the
    copies' action label and agent path."""
    copy_files(run, dest, names)
    relabel_actions(dest)
    relative_agent(dest, run, root)


def replace_between_markers(text: str, body: str) -> str:
    """``text`` with the lines between the table1 markers replaced by ``body``."""
    start, end = text.find(README_START), text.find(README_END)
    if start < 0 or end < start:
        raise ValueError(f"the Markdown file needs the lines {README_START} and {README_END}")
    return text[: start + len(README_START)] + "\n" + body.rstrip("\n") + "\n" + text[end:]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("roots", nargs="+", type=Path, help="grid output directories")
    p.add_argument("--results", type=Path, default=Path("benchmarks/results/table1"))
    p.add_argument(
        "--zoo", default="zoo", help="zoo root for the zoo seed's agents ('' : copy none)"
    )
    p.add_argument("--zoo-seed", type=int, default=0)
    p.add_argument(
        "--readme",
        type=Path,
        metavar="FILE.md",
        help="a Markdown file with the table1 markers to update (the committed table: "
        "docs/results.md)",
    )
    args = p.parse_args()
    n = 0
    for root in args.roots:
        for run in finished_runs(root):
            rel = run.relative_to(root)
            extra = tuple(f for f in EXTRA_FILES if (run / f).exists())
            export_run(run, root, args.results / rel, RUN_FILES + extra)
            n += 1
            if args.zoo and rel.name == f"seed{args.zoo_seed}":
                export_run(run, root, Path(args.zoo) / rel.parent, ZOO_FILES)
    if n == 0:
        raise SystemExit(f"no evaluated runs under {[str(r) for r in args.roots]}")
    table = collect_table(args.results)
    for path in write_tables(args.results, args.results / "table", table=table):
        print("written", path)
    print(format_markdown(table))
    if args.readme is not None:
        costs = format_markdown(table, costs_only=True)
        args.readme.write_text(replace_between_markers(args.readme.read_text(), costs))
        print("updated", args.readme)
    print(f"{n} runs copied to {args.results}")


if __name__ == "__main__":
    main()
