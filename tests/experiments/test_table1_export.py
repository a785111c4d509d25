"""benchmarks/table1_export.py: the action label and agent path of exported evaluation files."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
try:
    from table1_export import action_label, relabel_actions, relative_agent
finally:
    sys.path.remove(str(ROOT / "benchmarks"))

MEAN = "deterministic (mean)"
EXPECTED = "deterministic (E[clip(a)], the expected executed action)"
SQUASHED = "deterministic (squashed mean)"


def make_run(tmp_path: Path, config: str, label: str) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text(config)
    payload = {"agent": "t/SafetyCarRun-v0/vanilla/seed0", "actions": label, "results": [1.5]}
    for name in ("eval.json", "eval-xi.json"):
        (run / name).write_text(json.dumps(payload, indent=2))
    return run


@pytest.mark.parametrize(
    ("config", "label", "want"),
    [
        ("algo: ppol\ndeterministic_action: expected\n", MEAN, EXPECTED),
        ("algo: focops\ndeterministic_action: expected\n", MEAN, EXPECTED),
        ("algo: cvpo\ndeterministic_action: expected\n", MEAN, SQUASHED),
        ("algo: sac-lag\n", MEAN, SQUASHED),
        # before the setting existed the agents executed the mean: the label is right
        ("algo: ppol\n", MEAN, MEAN),
        ("algo: ppol\ndeterministic_action: mean\n", MEAN, MEAN),
        # a file from code that labels what it ran is never touched
        ("algo: ppol\ndeterministic_action: expected\n", SQUASHED, SQUASHED),
    ],
)
def test_relabel_names_the_action_the_config_ran(tmp_path, config, label, want):
    run = make_run(tmp_path, config, label)
    before = json.loads((run / "eval.json").read_text())
    changed = relabel_actions(run)
    assert len(changed) == (2 if want != label else 0)
    for name in ("eval.json", "eval-xi.json"):
        after = json.loads((run / name).read_text())
        assert after["actions"] == want
        assert {k: v for k, v in after.items() if k != "actions"} == {
            k: v for k, v in before.items() if k != "actions"
        }


def test_committed_evaluations_name_the_action_their_run_executed():
    """Every committed evaluation file beside a run's config says which deterministic action
    that config made it execute (an export from older code once wrote "mean" for all)."""
    wrong = []
    for config in [
        *(ROOT / "benchmarks" / "results").rglob("config.yaml"),
        *(ROOT / "zoo").rglob("config.yaml"),
    ]:
        label = action_label(yaml.safe_load(config.read_text()) or {})
        for name in ("eval.json", "eval-appendix.json", "eval-xi.json"):
            path = config.parent / name
            if path.exists() and json.loads(path.read_text()).get("actions") != label:
                wrong.append(str(path.relative_to(ROOT)))
    assert not wrong, f"{len(wrong)} files, e.g. {wrong[:3]}"


def test_agent_path_becomes_relative_to_the_grid_roots_parent(tmp_path):
    root = tmp_path / "machine" / "runs" / "grid-a"
    run = root / "SafetyCarRun-v0" / "adv-mc" / "seed2"
    run.mkdir(parents=True)
    copy = tmp_path / "results" / "SafetyCarRun-v0" / "adv-mc" / "seed2"
    copy.mkdir(parents=True)
    own = {"agent": str(run), "actions": MEAN, "results": [1.5]}
    other = {"agent": "zoo/SafetyCarRun-v0/vanilla", "results": [2.5]}
    (copy / "eval.json").write_text(json.dumps(own))
    (copy / "eval-xi.json").write_text(json.dumps(other))
    changed = relative_agent(copy, run, root)
    assert changed == [copy / "eval.json"]
    after = json.loads((copy / "eval.json").read_text())
    assert after == {**own, "agent": "grid-a/SafetyCarRun-v0/adv-mc/seed2"}
    # an agent other than the run's own is not rewritten
    assert json.loads((copy / "eval-xi.json").read_text()) == other
    # the same run reached through a relative root gives the same path
    (copy / "eval.json").write_text(json.dumps(own))
    relative_agent(copy, Path(os.path.relpath(run)), Path(os.path.relpath(root)))
    assert json.loads((copy / "eval.json").read_text())["agent"] == after["agent"]


def test_committed_evaluations_name_no_absolute_agent_path():
    """No committed evaluation names its agent by a machine's absolute path."""
    absolute = []
    for path in [
        *(ROOT / "benchmarks" / "results").rglob("eval*.json"),
        *(ROOT / "zoo").rglob("eval*.json"),
    ]:
        data = json.loads(path.read_text())
        agent = data.get("agent") if isinstance(data, dict) else None
        if isinstance(agent, str) and agent.startswith("/"):
            absolute.append(str(path.relative_to(ROOT)))
    assert not absolute, f"{len(absolute)} files, e.g. {absolute[:3]}"
