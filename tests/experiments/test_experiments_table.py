"""The results table from synthetic eval.json files (no training)."""

from __future__ import annotations

import csv
import io
import json
import math
import os
from pathlib import Path

import pytest
import yaml

from robustsafe.cli import main
from robustsafe.experiments.eval_files import EvalFile
from robustsafe.experiments.names import method_name
from robustsafe.experiments.table import build_table, collect_table
from robustsafe.experiments.table_format import (
    CSV_FIELDS,
    format_csv,
    format_latex,
    format_markdown,
    write_tables,
)
from robustsafe.settings_io import to_dict

ENV = "SafetyCarRun-v0"
ATTACKS = ("none", "random", "mad", "amad", "mc", "mr")


def write_eval(
    root: Path,
    mode: str,
    seed: int,
    results: dict[str, list[tuple[float, float]]],
    env: str = ENV,
    eps: float = 0.05,
    name: str = "eval.json",
) -> Path:
    """An eval.json like ``robustsafe evaluate`` writes (summary fields are not used)."""
    path = root / env / mode.replace(":", "") / f"seed{seed}" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = [
        {
            "attack": attack,
            "epsilon": 0.0 if attack == "none" else eps,
            "episodes": [{"reward": r, "cost": c, "length": 10} for r, c in eps_],
        }
        for attack, eps_ in results.items()
    ]
    payload = {
        "agent": str(path.parent),
        "env_id": env,
        "agent_epoch": 3,
        "train_mode": mode,
        "train_seed": seed,
        "train_preset": "fast",
        "episodes": 2,
        "seed": 0,
        "epsilon_space": "raw",
        "results": entries,
    }
    path.write_text(json.dumps(payload))
    return path


def uniform(reward: float, cost: float, n: int = 2) -> dict[str, list[tuple[float, float]]]:
    """Every attacker with n identical episodes."""
    return {a: [(reward, cost)] * n for a in ATTACKS}


def row(table, mode, env=ENV):
    return next(r for r in table.rows if r.mode == mode and r.env_id == env)


def test_pools_all_episodes_of_all_seeds(tmp_path):
    seed0 = uniform(100.0, 1.0)
    seed0["none"] = [(10.0, 0.0), (20.0, 2.0)]
    seed0["mc"] = [(1.0, 10.0)]
    seed1 = uniform(100.0, 1.0)
    seed1["none"] = [(30.0, 4.0)]
    seed1["mc"] = [(3.0, 20.0), (5.0, 30.0)]
    write_eval(tmp_path, "vanilla", 0, seed0)
    write_eval(tmp_path, "vanilla", 1, seed1)
    table = collect_table(tmp_path)
    r = row(table, "vanilla")
    assert r.seeds == (0, 1) and r.epsilon == 0.05
    nat = r.cells["none"]
    # rewards 10, 20, 30: mean 20, population std sqrt(200 / 3); costs 0, 2, 4
    assert nat.reward_mean == pytest.approx(20.0)
    assert nat.reward_std == pytest.approx(math.sqrt(200 / 3))
    assert nat.cost_mean == pytest.approx(2.0)
    assert nat.cost_std == pytest.approx(math.sqrt(8 / 3))
    assert (nat.n_episodes, nat.n_seeds) == (3, 2)
    mc = r.cells["mc"]  # rewards 1, 3, 5; costs 10, 20, 30
    assert mc.reward_mean == pytest.approx(3.0)
    assert mc.reward_std == pytest.approx(math.sqrt(8 / 3))
    assert mc.cost_mean == pytest.approx(20.0)
    assert mc.cost_std == pytest.approx(math.sqrt(200 / 3))
    # Average pools Natural's 3 episodes and the five attackers': 4 x (2 + 2) at (100, 1) and
    # the 3 MC ones (the paper's numbers); with average="attackers" the attackers' only (its
    # captions' words)
    natural_r, natural_c = [10.0, 20.0, 30.0], [0.0, 2.0, 4.0]
    attacked_r = [100.0] * 16 + [1.0, 3.0, 5.0]
    attacked_c = [1.0] * 16 + [10.0, 20.0, 30.0]
    for average, rewards, costs in (
        ("paper", natural_r + attacked_r, natural_c + attacked_c),
        ("attackers", attacked_r, attacked_c),
    ):
        avg = row(collect_table(tmp_path, average=average), "vanilla").cells["average"]
        n = len(rewards)
        mean_r = sum(rewards) / n
        assert avg.n_episodes == n and avg.n_seeds == 2, average
        assert avg.reward_mean == pytest.approx(mean_r)
        assert avg.reward_std == pytest.approx(
            math.sqrt(sum((x - mean_r) ** 2 for x in rewards) / n)
        )
        assert avg.cost_mean == pytest.approx(sum(costs) / n)
    assert r.cells["average"].n_episodes == 22  # the default is the paper's
    with pytest.raises(ValueError, match="average must be one of"):
        collect_table(tmp_path, average="five")


def test_average_is_the_mean_of_the_six_columns_as_the_papers_numbers():
    """Car-Run PPOL-vanilla in the paper: costs Natural 0.16, Random 16.66, MAD 0.04, AMAD 3.7,
    MC 184.04, MR 184.08 (Tables 1 and 5), Average 64.78 = their mean (the five attackers' would
    be 77.70); one episode per column reproduces it."""
    costs = {"none": 0.16, "random": 16.66, "mad": 0.04, "amad": 3.7, "mc": 184.04, "mr": 184.08}
    rewards = {"none": 560.86, "random": 552.54, "mad": 500.72, "amad": 559.45}
    rewards |= {"mc": 624.92, "mr": 625.12}
    f = EvalFile(
        path=Path("eval.json"),
        env_id=ENV,
        mode="vanilla",
        algo="ppol",
        train_seed=0,
        preset="paper",
        agent_epoch=None,
        episodes={a: ((rewards[a], costs[a]),) for a in costs},
        epsilons={a: 0.0 if a == "none" else 0.05 for a in costs},
    )
    avg = build_table([f]).rows[0].cells["average"]
    assert round(avg.cost_mean, 2) == 64.78 and round(avg.reward_mean, 1) == 570.6  # the paper's
    assert (
        round(build_table([f], average="attackers").rows[0].cells["average"].cost_mean, 2) == 77.70
    )


def test_marks_the_two_lowest_costs_per_column_ties_to_higher_reward(tmp_path):
    write_eval(tmp_path, "vanilla", 0, uniform(100.0, 8.0))
    write_eval(tmp_path, "random", 0, uniform(90.0, 3.0))
    write_eval(tmp_path, "adv-mc", 0, uniform(80.0, 0.001))  # shows as 0.00 ...
    write_eval(tmp_path, "adv-mr", 0, uniform(85.0, 0.004))  # ... so does this: tie
    sa = uniform(95.0, 0.0)
    sa["mc"] = [(95.0, 50.0)] * 2  # sa-mc: lowest cost everywhere except under MC
    write_eval(tmp_path, "sa-mc", 0, sa)
    table = collect_table(tmp_path)

    def marked(column):
        return {r.mode for r in table.rows if r.cells[column].marked}

    # costs 0.0 (reward 95), 0.00 (85), 0.00 (80): the tie on the displayed cost goes to reward
    assert marked("none") == {"sa-mc", "adv-mr"}
    assert marked("mc") == {"adv-mr", "adv-mc"}
    assert marked("average") == {"adv-mr", "adv-mc"}  # sa-mc averages 10.0
    assert [r.method for r in table.rows] == [
        "PPOL-vanilla",
        "PPOL-random",
        "SA-PPOL(MC)",
        "ADV-PPOL(MC)",
        "ADV-PPOL(MR)",
    ]


def test_failing_agents_are_starred_and_never_marked(tmp_path):
    write_eval(tmp_path, "vanilla", 0, uniform(100.0, 5.0))
    write_eval(tmp_path, "sa-mr", 0, uniform(29.0, 0.0))  # < 30% of 100: failing
    write_eval(tmp_path, "sa-mc", 0, uniform(30.0, 1.0))  # exactly 30%: not failing
    write_eval(tmp_path, "adv-mc", 0, uniform(90.0, 2.0))
    table = collect_table(tmp_path)
    assert row(table, "sa-mr").failing and row(table, "sa-mr").label == "SA-PPOL(MR)*"
    assert not row(table, "sa-mc").failing and not row(table, "vanilla").failing
    for column in ("none", "mc", "average"):
        assert {r.mode for r in table.rows if r.cells[column].marked} == {"sa-mc", "adv-mc"}
    md = format_markdown(table)
    assert "| SA-PPOL(MR)* |" in md and "| SA-PPOL(MC) |" in md
    lines = list(csv.DictReader(io.StringIO(format_csv(table))))
    assert {x["failing"] for x in lines if x["method"] == "SA-PPOL(MR)"} == {"true"}
    assert {x["marked"] for x in lines if x["method"] == "SA-PPOL(MR)"} == {"false"}


def test_without_vanilla_no_agent_fails(tmp_path):
    write_eval(tmp_path, "adv-mc", 0, uniform(100.0, 1.0))
    write_eval(tmp_path, "sa-mr", 0, uniform(1.0, 0.0))
    table = collect_table(tmp_path)
    assert not any(r.failing for r in table.rows)
    assert any("no PPOL-vanilla" in n and ENV in n for n in table.notes)
    assert "no PPOL-vanilla" in format_markdown(table)
    # both agents are among the two lowest costs
    assert all(r.cells["none"].marked for r in table.rows)


def test_the_attackers_average_over_more_seeds_than_natural_is_said_as_it_is(tmp_path):
    """With average="attackers" a run evaluated under the five attackers but not without attack
    counts in the Average and not in Natural: the note said "Average: 2 of the 1 seeds"."""
    write_eval(tmp_path, "vanilla", 0, uniform(100.0, 5.0))
    no_natural = uniform(90.0, 1.0)
    del no_natural["none"]
    write_eval(tmp_path, "adv-mc", 0, uniform(90.0, 1.0))
    write_eval(tmp_path, "adv-mc", 1, no_natural)
    table = collect_table(tmp_path, average="attackers")
    adv_mc = row(table, "adv-mc")
    assert (adv_mc.cells["average"].n_seeds, adv_mc.cells["none"].n_seeds) == (2, 1)
    notes = [n for n in table.notes if "ADV-PPOL(MC)" in n and "Average" in n]
    assert notes == [
        f"ADV-PPOL(MC) on {ENV}, Average: 2 seeds, Natural: 1 (the Average pools every run "
        "evaluated under all five attackers, with or without a natural evaluation)."
    ]


def test_missing_attackers_show_a_dash(tmp_path):
    write_eval(tmp_path, "vanilla", 0, uniform(100.0, 5.0))
    partial = uniform(90.0, 1.0)
    del partial["mr"]
    write_eval(tmp_path, "adv-mc", 0, uniform(90.0, 1.0))
    write_eval(tmp_path, "adv-mc", 1, partial)  # seed 1 lacks MR
    no_amad = uniform(80.0, 2.0)
    del no_amad["amad"]
    write_eval(tmp_path, "adv-mr", 0, no_amad)  # nobody evaluated AMAD
    table = collect_table(tmp_path)
    adv_mc, adv_mr = row(table, "adv-mc"), row(table, "adv-mr")
    assert adv_mc.cells["mr"].n_seeds == 1 and adv_mc.cells["mr"].n_episodes == 2
    assert adv_mc.cells["none"].n_seeds == 2
    # Average: only seed 0 has all five attackers (its 2 natural and 10 attacked episodes)
    assert (adv_mc.cells["average"].n_seeds, adv_mc.cells["average"].n_episodes) == (1, 12)
    assert any("ADV-PPOL(MC)" in n and "MR: 2 episodes of 1 seed" in n for n in table.notes)
    assert any("ADV-PPOL(MC)" in n and "Average: 1 of the 2 seeds" in n for n in table.notes)
    assert adv_mr.cells["amad"] is None and adv_mr.cells["average"] is None
    md_line = next(x for x in format_markdown(table).splitlines() if "ADV-PPOL(MR)" in x)
    cells = [c.strip() for c in md_line.strip("|").split("|")]
    # Env, Method, Seeds, Episodes, Natural r/c, Random r/c, MAD r/c, AMAD r/c, ...
    assert cells[10:12] == ["—", "—"] and cells[-2:] == ["—", "—"]
    lines = list(csv.DictReader(io.StringIO(format_csv(table))))
    amad = next(x for x in lines if x["method"] == "ADV-PPOL(MR)" and x["attack"] == "amad")
    assert amad["reward_mean"] == "" and amad["n_episodes"] == "0"
    tex_line = next(x for x in format_latex(table).splitlines() if "ADV-PPOL(MR)" in x)
    assert tex_line.count("--") == 4


def test_outputs(tmp_path):
    write_eval(tmp_path, "vanilla", 0, uniform(100.0, 5.0))
    write_eval(tmp_path, "vanilla", 1, uniform(100.0, 5.0))
    write_eval(tmp_path, "adv-mc", 0, uniform(90.0, 0.0))
    write_eval(tmp_path, "adv-mix:0.5", 0, uniform(80.0, 1.0))
    write_eval(tmp_path, "adv-mix:0.25", 0, uniform(80.0, 1.0))
    write_eval(tmp_path, "vanilla", 0, uniform(10.0, 1.0), env="SafetyDroneRun-v0", eps=0.025)
    paths = write_tables(tmp_path, tmp_path / "out" / "table1")
    assert [p.name for p in paths] == ["table1.md", "table1.csv", "table1.tex", "table1-costs.md"]
    md, text, tex, costs = (p.read_text() for p in paths)
    assert md == format_markdown(tmp_path)

    cost_lines = [x for x in costs.splitlines() if x.startswith("|")]
    assert cost_lines[0] == (
        "| Env | Method | Seeds | Episodes | Natural reward | Natural cost | Random cost | "
        "MAD cost | AMAD cost | MC cost | MR cost | Average cost |"
    )
    assert "| 100.00 ± 0.00 | 5.00 ± 0.00 | 5.00 ± 0.00 |" in cost_lines[2]  # vanilla
    assert cost_lines[3].endswith("| **0.00 ± 0.00** | **0.00 ± 0.00** |")  # adv-mc
    assert all(len(x.split("|")) == len(cost_lines[0].split("|")) for x in cost_lines)

    md_lines = md.splitlines()
    assert md_lines[0].startswith(
        "| Env | Method | Seeds | Episodes | Natural reward | Natural cost"
    )
    assert md_lines[0].endswith("| Average reward | Average cost |")
    body = [x for x in md_lines if x.startswith("| ") and "reward" not in x]
    methods = [x.split("|")[2].strip() for x in body]
    # paper's env order (Car-Run before Drone-Run), then the method order; mixes by weight
    assert methods == [
        "PPOL-vanilla",
        "ADV-PPOL(MC)",
        "ADV-PPOL(mix 0.25)",
        "ADV-PPOL(mix 0.5)",
        "PPOL-vanilla",
    ]
    assert body[0].split("|")[1].strip() == "SafetyCarRun-v0 (ε = 0.05)"
    assert body[1].split("|")[1].strip() == ""
    assert "SafetyDroneRun-v0 (ε = 0.025)" in body[4]
    assert body[0].split("|")[3:5] == [" 2 ", " 4 "]  # seeds, pooled natural episodes
    assert "| 100.00 ± 0.00 | 5.00 ± 0.00 |" in body[0]  # vanilla: third lowest cost
    assert "| 90.00 ± 0.00 | **0.00 ± 0.00** |" in body[1]
    assert all(len(x.split("|")) == len(md_lines[0].split("|")) for x in body)

    lines = list(csv.DictReader(io.StringIO(text)))
    assert tuple(lines[0].keys()) == CSV_FIELDS
    assert len(lines) == 5 * 7
    v = next(x for x in lines if x["method"] == "PPOL-vanilla" and x["attack"] == "mc")
    assert v["env"] == ENV and float(v["reward_mean"]) == 100.0 and float(v["cost_std"]) == 0.0
    assert (v["n_episodes"], v["n_seeds"], v["marked"], v["failing"]) == (
        "4",
        "2",
        "false",
        "false",
    )
    assert v["epsilon"] == "0.05" and v["mode"] == "vanilla"

    assert "\\begin{tabular}{|l|l|" in tex and tex.rstrip().endswith("\\end{tabular}")
    assert "booktabs" not in tex and "\\toprule" not in tex
    assert "\\textbf{0.00$\\pm$0.00}" in tex and "SafetyCarRun-v0 ($\\epsilon=0.05$)" in tex
    rows = [x for x in tex.splitlines() if x.endswith("\\\\") and "multicolumn" not in x]
    assert len(rows) == 1 + 5 and all(x.count("&") == 2 + 2 * 7 - 1 for x in rows)
    assert all(ord(ch) < 128 for ch in tex)


def test_latex_escapes_names(tmp_path):
    write_eval(tmp_path, "vanilla", 0, uniform(1.0, 0.0), env="my_pkg.envs:Toy_Env-v0")
    tex = format_latex(collect_table(tmp_path))
    assert "my\\_pkg.envs:Toy\\_Env-v0" in tex


def test_inconsistent_inputs_raise_clear_errors(tmp_path):
    write_eval(tmp_path / "a", "adv-mc", 0, uniform(1.0, 0.0), eps=0.05)
    write_eval(tmp_path / "a", "adv-mc", 1, uniform(1.0, 0.0), eps=0.025)
    with pytest.raises(ValueError, match="different epsilons"):
        collect_table(tmp_path / "a")
    write_eval(tmp_path / "b", "adv-mc", 0, uniform(1.0, 0.0))
    write_eval(tmp_path / "b" / "copy", "adv-mc", 0, uniform(1.0, 0.0))
    with pytest.raises(ValueError, match="seed 0 is evaluated twice"):
        collect_table(tmp_path / "b")
    # different epsilons across methods of one env are allowed, with a note
    write_eval(tmp_path / "c", "adv-mc", 0, uniform(1.0, 0.0), eps=0.05)
    write_eval(tmp_path / "c", "vanilla", 0, uniform(1.0, 0.0), eps=0.025)
    table = collect_table(tmp_path / "c")
    assert any("different epsilons" in n for n in table.notes)
    assert format_markdown(table).splitlines()[2].split("|")[1].strip() == ENV


def test_unusable_files_are_left_out_with_a_note(tmp_path):
    write_eval(tmp_path, "vanilla", 0, uniform(1.0, 0.0))
    old = tmp_path / "old" / "eval.json"
    old.parent.mkdir()
    old.write_text(json.dumps({"env_id": ENV, "results": []}))  # no train_mode
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "eval.json").write_text("{not json")
    table = collect_table(tmp_path)
    assert len(table.rows) == 1
    assert any("train_mode" in n for n in table.notes)
    assert any("broken" in n for n in table.notes)
    with pytest.raises(ValueError, match="no usable eval.json"):
        collect_table(tmp_path / "old")
    with pytest.raises(FileNotFoundError):
        collect_table(tmp_path / "missing")


@pytest.mark.parametrize(
    "reward, cost",
    [(float("nan"), 0.0), (1.0, float("nan")), (True, 0.0), (1.0, False), (1.0, -1e300)],
)
def test_an_evaluation_with_impossible_episodes_is_left_out(tmp_path, reward, cost):
    write_eval(tmp_path, "vanilla", 0, uniform(1.0, 0.0))
    bad = uniform(1.0, 0.0)
    bad["mc"] = [(1.0, 0.0), (reward, cost)]
    write_eval(tmp_path, "adv-mc", 0, bad)
    table = collect_table(tmp_path)
    assert [r.mode for r in table.rows] == ["vanilla"]
    assert any("'mc' has malformed episodes" in n for n in table.notes)


def test_an_evaluation_without_results_or_episodes_is_left_out(tmp_path):
    write_eval(tmp_path, "vanilla", 0, uniform(1.0, 0.0))
    empty = write_eval(tmp_path, "adv-mc", 0, uniform(1.0, 0.0))
    empty.write_text(empty.read_text().replace('"results": [', '"results": [], "old": ['))
    no_episodes = write_eval(tmp_path, "adv-mr", 0, {**uniform(1.0, 0.0), "mr": []})
    table = collect_table(tmp_path)
    assert [r.mode for r in table.rows] == ["vanilla"]
    assert any(f"{empty}: no 'results' list, or an empty one" in n for n in table.notes)
    assert any(f"{no_episodes}: attacker 'mr' has no per-episode" in n for n in table.notes)


def test_method_names():
    assert method_name("vanilla") == "PPOL-vanilla"
    assert method_name("sa-mad") == "SA-PPOL(MAD)"
    assert method_name("adv-mix:0.3") == "ADV-PPOL(mix 0.3)"


def test_legend_explains_average_only_where_the_table_has_it(tmp_path):
    from robustsafe.experiments.table import COLUMNS

    write_eval(tmp_path, "vanilla", 0, uniform(100.0, 5.0))
    table = collect_table(tmp_path)
    without = tuple((k, t) for k, t in COLUMNS if k in ("none", "mc", "mr"))
    for fmt in (format_markdown, format_latex):
        assert "Average pools" in fmt(table)
        assert "Average" not in fmt(table, columns=without)


def test_a_note_when_a_row_pools_evaluations_of_different_actions(tmp_path):
    """Seeds evaluated with different deterministic actions (e.g. one re-evaluated with
    ``--deterministic-action mean``) are pooled with a note naming both; one action, no note."""
    for seed, actions in ((0, "deterministic (mean)"), (1, "deterministic (E[clip(a)])")):
        path = write_eval(tmp_path, "vanilla", seed, uniform(10.0, 1.0))
        data = json.loads(path.read_text())
        path.write_text(json.dumps({**data, "actions": actions}))
    write_eval(tmp_path, "adv-mc", 0, uniform(9.0, 0.0))
    notes = collect_table(tmp_path).notes
    mixed = [n for n in notes if "different actions" in n]
    assert len(mixed) == 1 and "PPOL-vanilla" in mixed[0]
    assert "(mean)" in mixed[0] and "E[clip(a)]" in mixed[0]


def test_a_run_folder_whose_name_is_not_utf8_is_named_with_its_bytes(tmp_path, capsys):
    """The runs table names the folder (``bad\\xff``) and every file is written (the write
    failed on the name after table.md had been replaced)."""
    from robustsafe.cli import main

    runs = tmp_path / "runs"
    write_eval(runs, "vanilla", 0, uniform(500.0, 1.0))
    odd = runs / os.fsdecode(b"bad\xff")
    odd.mkdir()
    other = write_eval(tmp_path / "elsewhere", "vanilla", 1, uniform(400.0, 1.0))
    (odd / "eval.json").write_text(other.read_text())
    assert main(["table", str(runs)]) == 0
    assert "| bad\\xff |" in (runs / "table-runs.md").read_text(encoding="utf-8")
    assert (runs / "table-appendix.md").exists()


def test_a_late_failure_leaves_every_table_file_as_it_was(tmp_path, capsys, monkeypatch):
    """table writes all its files or none: an error in the appendix keeps table.md's old text."""
    from robustsafe.cli import main
    from robustsafe.experiments import appendix

    write_eval(tmp_path, "vanilla", 0, uniform(500.0, 1.0))
    assert main(["table", str(tmp_path)]) == 0
    before = {p.name: p.read_text() for p in tmp_path.iterdir() if p.is_file()}
    write_eval(tmp_path, "vanilla", 1, uniform(400.0, 2.0))  # the tables would change

    def failing(*args, **kwargs):
        raise ValueError("an unreadable figure input")

    monkeypatch.setattr(appendix, "write_appendix", failing)
    capsys.readouterr()
    assert main(["table", str(tmp_path)]) == 2
    assert "an unreadable figure input" in capsys.readouterr().err
    after = {p.name: p.read_text() for p in tmp_path.iterdir() if p.is_file()}
    assert after == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_fifo_named_eval_json_is_refused_not_waited_on(tmp_path):
    import signal

    from robustsafe.files import read_json

    fifo = tmp_path / "eval.json"
    os.mkfifo(fifo)
    signal.signal(signal.SIGALRM, lambda *_: pytest.fail("read_json waited on a FIFO"))
    signal.alarm(5)
    try:
        with pytest.raises(ValueError, match="not a regular file"):
            read_json(fifo)
    finally:
        signal.alarm(0)


@pytest.mark.parametrize("name", ["metrics.csv", "config.yaml", "provenance.json"])
def test_table_does_not_wait_on_a_fifo_in_a_run_folder(tmp_path, name, capsys):
    """A FIFO named metrics.csv, config.yaml or provenance.json in a results folder made
    `table` (its runs table reads them), `report` and `plot curves` wait for a writer forever."""
    import shutil
    import signal

    source = Path(__file__).parents[2] / "benchmarks/results/table1/SafetyCarRun-v0/vanilla/seed0"
    run = tmp_path / "SafetyCarRun-v0" / "vanilla" / "seed0"
    shutil.copytree(source, run)
    (run / name).unlink(missing_ok=True)
    os.mkfifo(run / name)
    signal.signal(signal.SIGALRM, lambda *_: pytest.fail(f"table waited on a FIFO {name}"))
    signal.alarm(60)
    try:
        assert main(["table", str(tmp_path)]) == 0
        report = main(["report", str(tmp_path)])
        # (its only run's settings unreadable, the report has no run to show, and says why)
        assert report == (2 if name == "config.yaml" else 0)
        assert (
            name != "config.yaml" or "config.yaml is not a YAML mapping" in capsys.readouterr().err
        )
        capsys.readouterr()
        curves = main(["plot", "curves", str(run), "--out", str(tmp_path / "c")])
    finally:
        signal.alarm(0)
    if name == "provenance.json":  # curves do not read it
        assert curves == 0
    else:
        err = capsys.readouterr().err
        assert curves == 2 and len(err.strip().splitlines()) == 1, err
        assert f"{name}: cannot read it (not a regular file)" in err
    runs = (tmp_path / "table-runs.csv").read_text().splitlines()
    assert len(runs) == 2  # the run's row, its eval read
    row = dict(zip(runs[0].split(","), runs[1].split(","), strict=True))
    assert float(row["natural_reward"]) > 500
    missing = {"metrics.csv": "train_reward", "provenance.json": "code"}.get(name)
    if missing:
        assert row[missing] == ""  # what the FIFO would have held, left blank


def _edit(path: Path, **fields) -> None:
    data = json.loads(path.read_text())
    data.update(fields)
    path.write_text(json.dumps(data))


def test_what_a_method_pools_that_it_should_not_is_said(tmp_path):
    """Seeds of 50 and 5 episodes pooled 10:1; two seedless evaluations counted as 2 seeds;
    a run trained at another budget under "training and test budgets are the same": each
    passed without a word."""
    from robustsafe.experiments.table_format import format_markdown
    from robustsafe.presets import resolve

    write_eval(tmp_path / "a", "vanilla", 0, uniform(500.0, 0.0, n=50))
    write_eval(tmp_path / "a", "vanilla", 1, uniform(100.0, 10.0, n=5))
    (note,) = [n for n in collect_table(tmp_path / "a").notes if "numbers of natural" in n]
    assert "(5, 50)" in note and "not equally" in note
    for seed in (0, 1):
        _edit(write_eval(tmp_path / "b", "vanilla", seed, uniform(1.0, 0.0)), train_seed=None)
    notes = collect_table(tmp_path / "b").notes
    assert any("2 evaluations that record no training seed" in n for n in notes), notes
    # the budget: as the evaluation records it, else from the run's config.yaml beside it
    recorded = write_eval(tmp_path / "c", "adv-mc", 0, uniform(1.0, 0.0), eps=0.05)
    _edit(recorded, train_epsilon=0.075)
    older = write_eval(tmp_path / "c", "adv-mc", 1, uniform(1.0, 0.0), eps=0.05)
    cfg = resolve(ENV, "fast", mode="adv-mc", seed=1, sets=["robust.train_epsilon=0.1"])
    (older.parent / "config.yaml").write_text(yaml.safe_dump(to_dict(cfg)))
    table = collect_table(tmp_path / "c")
    (note,) = [n for n in table.notes if "was trained at epsilon" in n]
    assert "0.075, 0.1" in note and "attacked here at 0.05" in note
    assert "the robust methods trained at the same budget unless a note" in format_markdown(table)
    _edit(recorded, train_epsilon=0.05 * (1 + 1e-9))  # the same budget, printed and read back
    (older.parent / "config.yaml").unlink()
    assert not [n for n in collect_table(tmp_path / "c").notes if "trained at epsilon" in n]


def test_values_no_evaluation_holds_are_left_out(tmp_path):
    """A cost limit of Infinity made a run with MC cost 50 robust ("yes"), NaN "no"; episodes
    of no step were pooled."""
    from robustsafe.experiments.runs_table import collect_runs

    for i, limit in enumerate(("Infinity", "NaN", "-1")):
        path = write_eval(tmp_path / str(i), "vanilla", 0, uniform(1.0, 50.0))
        text = path.read_text()
        path.write_text(text.replace('"train_mode"', f'"cost_limit": {limit}, "train_mode"'))
        write_eval(tmp_path / str(i), "vanilla", 1, uniform(1.0, 0.0))  # a usable one beside
        rows, notes = collect_runs(tmp_path / str(i))
        assert [r.seed for r in rows] == [1], limit
        assert "is not a finite number >= 0" in " ".join(notes), (limit, notes)
    path = write_eval(tmp_path / "zero", "vanilla", 0, uniform(1.0, 0.0))
    path.write_text(path.read_text().replace('"length": 10', '"length": 0', 1))
    with pytest.raises(ValueError, match="no usable eval.json.*'length' >= 1"):
        collect_table(tmp_path / "zero")


def test_the_legends_name_each_learners_own_reference(tmp_path):
    """FOCOPS(MC) is starred against FOCOPS-vanilla, and marks are given per learner; the
    legend said PPOL-vanilla's and per env."""
    from robustsafe.experiments.appendix import learner_table
    from robustsafe.experiments.table_format import format_markdown

    for mode, reward in (("vanilla", 500.0), ("adv-mc", 100.0)):
        path = write_eval(tmp_path, mode, 0, uniform(reward, 0.0))
        _edit(path, train_algo="focops")
    table = collect_table(tmp_path)
    assert [(r.method, r.failing) for r in table.rows] == [
        ("FOCOPS-vanilla", False),
        ("FOCOPS(MC)", True),
    ]
    text = format_markdown(learner_table(table, "focops"))
    assert "below 30% of its learner's vanilla agent's" in text
    assert "lowest-cost agents of each env and learner per column" in text


def test_a_users_own_attacker_is_named_in_a_note_not_pooled_into_a_column(tmp_path):
    # An eval.json with an attacker of the user's (register_attacker) beside the paper's: the
    # columns and the Average are the paper's attackers' alone, and a note names it.
    results = uniform(100.0, 1.0)
    results["fgsm-mc"] = [(50.0, 90.0)] * 2
    results["mix:0.5"] = [(60.0, 80.0)] * 2  # the appendix's: no note
    write_eval(tmp_path, "vanilla", 0, results)
    table = collect_table(tmp_path)
    vanilla = row(table, "vanilla")
    assert vanilla.cells["average"].cost_mean == 1.0 and vanilla.cells["mc"].cost_mean == 1.0
    own = [n for n in table.notes if "not the paper's" in n]
    assert len(own) == 1 and "(fgsm-mc)" in own[0] and "mix" not in own[0]


def test_a_users_own_attacker_gets_a_column_when_asked_outside_the_average(tmp_path):
    results = uniform(100.0, 1.0)
    results["fgsm-mc"] = [(50.0, 90.0)] * 2
    write_eval(tmp_path, "vanilla", 0, results)
    write_eval(tmp_path, "adv-mc", 0, uniform(90.0, 0.0))  # not evaluated under fgsm-mc
    table = collect_table(tmp_path, own_attacks=["fgsm-mc"])
    assert [k for k, _ in table.columns][-2:] == ["fgsm-mc", "average"]
    vanilla = row(table, "vanilla")
    assert vanilla.cells["fgsm-mc"].cost_mean == 90.0
    assert vanilla.cells["average"].cost_mean == 1.0  # the paper's six columns only
    assert row(table, "adv-mc").cells["fgsm-mc"] is None
    assert not any("not the paper's" in n for n in table.notes)
    md = format_markdown(table)
    assert "fgsm-mc cost" in md and "90.00 ± 0.00" in md
    lines = list(csv.DictReader(io.StringIO(format_csv(table))))
    assert {x["cost_mean"] for x in lines if x["attack"] == "fgsm-mc" and x["cost_mean"]} == {
        "90.0"
    }
    with pytest.raises(ValueError, match="have their columns already"):
        collect_table(tmp_path, own_attacks=["mc"])
