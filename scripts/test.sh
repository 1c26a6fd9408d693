#!/usr/bin/env bash
# Every test, with the real tools: installs them first. CI runs this (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export KERNELPRO_VENV="$PWD/.venv"
cargo test --workspace --no-fail-fast 2>&1 | tee /tmp/kernelpro-cargo-test.log
