"""The results table (``robustsafe.experiments.table``) as Markdown, CSV and LaTeX, Table 1's
four files (``write_tables``), and ``write_prefixed``, which writes any set of files atomically
(the runs and appendix tables use it too).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from os import PathLike
from pathlib import Path

from robustsafe.experiments.table import (
    AVERAGE,
    FAILING_FRACTION,
    MARKED_PER_COLUMN,
    Cell,
    ResultsTable,
    collect_table,
)
from robustsafe.files import write_text_atomic

CSV_FIELDS = (
    "env",
    "method",
    "attack",
    "reward_mean",
    "reward_std",
    "cost_mean",
    "cost_std",
    "n_episodes",
    "n_seeds",
    "marked",
    "failing",
    "mode",
    "epsilon",
)


def _as_table(table: ResultsTable | str | PathLike) -> ResultsTable:
    return table if isinstance(table, ResultsTable) else collect_table(table)


def _pm(mean: float, std: float, sep: str) -> str:
    """Mean and std to 2 decimals (the precision ``table`` compares costs at to mark them)."""
    return f"{mean:.2f}{sep}{std:.2f}"


_AVERAGE_LEGEND = {
    "paper": " Average pools the episodes of Natural and the five attackers (the mean of the six"
    " columns, as the paper's numbers are).",
    "attackers": " Average pools the episodes of the five attackers (Random, MAD, AMAD, MC, MR).",
}


_NUMBER_WORDS = {1: "one", 2: "two", 3: "three"}


def _legend(
    columns: Sequence[tuple[str, str]], average: str, ascii_only: bool = False
) -> list[str]:
    eps, pm = ("epsilon", "+/-") if ascii_only else ("ε", "±")
    average = _AVERAGE_LEGEND[average] if any(key == AVERAGE for key, _ in columns) else ""
    return [
        f"Mean {pm} std over all episodes of all seeds (pooled).{average} Seeds: runs pooled; "
        "Episodes: natural episodes pooled over them (the same under each attacker unless a note "
        "says otherwise).",
        f"Attacks at each env's {eps} (the robust methods trained at the same budget unless a "
        "note says otherwise). Bold: the "
        f"{_NUMBER_WORDS.get(MARKED_PER_COLUMN, MARKED_PER_COLUMN)} lowest-cost agents of each env"
        " and learner per column (ties to the higher reward), failing agents excluded. * failing "
        f"agent: natural reward below {FAILING_FRACTION:.0%} of its learner's vanilla agent's "
        "(PPOL-vanilla's for PPO-Lagrangian) on the same env.",
    ]


def _env_title(table: ResultsTable, env_id: str, eps_symbol: str) -> str:
    eps = table.env_epsilon(env_id)
    return env_id if eps is None else f"{env_id} ({eps_symbol} = {eps:g})"


def format_markdown(
    table: ResultsTable | str | PathLike,
    costs_only: bool = False,
    columns: Sequence[tuple[str, str]] | None = None,
) -> str:
    """The table in Markdown (marked costs in bold), with its legend and notes.

    ``table`` is a ``ResultsTable`` or a directory to collect one from. ``costs_only`` keeps the
    natural reward and every column's cost (a narrower table, for a README). ``columns``: the
    (key, title) pairs shown (default the table's own; a subset, e.g. the appendix's
    Random/MAD/Average).
    """
    table = _as_table(table)
    columns = table.columns if columns is None else columns
    head = ["Env", "Method", "Seeds", "Episodes"]
    for key, title in columns:
        if not costs_only or key == "none":
            head.append(f"{title} reward")
        head.append(f"{title} cost")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 4 + "---:|" * (len(head) - 4)]
    previous = None
    for r in table.rows:
        env = _env_title(table, r.env_id, "ε") if r.env_id != previous else ""
        previous = r.env_id
        natural = r.cells.get("none")
        cells = [env, r.label, str(len(r.seeds)), str(natural.n_episodes) if natural else "—"]
        for key, _ in columns:
            with_reward = not costs_only or key == "none"
            c = r.cells.get(key)
            if c is None:
                cells += ["—", "—"] if with_reward else ["—"]
                continue
            cost = _pm(c.cost_mean, c.cost_std, " ± ")
            if with_reward:
                cells.append(_pm(c.reward_mean, c.reward_std, " ± "))
            cells.append(f"**{cost}**" if c.marked else cost)
        lines.append("| " + " | ".join(cells) + " |")
    out = ["\n".join(lines), "", *_legend(columns, table.average)]
    if table.notes:
        out += ["", "Notes:", *(f"- {n}" for n in table.notes)]
    return "\n".join(out) + "\n"


def cell_numbers(cell: Cell) -> dict[str, str]:
    """A cell's means and stds as the CSV files write them (``repr``: every digit kept)."""
    return {
        "reward_mean": repr(cell.reward_mean),
        "reward_std": repr(cell.reward_std),
        "cost_mean": repr(cell.cost_mean),
        "cost_std": repr(cell.cost_std),
    }


def format_csv(
    table: ResultsTable | str | PathLike, columns: Sequence[tuple[str, str]] | None = None
) -> str:
    """Long format: one line per (env, method, column); empty numbers for a missing cell."""
    table = _as_table(table)
    columns = table.columns if columns is None else columns
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n")
    w.writeheader()
    for r in table.rows:
        for key, _ in columns:
            c = r.cells.get(key)
            row = {
                "env": r.env_id,
                "method": r.method,
                "attack": key,
                "marked": "true" if c is not None and c.marked else "false",
                "failing": "true" if r.failing else "false",
                "mode": r.mode,
                "epsilon": "" if r.epsilon is None or key == "none" else repr(r.epsilon),
                "n_episodes": 0 if c is None else c.n_episodes,
                "n_seeds": 0 if c is None else c.n_seeds,
            }
            if c is not None:
                row.update(cell_numbers(c))
            w.writerow(row)
    return buf.getvalue()


_TEX_ESCAPES = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def tex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped."""
    return "".join(_TEX_ESCAPES.get(ch, ch) for ch in text)


def format_latex(
    table: ResultsTable | str | PathLike, columns: Sequence[tuple[str, str]] | None = None
) -> str:
    """A plain-LaTeX ``tabular`` (no packages needed; marked costs in ``\\textbf``).

    The legend and notes come first as ``%`` comments, so the file can be ``\\input``.
    """
    table = _as_table(table)
    columns = table.columns if columns is None else columns
    n = len(columns)
    spec = "|l|l|" + "rr|" * n
    lines = [f"% {line}" for line in _legend(columns, table.average, ascii_only=True)]
    lines += [f"% note: {note}" for note in table.notes]
    lines += [f"\\begin{{tabular}}{{{spec}}}", "\\hline"]
    titles = " & ".join(f"\\multicolumn{{2}}{{c|}}{{{title}}}" for _, title in columns)
    lines.append(f" &  & {titles} \\\\")
    lines.append(f"\\cline{{3-{2 + 2 * n}}}")
    lines.append("Env & Method & " + " & ".join(["Reward & Cost"] * n) + " \\\\")
    lines.append("\\hline")
    previous = None
    for r in table.rows:
        if previous is not None and r.env_id != previous:
            lines.append("\\hline")
        env = ""
        if r.env_id != previous:
            eps = table.env_epsilon(r.env_id)
            env = tex_escape(r.env_id) + ("" if eps is None else f" ($\\epsilon={eps:g}$)")
        previous = r.env_id
        cells = [env, tex_escape(r.label)]
        for key, _ in columns:
            c = r.cells.get(key)
            if c is None:
                cells += ["--", "--"]
                continue
            cost = _pm(c.cost_mean, c.cost_std, "$\\pm$")
            cells += [
                _pm(c.reward_mean, c.reward_std, "$\\pm$"),
                f"\\textbf{{{cost}}}" if c.marked else cost,
            ]
        lines.append(" & ".join(cells) + " \\\\")
    lines += ["\\hline", "\\end{tabular}"]
    return "\n".join(lines) + "\n"


def write_tables(
    runs_dir: str | PathLike, out_prefix: str | PathLike, table: ResultsTable | None = None
) -> list[Path]:
    """Write ``<prefix>.md``, ``<prefix>.csv``, ``<prefix>.tex`` and ``<prefix>-costs.md`` (the
    Markdown table with the natural reward and the costs only); returns the paths.

    ``table`` defaults to ``collect_table(runs_dir)``.
    """
    table = table if table is not None else collect_table(runs_dir)
    return write_prefixed(
        out_prefix,
        (
            (".md", format_markdown(table)),
            (".csv", format_csv(table)),
            (".tex", format_latex(table)),
            ("-costs.md", format_markdown(table, costs_only=True)),
        ),
    )


def write_prefixed(out_prefix: str | PathLike, texts: Iterable[tuple[str, str]]) -> list[Path]:
    """Write each (suffix, text) to ``<prefix><suffix>`` atomically; returns the paths."""
    prefix = Path(out_prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    paths = []
    for suffix, text in texts:
        path = prefix.with_name(prefix.name + suffix)
        write_text_atomic(path, text)
        paths.append(path)
    return paths
