#!/usr/bin/env bash
# Can one ncu launch give both pages a profile needs (raw metrics and the
# per-line source page), and what does each way cost? On one kernel of the
# probe program, each timed alone: today's two stages with exports, one pass
# to a report with exports, one pass printing the raw page while writing a
# report, one pass printing the source page live, and --set full.
# Runs on the GPU machine. Usage: bash bench/probes/ncu_one_pass.sh OUTDIR [KERNEL...]
set -uo pipefail
cd "$(dirname "$0")/../.."
DEST=$1; shift; mkdir -p "$DEST"; W=$(mktemp -d)
export LC_ALL=C PATH=$PATH:/usr/local/cuda/bin
nvcc -arch=sm_90 -lineinfo -o "$W/probe" tests/fixtures/h200-probe/kernels.cu || exit 1
M1=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,l1tex__t_bytes.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum
M2=l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,lts__t_sector_hit_rate.pct
SEC1="--section SpeedOfLight --section LaunchStats --section Occupancy"
S1="$SEC1 --metrics $M1"
S2="--section SourceCounters --import-source yes --metrics $M2"
S12="$SEC1 --section SourceCounters --import-source yes --metrics $M1,$M2"
step() {
  local name=$1; shift
  local s; s=$(date +%s%N)
  "$@" > "$W/$name.out" 2>&1; local rc=$?
  local e; e=$(date +%s%N)
  echo "$name $(( (e - s) / 1000000 )) ms rc=$rc" | tee -a "$DEST/times.txt"
}
exports() { # report, kernel: raw and source side by side
  ncu --config-file off -i "$1.ncu-rep" --csv --page raw --print-units base > "$1.raw.csv" 2>&1 &
  ncu --config-file off -i "$1.ncu-rep" --csv --page source --print-source cuda,sass --print-units base --kernel-name "$2" > "$1.src.csv" 2>&1 &
  wait
}
step ncu_version ncu --version
step program "$W/probe"
for K in ${@:-strided_copy matmul_naive}; do
  N="ncu --config-file off --clock-control none --apply-rules no --kernel-name $K --launch-count 1"
  step "$K.two_stage_s1" $N $S1 --csv --page raw --print-units base --log-file "$W/$K.s1.csv" "$W/probe"
  step "$K.two_stage_s2" $N $S2 -f -o "$W/$K.s2" "$W/probe"
  step "$K.two_stage_exports" exports "$W/$K.s2" $K
  step "$K.one_pass_report" $N $S12 -f -o "$W/$K.one" "$W/probe"
  step "$K.one_pass_exports" exports "$W/$K.one" $K
  step "$K.one_pass_report_and_raw_log" $N $S12 -f -o "$W/$K.both" --csv --page raw --print-units base --log-file "$W/$K.both.log" "$W/probe"
  step "$K.live_source_page" $N $S12 --csv --page source --print-source cuda,sass --print-units base --log-file "$W/$K.live_src.csv" "$W/probe"
  step "$K.live_raw_page_with_sc" $N $S12 --csv --page raw --print-units base --log-file "$W/$K.live_raw.csv" "$W/probe"
  step "$K.metrics_only_live_raw" $N $SEC1 --metrics $M1,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,smsp__thread_inst_executed_per_inst_executed.ratio,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum --csv --page raw --print-units base --log-file "$W/$K.mo.csv" "$W/probe"
  step "$K.full" $N --set full --import-source yes -f -o "$W/$K.full" "$W/probe"
  step "$K.full_exports" exports "$W/$K.full" $K
  for f in "$W/$K".*.csv "$W/$K".*.log; do echo "== $(basename $f) $(wc -c < $f) bytes, $(wc -l < $f) lines"; head -c 600 "$f"; echo; done > "$DEST/$K.heads.txt" 2>&1
  grep -h "passes\|==PROF==\|ERR\|rror" "$W/$K".*.out | sort | uniq -c | head -30 > "$DEST/$K.passes.txt"
done
cp "$W"/*.out "$DEST/" 2>/dev/null
tar czf "$DEST.tgz" -C "$DEST" . && rm -rf "$DEST"
