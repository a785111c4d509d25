"""``robustsafe plot``: the plotted data read back from the figures' axes and CSV files, on
synthetic runs whose means and bands are computed here by hand."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from robustsafe.cli import main
from robustsafe.experiments import plots
from robustsafe.presets import resolve
from robustsafe.settings_io import to_dict

ENV = "SafetyCarRun-v0"


@pytest.fixture
def captured(monkeypatch):
    """The figures ``save_figure`` is given, before they are written and closed."""
    figs = []
    original = plots.save_figure

    def keep(fig, prefix, csv_text):
        figs.append(fig)
        return original(fig, prefix, csv_text)

    monkeypatch.setattr(plots, "save_figure", keep)
    return figs


def write_run(root: Path, mode: str, seed: int, columns: dict, **sets) -> Path:
    run = root / mode / f"seed{seed}"
    run.mkdir(parents=True)
    cfg = resolve(ENV, "fast", mode=mode, seed=seed, sets=[f"{k}={v}" for k, v in sets.items()])
    (run / "config.yaml").write_text(yaml.safe_dump(to_dict(cfg), sort_keys=False))
    n = len(next(iter(columns.values())))
    rows = {"epoch": list(range(1, n + 1)), "env_steps": [4000 * e for e in range(1, n + 1)]}
    rows.update(columns)
    with (run / "metrics.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(rows)
        w.writerows(zip(*rows.values(), strict=True))
    return run


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def axis(fig, title_part: str):
    (ax,) = [a for a in fig.axes if title_part in a.get_title()]
    return ax


def line(ax, label: str):
    (ln,) = [ln for ln in ax.get_lines() if ln.get_label() == label]
    return ln.get_xdata(), ln.get_ydata()


# ----------------------------------------------------------------------------- training curves


def test_curves_mean_band_and_cost_limit(tmp_path, captured):
    a = write_run(
        tmp_path,
        "vanilla",
        0,
        {"ep_return": [1.0, 2.0, 3.0], "ep_cost": [0.0, 10.0, 4.0], "lambda": [0, 0.5, 1.0]},
        **{"pid.cost_limit": 7.5},
    )
    b = write_run(
        tmp_path,
        "vanilla",
        1,
        {"ep_return": [3.0, 6.0, 3.0], "ep_cost": [2.0, 2.0, 2.0], "lambda": [0, 0.1, 0.2]},
        **{"pid.cost_limit": 7.5},
    )
    # another mode, one seed, 2 epochs only
    c = write_run(tmp_path, "adv-mr", 0, {"ep_return": [5.0, 5.0], "ep_cost": [1.0, 1.0]})
    out = tmp_path / "fig" / "curves"
    assert main(["plot", "curves", str(a), str(b), str(c), "--out", str(out) + ".png"]) == 0
    for ext in (".png", ".pdf", ".csv"):
        assert (out.parent / f"curves{ext}").stat().st_size > 500
    (fig,) = captured

    # the line and band drawn: mean and population std across the two seeds, by hand
    reward = axis(fig, "episode reward")
    x, y = line(reward, "PPOL-vanilla (2 seeds)")
    assert list(x) == [4000, 8000, 12000]
    assert np.allclose(y, [2.0, 4.0, 3.0])
    verts = reward.collections[0].get_paths()[0].vertices
    assert np.allclose(sorted(set(np.round(verts[:, 1], 9))), sorted({1.0, 3.0, 2.0, 6.0}))
    cost = axis(fig, "episode cost")
    x, y = line(cost, "PPOL-vanilla (2 seeds)")
    assert np.allclose(y, [1.0, 6.0, 3.0])
    ys = cost.collections[0].get_paths()[0].vertices[:, 1]
    assert np.isclose(ys.max(), 10.0) and np.isclose(ys.min(), 0.0)  # 6 +- 4 and 1 +- 1
    # the cost limit of the runs' config, drawn and labelled, on the cost panel only
    _, y = line(cost, "cost limit (7.5)")
    assert np.allclose(y, 7.5)
    assert any(t.get_text() == "cost limit 7.5" for t in cost.texts)
    assert all("cost limit" not in ln.get_label() for ln in reward.get_lines())
    # lambda panel; the adv-mr run has no lambda column: no curve there, with a note
    lam = axis(fig, "cost multiplier")
    _, y = line(lam, "PPOL-vanilla (2 seeds)")
    assert np.allclose(y, [0.0, 0.3, 0.6])
    assert [ln.get_label() for ln in lam.get_lines()] == ["PPOL-vanilla (2 seeds)"]
    eps = axis(fig, "attack epsilon")
    assert eps.get_lines() == []  # no epsilon column in these metrics
    assert reward.get_legend() is not None and cost.get_legend() is not None

    rows = read_csv(out.with_suffix(".csv"))
    got = {
        (r["mode"], r["column"], int(r["epoch"])): (float(r["mean"]), float(r["band"]))
        for r in rows
    }
    assert got[("vanilla", "ep_return", 2)] == (4.0, 2.0)
    assert got[("vanilla", "ep_cost", 2)] == (6.0, 4.0)
    assert got[("adv-mr", "ep_return", 1)] == (5.0, 0.0)
    assert ("adv-mr", "lambda", 1) not in got
    seeds = [
        r["seed_values"]
        for r in rows
        if (r["mode"], r["column"], r["epoch"]) == ("vanilla", "ep_return", "3")
    ]
    assert seeds == ["3.0 3.0"]


def test_curves_cut_to_common_epochs_and_refuse_duplicate_seed(tmp_path, capsys):
    a = write_run(tmp_path, "vanilla", 0, {"ep_return": [1.0, 2.0, 3.0], "ep_cost": [0, 0, 0]})
    b = write_run(tmp_path, "vanilla", 1, {"ep_return": [1.0, 2.0], "ep_cost": [0, 0]})
    runs = [plots.load_training_run(a), plots.load_training_run(b)]
    points, notes = plots.curve_series(runs)
    assert {p.epoch for p in points} == {1, 2}
    assert any("cut to the 2 epochs" in n for n in notes)
    # smoothing: each seed's trailing mean over 2 epochs, then the mean across seeds
    smooth = {p.epoch: p.mean for p in plots.curve_series(runs, 2)[0] if p.column == "ep_return"}
    assert smooth == {1: 1.0, 2: 1.5}
    assert np.allclose(plots.smoothed(np.array([1.0, np.nan, 3.0, 5.0]), 2), [1, 1, 3, 4])
    with pytest.raises(ValueError, match="seed used twice"):
        plots.curve_series([runs[0], runs[0]])
    assert main(["plot", "curves", str(tmp_path / "nothing"), "--out", str(tmp_path / "f")]) == 2
    assert capsys.readouterr().err.count("not a run directory") == 1  # said once
    # the x axis of every curve: a row without a numeric env_steps is refused, not plotted as NaN
    metrics = a / "metrics.csv"
    metrics.write_text(metrics.read_text().replace("\n2,8000,", "\n2,x,"))
    with pytest.raises(ValueError, match="needs a numeric 'env_steps' in every row"):
        plots.load_training_run(a)


# ----------------------------------------------------------------------------- Figure 2


def sweep_payload(mode: str, seed: int, table: dict, cost_limit=None) -> dict:
    """``table``: {(attack, eps): [(reward, cost), ...]}, like ``robustsafe evaluate`` writes."""
    results = []
    for (attack, eps), episodes in table.items():
        results.append(
            {
                "attack": attack,
                "epsilon": eps,
                "episodes": [{"reward": r, "cost": c, "length": 10} for r, c in episodes],
            }
        )
    data = {
        "env_id": ENV,
        "train_mode": mode,
        "train_algo": "ppol",
        "train_seed": seed,
        "xi": 0.1,
        "results": results,
    }
    if cost_limit is not None:
        data["cost_limit"] = cost_limit
    return data


def write_sweeps(tmp_path: Path) -> list[Path]:
    s0 = {
        ("none", 0.0): [(10.0, 0.0), (12.0, 2.0)],
        ("mc", 0.0): [(10.0, 0.0), (12.0, 2.0)],
        ("mc", 0.05): [(20.0, 10.0), (22.0, 30.0)],
        ("mr", 0.05): [(8.0, 4.0), (8.0, 4.0)],
    }
    s1 = {
        ("none", 0.0): [(14.0, 4.0), (14.0, 4.0)],
        ("mc", 0.0): [(14.0, 4.0), (14.0, 4.0)],
        ("mc", 0.05): [(30.0, 50.0), (30.0, 50.0)],
    }
    adv = {("none", 0.0): [(1.0, 0.0)], ("mc", 0.05): [(2.0, 1.0)], ("amad", 0.05): [(3, 3)]}
    paths = []
    for name, payload in (
        ("v0.json", sweep_payload("vanilla", 0, s0, cost_limit=6.0)),
        ("v1.json", sweep_payload("vanilla", 1, s1, cost_limit=6.0)),
        ("adv.json", sweep_payload("adv-mr", 0, adv)),
    ):
        paths.append(tmp_path / name)
        paths[-1].write_text(json.dumps(payload))
    return paths


def test_sweep_pools_seeds_and_draws_paper_names(tmp_path, captured):
    files = write_sweeps(tmp_path)
    out = tmp_path / "fig2"
    assert main(["plot", "sweep", *map(str, files), "--out", str(out)]) == 0
    for ext in (".png", ".pdf", ".csv"):
        assert out.with_suffix(ext).stat().st_size > 500
    (fig,) = captured
    reward, cost = fig.axes
    # several agents: "method: attacker" labels, paper names
    x, y = line(reward, "PPOL-vanilla: MC")
    assert list(x) == [0.0, 0.05]
    # pooled mean over the 4 episodes of both seeds: (10+12+14+14)/4, (20+22+30+30)/4
    assert np.allclose(y, [12.5, 25.5])
    _, y = line(cost, "PPOL-vanilla: MC")
    assert np.allclose(y, [2.5, 35.0])
    # band: std of the two seed means (ddof 0): costs 1 and 4 -> 1.5; 20 and 50 -> 15
    verts = cost.collections[0].get_paths()[0].vertices
    ys = sorted(set(np.round(verts[:, 1], 9)))
    assert np.allclose([ys[0], ys[-1]], [2.5 - 1.5, 35 + 15])
    # MR: only seed 0 has it: band = std over its episodes (0 here)
    _, y = line(reward, "PPOL-vanilla: MR")
    assert np.allclose(y, [8.0])
    _, y = line(reward, "ADV-PPOL(MR): AMAD xi 0.1")
    assert np.allclose(y, [3.0])
    _, y = line(reward, "PPOL-vanilla: natural")
    assert np.allclose(y, [12.5, 12.5])
    # the cost limit the files record, labelled, and legends on both panels
    _, y = line(cost, "cost limit (6)")
    assert np.allclose(y, 6.0)
    assert any(t.get_text() == "cost limit 6" for t in cost.texts)
    for ax in (reward, cost):
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert "PPOL-vanilla: MC" in labels and "ADV-PPOL(MR): MC" in labels
    assert "cost limit (6)" in [t.get_text() for t in cost.get_legend().get_texts()]

    rows = read_csv(out.with_suffix(".csv"))
    mc = [r for r in rows if r["mode"] == "vanilla" and r["attack"] == "mc"]
    assert [float(r["epsilon"]) for r in mc] == [0.0, 0.05]
    assert float(mc[1]["cost_mean"]) == 35.0 and float(mc[1]["cost_band"]) == 15.0
    assert mc[1]["band"] == "seeds" and mc[1]["n_seeds"] == "2"
    assert mc[1]["method"] == "PPOL-vanilla"


def test_sweep_attack_filter_cost_limit_option_and_errors(tmp_path, captured, capsys):
    files = write_sweeps(tmp_path)
    out = tmp_path / "f"
    args = ["plot", "sweep", str(files[0]), "--out", str(out), "--attacks", "mr"]
    for bad in ("-1", "nan"):
        assert main([*args, "--cost-limit", bad]) == 2
        assert "--cost-limit must be a number >= 0" in capsys.readouterr().err
    assert main([*args, "--cost-limit", "25"]) == 0
    reward, cost = captured[0].axes
    labels = [ln.get_label() for ln in reward.get_lines()]
    assert labels == ["MR", "natural (no attack)"]  # one agent: attacker names only
    _, y = line(cost, "cost limit (25)")
    assert np.allclose(y, 25)
    # without a recorded limit: 5, the default
    runs = [plots.load_sweep_file(files[2])]
    plots.write_sweep_figure(runs, tmp_path / "g")
    line(captured[1].axes[1], "cost limit (5)")
    # a seed twice, nothing attacked, an unreadable file
    with pytest.raises(ValueError, match="training seed has two sweeps"):
        plots.sweep_series([runs[0], runs[0]])
    assert main(["plot", "sweep", str(files[2]), "--out", str(out), "--attacks", "nope"]) == 2
    err = capsys.readouterr().err  # the unknown name, and the attackers there are
    assert len(err.strip().splitlines()) == 1
    assert "--attacks nope: no such attacker in the evaluations, which hold amad, mc" in err
    (tmp_path / "bad.json").write_text("{")
    assert main(["plot", "sweep", str(tmp_path / "bad.json"), "--out", str(out)]) == 2


def test_sweep_figure_regenerates_from_a_committed_evaluation(tmp_path):
    """The committed Figure 2 data: the CSV of `plot sweep` holds the JSON's own means."""
    root = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
    src = root / "vulnerability_SafetyCarRun-v0_eps.json"
    data = json.loads(src.read_text())
    out = tmp_path / "fig"
    assert main(["plot", "sweep", str(src), "--out", str(out)]) == 0
    rows = {(r["attack"], float(r["epsilon"])): r for r in read_csv(out.with_suffix(".csv"))}
    for r in data["results"]:
        got = rows[(r["attack"], float(r["epsilon"]))]
        assert np.isclose(float(got["reward_mean"]), r["reward_mean"])
        assert np.isclose(float(got["cost_mean"]), r["cost_mean"])
        assert np.isclose(float(got["reward_band"]), r["reward_std"])  # one seed: episodes
        assert np.isclose(float(got["cost_band"]), r["cost_std"])


def _sweep_file(tmp_path: Path, name: str, seed, **fields) -> Path:
    table = {("none", 0.0): [(10.0, 0.0)], ("amad", 0.05): [(9.0, 3.0)]}
    payload = sweep_payload("vanilla", seed, table)
    payload.update(fields)
    if seed is None:
        del payload["train_seed"]
    path = tmp_path / name
    path.write_text(json.dumps(payload))
    return path


@pytest.mark.parametrize(
    "first, second, message",
    [
        (dict(xi=0.05), dict(xi=0.75), r"differ in AMAD's xi \(0.05, 0.75\)"),
        (dict(epsilon_space="raw"), dict(epsilon_space="normalized"), "differ in epsilon units"),
        (dict(actions="mean"), dict(actions="expected"), "differ in actions"),
    ],
)
def test_sweeps_that_are_not_seeds_of_one_agent_are_not_pooled(tmp_path, first, second, message):
    """Two seeds whose sweeps ran another xi, epsilon units or action were averaged as one
    method's (the xi column left empty, nothing said)."""
    runs = [
        plots.load_sweep_file(_sweep_file(tmp_path, "a.json", 0, **first)),
        plots.load_sweep_file(_sweep_file(tmp_path, "b.json", 1, **second)),
    ]
    with pytest.raises(ValueError, match=message):
        plots.sweep_series(runs)
    same = [plots.load_sweep_file(_sweep_file(tmp_path, "c.json", 1, **first)), runs[0]]
    assert {p.n_seeds for p in plots.sweep_series(same)} == {2}


def test_sweeps_without_a_training_seed_are_not_pooled(tmp_path):
    """Two --policy evaluations (or one file given twice) were one method's "2 seeds"."""
    a = _sweep_file(tmp_path, "a.json", None, policy="pols.py:forward()")
    b = _sweep_file(tmp_path, "b.json", None, policy="pols.py:still()")
    for pair in ((a, b), (a, a)):
        with pytest.raises(ValueError, match="without a training seed cannot be pooled"):
            plots.sweep_series([plots.load_sweep_file(p) for p in pair])
    assert plots.sweep_series([plots.load_sweep_file(a)])  # one alone is plotted


def test_sac_lag_runs_of_two_entropy_weights_are_two_methods(tmp_path):
    """As the table does: SAC-Lag at alpha 0.1 and 0.0001 were pooled as one method's seeds."""
    runs = []
    for seed, alpha in ((0, 0.1), (1, 0.0001)):
        path = _sweep_file(tmp_path, f"s{seed}.json", seed, train_algo="sac-lag", train_alpha=alpha)
        runs.append(plots.load_sweep_file(path))
    points = plots.sweep_series(runs)
    assert {(p.algo, p.n_seeds) for p in points} == {("sac-lag:0.1", 1), ("sac-lag:0.0001", 1)}
    trained = []
    for seed, alpha in ((0, 0.1), (1, 0.0001)):
        run = tmp_path / f"sac{seed}"
        run.mkdir()
        cfg = resolve(ENV, "fast", algo="sac-lag", seed=seed, sets=[f"sac.alpha={alpha}"])
        (run / "config.yaml").write_text(yaml.safe_dump(to_dict(cfg), sort_keys=False))
        (run / "metrics.csv").write_text("epoch,env_steps,ep_return,ep_cost\n1,400,1.0,0.0\n")
        trained.append(plots.load_training_run(run))
    assert [t.algo for t in trained] == ["sac-lag:0.1", "sac-lag:0.0001"]
    from robustsafe.experiments.report import find_runs

    # the report's runs and settings tables group them the same way
    assert sorted(r.algo for r in find_runs(tmp_path)) == ["sac-lag:0.0001", "sac-lag:0.1"]


def test_an_env_with_no_attacked_evaluation_is_named(tmp_path):
    """One env evaluated without attack beside another's sweep: "min() arg is an empty
    sequence" before."""
    swept = plots.load_sweep_file(_sweep_file(tmp_path, "a.json", 0))
    natural = sweep_payload("vanilla", 0, {("none", 0.0): [(5.0, 0.0)]})
    natural["env_id"] = "SafetyCarCircle-v0"
    (tmp_path / "n.json").write_text(json.dumps(natural))
    with pytest.raises(ValueError, match="SafetyCarCircle-v0: no attacked evaluation to plot"):
        plots.sweep_series([swept, plots.load_sweep_file(tmp_path / "n.json")])


def test_curves_with_nothing_to_draw_say_so(tmp_path):
    """A metrics.csv with no curve's column: matplotlib's "Number of rows must be a positive
    integer, not 0" before, the notes never printed."""
    run = write_run(tmp_path, "vanilla", 0, {"time_env": [1.0, 2.0]})
    with pytest.raises(ValueError, match="no training curve to plot"):
        plots.write_curves_figure([plots.load_training_run(run)], tmp_path / "c")


def test_plot_sweep_keeps_off_a_tables_figures_without_force(tmp_path, capsys):
    """`table` writes PREFIX-amad-xi.* and PREFIX-mix-figure.* beside PREFIX.csv; the xi figure's
    CSV has the very columns of a sweep figure's, the mixture's differ from the fifth on. Both
    were replaced by `plot sweep --out PREFIX-...` without --force (only 3 columns compared)."""
    from robustsafe.experiments.figures import XI_CSV_FIELDS
    from robustsafe.experiments.table_format import CSV_FIELDS

    sweep = str(_sweep_file(tmp_path, "s.json", 0))
    (tmp_path / "table.csv").write_text(",".join(CSV_FIELDS) + "\n")
    xi_header = ",".join(XI_CSV_FIELDS) + "\n"
    mix_header = xi_header.replace(",xi,", ",weight,")
    for name, header in (("table-amad-xi", xi_header), ("table-mix-figure", mix_header)):
        out = tmp_path / name
        out.with_suffix(".csv").write_text(header)
        out.with_suffix(".png").write_bytes(b"table's figure")
        assert main(["plot", "sweep", sweep, "--out", str(out)]) == 2, name
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "--force" in err, err
        assert out.with_suffix(".csv").read_text() == header
        assert out.with_suffix(".png").read_bytes() == b"table's figure"
        assert main(["plot", "sweep", sweep, "--out", str(out), "--force"]) == 0
        assert read_csv(out.with_suffix(".csv"))[0]["attack"] == "none"
    # the mixture figure's CSV is told apart by its columns alone, wherever it lies
    lone = tmp_path / "elsewhere" / "mix"
    lone.parent.mkdir()
    lone.with_suffix(".csv").write_text(mix_header)
    assert main(["plot", "sweep", sweep, "--out", str(lone)]) == 2
    assert "another command's output" in capsys.readouterr().err
    assert lone.with_suffix(".csv").read_text() == mix_header
    # a sweep figure of its own is rebuilt in place, also beside a table; so is one whose
    # CSV has a column fewer (written before a column was added at the end)
    own = tmp_path / "table-eps"
    for _ in range(2):
        assert main(["plot", "sweep", sweep, "--out", str(own)]) == 0
    older = own.with_suffix(".csv").read_text().split("\n", 1)[0].rsplit(",", 1)[0]
    own.with_suffix(".csv").write_text(older + "\n")
    assert main(["plot", "sweep", sweep, "--out", str(own)]) == 0


def test_a_failed_figure_write_leaves_the_earlier_files(tmp_path, monkeypatch, capsys):
    """save_figure wrote the PNG, then the PDF, then the CSV (the mark of our files): a failure
    on the PDF left a new PNG beside the old CSV, or a PNG without a CSV, which the next
    `plot` refused as not its own."""
    from matplotlib.figure import Figure

    sweep = str(_sweep_file(tmp_path, "s.json", 0))
    out = tmp_path / "fig"
    real_savefig = Figure.savefig

    def no_pdf(self, fname, *args, **kwargs):
        if str(fname).endswith(".pdf"):
            raise OSError(28, "no space left on device")
        return real_savefig(self, fname, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", no_pdf)
    assert main(["plot", "sweep", sweep, "--out", str(out)]) != 0
    assert "no space left on device" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]  # nothing, no stage left
    monkeypatch.setattr(Figure, "savefig", real_savefig)
    import os

    from robustsafe import runstate

    moved = []
    real_replace = os.replace
    monkeypatch.setattr(
        runstate.os, "replace", lambda a, b: (moved.append(Path(b).suffix), real_replace(a, b))
    )
    assert main(["plot", "sweep", sweep, "--out", str(out)]) == 0
    assert moved[-3:] == [".csv", ".pdf", ".png"]  # the CSV, the mark of ours, first
    before = {ext: out.with_suffix(ext).read_bytes() for ext in (".png", ".pdf", ".csv")}
    monkeypatch.setattr(Figure, "savefig", no_pdf)
    other = str(_sweep_file(tmp_path, "t.json", 0, cost_limit=25.0))
    assert main(["plot", "sweep", other, "--out", str(out)]) != 0
    assert {ext: out.with_suffix(ext).read_bytes() for ext in before} == before
    monkeypatch.setattr(Figure, "savefig", real_savefig)
    assert main(["plot", "sweep", other, "--out", str(out)]) == 0
    assert out.with_suffix(".png").read_bytes() != before[".png"]
