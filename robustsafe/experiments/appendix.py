"""The appendix's tables (paper appendix C.9) from a directory tree of evaluations.

``robustsafe table DIR`` writes them beside Table 1 (see ``write_appendix``):

- ``<prefix>-appendix.{md,csv,tex}``: the Random / MAD / Average columns, reward and cost, of
  the appendix table "Evaluation results of natural performance (no attack) and under Random
  and MAD attackers" (Table 5, ``tab:exp-results-append``). Same rows, pooling, failing stars
  and lowest-cost marks as Table 1 (it is Table 1's builder with those columns): Average pools
  Natural and the five attackers, as the paper's numbers do (``robustsafe table --average
  attackers``: the five attackers only, as its caption says).
- ``<prefix>-minr.{md,csv,tex}``: the minimum-reward attacker table "Evaluation results under
  Minimum Reward attacker" (Table 3, ``tab:exp-minreward-append``): per method a Reward and a
  Cost row, per env a column, each cell the pooled mean under ``minr`` with its change from the
  natural mean of the same runs (``↓`` lower, ``↑`` higher); our cells add the pooled std. The
  Markdown file also compares minr with MC and MR (the same runs' ``mc`` / ``mr``
  evaluations). Written when some run has a ``minr`` evaluation.
- The other learners' tables (``LEARNER_TABLES``), each the learner's rows of Table 1 with the
  paper's columns, written when some run is that learner's: ``<prefix>-focops.{md,csv,tex}``
  (``tab:exp-focops-append``: FOCOPS-vanilla, FOCOPS(MC), FOCOPS(MR) under no attack, MAD, MC
  and MR), ``<prefix>-sac-lag.*`` (``tab:exp-sacl-append``: one group of rows per entropy weight
  alpha, under no attack, MC and MR) and ``<prefix>-cvpo.*`` (``tab:exp-cvpo-append``: CVPO
  under no attack, MAD, MC and MR). The paper's runs are on Car-Run and Car-Circle at epsilon
  0.05.
- ``<prefix>-mix.{md,csv,tex}``: the MC/MR mixture table "Evaluation results under different
  ratio of MC and MR attackers of PPOL" (Table 7, ``tab:exp-ppol-mcmr-append``). ``mix:W``
  maximises ``W Q_c + (1 - W) Q_r``, the paper's ``w x MC + (1 - w) x MR``: W = 0.75 is its
  MC:MR = 3:1.
  Columns W = 1, 0.75, 0.5, 0.25, 0 (and any other W evaluated); W = 1 is ``mix:1`` or else
  ``mc`` (the same objective, see ``robustsafe.attacks.critic_attacks``), W = 0 ``mix:0`` or
  else ``mr``. Rows: every method with some ``mix:W`` evaluation. Written when there is one,
  with the appendix's figure of the same data (``<prefix>-mix-figure.{png,pdf,csv}``: reward
  and cost against w, bands across seeds; ``robustsafe.experiments.figures``).

Where the evaluations come from: for every run directory, ``eval.json`` (Table 1's attackers,
what ``robustsafe table`` always read) merged with ``eval-appendix.json`` if present (what
``robustsafe grid --appendix`` writes: ``none``, ``minr`` and ``mix:W`` at the run's epsilon).
An attacker in both is taken from ``eval-appendix.json``, so the appendix tables pool episodes
of one evaluation (same episode count as its own natural cell). Pooling is Table 1's: all
episodes of all seeds, mean and population std. Errors as in Table 1: the seeds of one method
attacked at different epsilons, or a seed evaluated twice, raise ValueError naming the files.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path

from robustsafe.experiments.eval_files import EvalFile, load_eval_file
from robustsafe.experiments.names import ALGO_NAMES, env_key, method_key, method_name
from robustsafe.experiments.table import AVERAGE, Cell, ResultsTable, collect_table
from robustsafe.experiments.table_format import (
    cell_numbers,
    format_csv,
    format_latex,
    format_markdown,
    tex_escape,
    write_prefixed,
)
from robustsafe.files import find_named

APPENDIX_EVAL_NAME = "eval-appendix.json"
APPENDIX_COLUMNS: tuple[tuple[str, str], ...] = (
    ("random", "Random"),
    ("mad", "MAD"),
    (AVERAGE, "Average"),
)
# the grid's extra attackers (``robustsafe grid --appendix``; the modes that get them are
# ``GridSpec.appendix_modes``): the paper's minimum-reward and mixture tables
APPENDIX_ATTACKS: tuple[str, ...] = ("minr", "mix:0.25", "mix:0.5", "mix:0.75")
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
MIX_WEIGHTS: tuple[float, ...] = (1.0, 0.75, 0.5, 0.25, 0.0)
_MIX_RATIOS = {1.0: "MC", 0.75: "MC:MR = 3:1", 0.5: "MC:MR = 1:1", 0.25: "MC:MR = 1:3", 0.0: "MR"}
MINR_COMPARED = (("none", "Natural"), ("minr", "MinR"), ("mc", "MC"), ("mr", "MR"))
# the figures written beside the tables: ``<prefix>-mix-figure.*`` and ``<prefix>-amad-xi.*``
MIX_FIGURE = "-mix-figure"
XI_FIGURE = "-amad-xi"

APPENDIX_CSV_FIELDS = (
    "table",
    "env",
    "method",
    "mode",
    "attack",
    "weight",
    "epsilon",
    "reward_mean",
    "reward_std",
    "cost_mean",
    "cost_std",
    "reward_change",
    "cost_change",
    "n_episodes",
    "n_seeds",
)


# ----------------------------------------------------------------------------- reading


def merge_evals(main: EvalFile | None, extra: EvalFile | None) -> EvalFile:
    """One run's evaluations: ``main`` (eval.json) with ``extra``'s attackers on top."""
    if main is None or extra is None:
        out = main or extra
        if out is None:
            raise ValueError("merge_evals needs at least one evaluation")
        return out
    for name in ("env_id", "algo", "mode", "train_seed"):
        if getattr(main, name) != getattr(extra, name):
            raise ValueError(
                f"{extra.path}: {name} {getattr(extra, name)!r} differs from {main.path}'s "
                f"{getattr(main, name)!r}: they are not evaluations of the same run"
            )
    # the same agent on the same paired episodes (e.g. not an appendix evaluation left from
    # before the training was extended): mixture columns sit beside eval.json's MC and MR
    for name, what in (
        ("agent_epoch", "agent epoch"),
        ("episode_seed", "episode seed"),
        ("actions", "actions"),
    ):
        mine, theirs = getattr(extra, name), getattr(main, name)
        if mine is not None and theirs is not None and mine != theirs:
            raise ValueError(
                f"{extra.path}: its {what} {mine!r} differs from {main.path}'s {theirs!r}: "
                "not the same agent on the same episodes; evaluate it again (grid --appendix)"
            )
    return EvalFile(
        path=main.path,
        env_id=main.env_id,
        mode=main.mode,
        train_seed=main.train_seed,
        preset=main.preset,
        agent_epoch=main.agent_epoch,
        episodes={**main.episodes, **extra.episodes},
        epsilons={**main.epsilons, **extra.epsilons},
        algo=main.algo,
        actions=main.actions,
        cost_limit=main.cost_limit,
        episode_seed=main.episode_seed,
        train_epsilon=main.train_epsilon,
    )


def collect_runs(runs_dir: str | PathLike) -> tuple[list[EvalFile], list[str]]:
    """Every run under ``runs_dir`` with ``eval.json`` and / or ``eval-appendix.json``, merged
    per directory; files that cannot be used are left out with a note."""
    root = Path(runs_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a directory")
    names = ("eval.json", APPENDIX_EVAL_NAME)
    dirs = sorted({p.parent for p in find_named(root, *names)})
    runs, notes = [], []
    for d in dirs:
        loaded: dict[str, EvalFile | None] = {}
        for name in ("eval.json", APPENDIX_EVAL_NAME):
            loaded[name] = None
            if (d / name).exists():
                try:
                    loaded[name] = load_eval_file(d / name)
                except ValueError as err:
                    notes.append(f"left out {err}")
        if loaded["eval.json"] is None and loaded[APPENDIX_EVAL_NAME] is None:
            continue
        try:
            run = merge_evals(loaded["eval.json"], loaded[APPENDIX_EVAL_NAME])
        except ValueError as err:
            notes.append(f"left out {err}")
            continue
        if run.algo != "ppol":  # these tables are PPO-Lagrangian's (``robustsafe table``: all)
            notes.append(f"left out {run.path}: a {run.algo} run; these tables show PPOL's")
            continue
        runs.append(run)
    return runs, notes


def _groups(files: Iterable[EvalFile]) -> dict[tuple[str, str], list[EvalFile]]:
    """Runs by (env, mode), in the paper's order; ValueError if a seed appears twice."""
    groups: dict[tuple[str, str], list[EvalFile]] = {}
    for f in files:
        groups.setdefault((f.env_id, f.mode), []).append(f)
    out = {}
    for key in sorted(groups, key=lambda k: (env_key(k[0]), method_key(k[1]))):
        members = sorted(
            groups[key], key=lambda f: (f.train_seed is None, f.train_seed or 0, f.path)
        )
        seen: dict[int, Path] = {}
        for f in members:
            if f.train_seed is not None and f.train_seed in seen:
                raise ValueError(
                    f"{method_name(key[1])} on {key[0]}: seed {f.train_seed} is evaluated twice "
                    f"({seen[f.train_seed]} and {f.path}); pooling both would count that seed "
                    "twice: remove one"
                )
            if f.train_seed is not None:
                seen[f.train_seed] = f.path
        out[key] = members
    return out


def _epsilon(name: str, runs: Sequence[EvalFile], attacks: Iterable[str]) -> float | None:
    """The one epsilon of ``attacks`` over ``runs``; ValueError if they disagree."""
    attacks = tuple(attacks)
    values: dict[float, Path] = {}
    for f in runs:
        for a in attacks:
            if f.episodes.get(a) and a != "none":
                values.setdefault(f.epsilons[a], f.path)
    if len(values) > 1:
        detail = "; ".join(f"{p}: {e:g}" for e, p in values.items())
        raise ValueError(
            f"{name}: attacked at different epsilons ({detail}); the table needs one epsilon "
            "per method: re-evaluate at one epsilon, or table them separately"
        )
    return next(iter(values), None)


def _pool(runs: Sequence[EvalFile], attack: str) -> Cell | None:
    data = [f.episodes[attack] for f in runs if f.episodes.get(attack)]
    return Cell.pool(data) if data else None


# ----------------------------------------------------------------------------- Random / MAD


def format_appendix_markdown(table: ResultsTable) -> str:
    """The appendix's Random / MAD / Average table (Table 1's rows, marks and notes)."""
    title = (
        "Appendix table (paper appendix C.9): natural performance is in Table 1; here the Random "
        "and MAD attackers and the Average (see the legend), reward and cost.\n\n"
    )
    return title + format_markdown(table, columns=APPENDIX_COLUMNS)


# ----------------------------------------------------------------------------- minimum reward


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


def build_minr_table(files: Sequence[EvalFile]) -> tuple[list[MinRewardRow], list[str]]:
    """Rows for every (env, method) with a ``minr`` evaluation; the notes."""
    rows, notes = [], []
    for (env_id, mode), members in _groups(files).items():
        runs = [f for f in members if f.episodes.get("minr")]
        if not runs:
            continue
        name = f"{method_name(mode)} on {env_id}"
        eps = _epsilon(name, runs, ("minr", "mc", "mr"))
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


def _pm_pair(c: Cell | None) -> list[str]:
    if c is None:
        return ["—", "—"]
    return [f"{c.reward_mean:.2f} ± {c.reward_std:.2f}", f"{c.cost_mean:.2f} ± {c.cost_std:.2f}"]


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
            cells += _pm_pair(c)
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


# ----------------------------------------------------------------------------- MC/MR mixture


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


def _mix_source(f: EvalFile, weight: float) -> str | None:
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
        for k, m in _groups(files).items()
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
            per_run = [(f, _mix_source(f, w)) for f in members]
            runs = [f.episodes[a] for f, a in per_run if a is not None]
            cells[w] = Cell.pool(runs) if runs else None
            names = sorted({a for _, a in per_run if a is not None})
            sources[w] = "/".join(names)
            used.update(names)
            if len(names) > 1:
                notes.append(f"{name}, w = {w:g}: pools {' and '.join(names)} across seeds.")
        eps = _epsilon(name, members, used)
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
            cells += _pm_pair(c)
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


# ----------------------------------------------------------------------------- CSV, writing


def format_appendix_csv(
    minr_rows: Sequence[MinRewardRow] = (), mix_rows: Sequence[MixRow] = ()
) -> str:
    """Long format for the minr and mix tables: one line per (table, env, method, attacker)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=APPENDIX_CSV_FIELDS, lineterminator="\n")
    w.writeheader()

    def line(table: str, env: str, mode: str, attack: str, weight, eps, cell, changes=(None, None)):
        row = {
            "table": table,
            "env": env,
            "method": method_name(mode),
            "mode": mode,
            "attack": attack,
            "weight": "" if weight is None else repr(weight),
            "epsilon": "" if eps is None or attack == "none" else repr(eps),
            "n_episodes": 0 if cell is None else cell.n_episodes,
            "n_seeds": 0 if cell is None else cell.n_seeds,
            "reward_change": "" if changes[0] is None else repr(changes[0]),
            "cost_change": "" if changes[1] is None else repr(changes[1]),
        }
        if cell is not None:
            row.update(cell_numbers(cell))
        w.writerow(row)

    for r in minr_rows:
        for key, _ in MINR_COMPARED:
            changes = (r.change("reward"), r.change("cost")) if key == "minr" else (None, None)
            line("minr", r.env_id, r.mode, key, None, r.epsilon, r.cells.get(key), changes)
    for r in mix_rows:
        for weight, cell in r.cells.items():
            attack = r.sources.get(weight) or f"mix:{weight:g}"
            line("mix", r.env_id, r.mode, attack, weight, r.epsilon, cell)
    return buf.getvalue()


def learner_table(table: ResultsTable, algo: str) -> ResultsTable:
    """Table 1's rows of one learner (marks and stars are per learner already; SAC-Lag's rows of
    every entropy weight, ``sac-lag:<alpha>``), with the notes that name it."""
    rows = tuple(r for r in table.rows if r.algo.split(":", 1)[0] == algo)
    name = ALGO_NAMES.get(algo, algo)
    return ResultsTable(rows, tuple(n for n in table.notes if name in n), table.source)


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
    from robustsafe.experiments.figures import write_mix_figure, write_xi_figure
    from robustsafe.experiments.xi_sweep import collect_xi_sweeps

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
    files, read_notes = collect_runs(runs_dir)
    minr_rows, minr_notes = build_minr_table(files)
    if minr_rows:
        notes = [*read_notes, *minr_notes]
        paths += write_prefixed(
            prefix,
            [
                ("-minr.md", format_minr_markdown(minr_rows, notes)),
                ("-minr.csv", format_appendix_csv(minr_rows=minr_rows)),
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
                ("-mix.csv", format_appendix_csv(mix_rows=mix_rows)),
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
