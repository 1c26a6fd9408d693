#!/usr/bin/env bash
# Installs what KernelPro's build and tests need into the project folder:
# the pinned CUDA compiler wheels and Neovim in .venv. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
# Skip pip when every pinned requirement is already installed.
if ! .venv/bin/python - scripts/requirements-cuda.txt <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
for line in open(sys.argv[1]):
    line = line.split('#')[0].strip()
    if not line:
        continue
    name, want = line.split('==')
    if version(name) != want:
        sys.exit(1)
PY
then
  .venv/bin/pip install --quiet --disable-pip-version-check -r scripts/requirements-cuda.txt
fi
echo "setup: CUDA tools in $(ls -d .venv/lib/python3*/site-packages/nvidia/cu13/bin), $(.venv/bin/nvim --version | head -1)"
