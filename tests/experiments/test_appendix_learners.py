"""The appendix's FOCOPS and SAC-Lagrangian tables (``robustsafe table``): the learner's rows of
Table 1 only, with the paper's columns (CVPO's table: tests/test_cvpo_training.py)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from robustsafe.experiments.appendix import write_appendix

ATTACKS = ("none", "random", "mad", "amad", "mc", "mr")


def _eval_file(
    root: Path, run: str, env: str, mode: str, reward: float, cost: float = 0.0, **train
) -> None:
    """One run's eval.json: under attacker k (in ATTACKS order) episode rewards reward + k and
    reward + k + 1, costs cost + k and cost + k + 1."""
    path = root / env / run / "seed0" / "eval.json"
    path.parent.mkdir(parents=True)
    results = [
        {
            "attack": a,
            "epsilon": 0.0 if a == "none" else 0.05,
            "episodes": [{"reward": reward + k + i, "cost": cost + k + i} for i in range(2)],
        }
        for k, a in enumerate(ATTACKS)
    ]
    payload = {"env_id": env, "train_mode": mode, "train_seed": 0, **train, "results": results}
    path.write_text(json.dumps(payload))


def _rows(path: Path) -> list[tuple]:
    lines = list(csv.DictReader(path.open()))
    return [(r["env"], r["method"], r["attack"], float(r["reward_mean"])) for r in lines]


def test_focops_table_has_focops_rows_under_natural_mad_mc_mr(tmp_path):
    runs = tmp_path / "runs"
    _eval_file(runs, "vanilla", "SafetyCarRun-v0", "vanilla", 600.0)  # PPOL: not in it
    _eval_file(runs, "focops-vanilla", "SafetyCarRun-v0", "vanilla", 500.0, train_algo="focops")
    _eval_file(runs, "focops-adv-mr", "SafetyCarRun-v0", "adv-mr", 480.0, train_algo="focops")
    _eval_file(runs, "focops-adv-mc", "SafetyCarCircle-v0", "adv-mc", 300.0, train_algo="focops")
    names = {p.name for p in write_appendix(runs, tmp_path / "out" / "table")}
    assert {"table-focops.md", "table-focops.csv", "table-focops.tex"} <= names
    assert not any("sac-lag" in n or "cvpo" in n for n in names)
    # mean reward under attacker k is reward + k + 0.5: none k=0, mad 2, mc 4, mr 5
    expected = [
        (env, method, attack, reward + k + 0.5)
        for env, method, reward in (
            ("SafetyCarRun-v0", "FOCOPS-vanilla", 500.0),
            ("SafetyCarRun-v0", "FOCOPS(MR)", 480.0),
            ("SafetyCarCircle-v0", "FOCOPS(MC)", 300.0),
        )
        for attack, k in (("none", 0), ("mad", 2), ("mc", 4), ("mr", 5))
    ]
    assert _rows(tmp_path / "out" / "table-focops.csv") == expected
    head = (tmp_path / "out" / "table-focops.md").read_text().split("\n\n")[0]
    assert "| Natural reward | Natural cost | MAD reward | MAD cost | MC reward" in head
    assert "PPOL" not in head and "Random" not in head


def test_sac_lag_table_has_a_group_per_alpha_under_natural_mc_mr(tmp_path):
    runs = tmp_path / "runs"
    _eval_file(runs, "vanilla", "SafetyCarRun-v0", "vanilla", 600.0)
    for alpha, reward in ((0.001, 500.0), (0.1, 520.0)):
        run = f"sac-lag{alpha}-vanilla"
        sac = {"train_algo": "sac-lag", "train_alpha": alpha}
        _eval_file(runs, run, "SafetyCarRun-v0", "vanilla", reward, **sac)
    names = {p.name for p in write_appendix(runs, tmp_path / "out" / "table")}
    assert {"table-sac-lag.md", "table-sac-lag.csv", "table-sac-lag.tex"} <= names
    assert not any("focops" in n or "cvpo" in n for n in names)
    expected = [
        ("SafetyCarRun-v0", method, attack, reward + k + 0.5)
        for method, reward in (("SAC-Lag(alpha=0.1)", 520.0), ("SAC-Lag(alpha=0.001)", 500.0))
        for attack, k in (("none", 0), ("mc", 4), ("mr", 5))
    ]
    assert _rows(tmp_path / "out" / "table-sac-lag.csv") == expected
    head = (tmp_path / "out" / "table-sac-lag.md").read_text().split("\n\n")[0]
    assert "MAD" not in head and "PPOL" not in head


def test_sac_lag_entropy_weights_compete_for_the_lowest_cost_marks(tmp_path):
    from robustsafe.experiments.table import collect_table

    for alpha, cost in ((0.1, 3.0), (0.01, 9.0), (0.001, 1.0), (0.0001, 0.0)):
        sac = {"train_algo": "sac-lag", "train_alpha": alpha}
        _eval_file(
            tmp_path, f"sac-lag{alpha}-vanilla", "SafetyCarRun-v0", "vanilla", 500.0, cost, **sac
        )
    table = collect_table(tmp_path)
    marked = {r.method for r in table.rows if r.cells["none"].marked}
    assert marked == {"SAC-Lag(alpha=0.001)", "SAC-Lag(alpha=0.0001)"}


def test_a_learned_alpha_run_is_its_own_group_after_the_fixed_weights(tmp_path):
    """A run with sac.learn_alpha records where alpha started; the table must not file it
    under that fixed weight."""
    runs = tmp_path / "runs"
    _eval_file(runs, "vanilla", "SafetyCarRun-v0", "vanilla", 600.0)
    for run, alpha, learned, reward in (
        ("fixed", 0.005, False, 500.0),
        ("learned", 0.005, True, 510.0),
        ("big", 0.1, False, 520.0),
    ):
        sac = {"train_algo": "sac-lag", "train_alpha": alpha, "train_alpha_learned": learned}
        _eval_file(runs, run, "SafetyCarRun-v0", "vanilla", reward, **sac)
    write_appendix(runs, tmp_path / "out" / "table")
    methods = [r[1] for r in _rows(tmp_path / "out" / "table-sac-lag.csv") if r[2] == "none"]
    assert methods == ["SAC-Lag(alpha=0.1)", "SAC-Lag(alpha=0.005)", "SAC-Lag(alpha learned)"]


def test_an_edited_learner_name_is_left_out_with_a_note(tmp_path):
    """A train_algo the table cannot group (sac-lag with a weight that is no number) leaves
    that file out with a note naming it, rather than stopping the whole table."""
    from robustsafe.experiments.eval_files import load_eval_file
    from robustsafe.experiments.table import collect_table

    runs = tmp_path / "runs"
    _eval_file(runs, "vanilla", "SafetyCarRun-v0", "vanilla", 600.0)
    _eval_file(runs, "odd", "SafetyCarRun-v0", "vanilla", 500.0, train_algo="sac-lag:abc")
    _eval_file(runs, "odd2", "SafetyCarRun-v0", "vanilla", 500.0, train_algo="ppol:0.1")
    _eval_file(runs, "fixed", "SafetyCarRun-v0", "vanilla", 510.0, train_algo="sac-lag:0.01")
    odd = runs / "SafetyCarRun-v0" / "odd" / "seed0" / "eval.json"
    table = collect_table(runs)
    assert [n for n in table.notes if "sac-lag:abc" in n] == [
        f"left out {odd}: 'train_algo' must be a learner name, got 'sac-lag:abc'"
    ]
    assert any("'ppol:0.1'" in n for n in table.notes)  # only SAC-Lag names carry a weight
    assert load_eval_file(runs / "SafetyCarRun-v0" / "fixed" / "seed0" / "eval.json").algo == (
        "sac-lag:0.01"
    )
