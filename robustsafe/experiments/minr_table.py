"""The appendix's minimum-reward attacker table "Evaluation results under Minimum Reward
attacker" (paper appendix C.9, Table 3, ``tab:exp-minreward-append``).

Per method a Reward and a Cost row, per env a column, each cell the pooled mean under ``minr``
with its change from the natural mean of the same runs (``↓`` lower, ``↑`` higher); our cells
add the pooled std. The Markdown file also compares minr with MC and MR (the same runs' ``mc`` /
``mr`` evaluations). ``robustsafe table`` writes it as ``<prefix>-minr.{md,csv,tex}`` when some
run has a ``minr`` evaluation (``robustsafe.experiments.appendix.write_appendix``); the runs
are read and pooled as ``robustsafe.experiments.appendix_runs`` says.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from robustsafe.experiments.appendix_runs import (
    appendix_csv_row,
    format_appendix_csv,
    group_by_method,
    mean_std_pair,
    method_epsilon,
)
from robustsafe.experiments.eval_files import EvalFile
from robustsafe.experiments.names import method_key, method_name
from robustsafe.experiments.table import Cell
from robustsafe.experiments.table_format import tex_escape

MINR_COMPARED = (("none", "Natural"), ("minr", "MinR"), ("mc", "MC"), ("mr", "MR"))


@dataclass(frozen=True)
class MinRewardRow:
    """One method on one env: pooled natural and minr episodes of the runs evaluated under
    minr, and the same runs' MC and MR cells (None where not evaluated)."""

    env_id: str
    mode: str
    epsilon: float | None
    seeds: tuple[int | None, ...]
    cells: dict[str, Cell | None]

    @property
    def method(self) -> str:
        return method_name(self.mode)

    def change(self, what: str) -> float | None:
        """minr mean minus natural mean of ``what`` (``reward`` or ``cost``)."""
        nat, minr = self.cells.get("none"), self.cells.get("minr")
        if nat is None or minr is None:
            return None
        return getattr(minr, f"{what}_mean") - getattr(nat, f"{what}_mean")


def _pool(runs: Sequence[EvalFile], attack: str) -> Cell | None:
    data = [f.episodes[attack] for f in runs if f.episodes.get(attack)]
    return Cell.pool(data) if data else None


def build_minr_table(files: Sequence[EvalFile]) -> tuple[list[MinRewardRow], list[str]]:
    """Rows for every (env, method) with a ``minr`` evaluation; the notes."""
    rows, notes = [], []
    for (env_id, mode), members in group_by_method(files).items():
        runs = [f for f in members if f.episodes.get("minr")]
        if not runs:
            continue
        name = f"{method_name(mode)} on {env_id}"
        eps = method_epsilon(name, runs, ("minr", "mc", "mr"))
        cells = {key: _pool(runs, key) for key, _ in MINR_COMPARED}
        if cells["none"] is None:
            notes.append(f"{name}: no natural episodes in the runs evaluated under minr.")
        for key, title in MINR_COMPARED[2:]:
            c = cells[key]
            if c is not None and (c.n_seeds, c.n_episodes) != (
                cells["minr"].n_seeds,
                cells["minr"].n_episodes,
            ):
                notes.append(
                    f"{name}, {title}: {c.n_episodes} episodes of {c.n_seeds} seed(s) "
                    f"(MinR: {cells['minr'].n_episodes} of {cells['minr'].n_seeds})."
                )
        rows.append(MinRewardRow(env_id, mode, eps, tuple(f.train_seed for f in runs), cells))
    return rows, notes


def _arrow(change: float | None, tex: bool = False) -> str:
    if change is None:
        return ""
    up = float(f"{change:.2f}") > 0
    if tex:
        return f" ($\\{'uparrow' if up else 'downarrow'}${abs(change):.2f})"
    return f" ({'↑' if up else '↓'}{abs(change):.2f})"


def _minr_cell(row: MinRewardRow | None, what: str, tex: bool = False) -> str:
    cell = None if row is None else row.cells.get("minr")
    if cell is None:
        return "--" if tex else "—"
    pm = "$\\pm$" if tex else " ± "
    mean, std = getattr(cell, f"{what}_mean"), getattr(cell, f"{what}_std")
    return f"{mean:.2f}{pm}{std:.2f}{_arrow(row.change(what), tex)}"


def _env_heading(env_id: str, rows: Sequence[MinRewardRow], tex: bool = False) -> str:
    eps = {r.epsilon for r in rows if r.env_id == env_id and r.epsilon is not None}
    if len(eps) != 1:
        return tex_escape(env_id) if tex else env_id
    e = eps.pop()
    return f"{tex_escape(env_id)} ($\\epsilon={e:g}$)" if tex else f"{env_id} (ε = {e:g})"


def format_minr_markdown(rows: Sequence[MinRewardRow], notes: Sequence[str] = ()) -> str:
    """The paper's layout (methods x {Reward, Cost} by env), then minr against MC and MR."""
    envs = list(dict.fromkeys(r.env_id for r in rows))
    modes = list(dict.fromkeys(r.mode for r in sorted(rows, key=lambda r: method_key(r.mode))))
    by_key = {(r.env_id, r.mode): r for r in rows}
    head = ["Method", "", *(_env_heading(e, rows) for e in envs)]
    lines = [
        "Minimum-reward attacker (minr: minimises Q_r(s, mu(s~))), paper appendix C.9. Each cell: "
        "mean ± std over the pooled episodes of all seeds under minr, and in brackets its change "
        "from the natural mean of the same runs (↓ lower, ↑ higher).",
        "",
        "| " + " | ".join(head) + " |",
        "|---|---|" + "---:|" * len(envs),
    ]
    for mode in modes:
        for what in ("reward", "cost"):
            cells = [_minr_cell(by_key.get((e, mode)), what) for e in envs]
            first = method_name(mode) if what == "reward" else ""
            lines.append("| " + " | ".join([first, what.capitalize(), *cells]) + " |")
    lines += [
        "",
        "MinR against MC and MR (the same runs; reward / cost, mean ± std):",
        "",
        "| Env | Method | Seeds | Episodes | "
        + " | ".join(f"{t} reward | {t} cost" for _, t in MINR_COMPARED)
        + " |",
        "|---|---|---:|---:|" + "---:|" * (2 * len(MINR_COMPARED)),
    ]
    previous = None
    for r in rows:
        env = _env_heading(r.env_id, rows) if r.env_id != previous else ""
        previous = r.env_id
        minr = r.cells["minr"]
        cells = [env, r.method, str(len(r.seeds)), str(minr.n_episodes if minr else 0)]
        for key, _ in MINR_COMPARED:
            c = r.cells.get(key)
            cells += mean_std_pair(c)
        lines.append("| " + " | ".join(cells) + " |")
    if notes:
        lines += ["", "Notes:", *(f"- {n}" for n in notes)]
    return "\n".join(lines) + "\n"


def format_minr_latex(rows: Sequence[MinRewardRow], notes: Sequence[str] = ()) -> str:
    """The paper's layout as a plain-LaTeX ``tabular`` (notes as ``%`` comments)."""
    envs = list(dict.fromkeys(r.env_id for r in rows))
    modes = list(dict.fromkeys(r.mode for r in sorted(rows, key=lambda r: method_key(r.mode))))
    by_key = {(r.env_id, r.mode): r for r in rows}
    lines = [
        "% Minimum-reward attacker: mean +/- std over all episodes of all seeds, and the change "
        "from the natural mean of the same runs.",
        *(f"% note: {n}" for n in notes),
        "\\begin{tabular}{|l|l|" + "r|" * len(envs) + "}",
        "\\hline",
        "Method &  & " + " & ".join(_env_heading(e, rows, tex=True) for e in envs) + " \\\\",
        "\\hline",
    ]
    for mode in modes:
        for what in ("reward", "cost"):
            first = tex_escape(method_name(mode)) if what == "reward" else ""
            cells = [_minr_cell(by_key.get((e, mode)), what, tex=True) for e in envs]
            lines.append(" & ".join([first, what.capitalize(), *cells]) + " \\\\")
        lines.append("\\hline")
    lines.append("\\end{tabular}")
    return "\n".join(lines) + "\n"


def format_minr_csv(rows: Sequence[MinRewardRow]) -> str:
    """The long CSV format (``appendix_runs.APPENDIX_CSV_FIELDS``): one line per (env, method,
    attacker of ``MINR_COMPARED``); minr's line has its changes from the natural means."""
    lines = []
    for r in rows:
        for key, _ in MINR_COMPARED:
            changes = (r.change("reward"), r.change("cost")) if key == "minr" else (None, None)
            cell = r.cells.get(key)
            lines.append(
                appendix_csv_row("minr", r.env_id, r.mode, key, None, r.epsilon, cell, changes)
            )
    return format_appendix_csv(lines)
