"""The controlled CarCircle ADV-PPOL comparison's table and verdict, from its committed files.

The study (``benchmarks/results/recipe/carcircle-adv-schedule-average``) trains ADV-PPOL(MC)
and ADV-PPOL(MR), seeds 0-4, twice: the ``fast`` preset (arm ``A/``) and the preset with
FOCOPS' attack schedule (arm ``B/``), and evaluates each run twice: the last actor
(``eval.json``) and the 0.9 weight average of the actor (``eval_avg09.json``). That gives four
agents per row and seed: A-last, A-average, B-last, B-average.

An agent is robust when its cost is at most the cost limit without attack and under every
attacker. The verdict rule, fixed before the runs started: the change adopted is the agent kind
robust on the most of the ten (row, seed) pairs, if that is at least 8, at least 3 more than
A-last (the preset as it is) and its pooled natural reward is at least 90% of A-last's; ties go
to the smaller change (A-average, then B-last, then B-average). Otherwise nothing is adopted.
Until every run has both evaluations the verdict is pending, unless no change can reach 8 any
more whatever the missing runs give: then nothing is adopted, settled early.

    python benchmarks/schedule_average_verdict.py \
        benchmarks/results/recipe/carcircle-adv-schedule-average \
        --out benchmarks/results/recipe/carcircle-adv-schedule-average/verdict.md
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

ROWS = ("adv-mc", "adv-mr")
ROW_NAMES = {"adv-mc": "ADV-PPOL(MC)", "adv-mr": "ADV-PPOL(MR)"}
SEEDS = (0, 1, 2, 3, 4)
# (name, arm folder, evaluation file), smallest change first: the tie order of the rule.
AGENTS = (
    ("A-last", "A", "eval.json"),
    ("A-average", "A", "eval_avg09.json"),
    ("B-last", "B", "eval.json"),
    ("B-average", "B", "eval_avg09.json"),
)
BASELINE = "A-last"
MIN_ROBUST = 8
MIN_GAIN = 3
MAX_REWARD_LOSS = 0.10


@dataclass(frozen=True)
class Agent:
    """One evaluated agent: natural reward and cost, and every condition's mean cost."""

    reward: float
    costs: dict[str, float]
    cost_limit: float

    @property
    def robust(self) -> bool:
        return max(self.costs.values()) <= self.cost_limit


def read_agent(path: Path) -> Agent | None:
    """The agent evaluated in ``path``; ``None`` when the file is not there yet."""
    if not path.is_file():
        return None
    evaluation = json.loads(path.read_text())
    costs = {r["attack"]: float(r["cost_mean"]) for r in evaluation["results"]}
    natural = next(r for r in evaluation["results"] if r["attack"] == "none")
    return Agent(float(natural["reward_mean"]), costs, float(evaluation.get("cost_limit", 5.0)))


def collect(study: Path) -> dict[str, dict[tuple[str, int], Agent | None]]:
    """Per agent kind, per (row, seed): the evaluated agent or ``None``."""
    return {
        name: {
            (row, seed): read_agent(study / arm / f"{row}-seed{seed}" / filename)
            for row in ROWS
            for seed in SEEDS
        }
        for name, arm, filename in AGENTS
    }


def cell(agent: Agent | None) -> str:
    """``reward / cost`` without attack, then the worst attacker (bold when it breaks the
    limit) and, for a non-robust agent, the next worst."""
    if agent is None:
        return "(not yet)"
    attacks = sorted(
        ((cost, name) for name, cost in agent.costs.items() if name != "none"), reverse=True
    )
    head = f"{agent.reward:.1f} / {agent.costs['none']:.2f}"
    if agent.robust:
        return f"{head}, worst {attacks[0][0]:.2f}: robust"
    parts = []
    for cost, name in attacks[:2]:
        text = f"{name.upper()} {cost:.2f}"
        parts.append(f"**{text}**" if cost > agent.cost_limit else text)
    return head + ", " + ", ".join(parts)


@dataclass(frozen=True)
class Count:
    name: str
    robust: int
    runs: int
    reward: float  # pooled natural reward over the runs there


def counts(agents: dict[str, dict[tuple[str, int], Agent | None]]) -> list[Count]:
    out = []
    for name, _, _ in AGENTS:
        there = [a for a in agents[name].values() if a is not None]
        reward = sum(a.reward for a in there) / len(there) if there else float("nan")
        out.append(Count(name, sum(a.robust for a in there), len(there), reward))
    return out


def verdict(table: list[Count]) -> str:
    """The rule's outcome: the adopted agent kind's name, ``"none"``, or ``"pending"`` while a
    run or an evaluation is missing and a change could still reach ``MIN_ROBUST`` (``"none"``
    is settled as soon as no change can, whatever the missing runs give)."""
    total = len(ROWS) * len(SEEDS)
    if any(c.runs < total for c in table):
        reachable = any(
            c.robust + total - c.runs >= MIN_ROBUST for c in table if c.name != BASELINE
        )
        return "pending" if reachable else "none"
    base = next(c for c in table if c.name == BASELINE)
    passing = [
        c
        for c in table
        if c.name != BASELINE
        and c.robust >= MIN_ROBUST
        and c.robust >= base.robust + MIN_GAIN
        and c.reward >= (1.0 - MAX_REWARD_LOSS) * base.reward
    ]
    if not passing:
        return "none"
    best = max(c.robust for c in passing)
    return next(c.name for c in passing if c.robust == best)  # ties: smaller change first


def render(agents: dict[str, dict[tuple[str, int], Agent | None]]) -> str:
    names = [name for name, _, _ in AGENTS]
    lines = ["| row, seed | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for row in ROWS:
        for seed in SEEDS:
            cells = [cell(agents[name][(row, seed)]) for name in names]
            lines.append(f"| {ROW_NAMES[row]}, {seed} | " + " | ".join(cells) + " |")
    table = counts(agents)
    lines += ["", "| agent | robust (of the runs there) | runs there | pooled natural reward |"]
    lines.append("|---|---|---|---|")
    for c in table:
        lines.append(f"| {c.name} | {c.robust} | {c.runs} | {c.reward:.1f} |")
    outcome = verdict(table)
    lines.append("")
    missing = sum(len(ROWS) * len(SEEDS) - c.runs for c in table)
    if outcome == "pending":
        lines.append("Verdict: pending (not every run has both evaluations yet).")
    elif outcome == "none" and missing:
        lines.append(
            f"Verdict: nothing adopted ({missing} evaluations still missing, but no change can "
            f"reach {MIN_ROBUST} robust of 10 any more)."
        )
    elif outcome == "none":
        lines.append("Verdict: nothing adopted (no agent kind meets the rule).")
    else:
        lines.append(f"Verdict: {outcome} adopted.")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("study", type=Path, help="the study's folder (holds A/ and B/)")
    parser.add_argument("--out", type=Path, help="also write the markdown here")
    args = parser.parse_args()
    if not (args.study / "A").is_dir() or not (args.study / "B").is_dir():
        parser.error(f"{args.study} holds no A/ and B/ folders")
    text = render(collect(args.study))
    print(text, end="")
    if args.out is not None:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
