"""Are two trainings the same? Their metrics (timings aside) and their agents' weights.

    python benchmarks/same_training.py RUN_A RUN_B [--agent-a FILE] [--agent-b FILE]

RUN_A / RUN_B are run directories (``metrics.csv``); the agents compared are their
``agent.pt`` unless ``--agent-a`` / ``--agent-b`` name other files (e.g. an average written by
``benchmarks/average_snapshots.py``). Prints one line per check and exits 0 when both agree,
1 otherwise. Every network's tensors are compared bit for bit (actor, value functions,
critics); the config stored in the agent is not (runs with other settings may still train
alike).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from robustsafe.rundir import train_metrics

TIMING = ("wall_time", "steps_per_s")


def metric_rows(run: Path) -> list[dict]:
    """Each epoch's metrics but the timings, as text (NaN equals NaN)."""
    return [
        {k: repr(v) for k, v in r.items() if k not in TIMING and not k.startswith("time_")}
        for r in train_metrics(run)
    ]


def first_difference(a: list[dict], b: list[dict]) -> str | None:
    """None where the rows agree, else where they first differ."""
    for i, (ra, rb) in enumerate(zip(a, b, strict=False)):
        if ra != rb:
            keys = sorted(k for k in ra.keys() | rb.keys() if ra.get(k) != rb.get(k))
            return f"epoch {i + 1} differs in {', '.join(keys)}"
    if len(a) != len(b):
        return f"{len(a)} epochs against {len(b)}"
    return None


def tensors(agent: Path) -> dict[str, torch.Tensor]:
    data = torch.load(agent, weights_only=True, map_location="cpu")
    out = {}
    for part, value in data.items():
        if isinstance(value, dict) and part != "config":
            out.update({f"{part}.{k}": v for k, v in value.items() if torch.is_tensor(v)})
    return out


def weight_difference(a: Path, b: Path) -> str | None:
    ta, tb = tensors(a), tensors(b)
    if ta.keys() != tb.keys():
        return f"other tensors: {sorted(ta.keys() ^ tb.keys())[:4]}"
    differ = [k for k in ta if not torch.equal(ta[k], tb[k])]
    return f"{len(differ)} of {len(ta)} tensors differ, e.g. {differ[0]}" if differ else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_a", type=Path)
    parser.add_argument("run_b", type=Path)
    parser.add_argument("--agent-a", type=Path)
    parser.add_argument("--agent-b", type=Path)
    args = parser.parse_args()
    for path in (args.run_a, args.run_b):
        if not (path / "metrics.csv").is_file():
            parser.error(f"{path} has no metrics.csv")
    metrics = first_difference(metric_rows(args.run_a), metric_rows(args.run_b))
    agent_a = args.agent_a or args.run_a / "agent.pt"
    agent_b = args.agent_b or args.run_b / "agent.pt"
    weights = weight_difference(agent_a, agent_b)
    print(f"metrics (every epoch, timings aside): {'identical' if metrics is None else metrics}")
    print(
        f"agent weights ({agent_a.name} / {agent_b.name}): "
        f"{'identical' if weights is None else weights}"
    )
    return 0 if metrics is None and weights is None else 1


if __name__ == "__main__":
    sys.exit(main())
