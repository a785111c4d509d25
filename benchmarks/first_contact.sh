#!/usr/bin/env bash
# A new user's first contact, timed: a fresh clone of this repository, then only the README's
# commands: the set-up, the first attack table on a zoo agent and the first figure (the tour),
# then the quickstart (train 200k steps, evaluate 50 episodes). Prints one line of timings and
# writes the commands' output to $WORK/first_contact.log.
#
#   bash benchmarks/first_contact.sh [WORK]   (default WORK: a new temporary directory)
#
# Run it alone (a timing is valid only on a quiet machine); the set-up time depends on pip's
# cache and the network (with a warm cache it is install time only).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=${1:-$(mktemp -d)}
mkdir -p "$WORK"
LOG=$WORK/first_contact.log
now() { date +%s.%N; }
cd "$WORK"
load=$(cut -d" " -f1 /proc/loadavg)  # before the run: what else was running
t0=$(now)
git clone -q "$REPO" robustsafe && cd robustsafe
bash scripts/setup.sh >>"$LOG" 2>&1
t1=$(now)
.venv/bin/robustsafe evaluate --run zoo/SafetyCarRun-v0/vanilla --attacks none,random,mad,mc,mr \
  --eps 0.05 --episodes 10 --no-progress >>"$LOG" 2>&1
t2=$(now)
.venv/bin/robustsafe evaluate --run zoo/SafetyCarRun-v0/vanilla --attacks mc,mr --eps 0:0.1:3 \
  --episodes 5 --out runs/tour/sweep.json --no-progress >>"$LOG" 2>&1
.venv/bin/robustsafe plot sweep runs/tour/sweep.json --out runs/tour/figure2 >>"$LOG" 2>&1
test -s runs/tour/figure2.png
t3=$(now)
.venv/bin/robustsafe train --env SafetyCarRun-v0 --total-steps 200000 --out runs/quickstart \
  --no-progress >>"$LOG" 2>&1
t4=$(now)
.venv/bin/robustsafe evaluate --run runs/quickstart --episodes 50 --no-progress >>"$LOG" 2>&1
t5=$(now)
python3 - "$t0" "$t1" "$t2" "$t3" "$t4" "$t5" "$(git rev-parse --short HEAD)" "$load" <<'EOF'
import sys
t = [float(x) for x in sys.argv[1:7]]
d = [b - a for a, b in zip(t, t[1:])]
print(f"commit {sys.argv[7]} load before {sys.argv[8]} | clone+setup {d[0]:.1f} s, "
      f"attack table {d[1]:.1f} s, figure {d[2]:.1f} s: first table and figure "
      f"{t[3] - t[0]:.1f} s | quickstart train {d[3]:.1f} s + evaluate {d[4]:.1f} s = "
      f"{t[5] - t[3]:.1f} s")
EOF
