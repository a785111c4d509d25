"""Your own attacker, evaluated under the same protocol as the paper's: an FGSM-style attack.

An attacker subclasses ``robustsafe.attacks.Attacker`` and implements ``perturbation``: given
the clean observations, it returns the perturbation ``u`` (each row inside the epsilon-ball);
the base class checks the inputs and places ``obs + u`` exactly inside the ball.
``register_attacker`` gives it a name, which then works wherever attackers are named: here in
``evaluate_agent`` beside MC (paired episodes: episode i starts from the same state under every
attacker), and on the command line with ``--attacker-module``:

    robustsafe evaluate --run zoo/SafetyCarRun-v0/vanilla \\
        --attacker-module examples/custom_attacker.py --attacks none,mc,fgsm-mc --episodes 10

The attack: one signed-gradient step (the fast gradient sign method) on MC's objective, the
cost critic at the true state, Q_c(s, mu(s~)): a single-step MC, to compare with MC's 8-start,
up-to-200-step search.

    python examples/custom_attacker.py

Sizes: EXAMPLE_EPISODES (default 10).
"""

import os
from pathlib import Path

import torch

from robustsafe.attacks import Attacker, register_attacker

ZOO_AGENT = Path(__file__).resolve().parents[1] / "zoo" / "SafetyCarRun-v0" / "vanilla"


class FGSMCost(Attacker):
    """u = epsilon * sign(d Q_c(s, mu(s~)) / d s~) at s~ = s: the l_inf ball's corner that one
    gradient step says raises the cost critic most."""

    needs_critics = True  # it reads the agent's Q_c
    norm = "linf"

    def perturbation(self, actor, critics, obs, epsilon, generator, scale):
        x = obs.clone().requires_grad_(True)
        cost = critics.q_cost(obs, actor.deterministic_action(x))  # scored at the true state
        (grad,) = torch.autograd.grad(cost.sum(), x)
        # (with a scale, obs~ = obs + u * scale, scale > 0: the sign is the same)
        return epsilon * grad.sign()


register_attacker("fgsm-mc", FGSMCost)


if __name__ == "__main__":
    torch.set_num_threads(1)
    episodes = int(os.environ.get("EXAMPLE_EPISODES", 10))

    from robustsafe.agent import load_agent
    from robustsafe.envs import VectorEnv
    from robustsafe.evaluate import evaluate_agent, format_paired_table

    agent = load_agent(ZOO_AGENT)
    with VectorEnv("SafetyCarRun-v0", min(episodes, 10), seed=0) as vec:
        results = evaluate_agent(
            agent, vec, episodes=episodes, attacks=["mc", "fgsm-mc"], epsilons=[0.05]
        )
    print(format_paired_table(results))
