"""Train a Stable-Baselines3 PPO agent on SafetyCarRun-v0 briefly, then attack it with MC and MR.

Needs Stable-Baselines3 (``pip install 'robustsafe[sb3]'``). The attack part is the last block:
fit the attackers' Q critics to the trained policy, then play paired episodes (episode i starts
from the same state under every attacker) and print the paired table.

    python examples/attack_sb3_ppo.py

Sizes: EXAMPLE_TRAIN_STEPS (default 20000), EXAMPLE_CRITIC_STEPS (default 20000),
EXAMPLE_EPISODES (default 10), EXAMPLE_COST_PENALTY (default 3). EXAMPLE_SAVE=path.zip also
saves the model, for the command line:

    robustsafe fit-critics --sb3 ppo.zip --env SafetyCarRun-v0 --out critics.pt
    robustsafe evaluate --sb3 ppo.zip --env SafetyCarRun-v0 --critics critics.pt --attacks mc,mr
"""

import os

import torch

if __name__ == "__main__":
    torch.set_num_threads(1)
    train_steps = int(os.environ.get("EXAMPLE_TRAIN_STEPS", 20_000))
    critic_steps = int(os.environ.get("EXAMPLE_CRITIC_STEPS", 20_000))
    episodes = int(os.environ.get("EXAMPLE_EPISODES", 10))
    penalty = float(os.environ.get("EXAMPLE_COST_PENALTY", 3.0))

    # ---- your training code (any SB3 PPO, A2C or SAC model) ----
    import gymnasium as gym
    from stable_baselines3 import PPO

    from robustsafe.envs import make

    class CostPenalty(gym.Wrapper):
        """reward - penalty * cost: plain PPO with a fixed Lagrange multiplier (safe-ish)."""

        def step(self, action):
            obs, reward, terminated, truncated, info = self.env.step(action)
            return obs, reward - penalty * info.get("cost", 0.0), terminated, truncated, info

    env = CostPenalty(make("SafetyCarRun-v0").env)  # the gymnasium env (Bullet-Safety-Gym)
    model = PPO("MlpPolicy", env, n_steps=1024, batch_size=64, seed=0, device="cpu")
    model.learn(train_steps)
    if os.environ.get("EXAMPLE_SAVE"):
        model.save(os.environ["EXAMPLE_SAVE"])

    # ---- the attack ----
    from robustsafe.evaluate import evaluate_policy, format_paired_table
    from robustsafe.fit_critics import fit_policy_critics

    critics = fit_policy_critics(model, "SafetyCarRun-v0", steps=critic_steps)
    results = evaluate_policy(
        model, "SafetyCarRun-v0", attacks=["none", "mc", "mr"], epsilons=[0.05],
        critics=critics, episodes=episodes,
    )  # fmt: skip
    print(format_paired_table(results))
