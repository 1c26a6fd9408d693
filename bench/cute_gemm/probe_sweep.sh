#!/usr/bin/env bash
# Builds and times main-loop probes for the CuteGemm recipe's bf16 kernel
# beside the generated kernel (the baseline), each with bench/cute_gemm/harness.cu
# (checked against the naive kernel, timed with CUDA events). With no variants
# given it runs the ones in docs/benchmarks.md ("CuTe GEMM main-loop probes").
# Needs a Hopper GPU, nvcc, and the CUTLASS headers at $CUTLASS_INCLUDE.
# Usage: bench/cute_gemm/probe_sweep.sh OUTDIR ["name:probe.cu:-DFLAGS..." ...]
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=$1; shift
NVCC=${NVCC:-nvcc}
INC=${CUTLASS_INCLUDE:-.cutlass/include}
if [ $# -eq 0 ]; then
  set -- \
    "ws_k32:ws_probe.cu:-DKP_BK=32 -DKP_STAGES=3 -DKP_WAIT=0 -DKP_LAG=2" \
    "ws_k16:ws_probe.cu:-DKP_BK=16 -DKP_STAGES=6 -DKP_WAIT=0 -DKP_LAG=1" \
    "ws_k32_l1pf4:ws_probe.cu:-DKP_BK=32 -DKP_STAGES=3 -DKP_WAIT=0 -DKP_LAG=2 -DKP_PF=4" \
    "tma_k32:tma_probe.cu:-DKP_CLUSTER=1 -DKP_BK=32 -DKP_STAGES=2" \
    "tma_k16:tma_probe.cu:-DKP_CLUSTER=1 -DKP_BK=16 -DKP_STAGES=5" \
    "tma_x4_k32:tma_probe.cu:-DKP_CLUSTER=4 -DKP_BK=32 -DKP_STAGES=2" \
    "tma_x4_k16:tma_probe.cu:-DKP_CLUSTER=4 -DKP_BK=16 -DKP_STAGES=5" \
    "dyn_tma_k32_p4:tma_probe.cu:-DKP_CLUSTER=1 -DKP_BK=32 -DKP_STAGES=4 -DKP_WAIT=1 -DKP_DYN_SMEM=67584" \
    "dyn_tma_k64_p3:tma_probe.cu:-DKP_CLUSTER=1 -DKP_BK=64 -DKP_STAGES=3 -DKP_WAIT=1 -DKP_DYN_SMEM=100352" \
    "dyn_tma_x4_k64_p3:tma_probe.cu:-DKP_CLUSTER=4 -DKP_BK=64 -DKP_STAGES=3 -DKP_WAIT=1 -DKP_DYN_SMEM=100352" \
    "ws384_n256_p4:ws384_probe.cu:-DKP_BX=384 -DKP_BY=1 -DKP_GRID=132 -DKP_DYN_SMEM=200704" \
    "ws384_n256_p4_g8:ws384_probe.cu:-DKP_BX=384 -DKP_BY=1 -DKP_GRID=132 -DKP_DYN_SMEM=200704 -DKP_GROUP=8" \
    "ws384_n256_p4_g8_tiles:ws384_probe.cu:-DKP_BX=384 -DKP_BY=1 -DKP_GRID=512 -DKP_DYN_SMEM=200704 -DKP_GROUP=8" \
    "ws384_n256_p3_g8_tiles_pad:ws384_probe.cu:-DKP_BX=384 -DKP_BY=1 -DKP_STAGES=3 -DKP_GRID=512 -DKP_DYN_SMEM=150528 -DKP_GROUP=8 -DKP_STATIC_PAD=49152" \
    "ws384_n128_p6:ws384_probe.cu:-DKP_BN=128 -DKP_STAGES=6 -DKP_BX=384 -DKP_BY=1 -DKP_GRID=132 -DKP_DYN_SMEM=200704"
fi
mkdir -p "$OUT"
build() {
  local name=$1 file=$2; shift 2
  "$NVCC" -std=c++17 --expt-relaxed-constexpr -O3 -arch=sm_90a -I"$INC" -include "$file" \
    -DKP_KERNEL=matmul_bf16 -DKP_T=__nv_bfloat16 -DKP_NDIMS=1 -DKP_BX=16 -DKP_BY=16 "$@" \
    -Xptxas -v -o "$OUT/$name" bench/cute_gemm/harness.cu > "$OUT/$name.build.txt" 2>&1 || echo "$name: build failed"
}
build baseline tests/fixtures/cute/generated/bf16_naive.cu &
for v in "$@"; do
  IFS=: read -r name file flags <<< "$v"
  # shellcheck disable=SC2086
  build "$name" "bench/cute_gemm/$file" $flags &
done
wait
for name in baseline $(for v in "$@"; do echo "${v%%:*}"; done); do
  [ -x "$OUT/$name" ] || continue
  # A probe that deadlocks is killed rather than hanging the sweep.
  echo "$name $(timeout 60 "$OUT/$name" "${N:-4096}")"
done
