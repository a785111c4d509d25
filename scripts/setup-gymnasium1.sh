#!/usr/bin/env bash
# Install RobustSafe on gymnasium 1.x in its own venv (default .venv-gymnasium1).
# bullet-safety-gym 1.4.0's metadata pins gymnasium~=0.28.1, but its envs run on 1.x: install
# the reproducible set-up, then swap gymnasium in with --no-deps so that pip does not resolve
# the stale pin back to 0.28.1 (gymnasium 1.x's own requirements are already installed).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv-gymnasium1}
GYMNASIUM=${GYMNASIUM:-gymnasium>=1.0,<2}
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet torch==2.13.0 ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"}
"$VENV/bin/python" -m pip install --quiet -c constraints.txt -e ".[test,mujoco]"
"$VENV/bin/python" -m pip install --quiet --no-deps --upgrade "$GYMNASIUM"
bash scripts/install-browser.sh  # the browser test's Chromium (see scripts/setup.sh)
"$VENV/bin/python" -c "import gymnasium; print('RobustSafe installed in $VENV with gymnasium', gymnasium.__version__)"
