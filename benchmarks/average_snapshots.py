"""An on-policy run's agent with its actor replaced by a Polyak average of its per-epoch actors.

The evaluation protocol plays the last epoch's actor. A learner whose cost swings from one
epoch to the next (FOCOPS on CarCircle) may be saved on a swing. For PPO-Lagrangian and FOCOPS
runs. This reads a run's
per-epoch snapshots (``checkpoints/agent_epoch_NNNN.pt``, kept with ``checkpoint_every`` 1) and
writes an agent file whose actor is the average taken once per epoch from the first snapshot,

    avg_1 = actor_1,   avg_e = RHO avg_(e-1) + (1 - RHO) actor_e,

with everything else (value critics, the attackers' Q critics) the last snapshot's and the config
saying ``ppo.actor_average: RHO`` (``focops.actor_average`` for FOCOPS): the same weights, bit
for bit, as a training with ``--set ppo.actor_average=RHO`` (``focops.``) saves (the average
does not change the training), from a run trained without it.
Evaluate the file with ``robustsafe evaluate --run FILE``. The run itself is not touched.

    python benchmarks/average_snapshots.py runs/A/SafetyCarCircle-v0/focops-adv-mr/seed0 \\
        --rho 0.9 --out runs/avg/focops-adv-mr-s0.pt
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import torch

from robustsafe.agent import AGENT_FORMAT, load_agent
from robustsafe.critics import _polyak
from robustsafe.runstate import atomic_torch_save, safe_torch_load

_SNAPSHOT = re.compile(r"agent_epoch_(\d+)\.pt$")
# The config section whose ``actor_average`` the option is, per on-policy learner.
_AVERAGE_SECTION = {"ppol": "ppo", "focops": "focops"}


def snapshots(run_dir: Path) -> list[Path]:
    """The run's per-epoch snapshots in epoch order; an error unless they run 1, 2, ..., E."""
    found = sorted(
        (int(m.group(1)), p)
        for p in (run_dir / "checkpoints").glob("agent_epoch_*.pt")
        if (m := _SNAPSHOT.search(p.name))
    )
    epochs = [e for e, _ in found]
    if not epochs or epochs != list(range(1, len(epochs) + 1)):
        raise SystemExit(
            f"{run_dir}: needs a snapshot for every epoch from 1 (checkpoint_every 1); "
            f"found epochs {epochs[:3]}...{epochs[-3:]}"
        )
    return [p for _, p in found]


def averaged_actor_state(paths: list[Path], rho: float) -> dict[str, torch.Tensor]:
    """The actor weights ``actor_average=rho`` would have saved at the last snapshot:
    the first snapshot's actor, then ``_polyak`` (the learner's own step) with each next one.
    Buffers (the action bounds) are the last snapshot's."""
    if not 0.0 < rho < 1.0:
        raise SystemExit(f"--rho must be in (0, 1), got {rho}")
    avg = load_agent(paths[0]).actor
    for p in paths[1:]:
        _polyak(avg, load_agent(p).actor, rho)
    state = load_agent(paths[-1]).actor.state_dict()
    state.update({k: v.detach().clone() for k, v in avg.named_parameters()})
    return state


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", type=Path, help="a run directory with per-epoch snapshots")
    ap.add_argument("--rho", type=float, default=0.9, help="per-epoch averaging rate, in (0, 1)")
    ap.add_argument("--out", type=Path, required=True, help="the agent file to write")
    ap.add_argument("--force", action="store_true", help="replace --out if it exists")
    args = ap.parse_args()
    if args.out.exists() and not args.force:
        raise SystemExit(f"{args.out} exists; pass --force to replace it")
    paths = snapshots(args.run)
    last = safe_torch_load(paths[-1])
    if not isinstance(last, dict) or last.get("format") != AGENT_FORMAT:
        raise SystemExit(f"{paths[-1]} is not a RobustSafe agent file")
    section = _AVERAGE_SECTION.get(last["config"].get("algo", "ppol"))
    if section is None:
        raise SystemExit(f"{args.run}: a PPO-Lagrangian or FOCOPS run is needed")
    last["actor"] = averaged_actor_state(paths, args.rho)
    last["config"][section]["actor_average"] = args.rho  # the file says what it holds
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_torch_save(last, args.out)
    print(f"{args.out}: the actor averaged over epochs 1-{len(paths)} at rho {args.rho}")


if __name__ == "__main__":
    main()
