"""Attack your own torch.nn.Module policy on SafetyCarRun-v0 with MAD, MC and MR.

Your policy is any module mapping a (batch, obs_dim) float tensor to (batch, act_dim) actions.
Here it is a plain MLP whose weights come from the committed zoo agent (stand-in for a network
you trained with your own code). RobustSafe fits the attackers' Q critics to it (Gaussian
exploration noise around its actions), then plays paired episodes, natural and attacked.

    python examples/attack_torch_module.py
    robustsafe fit-critics --policy examples/attack_torch_module.py:make_policy() \\
        --env SafetyCarRun-v0 --steps 20000 --out critics.pt

Sizes: EXAMPLE_CRITIC_STEPS (default 20000), EXAMPLE_EPISODES (default 10).
"""

import os
from pathlib import Path

import torch
from torch import nn

ZOO_AGENT = Path(__file__).resolve().parents[1] / "zoo" / "SafetyCarRun-v0" / "vanilla" / "agent.pt"


class MyPolicy(nn.Module):
    """Your network: observations -> actions in [-1, 1]."""

    def __init__(self, obs_dim: int = 7, act_dim: int = 2) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(obs_dim, 128),
            nn.ReLU(),
            nn.Linear(128, 128),
            nn.ReLU(),
            nn.Linear(128, act_dim),
        )

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.tanh(0.5 * self.net(obs))  # = -1 + 2 sigmoid(net(obs))


def make_policy() -> MyPolicy:
    """The module with trained weights (tensors only: weights_only loading runs no code)."""
    saved = torch.load(ZOO_AGENT, map_location="cpu", weights_only=True)["actor"]
    policy = MyPolicy()
    policy.net.load_state_dict(
        {k[len("net.") :]: v for k, v in saved.items() if k.startswith("net.")}
    )
    return policy.eval()


if __name__ == "__main__":
    torch.set_num_threads(1)
    critic_steps = int(os.environ.get("EXAMPLE_CRITIC_STEPS", 20_000))
    episodes = int(os.environ.get("EXAMPLE_EPISODES", 10))

    # ---- the attack: a handful of lines ----
    from robustsafe.evaluate import evaluate_policy, format_paired_table
    from robustsafe.fit_critics import fit_policy_critics
    from robustsafe.policy import TorchPolicy

    policy = TorchPolicy(make_policy(), action_std=0.6)  # action_std: the Gaussian MAD measures
    critics = fit_policy_critics(policy, "SafetyCarRun-v0", steps=critic_steps, exploration_std=0.3)
    results = evaluate_policy(
        policy, "SafetyCarRun-v0", attacks=["none", "random", "mad", "mc", "mr"],
        epsilons=[0.05], critics=critics, episodes=episodes,
    )  # fmt: skip
    print(format_paired_table(results))
