#!/usr/bin/env bash
# Create .venv (if missing) and install RobustSafe with the versions pinned in constraints.txt.
# torch is pinned to 2.13.0 (CPU build): another version or an open range would pull a
# multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet torch==2.13.0
.venv/bin/python -m pip install --quiet -c constraints.txt -e ".[test]"
echo "RobustSafe installed in .venv (activate with: . .venv/bin/activate)"
