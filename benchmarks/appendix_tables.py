"""A preview of the appendix's tables and MAD/AMAD figure on the zoo's seed-0 agents.

For every env and mode, the zoo agent ``<zoo>/<env>/<mode>/`` is evaluated with the same
commands ``robustsafe grid --appendix`` runs, into ``<out>/<env>/<mode>/seed0/``:

- ``eval.json``: ``robustsafe evaluate`` under Table 1's attackers (none, random, mad, amad,
  mc, mr);
- ``eval-appendix.json``: ``robustsafe evaluate`` under none, minr, mix:0.25, mix:0.5, mix:0.75;
- ``eval-xi.json`` (PPOL-vanilla only): ``robustsafe xi-sweep`` (MAD, and AMAD at each xi);

all at the agent's own epsilon (``robust.epsilon`` of its config.yaml), deterministic actions,
paired episodes. Then ``robustsafe table <out>`` writes Table 1 and the appendix files
(``table-appendix``, ``table-minr``, ``table-mix``, ``table-mix-figure``, ``table-amad-xi``)
and this script writes ``<out>/README.md`` (command, commit, machine, times). An evaluation
file already there is kept (delete it, or pass ``--force``, to redo it).

    python benchmarks/appendix_tables.py --episodes 10 --out benchmarks/results/appendix_zoo

One seed and few episodes: a preview of the layout and of the orderings, not the paper's
protocol (5 seeds x 50 episodes; the Table 1 re-run with ``robustsafe grid --appendix``).
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path

from robustsafe.experiments.grid.spec import APPENDIX_ATTACKS
from robustsafe.experiments.xi_sweep import DEFAULT_XIS
from robustsafe.rundir import load_run_config

TABLE1_ATTACKS = "none,random,mad,amad,mc,mr"


def run(args: list[str], log: Path) -> float:
    """``python ARGS`` with its output appended to ``log``; the wall time."""
    start = time.monotonic()
    with log.open("a") as f:
        f.write(f"\n=== python {shlex.join(args)}\n")
        f.flush()
        done = subprocess.run(
            [sys.executable, *args], stdout=f, stderr=subprocess.STDOUT, check=False
        )
    if done.returncode != 0:
        raise SystemExit(f"failed (exit status {done.returncode}): see {log}")
    return time.monotonic() - start


def commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "robustsafe"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return out + (" (with uncommitted changes in robustsafe/)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--zoo", type=Path, default=Path("zoo"))
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/appendix_zoo"))
    p.add_argument("--envs", default="SafetyCarRun-v0,SafetyCarCircle-v0")
    p.add_argument("--modes", default="vanilla,adv-mc,adv-mr")
    p.add_argument("--xi-modes", default="vanilla")
    p.add_argument("--episodes", type=int, default=10)
    p.add_argument("--xi", default=",".join(f"{x:g}" for x in DEFAULT_XIS))
    p.add_argument("--num-envs", type=int, default=10)
    p.add_argument("--env-workers", type=int, default=0, help="env subprocesses (0: in-process)")
    p.add_argument("--force", action="store_true", help="redo evaluations already there")
    args = p.parse_args()

    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    common = ["--episodes", str(args.episodes), "--seed", "0", "--num-envs", str(args.num_envs)]
    common += ["--env-workers", str(args.env_workers)]
    times: list[tuple[str, float]] = []
    for env in [e for e in args.envs.split(",") if e]:
        for mode in [m for m in args.modes.split(",") if m]:
            agent = args.zoo / env / mode
            cfg = load_run_config(agent)
            eps = repr(float(cfg.robust.epsilon))
            out = args.out / env / mode / "seed0"
            out.mkdir(parents=True, exist_ok=True)
            jobs = [
                ("eval.json", ["evaluate", "--attacks", TABLE1_ATTACKS, "--no-progress"]),
                (
                    "eval-appendix.json",
                    ["evaluate", "--attacks", ",".join(["none", *APPENDIX_ATTACKS])]
                    + ["--no-progress"],
                ),
            ]
            if mode in args.xi_modes.split(","):
                jobs.append(("eval-xi.json", ["xi-sweep", "--xi", args.xi]))
            for name, cmd in jobs:
                if (out / name).exists() and not args.force:
                    print(f"kept {out / name}")
                    continue
                full = ["-m", "robustsafe.cli", *cmd, "--run", str(agent), "--eps", eps]
                full += [*common, "--out", str(out / name)]
                full += ["--force"] if args.force else []  # the commands refuse to replace it
                seconds = run(full, out / "eval.log")
                times.append((f"{env} {mode} {name}", seconds))
                print(f"{env} {mode}: {name} in {seconds:.0f} s", flush=True)
    run(["-m", "robustsafe.cli", "table", str(args.out)], args.out / "table.log")

    lines = [
        "# Appendix tables and MAD/AMAD figure: a preview on the zoo's seed-0 agents",
        "",
        f"Command: `python benchmarks/appendix_tables.py {shlex.join(sys.argv[1:])}` "
        f"(then `robustsafe table {args.out}`, which it runs).",
        "",
        f"Commit {commit()}, started {started}; machine: {platform.platform()}, "
        f"{os.cpu_count()} cores, shared with other jobs (times are indicative).",
        "",
        f"**A preview**: one seed (the zoo's seed-0 agents of {args.modes}), {args.episodes} "
        "paired episodes per attacker, deterministic actions, each agent at its own epsilon "
        "with its own Q critics. The full tables (5 seeds x 50 episodes) come from the Table 1 "
        "re-run with `robustsafe grid ... --appendix` and `robustsafe table`.",
        "",
        "Files (`robustsafe table` wrote them from the evaluation files below):",
        "",
        "- [table-appendix.md](table-appendix.md): Random / MAD / Average (paper appendix C.9)",
        "- [table-minr.md](table-minr.md): the minimum-reward attacker against natural, MC, MR",
        "- [table-mix.md](table-mix.md): the MC/MR mixture, w = 1 (MC) ... 0 (MR)",
        "- [table-mix-figure.png](table-mix-figure.png) (and .pdf, .csv): the same, as a figure",
        "- [table-amad-xi.png](table-amad-xi.png) (and .pdf, .csv): AMAD over xi against MAD",
        "- [table.md](table.md): Table 1's columns for these agents",
        "- per agent `<env>/<mode>/seed0/`: `eval.json`, `eval-appendix.json`, and for the "
        "vanilla agents `eval-xi.json`",
        "",
        "Evaluation wall times (this run):",
        "",
        *(f"- {what}: {sec:.0f} s" for what, sec in times),
    ]
    readme = args.out / "README.md"
    if times or not readme.exists():
        readme.write_text("\n".join(lines) + "\n")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
