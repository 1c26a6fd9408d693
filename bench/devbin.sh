#!/usr/bin/env bash
# Builds what bench/gpu_run.sh runs on the GPU machine into .devbin/ (stripped,
# to stay under the device's 64 MiB carry limit with .cutlass): the release
# binary and the GPU test binaries. Also copies the CUTLASS headers to .cutlass/.
# Then: run with carry [".devbin"] (the GPU scripts unpack .devbin/cutlass.tgz: bench/devbin_env.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .devbin
cargo build --release -p kernelpro
strip -o .devbin/kernelpro target/release/kernelpro
# `name=cargo test selector`: each test binary's path comes from cargo's JSON messages (the test
# harness's, not a binary target's: a package's bins are built for its integration tests too).
for t in "gpu-harness=-p kernelpro-gpu --test gpu" "gpu-pipeline=-p kernelpro --test gpu" "cute-tests=-p kernelpro-cute --lib" "optimize-deadline=-p kernelpro-optimize --test deadline"; do
  exe=$(cargo test --release --no-run --message-format=json ${t#*=} | python3 -c "import json,sys;print([m['executable'] for m in map(json.loads,sys.stdin) if m.get('executable') and m['profile']['test']][-1])")
  strip -o ".devbin/${t%%=*}" "$exe"
done
# The probes' binaries (bench/probes/*_variants.sh run them on the device), built with the project's nvcc.
nvcc=$(ls .venv/lib/python3*/site-packages/nvidia/cu13/bin/nvcc)
for p in gemm map column; do
  "$nvcc" -O3 -arch=sm_90 -cudart static -o ".devbin/${p}_variants" "bench/probes/${p}_variants.cu"
done
inc=$(ls -d .venv/lib/python3*/site-packages/cutlass_library/source/include)
rm -rf .cutlass && mkdir -p .cutlass && cp -r "$inc" .cutlass/
# The headers compressed (27 MB to 2.3 MB) into .devbin, so that carrying .devbin alone fits the
# device's 64 MiB with the tracked files; the GPU scripts unpack it into .cutlass/.
tar czf .devbin/cutlass.tgz .cutlass
du -sh .devbin .cutlass
