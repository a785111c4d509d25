"""The appendix's tables and the MAD/AMAD xi figure from synthetic evaluation files."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path

import pytest

from robustsafe.cli import main
from robustsafe.experiments.appendix import write_appendix
from robustsafe.experiments.appendix_runs import collect_appendix_runs
from robustsafe.experiments.figures import xi_series
from robustsafe.experiments.minr_table import build_minr_table, format_minr_markdown
from robustsafe.experiments.mix_table import build_mix_table
from robustsafe.experiments.table import collect_table
from robustsafe.experiments.table_format import format_markdown
from robustsafe.experiments.xi_sweep import (
    XI_FORMAT,
    collect_xi_sweeps,
    load_xi_sweep,
    parse_xis,
)

ENV = "SafetyCarRun-v0"
TABLE1 = ("none", "random", "mad", "amad", "mc", "mr")


def write_eval(root, mode, seed, results, name="eval.json", eps=0.05, env=ENV, extra=None):
    """An evaluation file like ``robustsafe evaluate`` (or ``xi-sweep``) writes."""
    path = root / env / mode.replace(":", "") / f"seed{seed}" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = []
    for attack, episodes in results:
        entry = {
            "attack": attack,
            "epsilon": 0.0 if attack == "none" else eps,
            "episodes": [{"reward": r, "cost": c, "length": 10} for r, c in episodes],
        }
        if isinstance(extra, dict) and attack in extra:
            entry.update(extra[attack].pop(0))
        entries.append(entry)
    payload = {
        "env_id": env,
        "train_mode": mode,
        "train_seed": seed,
        "train_preset": "fast",
        "agent_epoch": 3,
        "episodes": 2,
        "seed": 0,
        "results": entries,
    }
    if name == "eval-xi.json":
        payload["format"] = XI_FORMAT
    path.write_text(json.dumps(payload))
    return path


def table1(reward=100.0, cost=1.0, n=2):
    return [(a, [(reward, cost)] * n) for a in TABLE1]


def pstd(values):
    m = sum(values) / len(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / len(values))


# ----------------------------------------------------------------------------- Random / MAD


def test_appendix_table_has_the_random_mad_average_columns_pooled(tmp_path):
    s0 = dict(table1())
    s0["random"] = [(10.0, 1.0), (20.0, 3.0)]
    s1 = dict(table1())
    s1["random"] = [(30.0, 5.0)]
    write_eval(tmp_path, "vanilla", 0, list(s0.items()))
    write_eval(tmp_path, "vanilla", 1, list(s1.items()))
    before = format_markdown(collect_table(tmp_path))
    paths = write_appendix(tmp_path, tmp_path / "table")
    names = sorted(p.name for p in paths)
    assert names == ["table-appendix.csv", "table-appendix.md", "table-appendix.tex"]
    rows = list(csv.DictReader(io.StringIO((tmp_path / "table-appendix.csv").read_text())))
    assert [r["attack"] for r in rows] == ["random", "mad", "average"]
    random = rows[0]
    assert float(random["reward_mean"]) == pytest.approx(20.0)
    assert float(random["reward_std"]) == pytest.approx(pstd([10, 20, 30]))  # 8.16
    assert float(random["cost_mean"]) == pytest.approx(3.0)
    assert float(random["cost_std"]) == pytest.approx(pstd([1, 3, 5]))
    assert random["n_episodes"] == "3" and random["n_seeds"] == "2"
    # Average pools Natural's and the five attackers' episodes: 4 natural, 3 random and 4 of
    # each other attacker (the paper's numbers; its caption's five attackers: --average attackers)
    avg = rows[2]
    assert avg["n_episodes"] == "23"
    assert float(avg["reward_mean"]) == pytest.approx((60 + 20 * 100) / 23)
    md = (tmp_path / "table-appendix.md").read_text()
    assert "Random reward" in md and "Average cost" in md and "Natural" not in md.split("\n")[2]
    assert "MC reward" not in md
    assert "20.00 ± 8.16" in md
    # Table 1 itself is unchanged by the appendix files
    assert format_markdown(collect_table(tmp_path)) == before


# ----------------------------------------------------------------------------- minimum reward


def test_minr_table_pools_seeds_and_reports_the_change_from_natural(tmp_path):
    # eval.json holds Table 1's attackers; eval-appendix.json the natural and minr episodes
    for seed in (0, 1):
        write_eval(tmp_path, "vanilla", seed, table1(cost=9.0))
    write_eval(
        tmp_path,
        "vanilla",
        0,
        [("none", [(100.0, 1.0), (110.0, 3.0)]), ("minr", [(80.0, 0.0), (90.0, 2.0)])],
        name="eval-appendix.json",
    )
    write_eval(
        tmp_path,
        "vanilla",
        1,
        [("none", [(120.0, 2.0)]), ("minr", [(60.0, 1.0)])],
        name="eval-appendix.json",
    )
    write_eval(tmp_path, "adv-mc", 0, table1())  # no minr: no row
    files, notes = collect_appendix_runs(tmp_path)
    assert not notes and len(files) == 3
    rows, _ = build_minr_table(files)
    assert [(r.env_id, r.mode) for r in rows] == [(ENV, "vanilla")]
    r = rows[0]
    minr, nat = r.cells["minr"], r.cells["none"]
    # natural comes from eval-appendix.json (it replaces eval.json's): 100, 110, 120
    assert nat.reward_mean == pytest.approx(110.0) and nat.n_episodes == 3
    assert minr.reward_mean == pytest.approx(230 / 3)
    assert minr.reward_std == pytest.approx(pstd([80, 90, 60]))  # 12.47
    assert r.change("reward") == pytest.approx(230 / 3 - 110)
    assert r.change("cost") == pytest.approx(1.0 - 2.0)
    assert r.cells["mc"].cost_mean == 9.0 and r.cells["mc"].n_episodes == 4  # from eval.json
    md = format_minr_markdown(rows)
    assert "| PPOL-vanilla | Reward | 76.67 ± 12.47 (↓33.33) |" in md
    assert "|  | Cost | 1.00 ± 0.82 (↓1.00) |" in md
    assert "SafetyCarRun-v0 (ε = 0.05)" in md
    paths = write_appendix(tmp_path, tmp_path / "out" / "table")
    assert {p.name for p in paths} >= {"table-minr.md", "table-minr.csv", "table-minr.tex"}
    csv_rows = list(csv.DictReader(io.StringIO((tmp_path / "out" / "table-minr.csv").read_text())))
    row = next(x for x in csv_rows if x["attack"] == "minr")
    assert float(row["reward_change"]) == pytest.approx(230 / 3 - 110)
    assert "$\\downarrow$33.33" in (tmp_path / "out" / "table-minr.tex").read_text()
    # eval.json files with extra attackers keep working for Table 1
    assert collect_table(tmp_path).rows[0].cells["none"].n_episodes == 4


def test_minr_table_refuses_seeds_at_different_epsilons(tmp_path):
    for seed, eps in ((0, 0.05), (1, 0.1)):
        write_eval(
            tmp_path, "vanilla", seed, [("none", [(1.0, 0.0)]), ("minr", [(1.0, 0.0)])], eps=eps
        )
    files, _ = collect_appendix_runs(tmp_path)
    with pytest.raises(ValueError, match="different epsilons"):
        build_minr_table(files)


def test_an_appendix_file_of_another_run_is_left_out_with_a_note(tmp_path):
    write_eval(tmp_path, "vanilla", 0, table1())
    path = write_eval(tmp_path, "vanilla", 0, [("none", [(1.0, 0.0)])], name="eval-appendix.json")
    data = json.loads(path.read_text())
    data["train_seed"] = 7
    path.write_text(json.dumps(data))
    files, notes = collect_appendix_runs(tmp_path)
    assert files == [] and "not evaluations of the same run" in notes[0]


# ----------------------------------------------------------------------------- MC/MR mixture


def test_mix_table_columns_from_mc_side_to_mr_side(tmp_path):
    write_eval(
        tmp_path,
        "adv-mc",
        0,
        [*table1()[:4], ("mc", [(1.0, 10.0)]), ("mr", [(2.0, 20.0)])],
    )
    write_eval(
        tmp_path,
        "adv-mc",
        0,
        [
            ("none", [(9.0, 0.0)]),
            ("mix:0.75", [(3.0, 30.0), (5.0, 50.0)]),
            ("mix:0.5", [(4.0, 40.0)]),
            ("mix:0.25", [(6.0, 60.0)]),
        ],
        name="eval-appendix.json",
    )
    write_eval(tmp_path, "adv-mc", 1, [("none", [(9.0, 0.0)]), ("mix:0.75", [(7.0, 70.0)])])
    write_eval(tmp_path, "vanilla", 0, table1())  # no mix:W: no row
    files, _ = collect_appendix_runs(tmp_path)
    rows, columns, notes = build_mix_table(files)
    assert columns == [1.0, 0.75, 0.5, 0.25, 0.0]
    assert [r.mode for r in rows] == ["adv-mc"]
    cells = rows[0].cells
    assert (cells[1.0].reward_mean, cells[1.0].cost_mean) == (1.0, 10.0)  # mc
    assert (cells[0.0].reward_mean, cells[0.0].cost_mean) == (2.0, 20.0)  # mr
    w75 = cells[0.75]  # two seeds pooled: 3, 5, 7
    assert w75.n_seeds == 2 and w75.n_episodes == 3
    assert w75.reward_mean == pytest.approx(5.0) and w75.cost_std == pytest.approx(
        pstd([30, 50, 70])
    )
    assert rows[0].sources[1.0] == "mc" and rows[0].sources[0.75] == "mix:0.75"
    assert any("pool different runs or episodes" in n for n in notes)
    write_appendix(tmp_path, tmp_path / "table")
    md = (tmp_path / "table-mix.md").read_text()
    assert "w = 0.75 (MC:MR = 3:1) reward" in md and "w = 1 (MC) cost" in md
    assert "5.00 ± 1.63" in md  # rewards 3, 5, 7
    # the mixture figure: same series, bands across the seeds' means where two seeds have w
    png = (tmp_path / "table-mix-figure.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    fig_rows = list(csv.DictReader(io.StringIO((tmp_path / "table-mix-figure.csv").read_text())))
    assert [(r["weight"], r["attack"]) for r in fig_rows] == [
        ("1.0", "mc"),
        ("0.75", "mix:0.75"),
        ("0.5", "mix:0.5"),
        ("0.25", "mix:0.25"),
        ("0.0", "mr"),
    ]
    w75 = fig_rows[1]  # seed 0: rewards 3, 5 (mean 4); seed 1: 7
    assert float(w75["reward_mean"]) == pytest.approx(5.0) and w75["band"] == "seeds"
    assert float(w75["reward_band"]) == pytest.approx(1.5)  # std of (4, 7)
    assert w75["reward_seed_means"] == "4.0 7.0"
    assert fig_rows[0]["band"] == "episodes" and float(fig_rows[0]["cost_mean"]) == 10.0
    # mix:1 evaluated explicitly takes over from mc
    write_eval(
        tmp_path,
        "adv-mc",
        0,
        [("none", [(9.0, 0.0)]), ("mix:1", [(11.0, 111.0)]), ("mix:0.75", [(3.0, 30.0)])],
        name="eval-appendix.json",
    )
    rows, _, _ = build_mix_table(collect_appendix_runs(tmp_path)[0])
    assert rows[0].sources[1.0] == "mix:1" and rows[0].cells[1.0].cost_mean == 111.0


# ----------------------------------------------------------------------------- xi figure


def xi_file(root, seed, amad, mad=((50.0, 20.0),), natural=((60.0, 0.0),), eps=0.05):
    results = [("none", list(natural)), ("mad", list(mad))]
    extra = {"amad": []}
    for xi, episodes in amad.items():
        results.append(("amad", list(episodes)))
        extra["amad"].append({"xi": xi})
    return write_eval(root, "vanilla", seed, results, name="eval-xi.json", eps=eps, extra=extra)


def test_xi_series_bands_are_the_spread_of_seed_means(tmp_path):
    xi_file(tmp_path, 0, {0.1: [(60.0, 2.0), (60.0, 4.0)], 0.5: [(55.0, 10.0)]})
    xi_file(tmp_path, 1, {0.1: [(58.0, 9.0)]}, mad=[(40.0, 30.0)])
    sweeps, notes = collect_xi_sweeps(tmp_path)
    assert not notes and [s.train_seed for s in sweeps] == [0, 1]
    pts = {(p.attack, p.xi): p for p in xi_series(sweeps)}
    a = pts[("amad", 0.1)]  # seed means: cost 3 and 9
    assert a.n_seeds == 2 and a.n_episodes == 3 and a.band == "seeds"
    assert a.cost_mean == pytest.approx(5.0)  # pooled: (2 + 4 + 9) / 3
    assert a.cost_band == pytest.approx(3.0)  # std of (3, 9)
    assert a.cost_seed_means == (3.0, 9.0)
    one = pts[("amad", 0.5)]  # only seed 0: the band is its episodes' std
    assert one.n_seeds == 1 and one.band == "episodes" and one.cost_band == 0.0
    mad = pts[("mad", None)]
    assert mad.cost_mean == 25.0 and mad.cost_band == pytest.approx(5.0)
    # the table command writes the figure next to the tables, and eval-xi.json (AMAD listed
    # several times) does not trip Table 1's one-epsilon checks
    write_eval(tmp_path, "vanilla", 0, table1())
    assert main(["table", str(tmp_path)]) == 0
    png, pdf, data = (tmp_path / f"table-amad-xi{ext}" for ext in (".png", ".pdf", ".csv"))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and pdf.read_bytes()[:5] == b"%PDF-"
    rows = list(csv.DictReader(io.StringIO(data.read_text())))
    assert [(r["attack"], r["xi"]) for r in rows] == [
        ("none", ""),
        ("mad", ""),
        ("amad", "0.1"),
        ("amad", "0.5"),
    ]
    assert float(rows[2]["cost_band"]) == pytest.approx(3.0) and rows[2]["band"] == "seeds"
    # another learner's sweep of the same seed stays out of PPOL's figure (it is Figure 4's)
    ppol_sweep = next(tmp_path.rglob("seed0/eval-xi.json"))
    other = json.loads(ppol_sweep.read_text())
    other["train_algo"] = "focops"
    for entry in other["results"]:
        entry["episodes"] = [{"reward": 1.0, "cost": 99.0, "length": 10}]
    focops = ppol_sweep.parents[2] / "focops-vanilla" / "seed0" / "eval-xi.json"
    focops.parent.mkdir(parents=True)
    focops.write_text(json.dumps(other))
    assert {s.algo for s in collect_xi_sweeps(tmp_path)[0]} == {"ppol", "focops"}
    before = data.read_text()
    assert main(["table", str(tmp_path)]) == 0
    assert data.read_text() == before


def test_xi_sweeps_at_two_epsilons_are_two_series(tmp_path, monkeypatch):
    """Sweeps of one method at different epsilons made `table` fail altogether; they are two
    series of the figure, never pooled as seeds."""
    xi_file(tmp_path, 0, {0.1: [(60.0, 2.0)]})
    xi_file(tmp_path / "wider", 0, {0.1: [(50.0, 30.0)]}, eps=0.1)  # the same seed, eps 0.1
    write_eval(tmp_path, "vanilla", 0, table1())
    assert main(["table", str(tmp_path)]) == 0
    rows = list(csv.DictReader(io.StringIO((tmp_path / "table-amad-xi.csv").read_text())))
    amad = [(r["epsilon"], r["n_seeds"], r["cost_mean"]) for r in rows if r["attack"] == "amad"]
    assert amad == [("0.05", "1", "2.0"), ("0.1", "1", "30.0")]
    from robustsafe.experiments import figures

    drawn = []
    monkeypatch.setattr(figures, "save_figure", lambda fig, prefix, text: drawn.append(fig))
    figures.write_xi_figure(collect_xi_sweeps(tmp_path)[0], tmp_path / "unused")
    (fig,) = drawn
    labels = {t.get_text() for t in fig.axes[0].get_legend().get_texts()}
    assert {"PPOL-vanilla (epsilon 0.05): AMAD", "PPOL-vanilla (epsilon 0.1): AMAD"} <= labels
    assert fig.axes[0].get_title() == ENV


def test_xi_files_that_cannot_be_used(tmp_path):
    path = xi_file(tmp_path, 0, {0.1: [(1.0, 1.0)]})
    data = json.loads(path.read_text())
    del data["format"]
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="not an AMAD xi sweep"):
        load_xi_sweep(path)
    assert "not an AMAD xi sweep" in collect_xi_sweeps(tmp_path)[1][0]
    xi_file(tmp_path, 0, {0.1: [(1.0, 1.0)]})
    xi_file(tmp_path / "copy", 0, {0.1: [(1.0, 3.0)]})
    with pytest.raises(ValueError, match="at epsilon 0.05: a seed has two xi sweeps"):
        xi_series(collect_xi_sweeps(tmp_path)[0])
    # edited files: a results field that is no list, an epsilon that is no number
    for i, (field, value) in enumerate((("results", 5), ("epsilon", [1]), ("epsilon", True))):
        path = xi_file(tmp_path / f"edited{i}", 0, {0.1: [(1.0, 1.0)]})
        bad = json.loads(path.read_text())
        if field == "results":
            bad["results"] = value
        else:
            bad["results"][-1]["epsilon"] = value
        path.write_text(json.dumps(bad))
        with pytest.raises(ValueError, match=f"{re.escape(str(path))}: .*{field}"):
            load_xi_sweep(path)
    assert parse_xis("0.5,0.1,0.1") == [0.1, 0.5]
    for bad in ("0", "1.5", "x"):
        with pytest.raises(ValueError):
            parse_xis(bad)


def test_table_command_without_appendix(tmp_path: Path):
    write_eval(tmp_path, "vanilla", 0, table1())
    assert main(["table", str(tmp_path), "--no-appendix"]) == 0
    assert not (tmp_path / "table-appendix.md").exists() and (tmp_path / "table.md").exists()


def test_table_command_average_option(tmp_path: Path):
    """--average attackers pools the five attackers only; the default adds Natural's episodes."""
    runs = dict(table1(reward=100.0, cost=1.0))
    runs["none"] = [(40.0, 7.0)] * 2  # natural differs from every attacker
    write_eval(tmp_path, "vanilla", 0, list(runs.items()))

    def average_cost(*extra: str) -> float:
        assert main(["table", str(tmp_path), "--no-appendix", *extra]) == 0
        rows = csv.DictReader(io.StringIO((tmp_path / "table.csv").read_text()))
        return float(next(r for r in rows if r["attack"] == "average")["cost_mean"])

    assert average_cost() == pytest.approx((2 * 7.0 + 10 * 1.0) / 12)
    assert average_cost("--average", "attackers") == pytest.approx(1.0)
    assert "Natural and the five attackers" not in (tmp_path / "table.md").read_text()


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("agent_epoch", 20, "agent epoch 20"),
        ("seed", 7, "episode seed 7"),
        ("actions", "deterministic (mean)", "actions 'deterministic (mean)'"),
    ],
)
def test_an_appendix_evaluation_of_another_agent_or_episodes_is_left_out(
    tmp_path, field, value, words
):
    """An eval-appendix.json left from before the training was extended (or run on other
    episodes, or another action) was merged with eval.json: its mixture columns sat beside
    another agent's MC and MR without a word."""
    main_file = write_eval(tmp_path, "vanilla", 0, table1())
    data = json.loads(main_file.read_text())
    data["actions"] = "deterministic (E[clip(a)], the expected executed action)"
    main_file.write_text(json.dumps(data))
    extra = write_eval(
        tmp_path,
        "vanilla",
        0,
        [("none", [(1.0, 0.0)]), ("mix:0.5", [(1.0, 9.0)])],
        name="eval-appendix.json",
    )
    data = json.loads(extra.read_text())
    data["actions"] = "deterministic (E[clip(a)], the expected executed action)"
    extra.write_text(json.dumps(data))
    (merged,), notes = collect_appendix_runs(tmp_path)  # the same agent and episodes: merged
    assert not notes and "mix:0.5" in merged.episodes and "mc" in merged.episodes
    data[field] = value
    extra.write_text(json.dumps(data))
    files, notes = collect_appendix_runs(tmp_path)
    assert files == []
    (note,) = notes
    assert words in note and "not the same agent on the same episodes" in note
