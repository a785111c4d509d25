"""The notes on what one Table 1 row pools (``table.build_table``): runs that differ in a way
its cells do not show (no training seed, numbers of episodes, training budget, preset, actions,
agent epoch) and attackers that have no column in it."""

from __future__ import annotations

import math
from collections.abc import Sequence

from robustsafe.experiments.eval_files import EvalFile
from robustsafe.experiments.names import paper_attacker


def pooling_notes(
    name: str, members: Sequence[EvalFile], epsilon: float | None, own_attacks: Sequence[str]
) -> list[str]:
    """The notes on the runs one method's row pools (``name``: the method on its env)."""
    found = [
        _seedless_note(name, members),
        _episode_counts_note(name, members),
        _budget_note(name, members, epsilon),
        _presets_note(name, members),
        _actions_note(name, members),
        _epochs_note(name, members),
        _unshown_attackers_note(name, members, own_attacks),
    ]
    return [note for note in found if note is not None]


def _seedless_note(name: str, members: Sequence[EvalFile]) -> str | None:
    """A note if several evaluations record no training seed (each counts as one seed)."""
    seedless = [f for f in members if f.train_seed is None]
    if len(seedless) <= 1:
        return None
    return (
        f"{name} pools {len(seedless)} evaluations that record no training seed "
        "(e.g. of --policy agents) as that many seeds; nothing shows they are not one "
        "agent evaluated twice."
    )


def _episode_counts_note(name: str, members: Sequence[EvalFile]) -> str | None:
    """A note if the runs have different numbers of natural episodes."""
    counts = {len(f.episodes["none"]) for f in members if f.episodes.get("none")}
    if len(counts) <= 1:
        return None
    return (
        f"{name}: its runs have different numbers of natural episodes "
        f"({', '.join(map(str, sorted(counts)))}); the pooled cells weigh them by "
        "their episodes, not equally."
    )


def _budget_note(name: str, members: Sequence[EvalFile], epsilon: float | None) -> str | None:
    """A note if runs were trained at another budget than the ``epsilon`` they are attacked at."""
    if epsilon is None:
        return None
    budgets = {
        f.train_epsilon
        for f in members
        if f.train_epsilon is not None
        and not math.isclose(f.train_epsilon, epsilon, rel_tol=1e-6)  # (a printed --eps)
    }
    if not budgets:
        return None
    return (
        f"{name} was trained at epsilon {', '.join(f'{b:g}' for b in sorted(budgets))} "
        f"and attacked here at {epsilon:g}."
    )


def _presets_note(name: str, members: Sequence[EvalFile]) -> str | None:
    """A note if the runs are of different presets."""
    presets = sorted({f.preset for f in members if f.preset})
    if len(presets) <= 1:
        return None
    return f"{name} pools runs of different presets ({', '.join(presets)})."


def _actions_note(name: str, members: Sequence[EvalFile]) -> str | None:
    """A note if the evaluations ran different (deterministic) actions."""
    actions = sorted({f.actions for f in members if f.actions})
    if len(actions) <= 1:
        return None
    return f"{name} pools evaluations of different actions ({'; '.join(actions)})."


def _epochs_note(name: str, members: Sequence[EvalFile]) -> str | None:
    """A note if the agents are of different epochs (some runs may be unfinished)."""
    epochs = sorted({f.agent_epoch for f in members if f.agent_epoch is not None})
    if len(epochs) <= 1:
        return None
    return (
        f"{name} pools agents of different epochs ({', '.join(map(str, epochs))}): "
        "some runs may be unfinished."
    )


def _unshown_attackers_note(
    name: str, members: Sequence[EvalFile], own_attacks: Sequence[str]
) -> str | None:
    """A note if the evaluations hold attackers that are neither the paper's nor shown."""
    shown = set(own_attacks)
    own = sorted(
        {a for f in members for a in f.episodes if not paper_attacker(a) and a not in shown}
    )
    if not own:
        return None
    return (
        f"{name}: its evaluations hold attackers that are not the paper's "
        f"({', '.join(own)}), in no column here (`robustsafe table --attacks` adds "
        "columns for them; `robustsafe plot sweep` draws them)."
    )
