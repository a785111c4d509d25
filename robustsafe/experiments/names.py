"""The paper's names of learners and training modes, and the order of its tables' rows.

``method_name`` gives a run's row name (``adv-mc`` -> ``ADV-PPOL(MC)``, FOCOPS' ``vanilla`` ->
``FOCOPS-vanilla``, one SAC-Lag row per entropy weight); ``env_key``, ``algo_key`` and
``method_key`` sort rows as the paper does: its six tasks Run first, Car / Drone / Ant; PPO-
Lagrangian's rows, then FOCOPS', SAC-Lag's (entropy weights from the largest down) and CVPO's;
the seven methods of Table 1, then MC/MR mixtures by weight, then anything else.
"""

from __future__ import annotations

import math

_METHOD_NAMES = {
    "vanilla": "PPOL-vanilla",
    "random": "PPOL-random",
    "sa-mad": "SA-PPOL(MAD)",
    "sa-mc": "SA-PPOL(MC)",
    "sa-mr": "SA-PPOL(MR)",
    "adv-mc": "ADV-PPOL(MC)",
    "adv-mr": "ADV-PPOL(MR)",
}
_METHOD_ORDER = tuple(_METHOD_NAMES)  # then adv-mix:W by W, then anything else
# Other learners' rows, after PPO-Lagrangian's: the paper's appendix names (Table
# "exp-focops-append": FOCOPS-vanilla, FOCOPS(MC), FOCOPS(MR); "exp-cvpo-append": CVPO).
ALGO_NAMES = {"ppol": "PPOL", "focops": "FOCOPS", "sac-lag": "SAC-Lag", "cvpo": "CVPO"}
_ALGO_ORDER = tuple(ALGO_NAMES)
_PAPER_ENV_ORDER = tuple(
    f"Safety{robot}{task}-v0" for task in ("Run", "Circle") for robot in ("Car", "Drone", "Ant")
)

LEARNED_ALPHA = "learned"  # ``sac-lag:learned``: the group of SAC-Lag runs with sac.learn_alpha


def method_name(mode: str, algo: str = "ppol") -> str:
    """The paper's name of a learner's training mode (``adv-mix:0.5`` -> ``ADV-PPOL(mix 0.5)``;
    FOCOPS: ``vanilla`` -> ``FOCOPS-vanilla``, ``adv-mc`` -> ``FOCOPS(MC)``)."""
    if algo.startswith("sac-lag:"):  # the appendix's rows per entropy weight
        alpha = algo.split(":", 1)[1]
        learner = "SAC-Lag(alpha learned)" if alpha == LEARNED_ALPHA else f"SAC-Lag(alpha={alpha})"
        return learner if mode == "vanilla" else _other_method_name(mode, learner)
    if algo != "ppol":
        return _other_method_name(mode, ALGO_NAMES.get(algo, algo))
    if mode in _METHOD_NAMES:
        return _METHOD_NAMES[mode]
    if mode.startswith("adv-mix:"):
        return f"ADV-PPOL(mix {mode.split(':', 1)[1]})"
    return mode


def _other_method_name(mode: str, learner: str) -> str:
    """FOCOPS-vanilla, FOCOPS-random, FOCOPS(MC), FOCOPS(MR), FOCOPS(mix 0.5), SA-FOCOPS(MC)."""
    if mode in ("vanilla", "random"):
        return f"{learner}-{mode}"
    if mode.startswith("adv-mix:"):
        return f"{learner}(mix {mode.split(':', 1)[1]})"
    if mode.startswith("adv-"):
        return f"{learner}({mode.split('-', 1)[1].upper()})"
    if mode.startswith("sa-"):
        return f"SA-{learner}({mode.split('-', 1)[1].upper()})"
    return f"{learner} {mode}"


def learner_group(algo: str, alpha: object, learned: object) -> str:
    """The learner as the tables and figures group runs: its name, and SAC-Lag's entropy weight
    (``sac-lag:0.1``; ``sac-lag:learned`` with a learned weight): one group per weight."""
    if algo != "sac-lag":
        return algo
    if learned is True:
        return f"sac-lag:{LEARNED_ALPHA}"
    if isinstance(alpha, int | float) and not isinstance(alpha, bool):
        return f"sac-lag:{alpha:g}"
    return algo


def known_algo_form(algo: str) -> bool:
    """A learner name, or ``sac-lag:<entropy weight>`` / ``sac-lag:learned`` (the table's own
    grouping of SAC-Lag runs)."""
    base, sep, alpha = algo.partition(":")
    if not sep:
        return bool(base)
    if base != "sac-lag":
        return False
    if alpha == LEARNED_ALPHA:
        return True
    try:
        return math.isfinite(float(alpha))
    except ValueError:
        return False


def algo_key(algo: str) -> tuple:
    """Sort key of a row group's learner (``ppol``, ``focops``, ``sac-lag:<alpha>``, ``cvpo``)."""
    base, _, alpha = algo.partition(":")
    if base in _ALGO_ORDER:  # SAC-Lag's alphas from the largest down, as in the appendix
        if alpha == LEARNED_ALPHA:  # after the fixed weights
            return (_ALGO_ORDER.index(base), math.inf, "")
        return (_ALGO_ORDER.index(base), -float(alpha) if alpha else 0.0, "")
    return (len(_ALGO_ORDER), 0.0, algo)


def method_key(mode: str) -> tuple:
    """Sort key of a training mode: Table 1's seven, then ``adv-mix:W`` by W, then the rest."""
    if mode in _METHOD_ORDER:
        return (0, _METHOD_ORDER.index(mode), 0.0, mode)
    if mode.startswith("adv-mix:"):
        try:
            w = float(mode.split(":", 1)[1])
        except ValueError:
            w = math.inf
        return (1, 0, w, mode)
    return (2, 0, 0.0, mode)


def env_key(env_id: str) -> tuple:
    """Sort key of an env id: the paper's six tasks in its order, then the rest by name."""
    if env_id in _PAPER_ENV_ORDER:
        return (0, _PAPER_ENV_ORDER.index(env_id), env_id)
    return (1, 0, env_id)


# The attackers' names in tables and figures, in the paper's order.
ATTACK_NAMES = {
    "none": "Natural",
    "random": "Random",
    "mad": "MAD",
    "amad": "AMAD",
    "mc": "MC",
    "mr": "MR",
    "minr": "MinR",
}


def attack_name(key: str) -> str:
    """``mc`` -> ``MC``, ``mix:0.5`` -> ``Mix 0.5`` (0.5 x MC + 0.5 x MR)."""
    if key in ATTACK_NAMES:
        return ATTACK_NAMES[key]
    if key.startswith("mix:"):
        return f"Mix {key.split(':', 1)[1]}"
    return key


def attack_sort_key(key: str) -> tuple:
    """The paper's attackers in their order, then the mixtures by weight, then a user's own."""
    order = list(ATTACK_NAMES)
    if key in order:
        return (0, order.index(key), 0.0, key)
    if key.startswith("mix:"):
        try:
            return (1, 0, float(key.split(":", 1)[1]), key)
        except ValueError:
            pass
    return (2, 0, 0.0, key)


def paper_attacker(key: str) -> bool:
    """One of the paper's attackers (a column of Table 1 or of the appendix tables), not a
    user's own (``robustsafe.attacks.register_attacker``)."""
    return key in ATTACK_NAMES or key.startswith("mix:")
