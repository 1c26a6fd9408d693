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
# Program mode's SASS pass: no records in a once-launching program wherever it began or whichever
# context or loading (the evening of 2026-12-07); records on every kernel's second launch when the
# program launches each twice under plan range,sass.
one() {  # one NAME PLAN PROGRAM ENV...: the program under the library, its records summed up
  local name=$1 plan=$2 prog=$3; shift 3
  local t=$OUT/$name.tsv; mkdir -p "$OUT/mods"; local s=$(date +%s%N)
  env "$@" CUDA_INJECTION64_PATH=$LIB KP_CUPTI_OUT=$t KP_CUPTI_DIR=$OUT/mods KP_CUPTI_PLAN=$plan \
    KP_CUPTI_METRICS=gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed KP_CUPTI_SASS=$SASS \
    timeout -k 2 20 "$prog" > /dev/null 2>> "$OUT/probe.txt"; local rc=$?
  echo "== $name plan=$plan $* rc=$rc wall=$(( ($(date +%s%N) - s) / 1000000 )) ms P=$(grep -c '^P' "$t") S=$(grep -c '^S' "$t") M=$(grep -c '^M' "$t")" | tee -a "$OUT/probe.txt"
  grep '^#' "$t" | cut -c1-200 >> "$OUT/probe.txt"
}
sed -E 's/^(\s*)([a-z_0-9]+<<<)/\1for (int rep_ = 0; rep_ < 2; ++rep_) \2/' tests/fixtures/h200-probe/kernels.cu > "$OUT/twice.cu"
nvcc -lineinfo -arch=sm_90 -o "$OUT/twice" "$OUT/twice.cu" >> "$OUT/probe.txt" 2>&1
one twice_enter range,sass "$OUT/twice" CUDA_MODULE_LOADING=LAZY
# Which condition the second launch met (2026-12-07 evening: records only there): a launch of the kernel
# before (plan sass,sass gives records on the second) or the range profiler before (it gives none); and
# the library's own launch just before the pass (KP_CUPTI_SASS_WARM) on the once-launching program.
one twice_sass_sass sass,sass "$OUT/twice" CUDA_MODULE_LOADING=LAZY
one warm_lazy sass "$PROG" CUDA_MODULE_LOADING=LAZY KP_CUPTI_SASS_WARM=1
one warm_eager_all sass "$PROG" CUDA_MODULE_LOADING=EAGER KP_CUPTI_SASS_LAZY=0 KP_CUPTI_SASS_WARM=1
# Harness mode, the driver's own runs, with their records kept.
for f in tests/fixtures/naive/layernorm/layernorm_rowptr.cu tests/fixtures/naive/sum/sum_atomic_1d.cu tests/fixtures/naive/softmax/softmax_rowptr_double.cu; do  # the second and third take turns
  KERNELPRO_CUPTI_KEEP=$OUT/keep $B profile $f --backend cupti --json > "$OUT/$(basename $f .cu).json" 2> "$OUT/$(basename $f .cu).err"
done
KERNELPRO_CUPTI_KEEP=$OUT/keep $B profile tests/fixtures/h200-probe/kernels.cu --backend cupti --json > "$OUT/kernels.json" 2> "$OUT/kernels.err"
for k in "$OUT"/keep/*.tsv; do echo "== $k P=$(grep -c '^P' "$k") S=$(grep -c '^S' "$k")"; grep '^#' "$k" | cut -c1-200; done >> "$OUT/probe.txt"
rm -rf "$OUT/mods" "$PROG" "$OUT/twice"
tail -60 "$OUT/probe.txt"
