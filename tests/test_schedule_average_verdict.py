"""benchmarks/schedule_average_verdict.py: the controlled comparison's rule, on made-up studies."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _verdict_module():
    spec = importlib.util.spec_from_file_location(
        "schedule_average_verdict", BENCH / "schedule_average_verdict.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["schedule_average_verdict"] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _write(path: Path, reward: float, worst: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    results = [
        {"attack": "none", "reward_mean": reward, "cost_mean": 0.0},
        {"attack": "mc", "reward_mean": 0.0, "cost_mean": worst / 2},
        {"attack": "mr", "reward_mean": 0.0, "cost_mean": worst},
    ]
    path.write_text(json.dumps({"cost_limit": 5.0, "results": results}))


def _study(tmp_path: Path, robust: dict[str, int], reward: dict[str, float]) -> Path:
    """Each agent kind robust on its first ``robust[kind]`` (row, seed) pairs, MR cost 30 on
    the rest, natural reward ``reward[kind]`` everywhere."""
    module = _verdict_module()
    pairs = [(row, seed) for row in module.ROWS for seed in module.SEEDS]
    for name, arm, filename in module.AGENTS:
        for i, (row, seed) in enumerate(pairs):
            worst = 1.0 if i < robust[name] else 30.0
            _write(tmp_path / arm / f"{row}-seed{seed}" / filename, reward[name], worst)
    return tmp_path


KINDS = ("A-last", "A-average", "B-last", "B-average")


@pytest.mark.parametrize(
    ("robust", "reward", "expected"),
    [
        # B-average: 8 robust, 3 more than A-last's 5, reward 95% of A-last's.
        ((5, 6, 7, 8), (300, 300, 300, 285), "B-average"),
        # 8 robust but only 2 more than A-last's 6.
        ((6, 6, 7, 8), (300, 300, 300, 300), "none"),
        # 8 robust and 3 more, but reward 89% of A-last's.
        ((5, 6, 7, 8), (300, 300, 300, 267), "none"),
        # 7 robust is 3 more than A-last's 4, but under 8.
        ((4, 7, 7, 7), (300, 300, 300, 300), "none"),
        # A tie at 9 goes to the smaller change (B-last before B-average).
        ((5, 6, 9, 9), (300, 300, 300, 300), "B-last"),
        # The most robust wins over a smaller change that also passes.
        ((5, 8, 9, 10), (300, 300, 300, 300), "B-average"),
    ],
)
def test_rule(tmp_path: Path, robust, reward, expected) -> None:
    module = _verdict_module()
    study = _study(
        tmp_path, dict(zip(KINDS, robust, strict=True)), dict(zip(KINDS, reward, strict=True))
    )
    table = module.counts(module.collect(study))
    assert [c.robust for c in table] == list(robust)
    assert module.verdict(table) == expected


def test_pending_until_every_evaluation_is_there(tmp_path: Path) -> None:
    module = _verdict_module()
    study = _study(
        tmp_path, dict(zip(KINDS, (5, 6, 7, 10), strict=True)), dict.fromkeys(KINDS, 300.0)
    )
    (study / "B" / "adv-mr-seed4" / "eval_avg09.json").unlink()
    table = module.counts(module.collect(study))
    assert module.verdict(table) == "pending"
    assert "(not yet)" in module.render(module.collect(study))


def test_nothing_adopted_is_settled_once_no_change_can_reach_eight(tmp_path: Path) -> None:
    module = _verdict_module()
    # B-average robust on its first 7 pairs; B-last on 6 and A-average on 5.
    study = _study(
        tmp_path, dict(zip(KINDS, (0, 5, 6, 7), strict=True)), dict.fromkeys(KINDS, 300.0)
    )
    for _, arm, filename in module.AGENTS:  # the last pair not evaluated yet, for every kind
        (study / arm / "adv-mr-seed4" / filename).unlink()
    table = module.counts(module.collect(study))
    assert module.verdict(table) == "pending"  # B-average's 7 + 1 missing can still make 8
    _write(study / "B" / "adv-mr-seed1" / "eval_avg09.json", 300.0, 30.0)  # 6 + 1 missing
    table = module.counts(module.collect(study))
    assert [c.robust for c in table] == [0, 5, 6, 6]
    assert module.verdict(table) == "none"
    assert "no change can reach 8" in module.render(module.collect(study))


def test_cost_exactly_at_the_limit_is_robust_and_natural_cost_counts(tmp_path: Path) -> None:
    module = _verdict_module()
    at_limit = tmp_path / "a.json"
    _write(at_limit, 300.0, 5.0)
    assert module.read_agent(at_limit).robust
    natural_over = tmp_path / "b.json"
    natural_over.write_text(
        json.dumps(
            {
                "cost_limit": 5.0,
                "results": [
                    {"attack": "none", "reward_mean": 300.0, "cost_mean": 5.5},
                    {"attack": "mr", "reward_mean": 0.0, "cost_mean": 1.0},
                ],
            }
        )
    )
    agent = module.read_agent(natural_over)
    assert not agent.robust
    assert module.cell(agent) == "300.0 / 5.50, MR 1.00"
