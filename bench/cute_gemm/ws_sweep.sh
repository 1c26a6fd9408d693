#!/usr/bin/env bash
# Builds and times probe variants (and the current generated kernel as the
# baseline) with bench/cute_gemm/harness.cu.
# Usage: bench/cute_gemm/ws_sweep.sh OUTDIR "name:probe.cu:-DFLAGS..." ...
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=$1; shift
NVCC=${NVCC:-nvcc}
INC=${CUTLASS_INCLUDE:-.cutlass/include}
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
for f in "$OUT"/*.build.txt; do grep -H "registers\|error" "$f" | tail -2; done
for name in baseline $(for v in "$@"; do echo "${v%%:*}"; done); do
  [ -x "$OUT/$name" ] || continue
  for rep in 1 2; do echo "$name#$rep $(timeout 60 "$OUT/$name" "${N:-4096}")"; done
done
