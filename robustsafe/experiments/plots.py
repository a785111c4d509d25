"""The figures of ``robustsafe plot``: training curves and the paper's Figure 2.

**Figure 2** (``robustsafe plot sweep EVAL.json [...]``, ``write_sweep_figure``): reward and
cost against epsilon, one line per attacker (paper names: Random, MAD, AMAD, MC, MR; also MinR
and Mix w when evaluated), from the sweep files ``robustsafe evaluate --eps start:stop:count
--out X.json`` writes. Files of the same (env, learner, training mode) but different training
seeds are pooled like the appendix figures (``robustsafe.experiments.figures``): the line is
the mean over all pooled episodes, the band the standard deviation across the seeds' means
(ddof = 0), or, with a single seed, across its episodes (the CSV says which, in ``band``).
Natural performance is a dashed horizontal line, the cost limit a labelled red line. One row of
panels per env; colours are attackers, line styles agents. ``robustsafe evaluate`` draws the
same figure for its own sweep (``robustsafe.evaluate.write_sweep``).

**Training curves** (``robustsafe plot curves RUN [RUN ...]``, ``write_curves_figure``): the
``metrics.csv`` of run directories, per epoch against environment steps: episode reward, episode
cost (with the cost limit of the run's config), the cost multiplier (``lambda``; FOCOPS: ``nu``)
and the attack budget ``epsilon`` of the training schedule. Runs of the same (env, learner,
mode, preset) with different seeds are one line (the mean across seeds) and a band (their
standard deviation, ddof = 0), over the epochs every seed has.

Every figure is written as ``<prefix>.png``, ``<prefix>.pdf`` and ``<prefix>.csv`` (the plotted
data, one row per point).
"""

from __future__ import annotations

import csv
import io
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from robustsafe.experiments.eval_files import evaluated_learner, parse_results
from robustsafe.experiments.figures import SeriesPoint, _point, format_xi_csv, save_figure
from robustsafe.experiments.names import (
    algo_key,
    attack_name,
    attack_sort_key,
    env_key,
    learner_group,
    method_key,
    method_name,
)
from robustsafe.files import read_json

# The paper's attacker names, in the paper's order; others follow.
DEFAULT_COST_LIMIT = 5.0  # PIDConfig's and FOCOPSConfig's default (the paper's)


def draw_cost_limit(ax: Any, limit: float) -> None:
    """A labelled horizontal line at the cost limit on a cost axis."""
    ax.axhline(limit, color="r", ls="-.", lw=1.2, label=f"cost limit ({limit:g})")
    ax.annotate(
        f"cost limit {limit:g}",
        xy=(0.01, limit),
        xycoords=("axes fraction", "data"),
        xytext=(0, 3),
        textcoords="offset points",
        color="r",
        fontsize=8,
    )


# ----------------------------------------------------------------------------- Figure 2


@dataclass(frozen=True)
class SweepRun:
    """One agent's sweep: per (attacker, epsilon), the (reward, cost) of every episode."""

    path: str
    env_id: str
    mode: str
    algo: str
    train_seed: int | None
    cost_limit: float | None
    xi: float | None  # AMAD's xi
    episodes: dict[tuple[str, float], tuple[tuple[float, float], ...]]
    actions: str | None = None  # the action the evaluation ran, as it records it
    epsilon_space: str | None = None  # "raw" or "normalized" observation units

    @staticmethod
    def from_payload(data: dict[str, Any], path: str = "") -> SweepRun:
        """From the JSON object ``robustsafe evaluate --out`` writes; ValueError if unusable."""
        where = path or "the evaluation"
        episodes: dict[tuple[str, float], tuple[tuple[float, float], ...]] = {}
        for result in parse_results(data, where):
            key = (result.attack, result.epsilon)
            if key in episodes:
                raise ValueError(f"{where}: attacker {key[0]!r} at epsilon {key[1]:g} twice")
            episodes[key] = result.episodes
        seed, limit, xi = data.get("train_seed"), data.get("cost_limit"), data.get("xi")
        if isinstance(xi, int | float) and not 0 < xi <= 1:
            raise ValueError(f"{where}: AMAD's xi is {xi}, not in (0, 1]")
        return SweepRun(
            path=path,
            env_id=str(data.get("env_id", "?")),
            mode=str(data.get("train_mode", "?")),
            algo=evaluated_learner(data, where),
            train_seed=seed if isinstance(seed, int) else None,
            cost_limit=float(limit) if isinstance(limit, (int, float)) else None,
            xi=float(xi) if isinstance(xi, (int, float)) else None,
            episodes=episodes,
            actions=_text(data.get("actions")),
            epsilon_space=_text(data.get("epsilon_space")),
        )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def load_sweep_file(path: str | Path) -> SweepRun:
    """Read a ``robustsafe evaluate --out`` JSON file; ValueError naming it if unusable."""
    return SweepRun.from_payload(read_json(path), str(path))


def sweep_series(
    runs: Sequence[SweepRun], attacks: Sequence[str] | None = None
) -> list[SeriesPoint]:
    """Figure 2's points: per (env, learner, mode), natural (attack ``none``) then every attacker
    (``attacks``, default all but ``none``) by increasing epsilon, seeds pooled.

    ValueError if a seed of one (env, learner, mode) appears twice, or nothing is left to plot.
    """
    groups: dict[tuple[str, str, str], list[SweepRun]] = {}
    for r in runs:
        groups.setdefault((r.env_id, r.algo, r.mode), []).append(r)
    points: list[SeriesPoint] = []
    for env_id, algo, mode in sorted(
        groups, key=lambda k: (env_key(k[0]), algo_key(k[1]), method_key(k[2]))
    ):
        members = groups[(env_id, algo, mode)]
        xi = _check_poolable(members, f"{method_name(mode, algo)} on {env_id}")
        keys = {k for m in members for k in m.episodes}
        wanted = sorted({a for a, _ in keys if a != "none"}, key=attack_sort_key)
        if attacks is not None:
            wanted = [a for a in wanted if a in attacks]
        for attack in ["none", *wanted]:
            for eps in sorted({e for a, e in keys if a == attack}):
                runs_at = [
                    m.episodes[(attack, eps)] for m in members if (attack, eps) in m.episodes
                ]
                point = _point(
                    env_id, mode, attack, xi if attack == "amad" else None, eps, runs_at, algo
                )
                points.append(point)
    if not any(p.attack != "none" for p in points):
        held = sorted({a for r in runs for a, _ in r.episodes if a != "none"}, key=attack_sort_key)
        if attacks is not None and held:
            raise ValueError(
                f"--attacks {','.join(attacks)}: no such attacker in the evaluations, which hold "
                + ", ".join(held)
            )
        raise ValueError("no attacked evaluation to plot (evaluate with --attacks and --eps)")
    natural_only = [
        env
        for env in dict.fromkeys(p.env_id for p in points)
        if not any(p.env_id == env and p.attack != "none" for p in points)
    ]
    if natural_only:  # its panel would have no x axis
        raise ValueError(
            f"{', '.join(natural_only)}: no attacked evaluation to plot"
            + (f" among --attacks {','.join(attacks)}" if attacks is not None else "")
            + "; leave its files out, or evaluate it with --attacks and --eps"
        )
    return points


def _check_poolable(members: Sequence[SweepRun], name: str) -> float | None:
    """The sweeps of one (env, learner, mode) pooled as its seeds: ValueError unless each is one
    seed's, and they ran the same AMAD xi, epsilon units and action. Returns the xi."""
    files = ", ".join(m.path for m in members)
    seeds = [m.train_seed for m in members]
    if len(members) > 1 and None in seeds:  # a --policy / --sb3 evaluation, or no seed kept
        raise ValueError(
            f"{name}: {files}: a sweep without a training seed cannot be pooled with another "
            "(another policy, or the same file twice); plot them one at a time"
        )
    if len(seeds) != len(set(seeds)):
        raise ValueError(f"{name}: a training seed has two sweeps ({files})")
    amad_xis = {m.xi for m in members if any(a == "amad" for a, _ in m.episodes)}
    for what, values in (
        ("AMAD's xi", amad_xis),
        ("epsilon units", {m.epsilon_space for m in members}),
        ("actions", {m.actions for m in members}),
    ):
        if len(values) > 1:
            shown = ", ".join(sorted(str(v) for v in values))
            raise ValueError(
                f"{name}: the sweeps ({files}) differ in {what} ({shown}); their seeds cannot "
                "be pooled: plot them apart"
            )
    return amad_xis.pop() if amad_xis else None


_STYLES = ("-", "--", "-.", ":")
_MARKERS = ("o", "s", "^", "D", "v")


def _attack_colors(attacks: Sequence[str]) -> dict[str, str]:
    import matplotlib.pyplot as plt

    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    return {a: colors[i % len(colors)] for i, a in enumerate(sorted(attacks, key=attack_sort_key))}


def write_sweep_figure(
    runs: Sequence[SweepRun],
    out_prefix: str | Path,
    attacks: Sequence[str] | None = None,
    cost_limit: float | None = None,
) -> list[Path]:
    """The paper's Figure 2 as ``<prefix>.png``, ``.pdf`` and ``.csv``; returns the paths.

    ``cost_limit``: the line on the cost panels (default: the runs' own, recorded by
    ``robustsafe evaluate``, else 5).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = sweep_series(runs, attacks)
    envs = list(dict.fromkeys(p.env_id for p in points))
    colors = _attack_colors({p.attack for p in points if p.attack != "none"})
    fig, axes = plt.subplots(len(envs), 2, figsize=(11, 4.2 * len(envs)), squeeze=False)
    for row, env_id in zip(axes, envs, strict=True):
        env_points = [p for p in points if p.env_id == env_id]
        methods = list(dict.fromkeys((p.algo, p.mode) for p in env_points))
        several = len(methods) > 1
        xs = [p.epsilon for p in env_points if p.attack != "none"]
        span = [min(xs), max(xs)]
        limits = {
            cost_limit
            if cost_limit is not None
            else next(
                (r.cost_limit for r in runs if r.env_id == env_id and r.cost_limit is not None),
                DEFAULT_COST_LIMIT,
            )
        }
        for ax, key in zip(row, ("reward", "cost"), strict=True):
            for k, (algo, mode) in enumerate(methods):
                name = method_name(mode, algo)
                pts = [p for p in env_points if (p.algo, p.mode) == (algo, mode)]
                for attack in dict.fromkeys(p.attack for p in pts if p.attack != "none"):
                    series = sorted((p for p in pts if p.attack == attack), key=lambda p: p.epsilon)
                    x = np.array([p.epsilon for p in series])
                    y = np.array([getattr(p, f"{key}_mean") for p in series])
                    b = np.array([getattr(p, f"{key}_band") for p in series])
                    label = attack_name(attack) + (
                        f" xi {series[0].xi:g}"
                        if attack == "amad" and series[0].xi is not None
                        else ""
                    )
                    ax.plot(
                        x,
                        y,
                        ls=_STYLES[k % len(_STYLES)],
                        marker=_MARKERS[k % len(_MARKERS)],
                        ms=4,
                        color=colors[attack],
                        label=f"{name}: {label}" if several else label,
                    )
                    ax.fill_between(x, y - b, y + b, color=colors[attack], alpha=0.12, lw=0)
                for p in pts:
                    if p.attack == "none":
                        m = getattr(p, f"{key}_mean")
                        ax.plot(
                            span,
                            [m, m],
                            ls="--",
                            lw=1,
                            color=("k", "0.35", "0.6")[k % 3],
                            label=f"{name}: natural" if several else "natural (no attack)",
                        )
            if key == "cost":
                for limit in sorted(limits):
                    draw_cost_limit(ax, limit)
            title = ", ".join(method_name(m, a) for a, m in methods)
            ax.set_title(f"{env_id}: {title}", fontsize=9)
            ax.set_xlabel("epsilon (attack budget)")
            ax.set_ylabel(f"episode {key}")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7, loc="best")
    attacked = [p for p in points if p.attack != "none"]
    bands = sorted({p.band for p in attacked})
    n_seeds = sorted({p.n_seeds for p in attacked})
    fig.suptitle(
        "Reward and cost against epsilon: mean of "
        + "/".join(str(n) for n in n_seeds)
        + " seed(s); band = std across "
        + " / ".join("seed means" if b == "seeds" else "episodes (1 seed)" for b in bands),
        fontsize=10,
    )
    return save_figure(fig, Path(out_prefix), format_xi_csv(points))


# ----------------------------------------------------------------------------- training curves

# (panel title, the metrics.csv columns it reads: the first a run has)
CURVE_PANELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("episode reward", ("ep_return",)),
    ("episode cost", ("ep_cost",)),
    ("cost multiplier (lambda; FOCOPS: nu)", ("lambda", "nu")),
    ("attack epsilon (training schedule)", ("epsilon",)),
)
CURVE_CSV_FIELDS = (
    "env",
    "method",
    "algo",
    "mode",
    "preset",
    "metric",
    "column",
    "epoch",
    "env_steps",
    "n_seeds",
    "mean",
    "band",
    "seed_values",
)


@dataclass(frozen=True)
class TrainingRun:
    """A run directory's settings and ``metrics.csv`` columns (float arrays by epoch)."""

    path: str
    env_id: str
    algo: str
    mode: str
    preset: str
    seed: int
    cost_limit: float
    columns: dict[str, np.ndarray]


def load_training_run(run_dir: str | Path) -> TrainingRun:
    """Read ``config.yaml`` and ``metrics.csv`` of a run directory; ValueError if unusable."""
    from robustsafe.rundir import load_run_config, train_metrics

    run_dir = Path(run_dir)
    try:
        cfg = load_run_config(run_dir)  # names the run directory if it is none
    except FileNotFoundError as err:
        raise ValueError(str(err)) from None
    try:
        rows = train_metrics(run_dir)
    except FileNotFoundError:
        raise ValueError(f"{run_dir} holds no metrics.csv (no training epoch)") from None
    except OSError as err:
        raise ValueError(f"{run_dir / 'metrics.csv'}: cannot read it ({err})") from None
    except (csv.Error, UnicodeDecodeError) as err:
        raise ValueError(f"{run_dir / 'metrics.csv'}: not a metrics file ({err})") from None
    if not rows:
        raise ValueError(f"{run_dir / 'metrics.csv'}: no epoch yet")

    def column(name: str) -> np.ndarray:
        out = []
        for r in rows:
            try:
                out.append(float(r.get(name) or "nan"))
            except ValueError:
                out.append(math.nan)
        return np.array(out)

    try:
        columns = {k: column(k) for k in rows[0] if k is not None}
        columns["epoch"] = np.array([int(r["epoch"]) for r in rows])
    except (KeyError, ValueError, TypeError):
        raise ValueError(f"{run_dir / 'metrics.csv'}: needs an integer 'epoch' column") from None
    if np.any(np.diff(columns["epoch"]) <= 0):  # curves are read by epoch (searchsorted)
        raise ValueError(f"{run_dir / 'metrics.csv'}: its epochs are not in increasing order")
    steps = columns.get("env_steps")
    if steps is None or not np.all(np.isfinite(steps)):  # the x axis of every curve
        raise ValueError(f"{run_dir / 'metrics.csv'}: needs a numeric 'env_steps' in every row")
    return TrainingRun(
        path=str(run_dir),
        env_id=cfg.env_id,
        algo=learner_group(cfg.algo, cfg.sac.alpha, cfg.sac.learn_alpha),
        mode=cfg.robust.mode,
        preset=cfg.preset,
        seed=cfg.seed,
        cost_limit=cfg.cost_limit,
        columns=columns,
    )


@dataclass(frozen=True)
class CurvePoint:
    env_id: str
    algo: str
    mode: str
    preset: str
    metric: str  # the panel's title
    column: str  # the metrics.csv column
    epoch: int
    env_steps: float
    n_seeds: int
    mean: float
    band: float  # std across seeds (ddof = 0); 0 with one seed
    seed_values: tuple[float, ...]


def smoothed(values: np.ndarray, window: int) -> np.ndarray:
    """Trailing moving average over ``window`` epochs (fewer at the start), NaNs skipped."""
    if window <= 1:
        return values
    out = np.empty_like(values, dtype=np.float64)
    for j in range(len(values)):
        part = values[max(0, j - window + 1) : j + 1]
        part = part[~np.isnan(part)]
        out[j] = part.mean() if len(part) else math.nan
    return out


def curve_series(
    runs: Sequence[TrainingRun], smooth: int = 1
) -> tuple[list[CurvePoint], list[str]]:
    """The points of every (env, learner, mode, preset) group and panel, over the epochs all
    of the group's seeds have; and notes (a group cut to its shortest seed, a missing column).
    ``smooth``: each seed's values (but epsilon, the schedule) are first averaged over the last
    ``smooth`` epochs.

    ValueError if a seed appears twice in a group or its seeds disagree on env steps.
    """
    groups: dict[tuple[str, str, str, str], list[TrainingRun]] = {}
    for r in runs:
        groups.setdefault((r.env_id, r.algo, r.mode, r.preset), []).append(r)
    points: list[CurvePoint] = []
    notes: list[str] = []
    for key in sorted(groups, key=lambda k: (env_key(k[0]), algo_key(k[1]), method_key(k[2]))):
        env_id, algo, mode, preset = key
        members = sorted(groups[key], key=lambda r: r.seed)
        name = f"{method_name(mode, algo)} ({preset}) on {env_id}"
        seeds = [m.seed for m in members]
        if len(seeds) != len(set(seeds)):
            raise ValueError(f"{name}: seed used twice ({', '.join(m.path for m in members)})")
        common = sorted(set.intersection(*(set(m.columns["epoch"].tolist()) for m in members)))
        longest = max(len(m.columns["epoch"]) for m in members)
        if len(common) < longest:
            notes.append(f"{name}: cut to the {len(common)} epochs all {len(members)} seeds have")
        idx = [
            np.searchsorted(m.columns["epoch"], common) for m in members
        ]  # metrics.csv is in epoch order
        steps = np.array(
            [
                m.columns.get("env_steps", np.full(len(m.columns["epoch"]), np.nan))[i]
                for m, i in zip(members, idx, strict=True)
            ]
        )
        if len(members) > 1 and not np.allclose(steps, steps[0], equal_nan=True):
            raise ValueError(f"{name}: the seeds differ in env steps per epoch")
        for title, names in CURVE_PANELS:
            col = next((c for c in names if all(c in m.columns for m in members)), None)
            if col is None:
                notes.append(f"{name}: no {' / '.join(names)} column: no {title} curve")
                continue
            window = 1 if col == "epsilon" else smooth  # the schedule is exact: never smoothed
            values = np.array(
                [smoothed(m.columns[col][i], window) for m, i in zip(members, idx, strict=True)]
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # an epoch with no episode
                mean = np.nanmean(values, axis=0)
                band = np.nanstd(values, axis=0)
            for j, epoch in enumerate(common):
                points.append(
                    CurvePoint(
                        env_id=env_id,
                        algo=algo,
                        mode=mode,
                        preset=preset,
                        metric=title,
                        column=col,
                        epoch=int(epoch),
                        env_steps=float(steps[0, j]),
                        n_seeds=int(np.sum(~np.isnan(values[:, j]))),
                        mean=float(mean[j]),
                        band=float(band[j]),
                        seed_values=tuple(float(v) for v in values[:, j]),
                    )
                )
    return points, notes


def format_curves_csv(points: Sequence[CurvePoint]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CURVE_CSV_FIELDS, lineterminator="\n")
    w.writeheader()
    for p in points:
        w.writerow(
            {
                "env": p.env_id,
                "method": method_name(p.mode, p.algo),
                "algo": p.algo,
                "mode": p.mode,
                "preset": p.preset,
                "metric": p.metric,
                "column": p.column,
                "epoch": p.epoch,
                "env_steps": repr(p.env_steps),
                "n_seeds": p.n_seeds,
                "mean": repr(p.mean),
                "band": repr(p.band),
                "seed_values": " ".join(repr(v) for v in p.seed_values),
            }
        )
    return buf.getvalue()


def write_curves_figure(
    runs: Sequence[TrainingRun], out_prefix: str | Path, smooth: int = 1
) -> tuple[list[Path], list[str]]:
    """Training curves as ``<prefix>.png``, ``.pdf`` and ``.csv``; returns the paths and the
    notes of ``curve_series`` (``smooth``: its moving-average window, in epochs)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not runs:
        raise ValueError("no run to plot")
    if smooth < 1:
        raise ValueError(f"smooth must be >= 1 epoch, got {smooth}")
    points, notes = curve_series(runs, smooth)
    if not points:  # (matplotlib's "Number of rows must be a positive integer, not 0")
        why = "; ".join(notes) or "no training column to draw"
        raise ValueError(f"no training curve to plot: {why}")
    envs = list(dict.fromkeys(p.env_id for p in points))
    presets = {r.preset for r in runs}
    fig, axes = plt.subplots(
        len(envs), len(CURVE_PANELS), figsize=(18, 3.8 * len(envs)), squeeze=False
    )
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for row, env_id in zip(axes, envs, strict=True):
        env_points = [p for p in points if p.env_id == env_id]
        groups = list(dict.fromkeys((p.algo, p.mode, p.preset) for p in env_points))
        for ax, (title, _) in zip(row, CURVE_PANELS, strict=True):
            for k, (algo, mode, preset) in enumerate(groups):
                pts = [
                    p
                    for p in env_points
                    if (p.algo, p.mode, p.preset, p.metric) == (algo, mode, preset, title)
                ]
                if not pts:
                    continue
                x = np.array([p.env_steps for p in pts])
                y = np.array([p.mean for p in pts])
                b = np.array([p.band for p in pts])
                n = max(p.n_seeds for p in pts)
                label = method_name(mode, algo) + (f" [{preset}]" if len(presets) > 1 else "")
                color = colors[k % len(colors)]
                ax.plot(x, y, color=color, lw=1.3, label=f"{label} ({n} seed{'s' * (n > 1)})")
                ax.fill_between(x, y - b, y + b, color=color, alpha=0.15, lw=0)
            if title == "episode cost":
                limits = {r.cost_limit for r in runs if r.env_id == env_id}
                for limit in sorted(limits):
                    draw_cost_limit(ax, limit)
            ax.set_title(f"{env_id}: {title}", fontsize=9)
            ax.set_xlabel("environment steps")
            ax.grid(alpha=0.3)
            if title in ("episode reward", "episode cost"):
                ax.legend(fontsize=7, loc="best")
    fig.suptitle(
        "Training curves: mean across seeds; band = std across seeds (per epoch)"
        + (
            f"; each seed averaged over the last {smooth} epochs (not epsilon)"
            if smooth > 1
            else ""
        ),
        fontsize=10,
    )
    return save_figure(fig, Path(out_prefix), format_curves_csv(points)), notes
