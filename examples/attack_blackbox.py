"""Attack a black-box policy: any numpy callable (an ONNX session, a JAX function, a server).

A black box gives no gradients, so only the gradient-free attackers work on it: ``none`` and
``random`` (uniform noise in the epsilon-ball). The gradient attackers (MC, MR, MAD, AMAD, ...)
are refused with a message that says so; this example shows the refusal too.

Here the black box is the committed zoo agent's network evaluated in plain numpy.

    python examples/attack_blackbox.py

Sizes: EXAMPLE_EPISODES (default 10).
"""

import os
from pathlib import Path

import numpy as np
import torch

ZOO_AGENT = Path(__file__).resolve().parents[1] / "zoo" / "SafetyCarRun-v0" / "vanilla" / "agent.pt"


def make_blackbox():
    """A numpy function (batch, 7) -> (batch, 2): no torch inside."""
    sd = torch.load(ZOO_AGENT, map_location="cpu", weights_only=True)["actor"]
    w = [
        (sd[f"net.{i}.weight"].double().numpy(), sd[f"net.{i}.bias"].double().numpy())
        for i in (0, 2, 4)
    ]

    def act(obs: np.ndarray) -> np.ndarray:
        h = obs
        for k, (weight, bias) in enumerate(w):
            h = h @ weight.T + bias
            if k < len(w) - 1:
                h = np.maximum(h, 0.0)
        return np.tanh(0.5 * h)

    return act


if __name__ == "__main__":
    torch.set_num_threads(1)
    episodes = int(os.environ.get("EXAMPLE_EPISODES", 10))

    from robustsafe.evaluate import evaluate_policy, format_paired_table
    from robustsafe.policy import BlackBoxPolicy

    policy = BlackBoxPolicy(make_blackbox(), obs_dim=7, act_dim=2)
    results = evaluate_policy(
        policy, "SafetyCarRun-v0", attacks=["none", "random"], epsilons=[0.05, 0.2],
        episodes=episodes,
    )  # fmt: skip
    print(format_paired_table(results))
    try:
        evaluate_policy(policy, "SafetyCarRun-v0", attacks=["mc"], episodes=episodes)
    except TypeError as err:
        print(f"refused, as it should be: {err}")
