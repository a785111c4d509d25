"""benchmarks/squashed_action_check.py: E[squash(u)] by Gauss-Hermite quadrature, by hand."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import torch

from robustsafe.nets import SquashedGaussianActor

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _check_module():
    spec = importlib.util.spec_from_file_location(
        "squashed_action_check", BENCH / "squashed_action_check.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Fixed(SquashedGaussianActor):
    """mu and log sigma given per action dimension, whatever the observation."""

    def __init__(self, mu: list[float], log_std: list[float], low: float, high: float) -> None:
        super().__init__(1, len(mu), hidden=(2,), act_low=low, act_high=high)
        self.mu = torch.tensor([mu], dtype=torch.float64)
        self.ls = torch.tensor([log_std], dtype=torch.float64)

    def gaussian(self, obs):
        return self.mu.expand(obs.shape[0], -1), self.ls.expand(obs.shape[0], -1)


def test_expected_squashed_action_matches_hand_values() -> None:
    check = _check_module()
    obs = torch.zeros(3, 1, dtype=torch.float64)
    # mu 0: tanh is odd, E[tanh(u)] = 0, the box's centre; sigma ~ 0: the squashed mean.
    # mu 1, sigma 1: E[tanh(u)] = 0.5504 (a Riemann sum of tanh(1 + z) N(z; 0, 1) over
    # a fine grid, below; 1e7 Monte Carlo draws give 0.5505), less than tanh(1) = 0.7616.
    actor = _Fixed([0.0, 0.5, 1.0], [0.3, math.log(1e-6), 0.0], low=-2.0, high=4.0)
    got = check.expected_squashed(actor, obs)
    z = torch.linspace(-10, 10, 200_001, dtype=torch.float64)
    density = torch.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    e_tanh = float((torch.tanh(1.0 + z) * density).sum() * (z[1] - z[0]))
    assert abs(e_tanh - 0.5504) < 1e-4
    box = lambda y: -2.0 + 6.0 * (y + 1.0) / 2.0  # noqa: E731
    expected = torch.tensor([box(0.0), box(math.tanh(0.5)), box(e_tanh)], dtype=torch.float64)
    # 16 nodes: within 4e-5 of the integral here (a missing sqrt(2) is off by 0.25)
    assert torch.allclose(got, expected.expand(3, -1), atol=1e-4)
