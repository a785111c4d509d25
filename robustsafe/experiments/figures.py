"""The appendix figure "Reward and cost of AMAD and MAD attacker" (paper appendix C.9,
Figure 4, ``fig:mad-amad``) from the ``eval-xi.json`` files of a directory tree.

Per env and training mode, over the seeds that have a sweep: AMAD's reward and cost against xi
(the fraction of most-costly states attacked), MAD (which attacks every state) as a horizontal
line, and the natural performance as a dotted line. Line: the mean over all pooled episodes of
all seeds. Band: the standard deviation across seeds of the per-seed means (ddof = 0); with a
single seed, the standard deviation over its episodes (the CSV says which, in ``band``).
``write_xi_figure`` writes ``<prefix>.png``, ``<prefix>.pdf`` and ``<prefix>.csv`` (the plotted
series: one line per env, method, attacker and xi).

Also the mixture figure "Reward and cost of mixture attackers of MC and MR" (appendix C.9,
Figure 5, ``fig:mix-mcmr``): ``write_mix_figure`` plots reward and cost against the weight w of
``mix:w`` (w x MC + (1 - w) x MR; w = 1 is MC, 0 is MR) per method, with the same lines and
bands, from the runs ``robustsafe.experiments.mix_table.build_mix_table`` tables.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from robustsafe.experiments.appendix_runs import group_by_method
from robustsafe.experiments.eval_files import EvalFile
from robustsafe.experiments.mix_table import build_mix_table, mix_source
from robustsafe.experiments.names import env_key, method_key, method_name
from robustsafe.experiments.xi_sweep import XiSweep
from robustsafe.figure_files import save_figure

XI_CSV_FIELDS = (
    "env",
    "method",
    "mode",
    "attack",
    "xi",
    "epsilon",
    "n_seeds",
    "n_episodes",
    "reward_mean",
    "reward_band",
    "cost_mean",
    "cost_band",
    "band",
    "reward_seed_means",
    "cost_seed_means",
)


@dataclass(frozen=True)
class SeriesPoint:
    """One plotted point: pooled mean and band of reward and cost."""

    env_id: str
    mode: str
    attack: str  # none, mad or amad
    xi: float | None  # AMAD's xi (None for natural and MAD)
    epsilon: float
    n_seeds: int
    n_episodes: int
    reward_mean: float
    reward_band: float
    cost_mean: float
    cost_band: float
    band: str  # "seeds" or "episodes"
    reward_seed_means: tuple[float, ...]
    cost_seed_means: tuple[float, ...]
    algo: str = "ppol"  # the learner (for the method's name)


def _point(
    env_id, mode, attack, xi, eps, runs: Sequence[Sequence[tuple[float, float]]], algo="ppol"
):
    runs = [r for r in runs if len(r)]
    pooled = np.array([ep for r in runs for ep in r], dtype=np.float64).reshape(-1, 2)
    seed_means = np.array([np.mean(np.asarray(r, dtype=np.float64), axis=0) for r in runs])
    by_seeds = len(runs) >= 2
    band = seed_means.std(axis=0) if by_seeds else pooled.std(axis=0)
    return SeriesPoint(
        env_id=env_id,
        mode=mode,
        attack=attack,
        xi=xi,
        epsilon=eps,
        n_seeds=len(runs),
        n_episodes=len(pooled),
        reward_mean=float(pooled[:, 0].mean()),
        reward_band=float(band[0]),
        cost_mean=float(pooled[:, 1].mean()),
        cost_band=float(band[1]),
        band="seeds" if by_seeds else "episodes",
        reward_seed_means=tuple(float(v) for v in seed_means[:, 0]),
        cost_seed_means=tuple(float(v) for v in seed_means[:, 1]),
        algo=algo,
    )


def xi_series(sweeps: Sequence[XiSweep]) -> list[SeriesPoint]:
    """The plotted points of every (env, mode, epsilon): natural, MAD, then AMAD by increasing
    xi (sweeps at another epsilon are another series, never pooled as seeds).

    ValueError if one seed appears twice in a series. AMAD at an xi pools the seeds that have it.
    """
    groups: dict[tuple[str, str, float], list[XiSweep]] = {}
    for s in sweeps:
        groups.setdefault((s.env_id, s.mode, s.epsilon), []).append(s)
    points = []
    for env_id, mode, e in sorted(groups, key=lambda k: (env_key(k[0]), method_key(k[1]), k[2])):
        members = groups[(env_id, mode, e)]
        seeds = [s.train_seed for s in members if s.train_seed is not None]
        if len(seeds) != len(set(seeds)):
            raise ValueError(
                f"{method_name(mode)} on {env_id} at epsilon {e:g}: a seed has two xi sweeps "
                f"({[str(s.path) for s in members]})"
            )
        points.append(_point(env_id, mode, "none", None, e, [s.natural for s in members]))
        if any(s.mad for s in members):
            points.append(_point(env_id, mode, "mad", None, e, [s.mad for s in members]))
        for xi in sorted({x for s in members for x in s.amad}):
            runs = [s.amad[xi] for s in members if xi in s.amad]
            points.append(_point(env_id, mode, "amad", xi, e, runs))
    return points


def format_xi_csv(points: Sequence[SeriesPoint], x_name: str = "xi") -> str:
    """The plotted points, one CSV line each (``x_name``: the column of ``SeriesPoint.xi``)."""
    buf = io.StringIO()
    fields = [x_name if f == "xi" else f for f in XI_CSV_FIELDS]
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    for p in points:
        w.writerow(
            {
                "env": p.env_id,
                "method": method_name(p.mode, p.algo),
                "mode": p.mode,
                "attack": p.attack,
                x_name: "" if p.xi is None else repr(p.xi),
                "epsilon": repr(p.epsilon),
                "n_seeds": p.n_seeds,
                "n_episodes": p.n_episodes,
                "reward_mean": repr(p.reward_mean),
                "reward_band": repr(p.reward_band),
                "cost_mean": repr(p.cost_mean),
                "cost_band": repr(p.cost_band),
                "band": p.band,
                "reward_seed_means": " ".join(repr(v) for v in p.reward_seed_means),
                "cost_seed_means": " ".join(repr(v) for v in p.cost_seed_means),
            }
        )
    return buf.getvalue()


def write_xi_figure(sweeps: Sequence[XiSweep], out_prefix: str | Path) -> list[Path]:
    """``<prefix>.png``, ``<prefix>.pdf`` and ``<prefix>.csv``; returns the paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = xi_series(sweeps)
    prefix = Path(out_prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    envs = list(dict.fromkeys(p.env_id for p in points))
    fig, axes = plt.subplots(len(envs), 2, figsize=(10, 3.6 * len(envs)), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for row, env_id in zip(axes, envs, strict=True):
        env_points = [p for p in points if p.env_id == env_id]
        series = list(dict.fromkeys((p.mode, p.epsilon) for p in env_points))
        epsilons = {e for _, e in series}
        xis = sorted({p.xi for p in env_points if p.xi is not None})
        span = np.array([min(xis), max(xis)]) if xis else np.array([0.0, 1.0])
        for ax, key in zip(row, ("reward", "cost"), strict=True):
            for k, (mode, eps) in enumerate(series):
                color = colors[k % len(colors)]
                pts = [p for p in env_points if (p.mode, p.epsilon) == (mode, eps)]
                name = method_name(mode) + (f" (epsilon {eps:g})" if len(epsilons) > 1 else "")
                amad = [p for p in pts if p.attack == "amad"]
                x = np.array([p.xi for p in amad])
                y = np.array([getattr(p, f"{key}_mean") for p in amad])
                s = np.array([getattr(p, f"{key}_band") for p in amad])
                ax.plot(x, y, marker="o", color=color, label=f"{name}: AMAD")
                ax.fill_between(x, y - s, y + s, color=color, alpha=0.15)
                for p, style, label in (
                    *[(q, "--", "MAD") for q in pts if q.attack == "mad"],
                    *[(q, ":", "natural") for q in pts if q.attack == "none"],
                ):
                    m, b = getattr(p, f"{key}_mean"), getattr(p, f"{key}_band")
                    ax.plot(span, [m, m], ls=style, color=color, label=f"{name}: {label}")
                    if style == "--":
                        ax.fill_between(span, m - b, m + b, color=color, alpha=0.08)
            at = f" (epsilon {next(iter(epsilons)):g})" if len(epsilons) == 1 else ""
            ax.set_title(env_id + at, fontsize=10)
            ax.set_xlabel("xi (fraction of most-costly states AMAD attacks)")
            ax.set_ylabel(f"episode {key}")
            ax.grid(alpha=0.3)
        row[0].legend(fontsize=7)
    bands = sorted({p.band for p in points})
    fig.suptitle(
        "AMAD over xi against MAD: pooled mean; band = std across "
        + (" / ".join("seed means" if b == "seeds" else "episodes (1 seed)" for b in bands)),
        fontsize=10,
    )
    return save_figure(fig, prefix, format_xi_csv(points))


def mix_series(files: Sequence[EvalFile]) -> list[SeriesPoint]:
    """The mixture figure's points: per (env, method) of the mix table, one per weight w (in
    ``SeriesPoint.xi``), from MC's side (w = 1) to MR's (w = 0)."""
    rows, columns, _ = build_mix_table(files)
    groups = group_by_method(files)
    points = []
    for r in rows:
        members = groups[(r.env_id, r.mode)]
        eps = math.nan if r.epsilon is None else r.epsilon
        for weight in columns:
            runs = [f.episodes[a] for f in members if (a := mix_source(f, weight)) is not None]
            if runs:
                points.append(_point(r.env_id, r.mode, r.sources[weight], weight, eps, runs))
    return points


def write_mix_figure(files: Sequence[EvalFile], out_prefix: str | Path) -> list[Path]:
    """``<prefix>.png``, ``.pdf`` and ``.csv`` of the mixture figure; returns the paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = mix_series(files)
    prefix = Path(out_prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    envs = list(dict.fromkeys(p.env_id for p in points))
    fig, axes = plt.subplots(len(envs), 2, figsize=(10, 3.6 * len(envs)), squeeze=False)
    for row, env_id in zip(axes, envs, strict=True):
        env_points = [p for p in points if p.env_id == env_id]
        for ax, key in zip(row, ("reward", "cost"), strict=True):
            for mode in dict.fromkeys(p.mode for p in env_points):
                pts = sorted((p for p in env_points if p.mode == mode), key=lambda p: p.xi)
                x = np.array([p.xi for p in pts])
                y = np.array([getattr(p, f"{key}_mean") for p in pts])
                b = np.array([getattr(p, f"{key}_band") for p in pts])
                (line,) = ax.plot(x, y, marker="o", label=method_name(mode))
                ax.fill_between(x, y - b, y + b, color=line.get_color(), alpha=0.15)
            ax.set_title(f"{env_id} (epsilon {env_points[0].epsilon:g})", fontsize=10)
            ax.set_xlabel("w (mix: w x MC + (1 - w) x MR; 1 = MC, 0 = MR)")
            ax.set_ylabel(f"episode {key}")
            ax.grid(alpha=0.3)
        row[0].legend(fontsize=7)
    bands = sorted({p.band for p in points})
    fig.suptitle(
        "MC/MR mixture attackers: pooled mean; band = std across "
        + " / ".join("seed means" if b == "seeds" else "episodes (1 seed)" for b in bands),
        fontsize=10,
    )
    return save_figure(fig, prefix, format_xi_csv(points, x_name="weight"))
