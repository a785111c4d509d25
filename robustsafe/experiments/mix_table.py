"""The appendix's MC/MR mixture table "Evaluation results under different ratio of MC and MR
attackers of PPOL" (paper appendix C.9, Table 7, ``tab:exp-ppol-mcmr-append``).

``mix:W`` maximises ``W Q_c + (1 - W) Q_r``, the paper's ``w x MC + (1 - w) x MR``: W = 0.75 is
its MC:MR = 3:1. Columns W = 1, 0.75, 0.5, 0.25, 0 (and any other W evaluated); W = 1 is
``mix:1`` or else ``mc`` (the same objective, see ``robustsafe.attacks.critic_attacks``), W = 0
``mix:0`` or else ``mr``. Rows: every method with some ``mix:W`` evaluation. ``robustsafe
table`` writes it as ``<prefix>-mix.{md,csv,tex}`` when there is one
(``robustsafe.experiments.appendix.write_appendix``), with the appendix's figure of the same
data (``robustsafe.experiments.figures.write_mix_figure``); the runs are read and pooled as
``robustsafe.experiments.appendix_runs`` says.
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
from robustsafe.experiments.names import method_name
from robustsafe.experiments.table import Cell
from robustsafe.experiments.table_format import tex_escape

MIX_WEIGHTS: tuple[float, ...] = (1.0, 0.75, 0.5, 0.25, 0.0)
_MIX_RATIOS = {1.0: "MC", 0.75: "MC:MR = 3:1", 0.5: "MC:MR = 1:1", 0.25: "MC:MR = 1:3", 0.0: "MR"}


def mix_weight(attack: str) -> float | None:
    """W of ``mix:W``, 1 for ``mc``, 0 for ``mr``, None for other attackers."""
    if attack == "mc":
        return 1.0
    if attack == "mr":
        return 0.0
    if attack.startswith("mix:"):
        try:
            return float(attack[4:])
        except ValueError:
            return None
    return None


def mix_title(weight: float) -> str:
    ratio = _MIX_RATIOS.get(weight)
    return f"w = {weight:g}" + (f" ({ratio})" if ratio else "")


@dataclass(frozen=True)
class MixRow:
    env_id: str
    mode: str
    epsilon: float | None
    seeds: tuple[int | None, ...]
    cells: dict[float, Cell | None]  # by W
    sources: dict[float, str]  # the attacker each W came from (mix:1 or mc, ...)

    @property
    def method(self) -> str:
        return method_name(self.mode)


def mix_source(f: EvalFile, weight: float) -> str | None:
    """The attacker of ``f`` that gives W (``mix:W`` first; ``mc`` / ``mr`` for 1 / 0)."""
    for attack, eps in f.episodes.items():
        if attack.startswith("mix:") and eps and mix_weight(attack) == weight:
            return attack
    if weight == 1.0 and f.episodes.get("mc"):
        return "mc"
    if weight == 0.0 and f.episodes.get("mr"):
        return "mr"
    return None


def build_mix_table(
    files: Sequence[EvalFile], weights: Sequence[float] = MIX_WEIGHTS
) -> tuple[list[MixRow], list[float], list[str]]:
    """Rows for every (env, method) with some ``mix:W`` evaluation; the W columns (``weights``
    and any other W evaluated, from MC's side to MR's); the notes."""
    groups = {
        k: m
        for k, m in group_by_method(files).items()
        if any(a.startswith("mix:") and e for f in m for a, e in f.episodes.items())
    }
    found = {
        w
        for m in groups.values()
        for f in m
        for a in f.episodes
        if a.startswith("mix:") and (w := mix_weight(a)) is not None
    }
    columns = sorted(set(weights) | found, reverse=True)
    rows, notes = [], []
    for (env_id, mode), members in groups.items():
        name = f"{method_name(mode)} on {env_id}"
        cells: dict[float, Cell | None] = {}
        sources: dict[float, str] = {}
        used: set[str] = set()
        for w in columns:
            per_run = [(f, mix_source(f, w)) for f in members]
            runs = [f.episodes[a] for f, a in per_run if a is not None]
            cells[w] = Cell.pool(runs) if runs else None
            names = sorted({a for _, a in per_run if a is not None})
            sources[w] = "/".join(names)
            used.update(names)
            if len(names) > 1:
                notes.append(f"{name}, w = {w:g}: pools {' and '.join(names)} across seeds.")
        eps = method_epsilon(name, members, used)
        counts = {(c.n_seeds, c.n_episodes) for c in cells.values() if c is not None}
        if len(counts) > 1:
            detail = ", ".join(
                f"w = {w:g}: {c.n_episodes} episodes of {c.n_seeds} seed(s)"
                for w, c in cells.items()
                if c is not None
            )
            notes.append(f"{name}: the columns pool different runs or episodes ({detail}).")
        rows.append(MixRow(env_id, mode, eps, tuple(f.train_seed for f in members), cells, sources))
    return rows, columns, notes


def format_mix_markdown(
    rows: Sequence[MixRow], columns: Sequence[float], notes: Sequence[str] = ()
) -> str:
    head = ["Env", "Method", "Seeds"]
    for w in columns:
        head += [f"{mix_title(w)} reward", f"{mix_title(w)} cost"]
    lines = [
        "MC/MR mixture attacker (paper appendix C.9): mix:W maximises W Q_c + (1 - W) Q_r, the "
        "paper's w x MC + (1 - w) x MR. Mean ± std over the pooled episodes of all seeds; w = 1 "
        "is MC, w = 0 is MR.",
        "",
        "| " + " | ".join(head) + " |",
        "|---|---|---:|" + "---:|" * (2 * len(columns)),
    ]
    previous = None
    for r in rows:
        env = r.env_id
        if r.epsilon is not None:
            env += f" (ε = {r.epsilon:g})"
        cells = [env if r.env_id != previous else "", r.method, str(len(r.seeds))]
        previous = r.env_id
        for w in columns:
            c = r.cells.get(w)
            cells += mean_std_pair(c)
        lines.append("| " + " | ".join(cells) + " |")
    if notes:
        lines += ["", "Notes:", *(f"- {n}" for n in notes)]
    return "\n".join(lines) + "\n"


def format_mix_latex(
    rows: Sequence[MixRow], columns: Sequence[float], notes: Sequence[str] = ()
) -> str:
    n = len(columns)
    lines = [
        "% MC/MR mixture: mix:W maximises W Q_c + (1 - W) Q_r; mean +/- std over all episodes "
        "of all seeds.",
        *(f"% note: {note}" for note in notes),
        "\\begin{tabular}{|l|l|" + "rr|" * n + "}",
        "\\hline",
        " &  & "
        + " & ".join(f"\\multicolumn{{2}}{{c|}}{{{tex_escape(mix_title(w))}}}" for w in columns)
        + " \\\\",
        f"\\cline{{3-{2 + 2 * n}}}",
        "Env & Method & " + " & ".join(["Reward & Cost"] * n) + " \\\\",
        "\\hline",
    ]
    previous = None
    for r in rows:
        if previous is not None and r.env_id != previous:
            lines.append("\\hline")
        env = ""
        if r.env_id != previous:
            env = tex_escape(r.env_id) + (
                "" if r.epsilon is None else f" ($\\epsilon={r.epsilon:g}$)"
            )
        previous = r.env_id
        cells = [env, tex_escape(r.method)]
        for w in columns:
            c = r.cells.get(w)
            cells += (
                ["--", "--"]
                if c is None
                else [
                    f"{c.reward_mean:.2f}$\\pm${c.reward_std:.2f}",
                    f"{c.cost_mean:.2f}$\\pm${c.cost_std:.2f}",
                ]
            )
        lines.append(" & ".join(cells) + " \\\\")
    lines += ["\\hline", "\\end{tabular}"]
    return "\n".join(lines) + "\n"


def format_mix_csv(rows: Sequence[MixRow]) -> str:
    """The long CSV format (``appendix_runs.APPENDIX_CSV_FIELDS``): one line per (env, method,
    W), its attacker the one W came from (``mix:W`` where no run has W)."""
    lines = []
    for r in rows:
        for weight, cell in r.cells.items():
            attack = r.sources.get(weight) or f"mix:{weight:g}"
            lines.append(appendix_csv_row("mix", r.env_id, r.mode, attack, weight, r.epsilon, cell))
    return format_appendix_csv(lines)
