#!/usr/bin/env bash
# Where the time of a profile goes: ncu's fixed start-up (with and without
# its rules) and the page exports, on the probe program, each timed alone.
# `kernelpro profile` prints its own stage times; this isolates the parts.
# Runs on the GPU machine. Usage: bash bench/probes/ncu_cost.sh OUTDIR
set -uo pipefail
cd "$(dirname "$0")/../.."
DEST=$1; mkdir -p "$DEST"; W=$(mktemp -d)
export LC_ALL=C PATH=$PATH:/usr/local/cuda/bin
nvcc -arch=sm_90 -lineinfo -o "$W/probe" tests/fixtures/h200-probe/kernels.cu || exit 1
NCU="ncu --config-file off --clock-control none"
step() {
  local name=$1; shift
  local s; s=$(date +%s%N)
  "$@" > "$W/$name.out" 2>&1; local rc=$?
  local e; e=$(date +%s%N)
  local passes; passes=$(grep -o '[0-9]* passes' "$W/$name.out" | awk '{s+=$1} END {print s+0}')
  echo "$name $(( (e - s) / 1000000 )) ms rc=$rc passes=$passes" | tee -a "$DEST/ncu_cost.txt"
}
step program "$W/probe"
step minimal_rules $NCU --metrics gpu__time_duration.sum -f -o "$W/min" "$W/probe"
step minimal_no_rules $NCU --apply-rules no --metrics gpu__time_duration.sum -f -o "$W/min2" "$W/probe"
step sourcecounters_no_rules $NCU --apply-rules no --section SourceCounters -f -o "$W/sc" "$W/probe"
step export_raw ncu --config-file off -i "$W/sc.ncu-rep" --csv --page raw --print-units base
step export_source_one ncu --config-file off -i "$W/sc.ncu-rep" --csv --page source --print-source cuda,sass --print-units base --kernel-name strided_copy
# Which kernel-level metrics SourceCounters alone provides (stall samples, sectors, wavefronts).
head -1 "$W/export_raw.out" | tr ',' '\n' | grep -E 'pcsamp|theoretical|wavefronts|spilling|divergent' | head -40 > "$DEST/sourcecounters_metrics.txt"
grep -h "passes" "$W"/*.out | sort | uniq -c | head -40 > "$DEST/passes.txt"
