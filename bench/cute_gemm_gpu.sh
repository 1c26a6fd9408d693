#!/usr/bin/env bash
# GPU benchmark of the CuteGemm recipe's generated kernels (server/cute).
# Needs: nvcc (PATH or $NVCC), a GPU, python3 with torch, and the CUTLASS 4.2
# headers at $CUTLASS_INCLUDE (the folder holding cute/ and cutlass/; default:
# the project venv's nvidia-cutlass wheel). Inputs are this repo's files only:
# the generated sources are the snapshots in tests/fixtures/cute/generated/,
# kept equal to the generator's output by `cargo test -p kernelpro-cute`.
# With the default ARCH=sm_90a the 16-bit cases run the WGMMA main loop (the
# generated files choose it on CUTE_ARCH_MMA_SM90A_ENABLED); other arches get
# mma.sync. Prints, per case, TFLOP/s of the generated kernel and of the naive kernel it
# replaces (with the naive launch), and for bf16 the TFLOP/s of torch.matmul
# (cuBLAS) on the same inputs with a cross-check.
# Usage: bench/cute_gemm_gpu.sh [N]   (default 4096; about 1-2 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/devbin_env.sh
N=${1:-4096}
NVCC=${NVCC:-nvcc}
CUTLASS_INCLUDE=${CUTLASS_INCLUDE:-.venv/lib/python3.11/site-packages/cutlass_library/source/include}
[ -f "$CUTLASS_INCLUDE/cute/tensor.hpp" ] || { echo "no CUTLASS headers at $CUTLASS_INCLUDE (set CUTLASS_INCLUDE)"; exit 1; }
command -v "$NVCC" >/dev/null || { echo "no nvcc (set NVCC)"; exit 1; }
ARCH=${ARCH:-sm_90a}
GEN=tests/fixtures/cute/generated
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$WORK"

# name | generated file | kernel | element type | size args after (A, B, C) | B layout | block x | block y | launch
# The launch/ files are the launch-changing rewrites: with launch `spec`, under
# their spec's launch (384 threads, one block a 128x256 tile, the spec's dynamic
# shared memory); `_old` runs one under the naive launch it still accepts.
CASES="
bf16_rr|bf16_naive.cu|matmul_bf16|__nv_bfloat16|1|row|16|16|
bf16_rc|bf16_hint_row_col.cu|gemm_bf16_tn|__nv_bfloat16|3|col|16|16|
f16_rr|f16_naive.cu|matmul_f16|__half|1|row|16|16|
f32_rr|f32_naive.cu|matmul_naive|float|1|row|16|16|
bf16_rr_launch|launch/bf16_naive.cu|matmul_bf16|__nv_bfloat16|1|row|384|1|spec
bf16_rc_launch|launch/bf16_hint_row_col.cu|gemm_bf16_tn|__nv_bfloat16|3|col|384|1|spec
f16_rr_launch|launch/f16_naive.cu|matmul_f16|__half|1|row|384|1|spec
bf16_rr_launch_old|launch/bf16_naive.cu|matmul_bf16|__nv_bfloat16|1|row|16|16|
"

build() {
  local name=$1 file=$2 kernel=$3 ty=$4 ndims=$5 layout=$6 bx=$7 by=$8
  local bcol="" own=""
  [ "$9" = spec ] && own="-DKP_TILE_M=128 -DKP_TILE_N=256 -DKP_DYN_SMEM=$(sed -n 's,^// kernelpro: smem = \([0-9]*\)$,\1,p' "$GEN/$file")"
  [ "$layout" = col ] && bcol="-DKP_B_COL"
  "$NVCC" -std=c++17 --expt-relaxed-constexpr -O3 -arch="$ARCH" -I"$CUTLASS_INCLUDE" \
    -include "$GEN/$file" -DKP_KERNEL="$kernel" -DKP_T="$ty" -DKP_NDIMS="$ndims" $bcol -DKP_BX="$bx" -DKP_BY="$by" $own \
    -o "$WORK/$name" bench/cute_gemm/harness.cu > "$WORK/$name.log" 2>&1 || { echo "$name: build failed"; cat "$WORK/$name.log"; return 1; }
}

pids=()
while IFS='|' read -r name file kernel ty ndims layout bx by launch; do
  [ -n "$name" ] || continue
  build "$name" "$file" "$kernel" "$ty" "$ndims" "$layout" "$bx" "$by" "$launch" &
  pids+=($!)
done <<< "$CASES"
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done

while IFS='|' read -r name file kernel ty ndims layout bx by launch; do
  [ -n "$name" ] && [ -x "$WORK/$name" ] || continue
  printf '%s: ' "$name"
  "$WORK/$name" "$N" "$WORK/$name" || status=1
  if [ "$ty" = __nv_bfloat16 ]; then
    python3 bench/cute_gemm/torch_ref.py "$WORK/$name" "$N" "$layout" || status=1
  fi
done <<< "$CASES"
exit $status
