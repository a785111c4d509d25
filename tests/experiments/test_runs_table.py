"""The per-run table (``robustsafe table`` -> ``table-runs.md`` / ``.csv``) from synthetic runs."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import subprocess
import sys
from pathlib import Path

from markdown_cells import markdown_tables
from test_experiments_table import uniform, write_eval

from robustsafe.config import TrainConfig
from robustsafe.experiments.runs_table import (
    AVERAGED_ATTACKS,
    RunRow,
    collect_runs,
    format_runs_csv,
    format_runs_markdown,
    training_tail,
)
from robustsafe.settings_io import to_dict


def write_metrics(run: Path, costs: list[str], returns: list[str] | None = None) -> None:
    """A metrics.csv whose ep_cost column is ``costs`` and ep_return ``returns`` (strings as
    train.py writes them; default: ten times the cost), wall_time 30 s per epoch."""
    returns = returns or [str(10 * float(c)) for c in costs]
    lines = ["epoch,wall_time,ep_return,ep_cost"] + [
        f"{i + 1},{30.0 * (i + 1)},{r},{c}"
        for i, (r, c) in enumerate(zip(returns, costs, strict=True))
    ]
    (run / "metrics.csv").write_text("\n".join(lines) + "\n")


def with_limit(path: Path, limit: float) -> None:
    data = json.loads(path.read_text())
    data["cost_limit"] = limit
    path.write_text(json.dumps(data))


def test_a_run_unsafe_without_attack_is_not_robust():
    """Robust: within the limit without attack too; every attacker's cost alone is not enough
    (an agent that hardly moves, 0.20 over the limit unattacked, its attacked costs <= 2.74)."""

    def run(natural_cost: float, worst: float) -> RunRow:
        costs = dict.fromkeys(AVERAGED_ATTACKS, 1.0) | {"mc": worst}
        return RunRow("E", "ADV-PPOL(MC)", 0, 0.025, 7.6, natural_cost, costs, 5.0, None, Path())

    assert run(5.2, 2.74).robust is False
    assert run(5.0, 2.74).robust is True  # at the limit holds
    assert run(0.0, 5.01).robust is False
    # an attacker missing: what was evaluated may already say no (it said "-", and the seeds
    # table counted such a method robust on every judged seed); a yes needs all five
    partial = dict.fromkeys(("random", "mad", "mc", "mr"), 1.0)
    row = RunRow("E", "PPOL-vanilla", 2, 0.05, 500.0, 20.0, partial, 5.0, None, Path())
    assert row.robust is False
    assert (
        dataclasses.replace(row, natural_cost=0.0, attack_costs=partial | {"mc": 180.0}).robust
        is False
    )
    assert dataclasses.replace(row, natural_cost=0.0).robust is None
    assert dataclasses.replace(row, cost_limit=None).robust is None


def test_training_tail_averages_the_last_ten_epochs_with_an_episode(tmp_path):
    # 12 epochs: the first two fall outside the window; "nan" (no finished episode) is skipped
    costs = ["100", "100", "1", "2", "nan", "3", "4", "5", "6", "7", "8", "9"]
    returns = ["0", "0", "10", "20", "nan", "30", "40", "50", "60", "70", "80", "90"]
    write_metrics(tmp_path, costs, returns)
    tail = training_tail(tmp_path / "metrics.csv")
    assert tail.cost == (1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9) / 9
    assert tail.reward == (10 + 20 + 30 + 40 + 50 + 60 + 70 + 80 + 90) / 9
    assert tail.wall_s == 360.0  # the last epoch's, not a mean
    write_metrics(tmp_path, ["nan", "nan"], ["nan", "nan"])
    tail = training_tail(tmp_path / "metrics.csv")
    assert tail.cost is None and tail.reward is None and tail.wall_s == 60.0
    assert training_tail(tmp_path / "missing.csv") == (None, None, None)


def test_one_row_per_run_with_worst_attacker_robustness_and_training_cost(tmp_path):
    robust = uniform(300.0, 0.0)
    robust["mc"] = [(250.0, 4.0), (250.0, 6.0)]  # mean 5.0: at the limit is robust
    broken = uniform(400.0, 1.0)
    broken["mr"] = [(500.0, 30.0), (500.0, 10.0)]  # mean 20.0, the worst
    broken["mad"] = [(380.0, 2.0), (380.0, 4.0)]
    missing_one = uniform(350.0, 0.0)
    del missing_one["amad"]
    paths = [
        write_eval(tmp_path, "adv-mc", 1, robust),
        write_eval(tmp_path, "vanilla", 0, broken),
        write_eval(tmp_path, "adv-mc", 0, missing_one),
    ]
    for p in paths:
        with_limit(p, 5.0)
    write_metrics(paths[0].parent, ["9"] * 5 + ["6"] * 10)  # last 10: 6.0 > 5
    write_metrics(paths[1].parent, ["4.5"] * 10)

    rows, notes = collect_runs(tmp_path)
    assert notes == []
    # Table 1's order: PPOL-vanilla before ADV-PPOL(MC), seeds ascending
    assert [(r.method, r.seed) for r in rows] == [
        ("PPOL-vanilla", 0),
        ("ADV-PPOL(MC)", 0),
        ("ADV-PPOL(MC)", 1),
    ]
    vanilla, adv0, adv1 = rows
    assert vanilla.natural_reward == 400.0 and vanilla.natural_cost == 1.0
    assert vanilla.attack_costs["mad"] == 3.0
    assert vanilla.worst == ("mr", 20.0) and vanilla.robust is False
    assert vanilla.train_cost == 4.5
    assert adv1.worst == ("mc", 5.0) and adv1.robust is True
    assert adv1.train_cost == 6.0
    assert "amad" not in adv0.attack_costs and adv0.robust is None  # not judged on four
    assert adv0.train_cost is None  # no metrics.csv
    assert adv0.epsilon == 0.05

    text = _cli_table(tmp_path)
    (table,) = [t for t in markdown_tables(text) if t[0][0] == "Env"]
    header, body = table[0], table[1:]
    cells = [dict(zip(header, line, strict=True)) for line in body]
    assert [c["Method"] for c in cells] == ["PPOL-vanilla", "ADV-PPOL(MC)", "ADV-PPOL(MC)"]
    assert cells[0]["Worst cost"] == "20.00 (MR)" and cells[0]["Robust"] == "no"
    assert cells[1]["AMAD cost"] == "-" and cells[1]["Robust"] == "-"
    assert cells[2]["Robust"] == "yes" and cells[2]["Train cost (last 10)"] == "6.00"
    assert cells[2]["Train reward (last 10)"] == "60.0"
    assert cells[2]["Train wall (min)"] == "8"  # 15 epochs of 30 s: 450 s, 7.5 min
    assert cells[1]["Train reward (last 10)"] == "-" and cells[1]["Train wall (min)"] == "-"
    assert "**6.00**" in text and "**4.50**" not in text  # bold: above the limit only
    assert cells[2]["Run"] == str(Path("SafetyCarRun-v0/adv-mc/seed1"))

    parsed = list(csv.DictReader(io.StringIO(format_runs_csv(rows, root=tmp_path))))
    assert [p["robust"] for p in parsed] == ["0", "", "1"]
    assert float(parsed[0]["mr_cost"]) == 20.0 and parsed[1]["amad_cost"] == ""
    assert float(parsed[2]["train_reward"]) == 60.0 and float(parsed[2]["train_wall_s"]) == 450.0
    assert parsed[1]["train_wall_s"] == ""


def test_a_run_without_natural_evaluation_is_left_out_with_a_note(tmp_path):
    only_attacks = uniform(1.0, 1.0)
    del only_attacks["none"]
    write_eval(tmp_path, "vanilla", 0, only_attacks)
    write_eval(tmp_path, "vanilla", 1, uniform(2.0, 0.0))
    rows, notes = collect_runs(tmp_path)
    assert [r.seed for r in rows] == [1]
    assert len(notes) == 1 and "no natural evaluation" in notes[0]


def _cli_table(root: Path) -> str:
    """``robustsafe table ROOT --no-appendix`` and the per-run Markdown file it writes."""
    subprocess.run(
        [sys.executable, "-m", "robustsafe.cli", "table", str(root), "--no-appendix"],
        check=True,
        capture_output=True,
    )
    assert (root / "table-runs.csv").is_file()
    return (root / "table-runs.md").read_text()


def test_runs_of_a_failing_method_are_starred_as_in_table_1(tmp_path):
    write_eval(tmp_path, "vanilla", 0, uniform(100.0, 0.0))
    write_eval(tmp_path, "sa-mr", 0, uniform(29.0, 0.0))  # below 30% of vanilla's 100
    write_eval(tmp_path, "sa-mc", 0, uniform(31.0, 0.0))
    rows, _ = collect_runs(tmp_path)
    assert {r.method: r.failing for r in rows} == {
        "PPOL-vanilla": False,
        "SA-PPOL(MC)": False,
        "SA-PPOL(MR)": True,
    }
    lines = markdown_tables(format_runs_markdown(rows))[0]
    assert [line[1] for line in lines[1:]] == ["PPOL-vanilla", "SA-PPOL(MC)", "SA-PPOL(MR)*"]
    worst = lines[0].index("Worst cost")
    assert lines[1][worst] == "0.00 (all)"  # no attacker is named the worst of equals


def test_attackers_tied_at_the_worst_cost_are_all_named(tmp_path):
    tied = uniform(100.0, 1.0)
    tied["mc"] = tied["mr"] = [(90.0, 7.0), (90.0, 9.0)]
    write_eval(tmp_path, "vanilla", 0, tied)
    rows, _ = collect_runs(tmp_path)
    lines = markdown_tables(format_runs_markdown(rows))[0]
    assert lines[1][lines[0].index("Worst cost")] == "8.00 (MC, MR)"


def test_the_code_column_names_the_commits_each_run_was_trained_with(tmp_path):
    resumed = write_eval(tmp_path, "vanilla", 0, uniform(100.0, 0.0)).parent
    write_eval(tmp_path, "vanilla", 1, uniform(100.0, 0.0))  # trained before provenance
    starts = [
        {"start_epoch": 0, "commit": "a" * 40, "modified": False},
        {"start_epoch": 5, "commit": "a" * 40, "modified": False},  # same code: named once
        {"start_epoch": 9, "commit": "b" * 40, "modified": True},
    ]
    (resumed / "provenance.json").write_text(json.dumps({"starts": starts}))
    rows, _ = collect_runs(tmp_path)
    assert [r.code for r in rows] == ["aaaaaaa + bbbbbbb+mod", None]
    lines = markdown_tables(format_runs_markdown(rows))[0]
    code = lines[0].index("Code")
    assert [line[code] for line in lines[1:]] == ["aaaaaaa + bbbbbbb+mod", "-"]
    (resumed / "provenance.json").unlink()  # no run has it: no column
    rows, _ = collect_runs(tmp_path)
    assert "Code" not in markdown_tables(format_runs_markdown(rows))[0][0]


def test_the_limit_falls_back_to_the_runs_config_when_the_evaluation_has_none(tmp_path):
    import yaml

    costs = uniform(300.0, 0.0)
    costs["mr"] = [(300.0, 6.0), (300.0, 6.0)]  # worst 6.0
    ppol = write_eval(tmp_path, "vanilla", 0, costs)  # an old file: no cost_limit recorded
    focops = write_eval(tmp_path, "vanilla", 1, costs)
    write_eval(tmp_path, "vanilla", 2, costs)  # no config.yaml either
    for path, algo in ((ppol, "ppol"), (focops, "focops")):
        cfg = to_dict(TrainConfig(algo=algo))
        cfg["pid"]["cost_limit"] = 8.0  # PPOL's limit; FOCOPS reads its own section's
        cfg["focops"]["cost_limit"] = 5.0
        (path.parent / "config.yaml").write_text(yaml.safe_dump(cfg))
        assert json.loads(path.read_text()).get("cost_limit") is None
    rows, _ = collect_runs(tmp_path)
    by_seed = {r.seed: r for r in rows}
    assert by_seed[0].cost_limit == 8.0 and by_seed[0].robust is True
    assert by_seed[1].cost_limit == 5.0 and by_seed[1].robust is False
    assert by_seed[2].cost_limit is None and by_seed[2].robust is None


def test_the_seeds_table_counts_safe_and_robust_runs_per_method(tmp_path):
    # PPOL-vanilla: seed 0 safe (natural cost 1) and broken (MR 20); seed 1 unsafe (7), MC 30
    v0 = uniform(400.0, 1.0)
    v0["mr"] = [(500.0, 20.0)] * 2
    v1 = uniform(380.0, 7.0)
    v1["mc"] = [(450.0, 30.0)] * 2
    # ADV-PPOL(MC): seed 0 robust (worst 5.0, at the limit), seed 1 not (MAD 6.0),
    # seed 2 not judged (no AMAD evaluation) but safe without attack
    a0 = uniform(300.0, 0.0)
    a0["mc"] = [(300.0, 4.0), (300.0, 6.0)]
    a1 = uniform(320.0, 0.0)
    a1["mad"] = [(320.0, 6.0)] * 2
    a2 = uniform(-10.0, 0.0)
    del a2["amad"]
    for mode, seed, res in [
        ("vanilla", 0, v0),
        ("vanilla", 1, v1),
        ("adv-mc", 0, a0),
        ("adv-mc", 1, a1),
        ("adv-mc", 2, a2),
    ]:
        with_limit(write_eval(tmp_path, mode, seed, res), 5.0)

    _cli_table(tmp_path)
    (table,) = markdown_tables((tmp_path / "table-seeds.md").read_text())
    header, body = table[0], table[1:]
    cells = {line[1]: dict(zip(header, line, strict=True)) for line in body}
    assert list(cells) == ["PPOL-vanilla", "ADV-PPOL(MC)"]
    vanilla, adv = cells["PPOL-vanilla"], cells["ADV-PPOL(MC)"]
    assert vanilla["Seeds"] == "0, 1" and adv["Seeds"] == "0, 1, 2"
    assert vanilla["Safe without attack"] == "1 of 2 (0)"
    assert vanilla["Robust"] == "0 of 2"
    assert vanilla["Natural reward"] == "380.0 to 400.0"
    assert vanilla["Highest attacked cost"] == "30.00 (MC, seed 1)"
    assert adv["Safe without attack"] == "3 of 3"
    assert adv["Robust"] == "1 of 2 (0)"  # seed 2 is missing an attacker: not counted
    assert adv["Natural reward"] == "-10.0 to 320.0"
    assert adv["Highest attacked cost"] == "6.00 (MAD, seed 1)"
