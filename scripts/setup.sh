#!/usr/bin/env bash
# Create .venv (if missing) and install RobustSafe with the versions pinned in constraints.txt
# (the reproducible set-up). torch goes first, at the pinned version, from PyPI (on Linux x86_64
# PyPI's wheel is the multi-GB CUDA build); TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
# takes the CPU build from PyTorch's index instead.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet torch==2.13.0 ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"}
.venv/bin/python -m pip install --quiet -c constraints.txt -e ".[test,mujoco,sb3]"
# the browser of the browser test (root with apt-get: Debian's chromium; otherwise a note)
bash scripts/install-browser.sh
echo "RobustSafe installed in .venv (activate with: . .venv/bin/activate)"
