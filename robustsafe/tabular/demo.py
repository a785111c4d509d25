"""Worked example: the shortcut grid world, its optimal policy, exact attacks and the bounds.

``run_demo(out_dir)`` computes everything, saves ``out_dir / "tabular_demo.png"`` and returns
the report text (``robustsafe tabular demo`` and ``python -m robustsafe.tabular`` print it).
"""

from __future__ import annotations

import argparse
import math
import pathlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .adversary import Attack, optimal_adversary
from .bounds import BoundReport, bound_report
from .evaluation import Values, discounted_state_occupancy, sample_trajectory
from .gridworld import ACTION_NAMES, MOVES, GridWorld, shortcut_gridworld
from .optimum import Optimum, constrained_optimum, unconstrained_optimum
from .perturbation import perturbation_sets

DEFAULT_RADII = (1.0, 1.5, 2.0)
FIGURE_NAME = "tabular_demo.png"
OBJECTIVES = (("max_cost", "MC"), ("max_reward", "MR"), ("min_reward", "min-reward"))


@dataclass(frozen=True, eq=False)
class DemoResult:
    """Everything the demo computes (``compute_demo``), before formatting and plotting."""

    world: GridWorld
    unconstrained: Optimum
    optimum: Optimum
    attacks: dict[float, dict[str, Attack]]
    bounds: dict[float, BoundReport]


def compute_demo(
    radii: Sequence[float] = DEFAULT_RADII, world: GridWorld | None = None
) -> DemoResult:
    """Solve the grid world and attack its optimal policy at every radius."""
    world = shortcut_gridworld() if world is None else world
    cmdp = world.cmdp
    metric = world.metric()
    optimum = constrained_optimum(cmdp)
    attacks: dict[float, dict[str, Attack]] = {}
    bounds: dict[float, BoundReport] = {}
    for eps in radii:
        sets = perturbation_sets(metric, eps)
        attacks[eps] = {
            obj: optimal_adversary(cmdp, optimum.policy, sets, obj) for obj, _ in OBJECTIVES
        }
        bounds[eps] = bound_report(cmdp, optimum.policy, metric, eps)
    return DemoResult(world, unconstrained_optimum(cmdp), optimum, attacks, bounds)


def _layout(world: GridWorld) -> list[str]:
    marks = {world.start: "S", world.goal: "G", **{h: "x" for h in world.hazards}}
    return [
        "    " + " ".join(marks.get((r, c), ".") for c in range(world.cols))
        for r in range(world.rows)
    ]


def _randomised_states(world: GridWorld, opt: Optimum) -> list[str]:
    assert opt.occupancy is not None
    out = []
    for s in np.flatnonzero(opt.occupancy.sum(axis=1) > 1e-9):
        probs = opt.policy[s]
        if probs.max() < 1 - 1e-9:
            mix = ", ".join(
                f"{ACTION_NAMES[a]} {probs[a]:.3f}" for a in np.flatnonzero(probs > 1e-9)
            )
            out.append(f"cell {world.cell(int(s))}: {mix}")
    return out


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def format_report(result: DemoResult, figure: pathlib.Path | None = None) -> str:
    """The demo's text report."""
    world, cmdp, opt = result.world, result.world.cmdp, result.optimum
    nat: Values = opt.values
    unc: Values = result.unconstrained.values
    tempting = unc.reward_return > nat.reward_return + 1e-7
    rows = f"{world.rows}x{world.cols}"
    lines = [
        "RobustSafe tabular demo: exact theory of 'On the Robustness of Safe RL under",
        "Observational Perturbations' (Liu et al., ICLR 2023) on a small grid world.",
        "",
        f"Grid {rows}: S start, G goal (+1 reward), x hazard (+1 cost on entering);",
        f"slip {world.slip:g}, gamma {cmdp.gamma:g}, kappa {cmdp.kappa:g}, C_m {cmdp.c_m:g}.",
        *_layout(world),
        "",
        f"Unconstrained optimum         V_r = {unc.reward_return:.4f}  V_c = {unc.cost_return:.4f}",
        f"Constrained optimum pi* (LP)  V_r = {nat.reward_return:.4f}  "
        f"V_c = {nat.cost_return:.4f}  lambda* = {opt.multiplier:.4f}",
        f"Tempting problem (Definition 3): {_yes(tempting)}; "
        f"V_c(pi*) - kappa = {nat.cost_return - cmdp.kappa:+.1e} (Lemma 2: 0)",
        "pi* randomises at " + "; ".join(_randomised_states(world, opt) or ["no state"]),
        "",
        "Exact optimal deterministic attacks on pi*, B(s) = l2 ball of radius eps (cells):",
        f"  {'eps':>4}  {'adversary':<10} {'V_r':>8} {'V_c':>8} {'J_S=dV_r':>9} {'J_E=dV_c':>9}",
        f"  {'-':>4}  {'natural':<10} {nat.reward_return:8.4f} {nat.cost_return:8.4f}",
    ]
    for eps, attacks in result.attacks.items():
        for obj, label in OBJECTIVES:
            v = attacks[obj].values
            j_s = v.reward_return - nat.reward_return
            j_e = v.cost_return - nat.cost_return
            lines.append(
                f"  {eps:4g}  {label:<10} {v.reward_return:8.4f} {v.cost_return:8.4f} "
                f"{j_s:+9.4f} {j_e:+9.4f}"
            )
    lines.append("")
    for eps, attacks in result.attacks.items():
        v = attacks["max_reward"].values
        stealthy = v.reward_return > nat.reward_return + 1e-9
        lines.append(
            f"Proposition 1, eps {eps:g}: MR stealthy (J_S > 0): {_yes(stealthy)}; "
            f"effective (V_c > kappa): {_yes(v.cost_return > cmdp.kappa + 1e-9)}"
        )
    lines += [
        "",
        "Bounds for pi* (L: Lipschitz constant in TV per unit distance, over all pairs or",
        "only pairs within eps; Thm2 at the state where the exact one-step increase is largest):",
        f"  {'eps':>4} {'L all':>6} {'L eps':>6} {'max p_s':>7} "
        f"{'Thm2 exact':>10} {'Thm2 bound':>10} {'Thm3 exact':>10} {'Thm3 bound':>11}",
    ]
    for eps, b in result.bounds.items():
        worst = int(np.argmax(b.one_step_exact))
        lines.append(
            f"  {eps:4g} {b.lipschitz_global:6.3f} {b.lipschitz_in_ball:6.3f} {b.p_max:7.3f} "
            f"{b.one_step_exact[worst]:10.4f} {b.one_step_bound[worst]:10.4f} "
            f"{b.mc_cost:10.4f} {b.episodic_bound_paper:11.2f}"
        )
    lines += [
        "  Thm2 exact: max over nu(s) in B(s) of V~_c(s) - V_c(s); Thm3 exact: V_c of the MC",
        "  attack; Thm3 bound as stated (kappa, global L). Any policy has V_c <= C_m/(1-gamma)"
        f" = {cmdp.c_m / (1 - cmdp.gamma):g}.",
    ]
    if figure is not None:
        lines += ["", f"Figure saved to {figure}"]
    return "\n".join(lines)


def _draw_panel(
    ax, world: GridWorld, acting: np.ndarray, perturbed: np.ndarray, occupancy: np.ndarray, paths
) -> None:
    import matplotlib.colors as mcolors
    from matplotlib.patches import Rectangle

    rows, cols = world.rows, world.cols
    shade = occupancy.copy()
    shade[world.state(world.goal)] = 0.0  # the absorbing goal would dominate the colour scale
    ax.imshow(
        shade.reshape(rows, cols),
        cmap="Blues",
        norm=mcolors.PowerNorm(0.5, vmin=0.0, vmax=max(float(shade.max()), 1e-9)),
    )
    for r, c in world.hazards:
        ax.add_patch(
            Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, hatch="xx", edgecolor="tab:red", lw=1.2)
        )
    for cell, label, colour in ((world.start, "S", "black"), (world.goal, "G", "tab:green")):
        ax.text(
            cell[1],
            cell[0],
            label,
            ha="center",
            va="center",
            fontsize=13,
            fontweight="bold",
            color=colour,
            zorder=6,
        )
    for s in range(rows * cols):
        r, c = world.cell(s)
        if (r, c) == world.goal:
            continue
        if perturbed[s]:
            ax.plot(c - 0.33, r - 0.33, marker="o", ms=4, color="tab:purple", zorder=5)
        for a, (dr, dc) in enumerate(MOVES):
            if acting[s, a] > 1e-3:
                length = 0.4 * acting[s, a]
                ax.arrow(
                    c,
                    r,
                    dc * length,
                    dr * length,
                    head_width=0.1,
                    head_length=0.08,
                    length_includes_head=True,
                    color="0.25",
                    lw=0.8,
                    zorder=3,
                )
    for k, path in enumerate(paths):
        cells = np.array([world.cell(int(s)) for s in path], dtype=float)
        jitter = (k - (len(paths) - 1) / 2) * 0.05
        ax.plot(
            cells[:, 1] + jitter,
            cells[:, 0] + jitter,
            "-",
            color="tab:orange",
            lw=1.3,
            alpha=0.8,
            zorder=4,
        )
    ax.set_xticks(range(cols))
    ax.set_yticks(range(rows))
    ax.set_xlim(-0.5, cols - 0.5)
    ax.set_ylim(rows - 0.5, -0.5)


def save_figure(
    result: DemoResult,
    path: pathlib.Path,
    eps: float | None = None,
    n_paths: int = 6,
    horizon: int = 20,
    seed: int = 0,
) -> pathlib.Path:
    """Four panels: pi* naturally and under the exact MC, MR and minimum-reward attacks at radius
    ``eps`` (default: the smallest radius). Arrows: the action distribution actually used at
    each true state, pi(.|nu(s)); purple dots: states whose observation is perturbed; shading:
    discounted occupancy of the true state; orange: sampled true trajectories from S."""
    # the Agg canvas directly: no pyplot, so the process-wide backend is left alone
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    world, cmdp, pi = result.world, result.world.cmdp, result.optimum.policy
    eps = min(result.attacks) if eps is None else eps
    n = cmdp.n_states
    panels = [("pi* natural", np.arange(n), result.optimum.values)]
    for obj, label in OBJECTIVES:
        att = result.attacks[eps][obj]
        panels.append((f"pi* under the {label} attack, eps={eps:g}", att.adversary, att.values))
    fig = Figure(figsize=(10.5, 7.6))
    FigureCanvasAgg(fig)
    axes = fig.subplots(2, 2)
    rng = np.random.default_rng(seed)
    for ax, (title, nu, values) in zip(axes.ravel(), panels, strict=True):
        acting = pi[nu]
        occupancy = discounted_state_occupancy(cmdp, acting)
        paths = [sample_trajectory(cmdp, pi, nu, rng, horizon)[0] for _ in range(n_paths)]
        _draw_panel(ax, world, acting, nu != np.arange(n), occupancy, paths)
        ax.set_title(
            f"{title}\nV_r = {values.reward_return:.3f}   V_c = {values.cost_return:.3f}"
            f"   (kappa = {cmdp.kappa:g})",
            fontsize=10,
        )
    fig.suptitle(
        "Arrows: actions taken at the true state, pi(.|nu(s)); purple dot: observation perturbed; "
        "shading: discounted occupancy;\norange: sampled trajectories; red hatch: hazard (cost 1)",
        fontsize=9,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return path


def run_demo(out_dir: pathlib.Path, radii: Sequence[float] | None = None) -> str:
    """Run the worked example, save ``out_dir / "tabular_demo.png"`` and return the report."""
    result = compute_demo(DEFAULT_RADII if radii is None else tuple(radii))
    figure = save_figure(result, pathlib.Path(out_dir) / FIGURE_NAME)
    return format_report(result, figure)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m robustsafe.tabular [--out DIR] [--radii 1 1.5 2]``."""
    parser = argparse.ArgumentParser(prog="python -m robustsafe.tabular", description=__doc__)
    parser.add_argument("--out", default="runs/tabular", help="output folder for the figure")
    parser.add_argument("--radii", type=float, nargs="+", default=None, help="perturbation radii")
    args = parser.parse_args(argv)
    from robustsafe.cli._common import CLIError, check_out_dir

    try:
        check_out_dir(args.out)
    except CLIError as err:
        parser.error(str(err))
    for eps in args.radii or ():  # before any work (perturbation_sets' own check)
        if not (math.isfinite(eps) and eps >= 0):
            parser.error(f"--radii must be finite numbers >= 0; got {eps}")
    print(run_demo(pathlib.Path(args.out), args.radii))
    return 0
