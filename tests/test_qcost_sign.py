"""benchmarks/qcost_sign.py: a run's lowest cost-critic estimate and its verdict, by hand."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _qcost_sign():
    spec = importlib.util.spec_from_file_location("qcost_sign", BENCH / "qcost_sign.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["qcost_sign"] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def _write_run(
    run: Path, q_costs: list[str], env_id: str, reward: float, cost: float, mode: str = "vanilla"
) -> None:
    run.mkdir(parents=True)
    rows = ["epoch,ep_return,q_cost"] + [f"{i + 1},0.0,{q}" for i, q in enumerate(q_costs)]
    (run / "metrics.csv").write_text("\n".join(rows) + "\n")
    (run / "config.yaml").write_text(
        "algo: sac-lag\nepochs: 5\nsac:\n  alpha: 0.1\n  floor_cost_targets: true\n"
    )
    natural = {"attack": "none", "reward_mean": reward, "cost_mean": cost}
    mc = {"attack": "mc", "reward_mean": 0.0, "cost_mean": 99.0}
    evaluation = {"env_id": env_id, "train_mode": mode, "results": [mc, natural]}
    (run / "eval.json").write_text(json.dumps(evaluation))


def test_warmup_epochs_and_nan_are_left_out(tmp_path: Path) -> None:
    module = _qcost_sign()
    # Epochs 1-2 are warm-up (-9 is not counted); epoch 4 logged nan.
    _write_run(tmp_path / "a", ["-9.0", "0.5", "-0.25", "nan", "-1.5"], "SafetyCarRun-v0", 510, 5)
    (row,) = module.collect([tmp_path], warmup=2)
    assert row.path == "a"
    assert (row.alpha, row.floor, row.epochs) == (0.1, True, 5)
    assert row.q_cost_min == -1.5
    assert row.negative_epochs == 2
    assert (row.reward, row.cost, row.met) == (510.0, 5.0, True)


def test_targets_per_task_and_runs_without_q_cost(tmp_path: Path) -> None:
    module = _qcost_sign()
    # 349 on CarCircle misses the 350 target; the same reward on CarRun misses 500 as well,
    # and a cost of 5.01 misses whatever the reward.
    _write_run(tmp_path / "circle", ["1.0"], "SafetyCarCircle-v0", 349.0, 0.0)
    _write_run(tmp_path / "run", ["1.0"], "SafetyCarRun-v0", 600.0, 5.01)
    _write_run(tmp_path / "circle-ok", ["1.0"], "SafetyCarCircle-v0", 350.0, 0.0)
    _write_run(tmp_path / "adv", ["1.0"], "SafetyCarRun-v0", 600.0, 0.0, mode="adv-mc")
    plain = tmp_path / "ppol"
    plain.mkdir()
    (plain / "metrics.csv").write_text("epoch,ep_return\n1,3.0\n")
    rows = {r.path: r.met for r in module.collect([tmp_path], warmup=0)}
    assert rows == {"circle": False, "circle-ok": True, "run": False}
    text = module.format_markdown(module.collect([tmp_path], warmup=0), 0)
    assert "| sac-lag | no | 3 | 1 |" in text


def test_a_copied_run_counts_once(tmp_path: Path) -> None:
    module = _qcost_sign()
    _write_run(tmp_path / "probe" / "a", ["1.0", "-0.5"], "SafetyCarRun-v0", 510, 0)
    _write_run(tmp_path / "table" / "a", ["1.0", "-0.5"], "SafetyCarRun-v0", 510, 0)
    _write_run(tmp_path / "table" / "b", ["1.0", "-0.4"], "SafetyCarRun-v0", 510, 0)
    paths = [r.path for r in module.collect([tmp_path], warmup=0)]
    assert paths == ["probe/a", "table/b"]
