"""The paper's Figure 1 computed exactly (``robustsafe.tabular.metric_plane``).

The two-state CMDP of ``test_tabular_hand`` has three deterministic policy values from mu_0 = 0
(see that module's docstring; "x" = either action):
    (stay safe, x):           V_r = (1/2) / (1 - 1/2) = 1,          V_c = 0;
    (hazard, back to safe):   V_r = 1 / (1 - 1/4) = 4/3,            V_c = 4/3 (every other step);
    (hazard, stay in hazard): V_r = 1,                              V_c = 1 / (1 - 1/2) = 2.
Their convex hull, the triangle (1, 0), (4/3, 4/3), (1, 2), is the set of all policies' returns.
With kappa = 1 its feasible part is cut at V_c = 1: on the edge from (1, 0) to (4/3, 4/3),
V_c = 4 (V_r - 1), so the cut is at (5/4, 1) (pi*'s values) and on the edge from (1, 2) down to
(1, 0) at (1, 1).
"""

from __future__ import annotations

import csv

import numpy as np
import pytest
from scipy.optimize import linprog
from test_tabular_hand import two_state_cmdp

from robustsafe.cli import main as cli_main
from robustsafe.tabular import CMDP
from robustsafe.tabular.gridworld import shortcut_gridworld
from robustsafe.tabular.metric_plane import (
    clip_halfplane,
    compute_metric_plane,
    policy_region,
)


def _same_points(a: np.ndarray, b) -> bool:
    """The same points, each once, in any order."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        return False
    near = np.abs(a[:, None, :] - b[None, :, :]).max(axis=2) < 1e-7
    return bool(np.all(near.sum(axis=1) == 1) and np.all(near.sum(axis=0) == 1))


def test_policy_region_of_the_two_state_cmdp_is_the_hand_computed_triangle():
    region = policy_region(two_state_cmdp())
    assert _same_points(region, [(1.0, 0.0), (4 / 3, 4 / 3), (1.0, 2.0)])
    # counter-clockwise: positive signed area (the triangle's is 1/3 * 2 / 2 = 1/3)
    x, y = region[:, 0], region[:, 1]
    area = 0.5 * float(np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y))
    assert area == pytest.approx(1 / 3)


def test_feasible_part_of_the_triangle_is_cut_at_kappa():
    tri = policy_region(two_state_cmdp())
    feasible = clip_halfplane(tri, (0.0, 1.0), 1.0)
    assert _same_points(feasible, [(1.0, 0.0), (5 / 4, 1.0), (1.0, 1.0)])


def test_clip_halfplane_on_the_unit_square():
    square = np.array([(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)])
    left = clip_halfplane(square, (1.0, 0.0), 0.25)  # x <= 1/4
    assert _same_points(left, [(0.0, 0.0), (0.25, 0.0), (0.25, 1.0), (0.0, 1.0)])
    corner = clip_halfplane(square, (1.0, 1.0), 0.5)  # x + y <= 1/2
    assert _same_points(corner, [(0.0, 0.0), (0.5, 0.0), (0.0, 0.5)])
    assert clip_halfplane(square, (1.0, 0.0), -1.0).shape == (0, 2)
    # an edge on the line: kept once, no extra intersection points
    assert _same_points(clip_halfplane(square, (1.0, 0.0), 1.0), square)
    # a vertex on the line: the part is that vertex alone
    assert _same_points(clip_halfplane(square, (1.0, 1.0), 0.0), [(0.0, 0.0)])


def _random_cmdp(seed: int, n_s: int = 4, n_a: int = 3) -> CMDP:
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(n_s), size=(n_s, n_a))
    r = rng.uniform(0, 1, size=(n_s, n_a, n_s))
    c = rng.uniform(0, 1, size=(n_s, n_a, n_s))
    return CMDP(p, r, c, gamma=0.8, initial=rng.dirichlet(np.ones(n_s)), kappa=1.0, cost_max=1.0)


@pytest.mark.parametrize("instance", ["random0", "random1", "gridworld"])
def test_policy_region_support_equals_the_occupancy_lp(instance):
    """In every direction d, the polygon's farthest vertex equals max_x d . (x R, x C) over the
    occupancy polytope, solved here as a separate LP (a missed vertex shows in some direction:
    a sweep of 720 fixed directions misses four on the grid world)."""
    seed = 0 if instance == "random0" else 1
    cmdp = shortcut_gridworld().cmdp if instance == "gridworld" else _random_cmdp(seed)
    region = policy_region(cmdp)
    n_s, n_a = cmdp.n_states, cmdp.n_actions
    a_eq = (
        np.repeat(np.eye(n_s), n_a, axis=0).T
        - cmdp.gamma * cmdp.transitions.reshape(n_s * n_a, n_s).T
    )
    r, c = cmdp.expected("reward").reshape(-1), cmdp.expected("cost").reshape(-1)
    for t in np.random.default_rng(seed + 10).uniform(0, 2 * np.pi, size=40):
        d = np.array([np.cos(t), np.sin(t)])
        lp = linprog(-(d[0] * r + d[1] * c), A_eq=a_eq, b_eq=cmdp.initial, bounds=(0, None))
        assert lp.status == 0
        assert float(np.max(region @ d)) == pytest.approx(-lp.fun, abs=1e-7)


@pytest.fixture(scope="module")
def plane():
    return compute_metric_plane(epsilon=1.0)


def test_pi_star_is_the_most_rewarding_feasible_point_of_the_region(plane):
    # two computations: the constrained LP (pi*) and the polygon clipped at kappa
    assert plane.feasible_part[:, 0].max() == pytest.approx(plane.optimum.reward_return, abs=1e-9)
    assert plane.optimum.cost_return == pytest.approx(plane.kappa)  # the constraint binds
    assert plane.min_cost == pytest.approx(plane.region[:, 1].min(), abs=1e-9)


def test_the_grid_world_is_tempting_and_its_mr_attack_is_effective_and_stealthy(plane):
    # Definition 3: the reward-greedy policy earns more than pi* and is infeasible (Lemma 1)
    assert plane.unconstrained.reward_return > plane.optimum.reward_return + 1e-6
    tempting = plane.tempting_part
    beyond = tempting[tempting[:, 0] > plane.optimum.reward_return + 1e-6]
    assert len(beyond) >= 2 and np.all(beyond[:, 1] > plane.kappa + 1e-6)
    # Proposition 1: the MR attack makes pi* unsafe (and, being MR, it keeps its reward)
    mr = plane.attacks["MR"]
    assert mr.cost_return > plane.kappa + 1e-6
    assert _inside(plane.effective_stealthy_part, (mr.reward_return, mr.cost_return))
    # the attacked policy is still a policy: its values lie in the region
    for v in plane.attacks.values():
        assert _inside(plane.region, (v.reward_return, v.cost_return))


def _inside(polygon: np.ndarray, point) -> bool:
    edges = np.roll(polygon, -1, axis=0) - polygon
    rel = np.asarray(point) - polygon
    cross = edges[:, 0] * rel[:, 1] - edges[:, 1] * rel[:, 0]
    return bool(np.all(cross >= -1e-7))


def test_cli_definitions_writes_the_figure_and_its_points(tmp_path, capsys, plane):
    assert cli_main(["tabular", "definitions", "--out", str(tmp_path), "--eps", "1"]) == 0
    out = capsys.readouterr().out
    lines = {line.split(" (eps")[0]: line for line in out.splitlines() if "(eps 1)" in line}
    assert "stealthy: yes" in lines["pi* o nu_MR"] and "unsafe: yes" in lines["pi* o nu_MR"]
    assert "stealthy: no" in lines["pi* o nu_MC"]
    for suffix in ("png", "pdf", "csv"):
        assert (tmp_path / f"definitions.{suffix}").stat().st_size > 0
    with (tmp_path / "definitions.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    star = next(r for r in rows if r["label"] == "pi*")
    assert float(star["reward_return"]) == pytest.approx(plane.optimum.reward_return)
    assert float(star["cost_return"]) == pytest.approx(plane.optimum.cost_return)
    assert sum(r["kind"] == "region" for r in rows) == len(plane.region)


def test_cli_definitions_rejects_a_non_positive_radius(tmp_path, capsys):
    assert cli_main(["tabular", "definitions", "--out", str(tmp_path), "--eps", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["robustsafe tabular: error: --eps must be a finite number > 0, got 0.0"]
    assert not list(tmp_path.iterdir())
