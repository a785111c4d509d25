"""A small grid world with a rewarding shortcut through a hazard: a tempting safe RL problem.

::

    . . . . . . .
    . . . . . . .
    S . x x x . G      S start, G goal (absorbing), x hazard (cost 1 on entering)
    . . . . . . .
    . . . . . . .

Actions move up / down / left / right; with probability ``slip`` the move goes to one of the two
perpendicular directions instead, and moves off the grid leave the agent in place. Entering
the goal pays reward 1. The straight path through the hazard is two steps shorter than the
detour, hence worth more discounted reward: the unconstrained optimum takes it, and with a
small kappa the problem is tempting (Definition 3).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .cmdp import CMDP, FloatArray
from .perturbation import metric_from_coordinates

ACTION_NAMES = ("up", "down", "left", "right")
MOVES = ((-1, 0), (1, 0), (0, -1), (0, 1))
PERPENDICULAR = ((2, 3), (2, 3), (0, 1), (0, 1))

Cell = tuple[int, int]


@dataclass(frozen=True, eq=False)
class GridWorld:
    """A grid CMDP with its layout; state s is the cell (s // cols, s % cols)."""

    cmdp: CMDP
    rows: int
    cols: int
    start: Cell
    goal: Cell
    hazards: frozenset[Cell]
    slip: float

    def state(self, cell: Cell) -> int:
        return cell[0] * self.cols + cell[1]

    def cell(self, state: int) -> Cell:
        return (state // self.cols, state % self.cols)

    @property
    def coordinates(self) -> FloatArray:
        """(row, col) of every state, shape (S, 2)."""
        s = np.arange(self.rows * self.cols)
        return np.stack([s // self.cols, s % self.cols], axis=1).astype(float)

    def metric(self, p: float = 2.0) -> FloatArray:
        """l_p distance between cell coordinates (the default l_2 gives B^eps_2 balls)."""
        return metric_from_coordinates(self.coordinates, p)


def shortcut_gridworld(
    rows: int = 5,
    cols: int = 7,
    *,
    slip: float = 0.1,
    gamma: float = 0.9,
    kappa: float = 0.5,
) -> GridWorld:
    """Build the grid world above (start and goal on the middle row, hazard between them)."""
    if rows < 3 or cols < 5:
        raise ValueError(f"the grid needs rows >= 3 and cols >= 5; got {rows} x {cols}")
    if not 0.0 <= slip <= 1.0:
        raise ValueError(f"slip must be in [0, 1]; got {slip}")
    mid = rows // 2
    start, goal = (mid, 0), (mid, cols - 1)
    hazards = frozenset((mid, c) for c in range(2, cols - 2))
    n = rows * cols

    def index(cell: Cell) -> int:
        return cell[0] * cols + cell[1]

    def move(cell: Cell, a: int) -> Cell:
        r, c = cell[0] + MOVES[a][0], cell[1] + MOVES[a][1]
        return (r, c) if 0 <= r < rows and 0 <= c < cols else cell

    p = np.zeros((n, 4, n))
    reward = np.zeros((n, 4, n))
    cost = np.zeros((n, 4, n))
    for s in range(n):
        cell = (s // cols, s % cols)
        for a in range(4):
            if cell == goal:  # absorbing, nothing more to earn or pay
                p[s, a, s] = 1.0
                continue
            outcomes = [(a, 1.0 - slip)] + [(b, slip / 2) for b in PERPENDICULAR[a]]
            for b, prob in outcomes:
                p[s, a, index(move(cell, b))] += prob
    for s in range(n):
        if (s // cols, s % cols) == goal:
            continue
        reward[s, :, index(goal)] = 1.0
        for h in hazards:
            cost[s, :, index(h)] = 1.0
    mu0 = np.zeros(n)
    mu0[index(start)] = 1.0
    cmdp = CMDP(p, reward, cost, gamma, mu0, kappa, cost_max=1.0)
    return GridWorld(cmdp, rows, cols, start, goal, hazards, slip)
