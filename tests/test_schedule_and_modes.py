import math

import numpy as np
import pytest
import torch
from tiny_config import tiny_config

from robustsafe.choices import check_mode
from robustsafe.config import PPOLagConfig, RobustConfig, TrainConfig
from robustsafe.critics import QCritics
from robustsafe.nets import GaussianActor
from robustsafe.presets import preset, resolve
from robustsafe.robust import gaussian_kl
from robustsafe.rundir import train_metrics
from robustsafe.runstate import load_state
from robustsafe.schedule import epsilon_at
from robustsafe.train import train


def test_linear_schedule_hand_values():
    # start 10, length 4, eps 0.05: 0 before 10, then 0, .0125, .025, .0375, .05, .05
    got = [epsilon_at(n, 0.05, "linear", 10, 4) for n in range(8, 16)]
    want = [0, 0, 0, 0.0125, 0.025, 0.0375, 0.05, 0.05]
    assert got == pytest.approx(want)


def test_exp_schedule_is_the_original_form():
    # eps (1 - exp(-5 (n - start) / decay)): at n = start + decay, 1 - e^-5
    assert epsilon_at(50, 0.05, "exp", 20, 30) == pytest.approx(0.05 * (1 - math.exp(-5)))
    assert epsilon_at(19, 0.05, "exp", 20, 30) == 0.0
    assert epsilon_at(3, 0.05, "constant", 20, 30) == 0.05
    with pytest.raises(ValueError, match="schedule"):
        epsilon_at(3, 0.05, "cosine", 20, 30)


def _original_code_budgets(epochs, epsilon, start, decay):
    """The original code's budgets, its way: epochs counted from 0, and after epoch e the budget
    of the next epoch is set to 0 if e < start, else eps (1 - exp(-5 (e - start) / decay))."""
    budgets, current = [], 0.0
    for e in range(epochs):
        budgets.append(current)  # epoch e trains at the budget set after epoch e - 1
        current = 0.0 if e < start else epsilon * (1 - math.exp(-5 * (e - start) / decay))
    return budgets


@pytest.mark.parametrize(
    "env_id, start, decay",
    [
        ("SafetyCarRun-v0", 20, 30),
        ("SafetyCarCircle-v0", 50, 100),
        ("SafetyDroneRun-v0", 20, 80),
        ("SafetyDroneCircle-v0", 100, 100),
        ("SafetyAntRun-v0", 50, 80),
        ("SafetyAntCircle-v0", 150, 300),
    ],
)
def test_paper_presets_train_every_epoch_at_the_original_codes_budget(env_id, start, decay):
    # the original's start / decay per task; its epoch e (from 0) is our epoch e + 1
    cfg = preset(env_id, "paper", mode="adv-mc")
    r = cfg.robust
    ours = [
        epsilon_at(n, r.epsilon, r.schedule, r.schedule_start, r.schedule_length)
        for n in range(1, cfg.epochs + 1)
    ]
    assert ours == pytest.approx(_original_code_budgets(cfg.epochs, r.epsilon, start, decay))
    first = next(n for n, eps in enumerate(ours, start=1) if eps > 0)
    assert first == start + 3  # CarRun: epoch 23 of 100


def test_the_default_config_is_carruns_paper_preset():
    # docs/deviations.md: ``paper`` is the faithful default of TrainConfig (CarRun, vanilla)
    assert TrainConfig() == preset("SafetyCarRun-v0", "paper")
    assert TrainConfig(robust=RobustConfig(mode="adv-mc")) == preset(
        "SafetyCarRun-v0", "paper", mode="adv-mc"
    )


def test_shared_std_gaussian_kl_hand_value():
    # means differ by (1, 2), std 0.5 -> (1 + 4) / (2 * 0.25) = 10
    kl = gaussian_kl(
        torch.zeros(1, 2), torch.tensor([[1.0, 2.0]]), torch.log(torch.full((2,), 0.5))
    )
    assert float(kl) == pytest.approx(10.0)
    # and per row, on other means and per-dimension stds, torch's own KL (an independent path)
    gen = torch.Generator().manual_seed(0)
    mu_p, mu_q = torch.randn(5, 3, generator=gen), torch.randn(5, 3, generator=gen)
    log_std = torch.tensor([-1.0, 0.0, 0.5])
    p, q = (torch.distributions.Normal(m, log_std.exp()) for m in (mu_p, mu_q))
    ours = gaussian_kl(mu_p, mu_q, log_std).reshape(-1)
    assert torch.allclose(ours, torch.distributions.kl_divergence(p, q).sum(-1), atol=1e-5)


def test_modes_are_checked():
    for mode in ("vanilla", "adv-mc", "adv-mix:0.25", "sa-mr"):
        check_mode(mode)
    for bad in ("adv", "adv-mix:2", "adv-mix:x", "sa-random"):
        with pytest.raises(ValueError, match="accepted"):
            check_mode(bad)
    cfg = preset("SafetyCarRun-v0", "fast", mode="adv-mr")
    assert cfg.robust.attacker_name == "mr" and cfg.robust.epsilon == 0.05
    assert preset("SafetyAntRun-v0", "paper").robust.epsilon == 0.025


MODES = ["vanilla", "random", "adv-mc", "adv-mr", "adv-mix:0.5", "sa-mad", "sa-mc", "sa-mr"]
# (w_c, w_r) of the objective w_c Q_c(s, mu(s~)) + w_r Q_r(s, mu(s~)) each critic attack raises
CRITIC_OBJECTIVE = {"adv-mc": (1.0, 0.0), "adv-mr": (0.0, 1.0), "adv-mix:0.5": (0.5, 0.5)}


def _objective_gain(hooks, obs: torch.Tensor, seen: torch.Tensor, w_c: float, w_r: float) -> float:
    """Mean over the batch of the critic objective at the perturbed minus the clean observation,
    with the actor and critics the attack used (Q at the clean state, as the attackers do)."""
    with torch.no_grad():

        def f(o: torch.Tensor) -> torch.Tensor:
            a = hooks.actor.deterministic_action(o)
            return w_c * hooks.critics.q_cost(obs, a) + w_r * hooks.critics.q_reward(obs, a)

        return float((f(seen) - f(obs)).mean())


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_changes_what_it_should(tmp_path, toy_env_id, mode, monkeypatch):
    # What each mode must change, seen from the inside of a 3-epoch run (schedule: epsilon 0,
    # 0.05, 0.1 in epochs 1-3): the observations the policy acts on in the rollouts the learner
    # gets, the critic objective the rollout attack raises, and SA-PPOL's extra actor loss.
    from robustsafe.learners.ppo_lag import PPOLagrangian
    from robustsafe.robust import RobustHooks

    rollouts: list[tuple[np.ndarray, np.ndarray]] = []  # (obs acted on, true obs) per epoch
    # epoch -> (objective gain of the attack, of a uniform draw in the box) at each step
    gains: dict[int, list[tuple[float, float]]] = {}
    noise = torch.Generator().manual_seed(0)
    attackers: set[str | None] = set()  # the attacker each epoch's hooks hold
    update, perturbation = PPOLagrangian.update, RobustHooks.rollout_perturbation

    def spy_update(self, ro, *args, **kwargs):
        rollouts.append((ro.obs.copy(), ro.true_obs.copy()))
        return update(self, ro, *args, **kwargs)

    def spy_perturbation(self, epoch, num_envs):
        attackers.add(None if self.attacker is None else self.attacker.name)
        perturb = perturbation(self, epoch, num_envs)
        if perturb is None or mode not in CRITIC_OBJECTIVE:
            return perturb
        eps_now = self.epsilon(epoch)

        def recorded(obs):
            seen = perturb(obs)
            # a uniform draw in the same box: the baseline an optimised attack must beat
            box = (2 * torch.rand(obs.shape, generator=noise, dtype=obs.dtype) - 1) * eps_now
            w = CRITIC_OBJECTIVE[mode]
            gains.setdefault(epoch, []).append(
                (_objective_gain(self, obs, seen, *w), _objective_gain(self, obs, obs + box, *w))
            )
            return seen

        return recorded

    monkeypatch.setattr(PPOLagrangian, "update", spy_update)
    monkeypatch.setattr(RobustHooks, "rollout_perturbation", spy_perturbation)
    cfg = tiny_config(
        toy_env_id,
        {"hidden": (16, 16), "actor_passes": 2, "critic_passes": 2, "minibatch_size": 40},
        epochs=3,
        steps_per_epoch=80,
        num_envs=4,
        robust=RobustConfig(
            mode=mode, epsilon=0.1, schedule="linear", schedule_start=1, schedule_length=2
        ),
    )
    rows = train_metrics(train(cfg, tmp_path / "run", progress=False))
    # the attacker the mode names (SA modes use theirs in the regulariser)
    assert attackers == {None if mode == "vanilla" else mode.split("-", 1)[-1]}
    eps = [float(r["epsilon"]) for r in rows]
    shift = [float(np.abs(obs - true).max()) for obs, true in rollouts]
    assert len(shift) == 3
    if mode == "vanilla" or mode.startswith("sa-"):
        # clean rollouts: the policy acts on the true observation in every epoch
        assert shift == [0.0, 0.0, 0.0]
        assert eps == ([0.0] * 3 if mode == "vanilla" else [0.1] * 3)
    else:
        # perturbed rollouts once the schedule starts, inside the l_inf box of that epoch
        assert eps == pytest.approx([0.0, 0.05, 0.1])
        assert shift[0] == 0.0
        for s, e in zip(shift[1:], eps[1:], strict=True):
            assert 0.0 < s <= e + 1e-6
    if mode == "random":
        # uniform in the box, not pushed to its corners: about half of the 640 coordinates of
        # epoch 3 lie within eps / 2 of the true value
        obs, true = rollouts[2]
        assert 0.4 < float(np.mean(np.abs(obs - true) < 0.05)) < 0.6
    if mode.startswith("sa-"):
        assert all(float(r["extra_actor_loss"]) > 0 for r in rows)
    else:
        assert "extra_actor_loss" not in rows[0]
    if mode in CRITIC_OBJECTIVE:
        # In each attacked epoch the attack raises its own objective well above what noise in
        # the same box does: an ascent gains ~ eps |grad|_1 per state, a uniform draw averages
        # out to second order (here 10-270x less; 3x leaves room for other attack settings).
        assert sorted(gains) == [2, 3]
        for g in gains.values():
            attack, uniform = np.mean(g, axis=0)
            assert attack > 3 * abs(uniform), gains


def test_adversarial_rollouts_feed_true_observations_to_the_q_critics(
    tmp_path, toy_env_id, monkeypatch
):
    # adv-mc at full budget from epoch 1: the policy acts on perturbed observations, but the
    # Q replay holds the true ones (obs[t+1] is exactly the true next observation of step t).
    from robustsafe.learners.ppo_lag import PPOLagrangian

    acted_on = []
    update = PPOLagrangian.update

    def spy_update(self, ro, *args, **kwargs):
        acted_on.append(np.abs(ro.obs - ro.true_obs).max())
        return update(self, ro, *args, **kwargs)

    monkeypatch.setattr(PPOLagrangian, "update", spy_update)
    cfg = tiny_config(
        toy_env_id, robust=RobustConfig(mode="adv-mc", epsilon=0.2, schedule="constant")
    )
    run = train(cfg, tmp_path / "run", progress=False)
    # the policy did act on perturbed observations (else the check below would hold trivially)
    assert acted_on and acted_on[0] > 0.0
    state = load_state(run / "state.pt")
    replay = state["critic_trainer"]["replay"]
    obs, next_obs = replay["obs"], replay["next_obs"]
    # transitions are stored time-major per env: row t*2+k; next_obs[t] is the clean obs[t+1]
    keep = [i for i in range(len(obs) - 2) if (i // 2 + 1) % 20 != 0]  # skip episode ends
    assert abs(obs[2:][keep] - next_obs[:-2][keep]).max() == 0.0


def test_value_critics_see_the_true_observation_not_the_perturbed_one(toy_env_id):
    # Two rollouts that differ only in the observation the policy acted on: the GAE advantages
    # and returns (built from V_r and V_c) are identical, the actor's inputs are not.
    import numpy as np

    from robustsafe.buffers import Rollout
    from robustsafe.learners.ppo_lag import PPOLagrangian
    from robustsafe.nets import GaussianActor, ValueCritic
    from robustsafe.pid import PIDConfig

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    t, n, d = 5, 3, 4
    true_obs = rng.normal(size=(t, n, d)).astype(np.float32)

    def rollout(obs):
        return Rollout(
            obs=obs,
            true_obs=true_obs,
            act=np.zeros((t, n, 2), np.float32),
            logp=np.zeros((t, n), np.float32),
            reward=rng.normal(size=(t, n)),
            cost=np.ones((t, n)),
            next_obs=rng.normal(size=(t, n, d)).astype(np.float32),
            terminated=np.zeros((t, n), bool),
            truncated=np.zeros((t, n), bool),
        )

    cfg = PPOLagConfig(hidden=(8,))
    learner = PPOLagrangian(
        GaussianActor(d, 2, (8,)), ValueCritic(d, (8,)), ValueCritic(d, (8,)), cfg, PIDConfig()
    )
    clean = rollout(true_obs)
    attacked = Rollout(**{**clean.__dict__, "obs": true_obs + 0.5})
    a, b = learner.advantages(clean), learner.advantages(attacked)
    for key in ("adv_r", "adv_c", "ret_r", "ret_c", "true_obs"):
        assert torch.equal(a[key], b[key]), key
    assert torch.equal(b["obs"], torch.as_tensor(true_obs + 0.5).reshape(t * n, d))


def test_sa_regularizer_compares_with_the_current_policy(toy_env_id):
    # At epsilon 0 the adversarial states are the clean ones: the regulariser is 0 for any
    # actor parameters, also after the actor changed (a stale clean mean would not be).
    from robustsafe.robust import RobustHooks

    cfg = TrainConfig(env_id=toy_env_id, robust=RobustConfig(mode="sa-mad", epsilon=0.0))
    actor = GaussianActor(3, 2, (8,))
    critics = QCritics(3, 2, (8,))
    hooks = RobustHooks(cfg, actor, critics, torch.Generator().manual_seed(0))
    obs = torch.randn(16, 3)
    extra = hooks.sa_regularizer(obs)
    idx = torch.arange(16)
    assert float(extra(actor, idx).detach()) == 0.0
    with torch.no_grad():
        for p in actor.parameters():
            p.add_(0.5)
    assert float(extra(actor, idx).detach()) == 0.0
    cfg_far = TrainConfig(env_id=toy_env_id, robust=RobustConfig(mode="sa-mad", epsilon=0.5))
    far = RobustHooks(cfg_far, actor, critics, torch.Generator().manual_seed(0))
    loss = far.sa_regularizer(obs)(actor, idx)
    loss.backward()
    # the default (the authors' code) compares means only: sigma gets no gradient from it
    assert float(loss.detach()) > 0.0 and actor.log_std.grad is None


def _shifted_sa_hooks(env_id: str, form: str):
    """SA-PPOL's hooks (beta 0.5) with a fixed "attacker" s_adv = s + 0.1, on a linear actor with
    zero weights except W[0, 0] = 2 (mu_0 = -1 + 2 sigmoid(2 s_0), mu_1 = 0)."""
    from robustsafe.robust import RobustHooks

    robust = RobustConfig(mode="sa-mad", epsilon=0.1, sa_beta=0.5, sa_regularizer=form)
    actor = GaussianActor(3, 2, ())
    with torch.no_grad():
        actor.net[0].weight.zero_()
        actor.net[0].bias.zero_()
        actor.net[0].weight[0, 0] = 2.0
    hooks = RobustHooks(TrainConfig(env_id=env_id, robust=robust), actor, None, None)
    hooks.attacker = lambda actor, critics, obs, eps, gen: obs + 0.1
    return hooks, actor


@pytest.mark.parametrize("form", ["mse", "kl"])
def test_sa_regularizer_forms_against_hand_computed_values(toy_env_id, form):
    # The pre-sigmoid outputs differ by 0.2 in action 0 only.
    hooks, actor = _shifted_sa_hooks(toy_env_id, form)
    obs = torch.zeros(4, 3)
    loss = float(hooks.sa_regularizer(obs)(actor, torch.arange(4)).detach())
    # mu_0 = -1 + 2 sigmoid(x): clean x = 0 -> 0; adversarial x = 0.2 -> 2 sigmoid(0.2) - 1
    d = 2.0 / (1.0 + math.exp(-0.2)) - 1.0  # = 0.0996680
    if form == "mse":
        expected = 0.5 * d**2  # beta * mean_batch sum_i dmu_i^2
    else:
        expected = 0.5 * d**2 / (2.0 * math.exp(2 * -0.5))  # / (2 sigma^2), log-std -0.5
    assert loss == pytest.approx(expected, rel=1e-5)


def test_sa_regularizer_takes_the_minibatch_rows_and_no_gradient_through_the_clean_side(
    toy_env_id,
):
    # The same linear actor (mu_0 = -1 + 2 sigmoid(2 s_0)), s_adv = s + 0.1, states whose first
    # feature is 0, 1, 2, 3, a minibatch of rows 1 and 3, the authors' form (beta 0.5):
    # loss = 0.5 mean_v (mu(v + 0.1) - mu(v))^2 over v in {1, 3}, and its gradient in W[0, 0]
    # flows through the adversarial mean only (the clean mean is a constant, Algorithm 1):
    # 0.5 mean_v 2 (mu(v + 0.1) - mu(v)) 2 sigmoid'(2 (v + 0.1)) (v + 0.1).
    hooks, actor = _shifted_sa_hooks(toy_env_id, "mse")
    obs = torch.zeros(4, 3)
    obs[:, 0] = torch.tensor([0.0, 1.0, 2.0, 3.0])
    loss = hooks.sa_regularizer(obs)(actor, torch.tensor([1, 3]))
    loss.backward()

    def sig(z: float) -> float:
        return 1.0 / (1.0 + math.exp(-z))

    def mu(v: float) -> float:
        return 2.0 * sig(2.0 * v) - 1.0

    rows = (1.0, 3.0)
    expected = 0.5 * sum((mu(v + 0.1) - mu(v)) ** 2 for v in rows) / 2
    slope = [2.0 * sig(2.0 * (v + 0.1)) * (1.0 - sig(2.0 * (v + 0.1))) * (v + 0.1) for v in rows]
    grad = 0.5 * sum(2.0 * (mu(v + 0.1) - mu(v)) * g for v, g in zip(rows, slope, strict=True)) / 2
    assert float(loss.detach()) == pytest.approx(expected, rel=1e-5)
    assert float(actor.net[0].weight.grad[0, 0]) == pytest.approx(grad, rel=1e-4)


def test_paper_presets_use_the_original_exponential_schedule_fast_ones_too():
    paper = preset("SafetyCarCircle-v0", "paper", mode="adv-mc")
    assert paper.robust.schedule == "exp"
    r = paper.robust
    final = epsilon_at(paper.epochs, r.epsilon, r.schedule, r.schedule_start, r.schedule_length)
    assert final > 0.9 * r.epsilon
    for env in ("SafetyCarRun-v0", "SafetyCarCircle-v0", "SafetyDroneRun-v0"):
        fast = preset(env, "fast", mode="adv-mc")
        r = fast.robust
        assert r.schedule == "exp"
        final = epsilon_at(fast.epochs, r.epsilon, r.schedule, r.schedule_start, r.schedule_length)
        assert final > 0.9 * r.epsilon


def test_a_schedule_ending_far_below_the_budget_warns(tmp_path, toy_env_id):
    cfg = tiny_config(
        toy_env_id,
        {"hidden": (8,)},
        steps_per_epoch=20,
        robust=RobustConfig(mode="adv-mc", schedule="linear", schedule_start=0, schedule_length=4),
    )
    with pytest.warns(UserWarning, match="ends training at epsilon 0.0125, 25% of the budget"):
        train(cfg, tmp_path / "run", progress=False)


def test_observation_normaliser_changes_after_the_update(tmp_path, toy_env_id):
    # The first update sees the statistics the rollout was collected with: the policy ratio
    # starts at 1, so a single full-batch pass is never stopped by the KL check.
    cfg = tiny_config(
        toy_env_id,
        {"hidden": (8,), "minibatch_size": None, "target_kl": 1e-6},
        epochs=2,
        steps_per_epoch=80,
        num_envs=4,
        obs_normalization=True,
    )
    run = train(cfg, tmp_path / "run", progress=False)
    assert [float(r["actor_passes"]) for r in train_metrics(run)] == [1.0, 1.0]
    # and it did change: the saved agent's statistics count both epochs' 2 x 80 observations
    from robustsafe.agent import load_agent

    norm = load_agent(run).obs_normalizer
    assert float(norm.count) == 160.0 and bool((norm.mean != 0).all())


def test_fast_attacks_every_env_where_half_was_measured_not_robust():
    # docs/usage.md: half the envs attacked in fast robust training, but every env on DroneRun
    # and AntRun (measured: half left their ADV agents unsafe); paper attacks every env.
    expected = {"CarRun": 0.5, "CarCircle": 0.5, "DroneRun": 1.0, "DroneCircle": 0.5}
    expected |= {"AntRun": 1.0, "AntCircle": 0.5}
    fractions = {
        task: preset(f"Safety{task}-v0", "fast", mode="adv-mr").robust.attacked_fraction
        for task in expected
    }
    assert fractions == expected
    assert preset("SafetyAntRun-v0", "paper", mode="adv-mr").robust.attacked_fraction == 1.0
    # FOCOPS on CarRun attacks every env (measured: half left FOCOPS(MC) unsafe on 2 of 3
    # seeds); on CarCircle it keeps the task's half, as PPOL does on both.
    focops = {
        task: preset(
            f"Safety{task}-v0", "fast", mode="adv-mc", algo="focops"
        ).robust.attacked_fraction
        for task in ("CarRun", "CarCircle")
    }
    assert focops == {"CarRun": 1.0, "CarCircle": 0.5}
    paper = preset("SafetyCarRun-v0", "paper", mode="adv-mc", algo="focops")
    assert paper.robust.attacked_fraction == 1.0


def test_fast_focops_carcircle_reaches_the_full_budget_at_epoch_100():
    # Measured (benchmarks/results/focops_probe): with the task's 75 / 150 of 150 epochs the
    # schedule reaches 0.92 of epsilon only at the last epoch and FOCOPS(MC) seeds 0 and 2 were
    # unsafe under MR; with 50 / 50 both kept every attacked cost <= 0.30. PPOL keeps the task's.
    def windows(algo):
        cfg = preset("SafetyCarCircle-v0", "fast", mode="adv-mr", algo=algo)
        return cfg.robust.schedule_start, cfg.robust.schedule_length

    assert windows("focops") == (50, 50)
    assert windows("ppol") == (50, 50)  # ADV-PPOL takes it too (the next test)
    cfg = preset("SafetyCarCircle-v0", "fast", mode="adv-mc", algo="focops")
    r = cfg.robust
    eps = [epsilon_at(n, r.epsilon, r.schedule, *windows("focops")) for n in (49, 100, 150)]
    assert r.schedule == "exp" and r.epsilon == 0.05
    assert eps[0] == 0.0 and 0.99 * 0.05 <= eps[1] < eps[2] < 0.05
    carrun = preset("SafetyCarRun-v0", "fast", mode="adv-mc", algo="focops")
    assert carrun.robust.schedule_start == 30


def test_fast_focops_saves_the_weight_average_on_carcircle_only():
    # Measured (benchmarks/results/focops_probe): the six CarCircle FOCOPS ADV trainings' 0.9
    # averages are robust on 6 of 6 against 4 of 6 for their last actors. Every mode of FOCOPS
    # on CarCircle takes it; CarRun, PPOL and the paper preset keep the last actor.
    def average(env, algo="focops", mode="vanilla", level="fast"):
        return preset(env, level, mode=mode, algo=algo).focops.actor_average

    assert average("SafetyCarCircle-v0") == average("SafetyCarCircle-v0", mode="adv-mr") == 0.9
    assert average("SafetyCarRun-v0") == 0.0
    assert average("SafetyCarCircle-v0", algo="ppol") == 0.0
    assert average("SafetyCarCircle-v0", level="paper") == 0.0


def test_fast_focops_takes_the_smaller_step_size_on_carcircle_only():
    # Measured (benchmarks/results/focops_probe, "a smaller step size"): FOCOPS-vanilla with
    # actor lr 1e-4 met the CarCircle reward target where 3e-4 did not. Every mode of FOCOPS on
    # CarCircle under fast but the adv-* ones, whose FOCOPS(MC) was robust on more seeds with
    # 3e-4 ("which step size for the ADV modes"); CarRun, the paper preset and PPOL keep 3e-4.
    def lr(env, algo="focops", mode="vanilla", level="fast"):
        return preset(env, level, mode=mode, algo=algo).focops.actor_lr

    assert lr("SafetyCarCircle-v0") == lr("SafetyCarCircle-v0", mode="random") == 1e-4
    assert lr("SafetyCarCircle-v0", mode="sa-mad") == 1e-4
    assert lr("SafetyCarCircle-v0", mode="adv-mc") == 3e-4
    assert lr("SafetyCarCircle-v0", mode="adv-mr") == 3e-4
    assert lr("SafetyCarRun-v0") == lr("SafetyCarCircle-v0", level="paper") == 3e-4
    assert lr("SafetyCarCircle-v0", algo="ppol") == 3e-4


def test_fast_focops_centres_the_cost_advantage_without_scaling_it_on_carrun_only():
    # Measured (benchmarks/results/focops_probe/carrun-nulr): FOCOPS-vanilla reached the speed
    # criterion in 44k-56k env steps against 72k-136k on seeds 0-4. Every mode of FOCOPS on
    # CarRun under fast; CarCircle, the paper preset and PPOL keep their own.
    def scaled(env, mode="vanilla", level="fast"):
        return preset(env, level, mode=mode, algo="focops").focops.normalize_cost_advantage

    assert not scaled("SafetyCarRun-v0") and not scaled("SafetyCarRun-v0", mode="adv-mr")
    assert scaled("SafetyCarCircle-v0") and scaled("SafetyCarRun-v0", level="paper")
    assert preset("SafetyCarRun-v0", "fast", algo="ppol").focops.normalize_cost_advantage


def test_fast_adv_ppol_on_carcircle_takes_focops_schedule_and_the_weight_average():
    # Adopted by a rule fixed first (benchmarks/results/recipe/carcircle-adv-schedule-average):
    # the two together robust on 8 of 10 ADV-PPOL runs. Only PPOL's adv-* modes on CarCircle
    # under fast: its other modes, other tasks and the paper preset keep the task's schedule
    # and the last actor.
    def settings(env="SafetyCarCircle-v0", mode="adv-mc", level="fast"):
        cfg = preset(env, level, mode=mode, algo="ppol")
        return cfg.robust.schedule_start, cfg.robust.schedule_length, cfg.ppo.actor_average

    for mode in ("adv-mc", "adv-mr", "adv-mix:0.5"):
        assert settings(mode=mode) == (50, 50, 0.9)
    for mode in ("vanilla", "random", "sa-mc"):
        assert settings(mode=mode) == (75, 150, 0.0)
    assert settings("SafetyCarRun-v0") == (30, 45, 0.0)
    assert settings(level="paper") == (52, 100, 0.0)  # the original's 50 / 100, + 2 (its lag)
    # the other learners' ADV runs keep PPOL's option off (FOCOPS has its own)
    for algo in ("focops", "sac-lag", "cvpo"):
        assert preset("SafetyCarCircle-v0", "fast", mode="adv-mc", algo=algo).ppo.actor_average == 0


def test_fast_adds_the_survival_bonus_on_dronecircle_only():
    # docs/deviations.md: DroneCircle's drones flipped early without it (vanilla target met on
    # 1 of 4 runs), with 0.5 on 3 of 3; every learner and mode takes the task's value, and the
    # paper preset keeps the env's reward.
    tasks = ["CarRun", "CarCircle", "DroneRun", "DroneCircle", "AntRun", "AntCircle"]
    for algo in ("ppol", "focops", "sac-lag", "cvpo"):
        for mode in ("vanilla", "adv-mc"):
            bonus = {
                t: preset(f"Safety{t}-v0", "fast", mode=mode, algo=algo).survival_bonus
                for t in tasks
            }
            assert bonus == {t: (0.5 if t == "DroneCircle" else 0.0) for t in tasks}
            assert preset("SafetyDroneCircle-v0", "paper", mode=mode, algo=algo).survival_bonus == 0


def test_fast_gives_sa_ppol_no_survival_bonus_and_a_set_still_adds_one():
    # With the bonus DroneCircle SA-PPOL(MC) / (MR) seed 0 learned to hover (docs/deviations.md).
    for algo in ("ppol", "focops"):
        for mode in ("sa-mad", "sa-mc", "sa-mr"):
            assert preset("SafetyDroneCircle-v0", "fast", mode=mode, algo=algo).survival_bonus == 0
            cfg = resolve(
                "SafetyDroneCircle-v0", "fast", mode=mode, algo=algo, sets=["survival_bonus=0.5"]
            )
            assert cfg.survival_bonus == 0.5
    for mode in ("vanilla", "random", "adv-mc", "adv-mr", "adv-mix:0.5"):
        assert preset("SafetyDroneCircle-v0", "fast", mode=mode).survival_bonus == 0.5
