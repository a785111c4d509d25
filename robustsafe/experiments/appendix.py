"""The appendix's tables (paper appendix C.9) from a directory tree of evaluations.

``robustsafe table DIR`` writes them beside Table 1 (``write_appendix``, which writes every
appendix file):

- ``<prefix>-appendix.{md,csv,tex}``: the Random / MAD / Average columns, reward and cost, of
  the appendix table "Evaluation results of natural performance (no attack) and under Random
  and MAD attackers" (Table 5, ``tab:exp-results-append``). Same rows, pooling, failing stars
  and lowest-cost marks as Table 1 (it is Table 1's builder with those columns): Average pools
  Natural and the five attackers, as the paper's numbers do (``robustsafe table --average
  attackers``: the five attackers only, as its caption says).
- The other learners' tables (``LEARNER_TABLES``), each the learner's rows of Table 1 with the
  paper's columns, written when some run is that learner's: ``<prefix>-focops.{md,csv,tex}``
  (``tab:exp-focops-append``: FOCOPS-vanilla, FOCOPS(MC), FOCOPS(MR) under no attack, MAD, MC
  and MR), ``<prefix>-sac-lag.*`` (``tab:exp-sacl-append``: one group of rows per entropy weight
  alpha, under no attack, MC and MR) and ``<prefix>-cvpo.*`` (``tab:exp-cvpo-append``: CVPO
  under no attack, MAD, MC and MR). The paper's runs are on Car-Run and Car-Circle at epsilon
  0.05.
- ``<prefix>-minr.{md,csv,tex}``: the minimum-reward attacker table (Table 3,
  ``robustsafe.experiments.minr_table``), written when some run has a ``minr`` evaluation.
- ``<prefix>-mix.{md,csv,tex}``: the MC/MR mixture table (Table 7,
  ``robustsafe.experiments.mix_table``), written when some run has a ``mix:W`` evaluation, with
  the appendix's figure of the same data (``<prefix>-mix-figure.{png,pdf,csv}``: reward and cost
  against w, bands across seeds; ``robustsafe.experiments.figures``).
- ``<prefix>-amad-xi.{png,pdf,csv}``: the AMAD over xi figure, when some run has an
  ``eval-xi.json`` (``robustsafe.experiments.figures.write_xi_figure``).

The minr and mix tables read ``eval.json`` merged with ``eval-appendix.json`` per run
(``robustsafe.experiments.appendix_runs``); the others are built from Table 1's table.
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path

from robustsafe.experiments.appendix_runs import collect_appendix_runs
from robustsafe.experiments.figures import write_mix_figure, write_xi_figure
from robustsafe.experiments.minr_table import (
    build_minr_table,
    format_minr_csv,
    format_minr_latex,
    format_minr_markdown,
)
from robustsafe.experiments.mix_table import (
    build_mix_table,
    format_mix_csv,
    format_mix_latex,
    format_mix_markdown,
)
from robustsafe.experiments.names import ALGO_NAMES
from robustsafe.experiments.table import AVERAGE, ResultsTable, collect_table
from robustsafe.experiments.table_format import (
    format_csv,
    format_latex,
    format_markdown,
    write_prefixed,
)
from robustsafe.experiments.xi_sweep import collect_xi_sweeps

APPENDIX_COLUMNS: tuple[tuple[str, str], ...] = (
    ("random", "Random"),
    ("mad", "MAD"),
    (AVERAGE, "Average"),
)
# The other learners' appendix tables: file suffix and columns per learner (``tab:exp-focops-
# append`` and ``tab:exp-cvpo-append``: natural and MAD / MC / MR; ``tab:exp-sacl-append``:
# natural and MC / MR, rows per entropy weight)
CVPO_COLUMNS: tuple[tuple[str, str], ...] = (
    ("none", "Natural"),
    ("mad", "MAD"),
    ("mc", "MC"),
    ("mr", "MR"),
)
SAC_LAG_COLUMNS: tuple[tuple[str, str], ...] = (("none", "Natural"), ("mc", "MC"), ("mr", "MR"))
LEARNER_TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "focops": CVPO_COLUMNS,
    "sac-lag": SAC_LAG_COLUMNS,
    "cvpo": CVPO_COLUMNS,
}
# the figures written beside the tables: ``<prefix>-mix-figure.*`` and ``<prefix>-amad-xi.*``
MIX_FIGURE = "-mix-figure"
XI_FIGURE = "-amad-xi"


# ----------------------------------------------------------------------------- Random / MAD


def format_appendix_markdown(table: ResultsTable) -> str:
    """The appendix's Random / MAD / Average table (Table 1's rows, marks and notes)."""
    title = (
        "Appendix table (paper appendix C.9): natural performance is in Table 1; here the Random "
        "and MAD attackers and the Average (see the legend), reward and cost.\n\n"
    )
    return title + format_markdown(table, columns=APPENDIX_COLUMNS)


# ----------------------------------------------------------------------------- other learners


def learner_table(table: ResultsTable, algo: str) -> ResultsTable:
    """Table 1's rows of one learner (marks and stars are per learner already; SAC-Lag's rows of
    every entropy weight, ``sac-lag:<alpha>``), with the notes that name it."""
    rows = tuple(r for r in table.rows if r.algo.split(":", 1)[0] == algo)
    name = ALGO_NAMES.get(algo, algo)
    return ResultsTable(rows, tuple(n for n in table.notes if name in n), table.source)


# ----------------------------------------------------------------------------- writing


def write_appendix(
    runs_dir: str | PathLike,
    out_prefix: str | PathLike,
    table: ResultsTable | None = None,
) -> list[Path]:
    """Write the appendix tables of ``runs_dir`` next to Table 1 (see the module docstring).

    ``<prefix>-appendix.{md,csv,tex}`` always; ``<prefix>-<learner>.*`` (FOCOPS, SAC-Lag, CVPO)
    when some run is that learner's;
    ``<prefix>-minr.*`` and ``<prefix>-mix.*`` when
    some run has a ``minr`` / ``mix:W`` evaluation (with the mixture figure,
    ``<prefix>-mix-figure.{png,pdf,csv}``); the AMAD xi figure when some run has an
    ``eval-xi.json`` (``robustsafe.experiments.figures.write_xi_figure``). Returns the paths.
    """
    prefix = Path(out_prefix)
    table = table if table is not None else collect_table(runs_dir)
    paths = write_prefixed(
        prefix,
        [
            ("-appendix.md", format_appendix_markdown(table)),
            ("-appendix.csv", format_csv(table, columns=APPENDIX_COLUMNS)),
            ("-appendix.tex", format_latex(table, columns=APPENDIX_COLUMNS)),
        ],
    )
    for algo, columns in LEARNER_TABLES.items():
        rows = learner_table(table, algo)
        if rows.rows:
            paths += write_prefixed(
                prefix,
                [
                    (f"-{algo}.md", format_markdown(rows, columns=columns)),
                    (f"-{algo}.csv", format_csv(rows, columns=columns)),
                    (f"-{algo}.tex", format_latex(rows, columns=columns)),
                ],
            )
    files, read_notes = collect_appendix_runs(runs_dir)
    minr_rows, minr_notes = build_minr_table(files)
    if minr_rows:
        notes = [*read_notes, *minr_notes]
        paths += write_prefixed(
            prefix,
            [
                ("-minr.md", format_minr_markdown(minr_rows, notes)),
                ("-minr.csv", format_minr_csv(minr_rows)),
                ("-minr.tex", format_minr_latex(minr_rows, notes)),
            ],
        )
    mix_rows, columns, mix_notes = build_mix_table(files)
    if mix_rows:
        notes = [*read_notes, *mix_notes]
        paths += write_prefixed(
            prefix,
            [
                ("-mix.md", format_mix_markdown(mix_rows, columns, notes)),
                ("-mix.csv", format_mix_csv(mix_rows)),
                ("-mix.tex", format_mix_latex(mix_rows, columns, notes)),
            ],
        )
        paths += write_mix_figure(files, prefix.with_name(prefix.name + MIX_FIGURE))
    sweeps, _ = collect_xi_sweeps(runs_dir)
    # the figure's rows are PPO-Lagrangian's (paper Figure 4), as the minr and mix tables
    sweeps = [s for s in sweeps if s.algo == "ppol"]
    if sweeps:
        paths += write_xi_figure(sweeps, prefix.with_name(prefix.name + XI_FIGURE))
    return paths
