#!/usr/bin/env bash
# Issue 33's diagnosis on the GPU machine: the in-process profiler library run by hand on the
# five-kernel program under each plan and module-loading mode, to see which give per-instruction
# (P) records and stall samples (S), and what the library warns (#warn) — the Rust driver hides
# those. Then `kernelpro profile` in harness mode with KERNELPRO_CUPTI_KEEP, to keep its records.
# Usage (device, after bench/devbin.sh; carry [".devbin"]): bash bench/cupti_probe.sh OUTDIR
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: cupti_probe.sh OUTDIR}; mkdir -p "$OUT"
. bench/devbin_env.sh
B=${KERNELPRO_BIN:-.devbin/kernelpro}
$B profile examples/saxpy.cu --kernel saxpy --backend cupti > "$OUT/warm.txt" 2>&1  # builds the library
LIB=$(ls -t "${XDG_CACHE_HOME:-$HOME/.cache}"/kernelpro/cupti/libkp_cupti-*.so 2>/dev/null | head -1)
echo "library: $LIB" | tee "$OUT/probe.txt"
[ -n "$LIB" ] || exit 1
PROG=$OUT/kernels_prog
nvcc -lineinfo -arch=sm_90 -o "$PROG" tests/fixtures/h200-probe/kernels.cu >> "$OUT/probe.txt" 2>&1
SASS=smsp__sass_inst_executed,smsp__sass_thread_inst_executed,smsp__sass_sectors_mem_global,smsp__sass_sectors_mem_global_ideal
# The configuration kernelpro uses for a program first (every module loaded up front, patched when the
# pass is enabled), so a hang in another one costs only the later ones.
for loading in EAGER LAZY; do
  for lazy in 0 1; do
    for plan in sass range,sass,pc; do
      t=$OUT/${plan//,/-}_${loading}_lazy$lazy.tsv; mkdir -p "$OUT/mods"
      s=$(date +%s%N)
      CUDA_MODULE_LOADING=$loading KP_CUPTI_SASS_LAZY=$lazy CUDA_INJECTION64_PATH=$LIB KP_CUPTI_OUT=$t KP_CUPTI_DIR=$OUT/mods KP_CUPTI_PLAN=$plan \
        KP_CUPTI_METRICS=gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed KP_CUPTI_SASS=$SASS \
        timeout -k 2 20 "$PROG" > /dev/null 2>> "$OUT/probe.txt"; rc=$?
      e=$(date +%s%N)
      echo "== plan=$plan loading=$loading sass_lazy=$lazy rc=$rc wall=$(( (e - s) / 1000000 )) ms P=$(grep -c '^P' "$t") S=$(grep -c '^S' "$t") M=$(grep -c '^M' "$t")" | tee -a "$OUT/probe.txt"
      grep '^#' "$t" | cut -c1-200 >> "$OUT/probe.txt"
    done
  done
done
# Harness mode, the driver's own runs, with their records kept.
for f in tests/fixtures/naive/layernorm/layernorm_rowptr.cu tests/fixtures/naive/sum/sum_atomic_1d.cu; do
  KERNELPRO_CUPTI_KEEP=$OUT/keep $B profile $f --backend cupti --json > "$OUT/$(basename $f .cu).json" 2> "$OUT/$(basename $f .cu).err"
done
KERNELPRO_CUPTI_KEEP=$OUT/keep $B profile tests/fixtures/h200-probe/kernels.cu --backend cupti --json > "$OUT/kernels.json" 2> "$OUT/kernels.err"
for k in "$OUT"/keep/*.tsv; do echo "== $k P=$(grep -c '^P' "$k") S=$(grep -c '^S' "$k")"; grep '^#' "$k" | cut -c1-200; done >> "$OUT/probe.txt"
rm -rf "$OUT/mods" "$PROG"
tail -60 "$OUT/probe.txt"
