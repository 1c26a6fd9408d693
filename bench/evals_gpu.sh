#!/usr/bin/env bash
# Issue 34 on the GPU machine in one call: the long-lived worker's GPU test, evaluations per
# minute before/after (bench/evals_per_minute.sh) and, with STRATEGIES=1, MCTS vs greedy vs
# random at equal wall time (bench/strategies_equal_time.sh). Binaries in .devbin/ (gzipped
# to fit the carry limit): kernelpro.gz (this branch), kernelpro-base.gz (the "before"),
# optionally kernelpro-main.gz, gpu-harness.gz (the kernelpro-gpu GPU tests).
# Usage (device): bash bench/evals_gpu.sh "$OUT"   TIME=30 FILES=... ENERGY=1 STRATEGIES=1 STRAT_TIME=45 STRAT_FILES=...
# (ENERGY=1: the searches measure energy as a user's do; by default --no-energy, as the earlier tables)
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: evals_gpu.sh OUTDIR}; mkdir -p "$DEST"
. bench/devbin_env.sh
{ nvidia-smi -L; nproc; nvcc --version | tail -1; } > "$DEST/env.txt" 2>&1
if [ -x .devbin/gpu-harness ]; then
  KERNELPRO_NVCC=$(command -v nvcc) timeout 120 .devbin/gpu-harness --ignored --test-threads=1 --nocapture \
    a_session_evaluates_candidates_back_to_back overhead_of_one_evaluation > "$DEST/session_test.txt" 2>&1
  tail -5 "$DEST/session_test.txt"
fi
more=(); [ -x .devbin/kernelpro-main ] && more=("main=.devbin/kernelpro-main")
TIME=${TIME:-30} FILES=${FILES:-"bench/kernels/softmax.cu:softmax_rows bench/kernels/matmul_naive.cu:matmul_naive bench/kernels/transpose.cu:transpose"} \
  KEEP="$DEST/evals" bash bench/evals_per_minute.sh .devbin/kernelpro-base .devbin/kernelpro gpu "${more[@]}" | tee "$DEST/evals.txt"
if [ "${STRATEGIES:-0}" = 1 ]; then
  TIME=${STRAT_TIME:-45} FILES=${STRAT_FILES:-"bench/kernels/*.cu"} bash bench/strategies_equal_time.sh .devbin/kernelpro "$DEST/strategies" | tee "$DEST/strategies.txt"
fi
# The device tool returns at most 8 files: the runs' JSON in one tarball.
tar czf "$DEST/runs.tgz" -C "$DEST" evals $( [ -d "$DEST/strategies" ] && echo strategies ) && rm -rf "$DEST/evals" "$DEST/strategies"
