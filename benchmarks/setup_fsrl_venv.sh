#!/usr/bin/env bash
# FSRL's scratch venv for the speed comparison (benchmarks/speed_vs_fsrl.py), never RobustSafe's:
# FSRL 0.1.0 (PyPI name fast-safe-rl; the name fsrl is not on PyPI) with the pins of
# benchmarks/fsrl_constraints.txt. FSRL_VENV=DIR puts it elsewhere (default .fsrl-venv in the
# repository root, ignored by git). torch goes first, pinned, as in scripts/setup.sh;
# TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu takes it from PyTorch's CPU index.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${FSRL_VENV:-.fsrl-venv}
PYTHON=${PYTHON:-python3.11}
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet -c benchmarks/fsrl_constraints.txt torch==2.13.0 \
    ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"}
"$VENV/bin/python" -m pip install --quiet -c benchmarks/fsrl_constraints.txt fast-safe-rl==0.1.0
"$VENV/bin/python" -c "import fsrl, tianshou, torch; print('FSRL', fsrl.__version__, \
'tianshou', tianshou.__version__, 'torch', torch.__version__)" 2>/dev/null
echo "FSRL installed in $VENV"
