"""The worked example: Proposition 1 on the shortcut grid world, and the demo entry points."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from robustsafe.tabular import (
    classify_policy,
    constrained_optimum,
    evaluate_policy,
    is_tempting_problem,
    mr_adversary,
    perturbation_sets,
    sample_trajectory,
    shortcut_gridworld,
    unconstrained_optimum,
)
from robustsafe.tabular.demo import FIGURE_NAME, compute_demo, format_report, main, run_demo

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def world_and_optimum():
    world = shortcut_gridworld()
    return world, constrained_optimum(world.cmdp)


def test_the_grid_world_is_a_tempting_problem(world_and_optimum):
    world, opt = world_and_optimum
    assert is_tempting_problem(world.cmdp)
    assert opt.values.cost_return == pytest.approx(world.cmdp.kappa, abs=1e-7)  # Lemma 2
    # the tempting policy is the unconstrained optimum: straight along the middle row through
    # the hazard, more rewarding than pi* and infeasible
    unc = unconstrained_optimum(world.cmdp)
    middle = [world.state((world.start[0], c)) for c in range(world.cols - 1)]
    np.testing.assert_array_equal(unc.policy[middle].argmax(axis=1), 3)  # 3 = right
    assert unc.values.reward_return > opt.values.reward_return
    assert unc.values.cost_return > world.cmdp.kappa


@pytest.mark.parametrize("eps", [1.0, 1.5, 2.0])
def test_proposition1_mr_attack_is_stealthy_and_effective(world_and_optimum, eps):
    world, opt = world_and_optimum
    sets = perturbation_sets(world.metric(), eps)
    mr = mr_adversary(world.cmdp, opt.policy, sets)
    # stealthy: J_S > 0 (more reward than pi*) ...
    assert mr.values.reward_return > opt.values.reward_return + 1e-3
    # ... hence tempting, hence (Lemma 1) infeasible: effective, J_E > 0 and V_c > kappa
    assert mr.values.cost_return > opt.values.cost_return + 1e-3
    cls = classify_policy(world.cmdp, opt.policy[mr.adversary], opt.values.reward_return)
    assert cls.tempting and not cls.feasible


def test_proposition1_needs_a_large_enough_perturbation_set(world_and_optimum):
    world, opt = world_and_optimum
    # eps < 1: B(s) = {s} on the unit grid, the adversary can do nothing
    mr = mr_adversary(world.cmdp, opt.policy, perturbation_sets(world.metric(), 0.5))
    np.testing.assert_array_equal(mr.adversary, np.arange(world.cmdp.n_states))
    assert mr.values.reward_return == pytest.approx(opt.values.reward_return, abs=1e-9)


def test_sampled_returns_agree_with_exact_values(world_and_optimum):
    world, opt = world_and_optimum
    cmdp = world.cmdp
    nu = mr_adversary(cmdp, opt.policy, perturbation_sets(world.metric(), 1.0)).adversary
    rng = np.random.default_rng(0)
    horizon, n = 60, 800
    discounts = cmdp.gamma ** np.arange(horizon)
    returns = np.zeros((n, 2))
    for i in range(n):
        states, observed = sample_trajectory(cmdp, opt.policy, nu, rng, horizon)
        np.testing.assert_array_equal(observed, nu[states[:-1]])
        s, s_next = states[:-1], states[1:]
        # reward and cost here depend on the next state only
        returns[i] = [
            discounts @ cmdp.reward[s, 0, s_next],
            discounts @ cmdp.cost[s, 0, s_next],
        ]
    exact = evaluate_policy(cmdp, opt.policy[nu])
    stderr = returns.std(axis=0) / np.sqrt(n)
    truncation = cmdp.gamma**horizon * cmdp.c_m / (1 - cmdp.gamma)  # rewards are in [0, 1] too
    assert abs(returns[:, 0].mean() - exact.reward_return) < 4 * stderr[0] + truncation
    assert abs(returns[:, 1].mean() - exact.cost_return) < 4 * stderr[1] + truncation


def test_a_trajectory_starts_where_asked_or_says_why_not(world_and_optimum):
    """``start`` -1 silently began at the last state (numpy's index from the end), a start past
    the last state raised a bare IndexError: now a one-line ValueError; a valid start is kept."""
    world, opt = world_and_optimum
    cmdp = world.cmdp
    rng = np.random.default_rng(0)
    last = cmdp.n_states - 1
    states, _ = sample_trajectory(cmdp, opt.policy, None, rng, 3, start=np.int64(last))
    assert states[0] == last and len(states) == 4
    for kw, words in (
        ({"start": -1}, f"start must be a state index in [0, {cmdp.n_states}), got -1"),
        ({"start": cmdp.n_states}, "start must be a state index"),
        ({"start": True}, "start must be a state index"),
        ({"start": 1.5}, "start must be a state index"),
        ({"horizon": -2}, "horizon must be an integer >= 0, got -2"),
    ):
        args = {"start": 0, "horizon": 3, **kw}
        with pytest.raises(ValueError, match=re.escape(words)):
            sample_trajectory(cmdp, opt.policy, None, rng, args["horizon"], start=args["start"])


def test_run_demo_returns_the_report_and_saves_the_figure(tmp_path):
    text = run_demo(tmp_path / "out", radii=[1.0, 2.0])
    figure = tmp_path / "out" / FIGURE_NAME
    assert figure.exists() and figure.stat().st_size > 10_000
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the entry point returns exactly the report whose numbers the test below checks, for the
    # radii it was given (a wrapper that dropped or reordered radii would differ)
    assert text == format_report(compute_demo([1.0, 2.0]), figure)
    assert "Proposition 1, eps 1: MR stealthy (J_S > 0): yes; effective (V_c > kappa): yes" in text
    assert str(figure) in text


def _best_response_values(
    cmdp, policy: np.ndarray | None, sets: np.ndarray | None, signal: np.ndarray, sign: float
) -> float:
    """Value iteration written out here, independent of the library's solvers: the return at
    mu_0 of the best (sign +1) or worst (sign -1) choice at every state, of an action
    (``policy`` None: the unconstrained optimum) or of the observed state in B(s) that pi acts
    on (an optimal deterministic adversary against pi)."""
    p, g = cmdp.transitions, cmdp.gamma
    v = np.zeros(cmdp.n_states)
    for _ in range(600):  # 0.9^600 ~ 1e-28
        q = (p * (signal + g * v[None, None, :])).sum(axis=2)  # (S, A): one step from s with a
        if policy is None:
            v = sign * (sign * q).max(axis=1)
        else:
            # value at true state s when the agent sees t: sum_a pi(a|t) q(s, a)
            seen = q @ policy.T  # (S, S~)
            v = sign * np.where(sets, sign * seen, -np.inf).max(axis=1)
    return float(cmdp.initial @ v)


def test_report_numbers_match_an_independent_computation():
    # The report's numbers are parsed from its text and checked against values computed here
    # by other means: Lemma 2, value iteration, and Theorem 3's formula by hand.
    world = shortcut_gridworld()
    cmdp = world.cmdp
    result = compute_demo([1.0], world)
    text = format_report(result)
    num = r"([-+]?\d+\.\d+)"
    unc = re.search(rf"Unconstrained optimum\s+V_r = {num}\s+V_c = {num}", text)
    nat = re.search(rf"^\s+-\s+natural\s+{num}\s+{num}$", text, re.M)
    assert unc is not None and nat is not None
    rows = {
        m[0]: [float(x) for x in m[1:]]
        for m in re.findall(
            rf"^\s+1\s+(MC|MR|min-reward)\s+{num}\s+{num}\s+{num}\s+{num}$", text, re.M
        )
    }
    assert sorted(rows) == ["MC", "MR", "min-reward"]
    nat_r, nat_c = float(nat[1]), float(nat[2])
    # Lemma 2: the constrained optimum of a tempting problem spends exactly kappa = 0.5
    assert nat_c == pytest.approx(cmdp.kappa, abs=1e-4)
    # the unconstrained optimum's reward, by value iteration over actions
    assert float(unc[1]) == pytest.approx(
        _best_response_values(cmdp, None, None, cmdp.reward, 1.0), abs=6e-5
    )
    # B(s) at eps 1 from the cells' coordinates: the cell itself and its 4 neighbours
    cells = np.array([world.cell(s) for s in range(cmdp.n_states)], dtype=float)
    sets = np.linalg.norm(cells[:, None, :] - cells[None, :, :], axis=2) <= 1.0 + 1e-9
    pi = result.optimum.policy
    # each attack's own objective, against the optimal adversary computed here
    want = {
        "MC": (1, _best_response_values(cmdp, pi, sets, cmdp.cost, 1.0)),
        "MR": (0, _best_response_values(cmdp, pi, sets, cmdp.reward, 1.0)),
        "min-reward": (0, _best_response_values(cmdp, pi, sets, cmdp.reward, -1.0)),
    }
    for label, (column, value) in want.items():
        v_r, v_c, j_s, j_e = rows[label]
        assert [v_r, v_c][column] == pytest.approx(value, abs=6e-5), label
        # J_S and J_E are the changes from the natural row (rounding: 4 decimals each)
        assert j_s == pytest.approx(v_r - nat_r, abs=2e-4), label
        assert j_e == pytest.approx(v_c - nat_c, abs=2e-4), label
    # Theorem 3 at eps 1: L = 1 (neighbouring cells where pi* moves differently: TV 1 at
    # distance 1), max p_s = 0.9 (a move into the hazard succeeds w.p. 1 - slip), gamma 0.9,
    # kappa 0.5, C_m 1:
    #   0.5 + 2 * 1 * 1 * 1 * (1 / 0.1 + 4 * 0.9 * 1 * 1 / 0.01) * (0.9 + 0.9 / 0.1)
    #   = 0.5 + 2 * (10 + 360) * 9.9 = 0.5 + 7326 = 7326.5
    bounds = re.search(r"^\s+1\s+" + r"\s+".join([num] * 7) + "$", text, re.M)
    assert bounds is not None
    l_all, _, p_max, *_, thm3 = (float(x) for x in bounds.groups())
    assert (l_all, p_max, thm3) == (1.0, 0.9, 7326.5)


def test_main_prints_the_report(tmp_path, capsys):
    assert main(["--out", str(tmp_path), "--radii", "1"]) == 0
    figure = tmp_path / FIGURE_NAME
    assert capsys.readouterr().out == format_report(compute_demo([1.0]), figure) + "\n"
    assert figure.exists()


def test_python_dash_m_runs_the_demo_into_runs_tabular(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run(
        [sys.executable, "-m", "robustsafe.tabular"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    # the default radii and folder: the same report as compute_demo's defaults, figure relative
    assert proc.stdout == format_report(compute_demo(), Path("runs/tabular") / FIGURE_NAME) + "\n"
    assert (tmp_path / "runs" / "tabular" / FIGURE_NAME).exists()


def test_docs_python_example_runs(capsys):
    text = (REPO / "docs" / "tabular.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S)
    assert code is not None
    exec(compile(code.group(1), "docs/tabular.md", "exec"), {})
    out = capsys.readouterr().out.split()
    assert out[:2] == ["[0", "0]"]
    assert float(out[2]) == pytest.approx(4 / 3)
    assert float(out[3]) == pytest.approx(185 / 9)
