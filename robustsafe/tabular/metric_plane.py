"""The paper's Figure 1, computed exactly: a safe RL problem's policy space in the metric plane.

Section 3 maps every policy to the point (V_r(mu_0), V_c(mu_0)) and draws feasibility,
optimality, temptation (Definitions 1-3) and the attacks' effectiveness and stealthiness
(Definitions 4-5) as regions of that plane. Over all stochastic Markov policies the image is a
convex polygon: the linear image of the occupancy polytope (``optimum`` module), whose vertex
extreme in a direction (d_r, d_c) is a deterministic policy, the optimum of the MDP with reward
d_r * r + d_c * c. ``policy_region`` finds every vertex that way; everything else is the
toolkit's own optimum and exact adversaries. ``robustsafe tabular definitions`` draws it.
"""

from __future__ import annotations

import csv
import io
import math
import pathlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from robustsafe.figure_files import save_figure

from ._solver import evaluate_choices, solve_mdp
from .adversary import optimal_adversary
from .cmdp import CMDP, FloatArray
from .evaluation import Values
from .gridworld import GridWorld, shortcut_gridworld
from .optimum import constrained_optimum, minimum_cost, unconstrained_optimum
from .perturbation import perturbation_sets

FIGURE_STEM = "definitions"
CSV_FIELDS = ("kind", "label", "reward_return", "cost_return")  # the first line of its CSV
ATTACKS = (("max_cost", "MC"), ("max_reward", "MR"), ("min_reward", "min-reward"))


def _support_point(cmdp: CMDP, r: FloatArray, c: FloatArray, direction: FloatArray) -> FloatArray:
    """(V_r, V_c) from mu_0 of a deterministic policy maximising direction . (V_r, V_c): the
    optimum of the MDP with reward d_r * r + d_c * c (optimal from every state, so from mu_0);
    r and c are the expected one-step reward and cost."""
    choice, _, _ = solve_mdp(cmdp.transitions, direction[0] * r + direction[1] * c, cmdp.gamma)
    return np.array(
        [
            cmdp.initial @ evaluate_choices(cmdp.transitions, r, cmdp.gamma, choice),
            cmdp.initial @ evaluate_choices(cmdp.transitions, c, cmdp.gamma, choice),
        ]
    )


def convex_hull(points: FloatArray, atol: float = 1e-12) -> FloatArray:
    """Vertices of the points' convex hull, counter-clockwise from the lowest-leftmost, without
    points on an edge (Andrew's monotone chain); fewer than 3 when the points are collinear."""
    pts = sorted({(float(x), float(y)) for x, y in points})
    if len(pts) <= 2:
        return np.array(pts).reshape(-1, 2)

    def cross(o, a, b) -> float:
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    def chain(seq):
        out: list[tuple[float, float]] = []
        for p in seq:
            while len(out) >= 2 and cross(out[-2], out[-1], p) <= atol:
                out.pop()
            out.append(p)
        return out[:-1]

    return np.array(chain(pts) + chain(reversed(pts)))


def policy_region(cmdp: CMDP, max_solves: int = 10_000) -> FloatArray:
    """Vertices (V_r, V_c) of the set of all policies' returns from mu_0, counter-clockwise.

    The set is the linear image of the occupancy polytope, a convex polygon whose vertices are
    deterministic policies. Starting from the 8 compass directions, every edge of the current
    polygon is tested with its outward normal: when the MDP optimum in that direction lies
    beyond the edge it is a missing vertex and is added. When no edge gains, every edge is a
    face of the true polygon, so the result is exact (up to the solver's round-off), with a
    finite number of MDP solves.
    """
    r, c = cmdp.expected("reward"), cmdp.expected("cost")
    tol = 1e-9 * max(1.0, float(np.abs(r).max()), cmdp.cost_max) / (1.0 - cmdp.gamma)
    angles = np.linspace(0.0, 2.0 * math.pi, 8, endpoint=False)
    points = [_support_point(cmdp, r, c, np.array([math.cos(t), math.sin(t)])) for t in angles]
    solves, tested = len(points), set()
    while True:
        hull = convex_hull(np.array(points))
        added = False
        for i in range(len(hull)):
            p, q = hull[i], hull[(i + 1) % len(hull)]
            normal = np.array([q[1] - p[1], p[0] - q[0]])  # outward for a CCW edge p -> q
            length = float(np.hypot(*normal))
            key = (tuple(np.round(p, 12)), tuple(np.round(q, 12)))
            if length == 0.0 or key in tested:
                continue
            tested.add(key)
            normal /= length
            if solves >= max_solves:
                raise RuntimeError(f"policy_region: no convergence after {max_solves} MDP solves")
            candidate = _support_point(cmdp, r, c, normal)
            solves += 1
            if normal @ candidate > normal @ p + tol:
                points.append(candidate)
                added = True
        if not added:
            hull[np.abs(hull) < 1e-12] = 0.0  # solver round-off around an exact zero
            return hull


def clip_halfplane(polygon: FloatArray, normal: Sequence[float], offset: float) -> FloatArray:
    """The convex polygon's part where normal . (x, y) <= offset (its vertices, same order).

    One Sutherland-Hodgman pass; an empty part has shape (0, 2).
    """
    n = np.asarray(normal, dtype=float)
    out: list[FloatArray] = []
    m = len(polygon)
    for i in range(m):
        p, q = polygon[i], polygon[(i + 1) % m]
        fp, fq = float(n @ p) - offset, float(n @ q) - offset
        if fp <= 0.0:
            out.append(p)
        if (fp < 0.0 < fq) or (fq < 0.0 < fp):
            out.append(p + (q - p) * (fp / (fp - fq)))
    return np.array(out).reshape(-1, 2)


@dataclass(frozen=True, eq=False)
class MetricPlane:
    """Everything Figure 1 shows for one safe RL problem and one perturbation radius."""

    region: FloatArray  # all policies' (V_r, V_c), a convex polygon
    kappa: float
    min_cost: float  # min over policies of V_c: feasible iff <= kappa (Definition 1)
    optimum: Values  # pi* (Definition 2)
    multiplier: float
    unconstrained: Values  # the reward-greedy policy, tempting when V_r > V_r(pi*) (Def. 3)
    epsilon: float
    attacks: dict[str, Values]  # pi* o nu for MC, MR and minimum reward (Definitions 4-5)

    @property
    def feasible_part(self) -> FloatArray:
        return clip_halfplane(self.region, (0.0, 1.0), self.kappa)

    @property
    def effective_stealthy_part(self) -> FloatArray:
        """Where an attack on pi* lands when it is effective and stealthy (Definitions 4-5):
        more cost (J_E > 0) and no less reward (J_S >= 0) than pi*."""
        above = clip_halfplane(self.region, (0.0, -1.0), -self.optimum.cost_return)
        return clip_halfplane(above, (-1.0, 0.0), -self.optimum.reward_return)

    @property
    def tempting_part(self) -> FloatArray:
        """The closure of the tempting policies (V_r >= V_r(pi*)). By Lemma 1 every point but
        those with exactly pi*'s reward is infeasible (V_c > kappa)."""
        return clip_halfplane(self.region, (-1.0, 0.0), -self.optimum.reward_return)


def compute_metric_plane(world: GridWorld | None = None, epsilon: float = 1.0) -> MetricPlane:
    """Figure 1 for ``world`` (default: the shortcut grid world of the demo) at radius eps."""
    world = shortcut_gridworld() if world is None else world
    cmdp = world.cmdp
    region = policy_region(cmdp)
    opt = constrained_optimum(cmdp)
    sets = perturbation_sets(world.metric(), epsilon)
    attacks = {
        label: optimal_adversary(cmdp, opt.policy, sets, obj).values for obj, label in ATTACKS
    }
    return MetricPlane(
        region=region,
        kappa=cmdp.kappa,
        min_cost=max(0.0, minimum_cost(cmdp)),  # costs are >= 0; drop round-off below 0
        optimum=opt.values,
        multiplier=opt.multiplier,
        unconstrained=unconstrained_optimum(cmdp).values,
        epsilon=epsilon,
        attacks=attacks,
    )


def _rows(plane: MetricPlane) -> list[tuple[str, str, float, float]]:
    rows: list[tuple[str, str, float, float]] = []
    for kind, part in (
        ("region", plane.region),
        ("feasible", plane.feasible_part),
        ("tempting", plane.tempting_part),
        ("effective_stealthy", plane.effective_stealthy_part),
    ):
        rows += [(kind, f"vertex {i}", float(x), float(y)) for i, (x, y) in enumerate(part)]
    rows.append(("policy", "pi*", plane.optimum.reward_return, plane.optimum.cost_return))
    rows.append(
        (
            "policy",
            "reward-greedy",
            plane.unconstrained.reward_return,
            plane.unconstrained.cost_return,
        )
    )
    rows += [
        ("attack", f"pi* o nu_{label} (eps {plane.epsilon:g})", v.reward_return, v.cost_return)
        for label, v in plane.attacks.items()
    ]
    return rows


def save_metric_plane(plane: MetricPlane, prefix: str | pathlib.Path) -> list[pathlib.Path]:
    """``<prefix>.png``, ``.pdf`` (four panels, as the paper's Figure 1) and ``.csv`` (the
    plotted points: kind, label, V_r, V_c); returns their paths in that order."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(14, 3.8))
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 4, sharex=True, sharey=True)
    opt = (plane.optimum.reward_return, plane.optimum.cost_return)
    titles = (
        "(a) Feasibility",
        "(b) Optimality",
        "(c) Temptation",
        "(d) Effectiveness and stealthiness",
    )
    for ax, title in zip(axes, titles, strict=True):
        ax.fill(*plane.region.T, color="tab:blue", alpha=0.15, lw=1.2, ec="tab:blue")
        ax.axhline(plane.kappa, color="k", ls="--", lw=0.8)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("reward return V_r")
    axes[0].set_ylabel("cost return V_c")
    axes[0].text(plane.region[:, 0].min(), plane.kappa, " kappa", va="bottom", fontsize=8)

    feasible = plane.feasible_part
    axes[0].fill(*feasible.T, color="tab:green", alpha=0.35, label="feasible: V_c <= kappa")
    axes[1].fill(*feasible.T, color="tab:green", alpha=0.35)
    axes[0].legend(loc="upper left", fontsize=8)
    axes[1].plot(*opt, "k*", ms=12, label=f"pi* (lambda* = {plane.multiplier:.3g})")
    axes[1].legend(loc="upper left", fontsize=8)

    tempting = plane.tempting_part
    axes[2].fill(*tempting.T, color="tab:red", alpha=0.35, label="tempting: V_r > V_r(pi*)")
    axes[2].plot(*opt, "k*", ms=12, label="pi*")
    greedy = (plane.unconstrained.reward_return, plane.unconstrained.cost_return)
    axes[2].plot(*greedy, "o", color="tab:red", label="reward-greedy policy")
    axes[2].legend(loc="upper left", fontsize=8)

    ax = axes[3]
    both = plane.effective_stealthy_part
    ax.fill(*both.T, color="tab:orange", alpha=0.3, label="effective and stealthy")
    ax.plot(*opt, "k*", ms=12, label="pi*")
    colours = {"MC": "tab:red", "MR": "tab:orange", "min-reward": "tab:purple"}
    for label, v in plane.attacks.items():
        point = (v.reward_return, v.cost_return)
        ax.annotate(
            "", xy=point, xytext=opt, arrowprops={"arrowstyle": "->", "color": colours[label]}
        )
        ax.plot(*point, "o", color=colours[label], label=f"pi* o nu, {label}")
    ax.legend(loc="upper left", fontsize=8)
    fig.suptitle(
        f"Every policy of the CMDP in the metric plane (kappa = {plane.kappa:g}; "
        f"exact optimal attacks on pi* at eps = {plane.epsilon:g}): effective = more cost than "
        "pi*, stealthy = no less reward",
        fontsize=10,
    )
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    writer.writerows(_rows(plane))
    return save_figure(fig, pathlib.Path(prefix), buf.getvalue())


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def format_metric_plane(plane: MetricPlane) -> str:
    """The figure's numbers as text."""
    o, g = plane.optimum, plane.unconstrained
    lines = [
        f"policy region: {len(plane.region)} vertices; V_r in "
        f"[{plane.region[:, 0].min():.4f}, {plane.region[:, 0].max():.4f}], V_c in "
        f"[{plane.min_cost:.4f}, {plane.region[:, 1].max():.4f}]",
        f"feasible (min V_c {plane.min_cost:.4f} <= kappa {plane.kappa:g}): "
        f"{'yes' if plane.min_cost <= plane.kappa else 'no'}",
        f"pi*: V_r {o.reward_return:.4f}, V_c {o.cost_return:.4f}, lambda* {plane.multiplier:.4f}",
        f"reward-greedy: V_r {g.reward_return:.4f}, V_c {g.cost_return:.4f} "
        f"(tempting problem: {'yes' if g.reward_return > o.reward_return + 1e-7 else 'no'})",
    ]
    for label, v in plane.attacks.items():
        j_e, j_s = v.cost_return - o.cost_return, v.reward_return - o.reward_return
        lines.append(
            f"pi* o nu_{label} (eps {plane.epsilon:g}): V_r {v.reward_return:.4f}, "
            f"V_c {v.cost_return:.4f}; J_E {j_e:+.4f} (effective: {_yes(j_e > 1e-9)}), "
            f"J_S {j_s:+.4f} (stealthy: {_yes(j_s >= -1e-9)}), unsafe: "
            f"{_yes(v.cost_return > plane.kappa + 1e-9)}"
        )
    return "\n".join(lines)
