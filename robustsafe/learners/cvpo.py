"""CVPO: Constrained Variational Policy Optimization (Liu et al. 2022, ICML; the paper's
appendix C, Table "exp-cvpo-append").

Safe RL as inference, in two steps per gradient step on a replay batch of states s_1..s_B.

E-step (CVPO section 4.1, Eq. 5-8; Theorem 1). Sample K actions a_k ~ pi_old(.|s) from the
target actor and score them with the target critics, Q_r (min of two heads) and Q_c. The best
non-parametric policy q under the cost constraint E_q[Q_c] <= qc_thres and the trust region
KL(q || pi_old) <= eps is

    q(a_k|s) = softmax_k( (Q_r(s, a_k) - lambda Q_c(s, a_k)) / eta )

with (eta, lambda) the minimiser over eta > 0, lambda >= 0 of the convex dual

    g(eta, lambda) = eta eps + lambda qc_thres
                     + eta mean_s log mean_k exp((Q_r - lambda Q_c) / eta).

At the minimum dg/deta = 0 is KL(q || pi_old) = eps, and dg/dlambda = 0 is E_q[Q_c] = qc_thres
(or lambda = 0 with E_q[Q_c] < qc_thres): the constraints hold with complementary slackness.
qc_thres is the per-episode cost limit as a Q bound (``sac_lag.qc_threshold``). The duals are
solved on every batch (the CVPO code's); with ``dual_lr`` > 0 they take one Adam step on g per
batch instead (FSRL's), so lambda moves smoothly rather than to each batch's own optimum. The
states s_i are the replay batch's (the CVPO code's), or with ``estep_recent`` > 0 a batch drawn
from the newest transitions only: the replay's old states (an early policy's, often unsafe ones)
keep the mean Q_c over the whole replay above qc_thres long after the policy's own episodes are
safe, and lambda then stays at its bound. Measured on CarRun it does not help: the critics still
fit the whole replay with the current actor's a', so the old states' Q_c grows once the policy
step leaves them, and pulls the newest states' Q_c up with it (benchmarks/results/cvpo_recent).

M-step (CVPO section 4.2, Eq. 9-10; MPO's decoupled trust regions, Abdolmaleki et al. 2018).
Fit the parametric policy to q by weighted maximum likelihood, the mean and the covariance
each in its own trust region around pi_old = N(mu_o, sigma_o):

    L(theta) = mean_{s,k} q_k [log N(u_k; mu_theta, sigma_o) + log N(u_k; mu_o, sigma_theta)]
    KL_mu    = mean_s KL(N(mu_o, sigma_o) || N(mu_theta, sigma_o))
    KL_sigma = mean_s KL(N(mu_o, sigma_o) || N(mu_o, sigma_theta))
    alpha_mu <- clip(alpha_mu - lr_mu (eps_mu - KL_mu), 0, alpha_mu_max)   (same for sigma)
    loss     = -(L + alpha_mu (eps_mu - KL_mu) + alpha_sigma (eps_sigma - KL_sigma))

The policy is the tanh-squashed diagonal Gaussian of SAC (``nets.SquashedGaussianActor``), so
the likelihood is taken on the pre-tanh samples u_k (the tanh Jacobian does not depend on
theta) and the deterministic action is the squashed mean. The mean over (s, k) (not a sum over
k) is the CVPO code's scale, so its multiplier caps carry over.

Critics (CVPO section 4.3): y_r = r + gamma (1 - d) min_i Q'_r,i(s', a'), y_c = c + gamma (1 -
d) Q'_c(s', a'), a' ~ pi(.|s') of the current actor; polyak-averaged targets for both critics
and for the actor (pi_old). As for SAC-Lag, the replay holds true observations (``n_step``-step
transitions: ``sac_lag``) and the critics are ``critics.QCritics``, the attackers' critics too.

Adversarial training (``update``'s ``actor_obs``; s~ the attacker's observation of s for the
batch's attacked rows, s~ = s for the others): the policy improvement step of the agent as the
attacker lets it see the world. The E-step samples a_k ~ pi_old(.|s~), the actions the policy
takes on what it observes, and scores them with the critics at the true state, Q(s, a_k); the
M-step fits pi_theta(.|s~) to that q within trust regions around pi_old(.|s~). Everything
stays CVPO on the pair (s~, s): q reweights pi_old's own samples, so the M-step's steps are as
small as in clean training. (Fitting pi(.|s~) to a q(.|s) sampled at the true state, our first
try, asked the policy to jump the whole gap the attack opens within one step: with CVPO's
narrow policies the attacked rows' likelihood gradients, (u - mu) / sigma^2, dwarfed the clean
rows' and the training collapsed; benchmarks/results/offpolicy_adv. This design:
benchmarks/results/offpolicy_adv2.)
"""

from __future__ import annotations

import math

import numpy as np
import torch

from robustsafe.config import CVPOConfig
from robustsafe.critics import QCritics, _polyak
from robustsafe.learners.base import ActorObs, OffPolicyNetworks, frozen_copy
from robustsafe.learners.sac_lag import critic_step, qc_threshold
from robustsafe.nets import SquashedGaussianActor, ValueCritic

ETA_MIN = 1e-6  # eta > 0: the dual's lower bound (the CVPO code's)
ROWS_PER_BLOCK = 2_400  # the E-step scores K B (state, action) rows in blocks of this many

# ----------------------------------------------------------------------------- E-step


def estep_dual(
    x: np.ndarray, q_r: np.ndarray, q_c: np.ndarray, eps_kl: float, qc_thres: float
) -> tuple[float, np.ndarray]:
    """g(eta, lambda) and its gradient; ``q_r``, ``q_c`` are ``(K, B)`` (samples, states).
    Log-sum-exp with the per-state maximum m subtracted: eta log mean exp(z / eta) = m + eta
    log mean exp((z - m) / eta)."""
    eta, lam = float(x[0]), float(x[1])
    z = q_r - lam * q_c
    m = z.max(axis=0)
    e = np.exp((z - m) / eta)
    log_s = np.log(e.mean(axis=0))
    w = e / e.sum(axis=0)  # q(a_k|s)
    g = eta * eps_kl + lam * qc_thres + float(np.mean(m)) + eta * float(np.mean(log_s))
    d_eta = eps_kl + float(np.mean(log_s)) - float(np.mean((w * (z - m)).sum(axis=0))) / eta
    d_lam = qc_thres - float(np.mean((w * q_c).sum(axis=0)))
    return g, np.array([d_eta, d_lam])


def estep_dual_hessian(x: np.ndarray, q_r: np.ndarray, q_c: np.ndarray) -> np.ndarray:
    """The 2 x 2 Hessian of g in (eta, lambda), from the per-state moments under q (z = Q_r -
    lambda Q_c): d2g/deta2 = mean_s Var_q(z) / eta^3, d2g/dlambda2 = mean_s Var_q(Q_c) / eta,
    d2g/deta dlambda = mean_s Cov_q(z, Q_c) / eta^2 (positive semi-definite: g is convex)."""
    eta, lam = float(x[0]), float(x[1])
    z = q_r - lam * q_c
    zc = z - z.max(axis=0)
    e = np.exp(zc / eta)
    w = e / e.sum(axis=0)
    dz = zc - (w * zc).sum(axis=0)  # z minus its mean under q (the shift cancels)
    dc = q_c - (w * q_c).sum(axis=0)
    var_z = float(np.mean((w * dz * dz).sum(axis=0)))
    var_c = float(np.mean((w * dc * dc).sum(axis=0)))
    cov = float(np.mean((w * dz * dc).sum(axis=0)))
    return np.array([[var_z / eta**3, cov / eta**2], [cov / eta**2, var_c / eta]])


def solve_estep(
    q_r: np.ndarray,
    q_c: np.ndarray,
    eps_kl: float,
    qc_thres: float,
    init: tuple[float, float],
    dual_max: float = 1e5,
    iters: int = 20,
    gtol: float = 1e-9,
) -> tuple[float, float]:
    """argmin g over eta in [1e-6, dual_max], lambda in [0, dual_max], float64, warm-started at
    ``init``: projected Newton steps (``estep_dual_hessian``) on the variables not held at a
    bound, each with a backtracking (Armijo) line search, until the projected gradient is below
    ``gtol`` (or ``iters`` steps). In pure numpy on two variables: no BLAS call (SciPy's L-BFGS-B
    spent milliseconds per iteration in its threaded BLAS on a busy machine)."""
    q_r, q_c = np.asarray(q_r, np.float64), np.asarray(q_c, np.float64)
    lo, hi = np.array([ETA_MIN, 0.0]), np.array([dual_max, dual_max])
    x = np.clip(np.asarray(init, np.float64), lo, hi)
    g, grad = estep_dual(x, q_r, q_c, eps_kl, qc_thres)
    for _ in range(iters):
        # a variable at a bound whose gradient points out of the box stays there
        held = ((x <= lo) & (grad > 0)) | ((x >= hi) & (grad < 0))
        if np.all(np.abs(grad[~held]) <= gtol):
            break
        for step in _descent_steps(estep_dual_hessian(x, q_r, q_c), grad, held):
            step = step * _step_scale(x, step)
            if -float(grad @ step) <= 1e-15 * (1.0 + abs(g)):
                continue  # below the rounding of g
            t = 1.0
            while t >= 1e-12:
                x_new = np.clip(x + t * step, lo, hi)
                g_new, grad_new = estep_dual(x_new, q_r, q_c, eps_kl, qc_thres)
                if g_new <= g + 1e-4 * float(grad @ (x_new - x)):
                    break
                t *= 0.5
            else:
                continue  # no decrease along this step: try the next
            break
        else:
            break  # no descent left at float64 precision: converged
        x, g, grad = x_new, g_new, grad_new
    return float(x[0]), float(x[1])


def _step_scale(x: np.ndarray, step: np.ndarray) -> float:
    """At most 1: shrinks ``step`` so that eta moves by at most a factor 10 either way and
    lambda grows by at most 9 max(lambda, 1); the quadratic model is poor far out (near
    eta -> 0 the weights are one-hot and the Hessian vanishes)."""
    eta, lam = float(x[0]), float(x[1])
    scale = 1.0
    if step[0] < -0.9 * eta:
        scale = min(scale, 0.9 * eta / -step[0])
    if step[0] > 9.0 * eta:
        scale = min(scale, 9.0 * eta / step[0])
    if step[1] > 9.0 * max(lam, 1.0):
        scale = min(scale, 9.0 * max(lam, 1.0) / step[1])
    return scale


def _descent_steps(hess: np.ndarray, grad: np.ndarray, held: np.ndarray) -> list[np.ndarray]:
    """Steps to try, zero on the held variables: Newton's -H^-1 grad where H on the free
    variables is well conditioned, then the diagonally scaled gradient step (H is singular
    where Q_c and Q_r are affinely related within every state)."""
    free = ~held
    (a, b), (_, d) = hess
    steps = []
    if free.all() and a > 0 and d > 0 and a * d - b * b > 1e-10 * a * d:
        det = a * d - b * b
        steps.append(
            np.array([-(d * grad[0] - b * grad[1]) / det, -(a * grad[1] - b * grad[0]) / det])
        )
    diag = np.diag(hess)
    scaled = np.where(diag > 1e-300, -grad / np.where(diag > 1e-300, diag, 1.0), -grad)
    steps.append(np.where(free, scaled, 0.0))
    return steps


def dual_adam_step(
    x: np.ndarray,
    grad: np.ndarray,
    moments: tuple[np.ndarray, np.ndarray, int],
    lr: float,
    lo: np.ndarray,
    hi: np.ndarray,
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, int]]:
    """One Adam step on the E-step duals x = (eta, lambda) down ``grad`` (torch.optim.Adam's
    rule with its default betas 0.9 / 0.999 and eps 1e-8), then x clipped to [lo, hi].
    ``moments`` = (m, v, t), t the number of steps taken before this one. Pure."""
    m, v, t = moments
    t += 1
    m = 0.9 * m + 0.1 * grad
    v = 0.999 * v + 0.001 * grad * grad
    m_hat, v_hat = m / (1.0 - 0.9**t), v / (1.0 - 0.999**t)
    x = np.clip(x - lr * m_hat / (np.sqrt(v_hat) + 1e-8), lo, hi)
    return x, (m, v, t)


def estep_weights(q_r: np.ndarray, q_c: np.ndarray, eta: float, lam: float) -> np.ndarray:
    """q(a_k|s) = softmax over k of (Q_r - lambda Q_c) / eta, shape ``(K, B)``."""
    z = (np.asarray(q_r, np.float64) - lam * np.asarray(q_c, np.float64)) / eta
    e = np.exp(z - z.max(axis=0))
    return e / e.sum(axis=0)


def sample_kl(w: np.ndarray) -> float:
    """KL(q || pi_old) of the E-step: mean_s sum_k q_k log(K q_k) (the a_k are pi_old's)."""
    K = w.shape[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(w > 0, w * np.log(K * w), 0.0)
    return float(terms.sum(axis=0).mean())


# ----------------------------------------------------------------------------- M-step


def gaussian_log_prob(x: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """log N(x; mean, std^2) per element, -(x - mean)^2 / (2 std^2) - log std - log sqrt(2 pi):
    ``torch.distributions.Normal(mean, std).log_prob(x)``'s operations in its order (the same
    bits), without building the distribution and checking its arguments every M-step
    iteration."""
    return -((x - mean) ** 2) / (2 * std**2) - std.log() - math.log(math.sqrt(2 * math.pi))


def mstep_terms(
    u: torch.Tensor,
    w: torch.Tensor,
    mu: torch.Tensor,
    log_std: torch.Tensor,
    mu_old: torch.Tensor,
    log_std_old: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(L, KL_mu, KL_sigma) of the module text: ``u`` is ``(K, B, d)``, ``w`` ``(K, B)``, the
    Gaussians' parameters ``(B, d)`` (``*_old`` without gradient)."""
    std, std_old = log_std.exp(), log_std_old.exp()
    logp_mean = gaussian_log_prob(u, mu, std_old).sum(-1)  # new mean, old std
    logp_std = gaussian_log_prob(u, mu_old, std).sum(-1)  # old mean, new std
    loglik = (w * (logp_mean + logp_std)).mean()
    kl_mu = ((mu - mu_old) ** 2 / (2.0 * std_old**2)).sum(-1).mean()
    kl_std = (log_std - log_std_old + std_old**2 / (2.0 * std**2) - 0.5).sum(-1).mean()
    return loglik, kl_mu, kl_std


def mstep_loss(
    loglik: torch.Tensor,
    kl_mu: torch.Tensor,
    kl_std: torch.Tensor,
    alpha_mu: float,
    alpha_std: float,
    eps_mu: float,
    eps_std: float,
) -> torch.Tensor:
    """-(L + alpha_mu (eps_mu - KL_mu) + alpha_sigma (eps_sigma - KL_sigma))."""
    return -(loglik + alpha_mu * (eps_mu - kl_mu) + alpha_std * (eps_std - kl_std))


def multiplier_step(alpha: float, kl: float, eps: float, lr: float, alpha_max: float) -> float:
    """Gradient descent on alpha (eps - KL), clipped to [0, alpha_max]: alpha grows while the
    KL exceeds its bound."""
    return float(min(max(alpha - lr * (eps - kl), 0.0), alpha_max))


# ----------------------------------------------------------------------------- the learner


class CVPO(OffPolicyNetworks):
    """An ``OffPolicyLearner`` (``robustsafe.learners.base``)."""

    def __init__(
        self,
        actor: SquashedGaussianActor,
        critics: QCritics,
        v_reward: ValueCritic,
        v_cost: ValueCritic,
        cfg: CVPOConfig,
        obs_dim: int,
        act_dim: int,
        episode_steps: int,
    ) -> None:
        self.cfg = cfg
        super().__init__(actor, critics, v_reward, v_cost, cfg, obs_dim, act_dim)
        self.target_actor = frozen_copy(actor)  # pi_old
        self.qc_threshold = qc_threshold(cfg.cost_limit, cfg.gamma, episode_steps)
        self.eta = self.lam = float(cfg.dual_init)
        self.dual_moments = (np.zeros(2), np.zeros(2), 0)  # Adam's, with cfg.dual_lr > 0
        self.alpha_mean = self.alpha_std = 0.0

    @property
    def multiplier(self) -> float:
        return self.lam

    def end_epoch(self, mean_episode_cost: float | None) -> None:
        """Nothing: the E-step's dual carries the cost constraint, per gradient step."""

    def update(
        self,
        batch: dict[str, np.ndarray],
        generator: torch.Generator,
        actor_obs: ActorObs | None = None,
    ) -> dict[str, float]:
        """One step: critics, E-step, ``mstep_iters`` M-step iterations, then the targets.
        ``actor_obs`` (adversarial training): what the policy sees of the batch's true states;
        pi_old and pi_theta act on it, the critics score at the true states."""
        b = {k: torch.as_tensor(v) for k, v in batch.items()}
        m = {"loss_q": self._critic_step(b, generator)}
        states = b["obs"]
        if self.cfg.estep_recent > 0:  # the policy step's own states, the newest ones
            newest = self.replay.newest_obs(len(states), self.cfg.estep_recent, generator)
            states = torch.as_tensor(newest)
        seen = states if actor_obs is None else actor_obs(states)
        w, u, mu_old, log_std_old, em = self._estep(states, seen, generator)
        m.update(em)
        m.update(self._mstep(seen, w, u, mu_old, log_std_old))
        self.update_target(self.cfg.polyak)
        _polyak(self.target_actor, self.actor, self.cfg.polyak)
        return m

    def _critic_step(self, b: dict[str, torch.Tensor], generator: torch.Generator) -> float:
        # plain targets (no entropy term), a' from the current actor (CVPO section 4.3)
        return critic_step(
            self.actor,
            self.critics,
            self.target,
            self.critic_optim,
            b,
            generator,
            self.cfg.gamma,
            0.0,
        )

    @torch.no_grad()
    def _estep(self, obs: torch.Tensor, seen: torch.Tensor, generator: torch.Generator):
        """K actions per state from pi_old(.|seen), their target Q values at the true ``obs``,
        the dual and q's weights."""
        K, (B, obs_dim) = self.cfg.sample_actions, obs.shape
        mu_old, log_std_old = self.target_actor.gaussian(seen)
        noise = torch.randn((K, *mu_old.shape), generator=generator, dtype=mu_old.dtype)
        u = mu_old + log_std_old.exp() * noise  # (K, B, d) pre-tanh
        flat_obs = obs.expand(K, B, obs_dim).reshape(K * B, obs_dim)
        flat_act = self.target_actor.squash(u).reshape(K * B, -1)
        # Scored in blocks of rows: about a third less time than one call on all K B rows
        # (smaller intermediates; benchmarks/cvpo_update_speed.py). Rows are independent, so
        # the values are one call's (bit for bit here: the benchmark's --digest).
        rows = list(
            zip(flat_obs.split(ROWS_PER_BLOCK), flat_act.split(ROWS_PER_BLOCK), strict=True)
        )

        def score(q: torch.nn.Module) -> np.ndarray:
            return torch.cat([q(o, a) for o, a in rows]).reshape(K, B).double().numpy()

        q_r, q_c = score(self.target.q_reward), score(self.target.q_cost)
        cfg = self.cfg
        if cfg.dual_lr > 0:  # one step from the previous duals (FSRL's)
            x = np.array([self.eta, self.lam])
            _, grad = estep_dual(x, q_r, q_c, cfg.estep_kl, self.qc_threshold)
            lo, hi = np.array([ETA_MIN, 0.0]), np.full(2, cfg.dual_max)
            x, self.dual_moments = dual_adam_step(x, grad, self.dual_moments, cfg.dual_lr, lo, hi)
            self.eta, self.lam = float(x[0]), float(x[1])
        else:  # solved, warm-started at the previous batch's solution
            init = (self.eta, self.lam)
            self.eta, self.lam = solve_estep(
                q_r, q_c, cfg.estep_kl, self.qc_threshold, init, cfg.dual_max, cfg.dual_iters
            )
        w = estep_weights(q_r, q_c, self.eta, self.lam)
        metrics = {
            "q_reward": float(q_r.mean()),
            "q_cost": float(q_c.mean()),  # under pi_old
            "q_cost_estep": float((w * q_c).sum(axis=0).mean()),  # under q
            "eta": self.eta,
            "kl_estep": sample_kl(w),
        }
        return torch.as_tensor(w, dtype=torch.float32), u, mu_old, log_std_old, metrics

    def _mstep(self, obs, w, u, mu_old, log_std_old) -> dict[str, float]:
        cfg = self.cfg
        for _ in range(cfg.mstep_iters):
            mu, log_std = self.actor.gaussian(obs)
            loglik, kl_mu, kl_std = mstep_terms(u, w, mu, log_std, mu_old, log_std_old)
            kl_m, kl_s = float(kl_mu.detach()), float(kl_std.detach())
            self.alpha_mean = multiplier_step(
                self.alpha_mean, kl_m, cfg.kl_mean, cfg.alpha_mean_lr, cfg.alpha_mean_max
            )
            self.alpha_std = multiplier_step(
                self.alpha_std, kl_s, cfg.kl_std, cfg.alpha_std_lr, cfg.alpha_std_max
            )
            loss = mstep_loss(
                loglik, kl_mu, kl_std, self.alpha_mean, self.alpha_std, cfg.kl_mean, cfg.kl_std
            )
            self.actor_optim.zero_grad(set_to_none=True)
            loss.backward()
            if cfg.actor_max_grad_norm is not None:
                torch.nn.utils.clip_grad_norm_(self.actor.parameters(), cfg.actor_max_grad_norm)
            self.actor_optim.step()
        return {
            "loss_pi": float(loss.detach()),
            "loglik": float(loglik.detach()),
            "kl_mean": kl_m,
            "kl_std": kl_s,
            "alpha_mean": self.alpha_mean,
            "alpha_std": self.alpha_std,
        }

    def state_dict(self) -> dict:
        m, v, t = self.dual_moments
        return {
            **self.networks_state(),
            "target_actor": self.target_actor.state_dict(),
            "duals": [self.eta, self.lam, self.alpha_mean, self.alpha_std],
            "dual_moments": [*m.tolist(), *v.tolist(), t],
        }

    def load_state_dict(self, d: dict) -> None:
        self.load_networks_state(d)
        self.target_actor.load_state_dict(d["target_actor"])
        self.eta, self.lam, self.alpha_mean, self.alpha_std = (float(x) for x in d["duals"])
        if "dual_moments" in d:  # states saved before cfg.dual_lr existed have none (all 0)
            moments = d["dual_moments"]
            self.dual_moments = (np.array(moments[:2]), np.array(moments[2:4]), int(moments[4]))
