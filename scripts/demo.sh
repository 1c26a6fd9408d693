#!/usr/bin/env bash
# The main job on the bundled example: compile it, show the findings, the
# per-kernel resources and the SASS hover of the FP64 line.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release --quiet
./target/release/kernelpro --version
./target/release/kernelpro check examples/saxpy.cu --sass 14 || true
./target/release/kernelpro check examples/saxpy.cu --format json | sed -n 1,40p  # sed reads to the end; head would end the script with 141 under pipefail
