#!/usr/bin/env bash
# Where the time of a profile goes: each ncu collection and export on the
# probe program, timed one by one, with the replay passes ncu reports per
# kernel. Runs on the GPU machine; prints one line per step.
# Usage: bash bench/ncu_cost.sh OUTDIR
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=$1; mkdir -p "$DEST"; W=$(mktemp -d)
export LC_ALL=C PATH=$PATH:/usr/local/cuda/bin
nvcc -arch=sm_90 -lineinfo -o "$W/probe" tests/fixtures/h200-probe/kernels.cu || exit 1
NCU="ncu --config-file off --clock-control none"
STAGE1="--section SpeedOfLight --section LaunchStats --section Occupancy"
step() {
  local name=$1; shift
  local s; s=$(date +%s%N)
  "$@" > "$W/$name.out" 2>&1; local rc=$?
  local e; e=$(date +%s%N)
  local passes; passes=$(grep -o '[0-9]* passes' "$W/$name.out" | awk '{s+=$1} END {print s+0}')
  echo "$name $(( (e - s) / 1000000 )) ms rc=$rc passes=$passes" | tee -a "$DEST/ncu_cost.txt"
}
step program "$W/probe"
step ncu_minimal $NCU --metrics gpu__time_duration.sum -f -o "$W/min" "$W/probe"
step stage1_report $NCU $STAGE1 -f -o "$W/s1" "$W/probe"
step stage1_csv_direct $NCU $STAGE1 --csv --page raw --print-units base --log-file "$W/s1.csv" "$W/probe"
step export_raw $NCU -i "$W/s1.ncu-rep" --csv --page raw --print-units base
step full_report $NCU --set full --import-source yes -f -o "$W/full" "$W/probe"
step export_full_raw $NCU -i "$W/full.ncu-rep" --csv --page raw --print-units base
step export_full_details $NCU -i "$W/full.ncu-rep" --csv --page details --print-units base
step export_source_one $NCU -i "$W/full.ncu-rep" --csv --page source --print-source cuda,sass --print-units base --kernel-name strided_copy
for sec in SourceCounters WarpStateStats MemoryWorkloadAnalysis MemoryWorkloadAnalysis_Tables ComputeWorkloadAnalysis InstructionStats SchedulerStats; do
  step "section_$sec" $NCU --section "$sec" -f -o "$W/sec_$sec" "$W/probe"
done
step union_no_source $NCU --section WarpStateStats --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis --section InstructionStats -f -o "$W/u" "$W/probe"
ncu --list-sections > "$DEST/sections.txt" 2>&1
# The section files say which metrics each section collects.
SEC=$(dirname "$(readlink -f "$(command -v ncu)")")/sections
[ -d "$SEC" ] || SEC=$(find / -name SourceCounters.section -printf '%h\n' 2>/dev/null | head -1)
mkdir -p "$DEST/sections" && cp "$SEC"/*.section "$DEST/sections/" 2>/dev/null
grep -h "passes" "$W"/*.out | sort | uniq -c | head -60 > "$DEST/passes.txt"
cp "$W"/*.out "$DEST"/ 2>/dev/null
