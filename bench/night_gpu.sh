#!/usr/bin/env bash
# One device call for the three open issues after a round's merges, the phases in PHASES' order
# (default: most needed first), each under its own time limit and all under TOTAL seconds (default 560),
# so the call ends within the device's 10 minutes and a phase that cannot fit is skipped, not cut:
#   the GPU worker's tests; issue 34's evaluations per minute (bench/evals_gpu.sh, the pre-round
#   binary .devbin/kernelpro-base.gz against this one); issue 33's profile comparison (in-process
#   vs ncu one launch vs --full, profile-on-save in-process: bench/gpu_run.sh profile); issue 29's
#   worst corpus kernels through the optimizer (bench/kernelbench/gpu.sh, TASKS below).
# Usage (device, carry [".devbin", "public-kernels/corpus"]): bash bench/night_gpu.sh "$OUT"
# Next session's calls (issues 33 and 34, session g's plan): PHASES="profile pipeline harness" COMPARE_FILES=" "
# SAVE_FILES="tests/fixtures/h200-probe/kernels.cu:transpose_conflicts tests/fixtures/naive/sum/sum_atomic_1d.cu"
# PIPELINE_TESTS=a_programs_save TOTAL=125 (the program's disassembly during its run); then the naive corpus's
# strategies at equal time, about 200 s a strategy (run.py starts no search past time-budget - optimize-time - 90):
# KB_TASKS="$(ls tests/fixtures/naive/*/*.cu | grep -v '/clean_\|/expert_')" STRATS="mcts greedy random" OPT_TIME=15
# JOBS=16 PHASES=strategies T_STRATEGIES=580 TOTAL=590.
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: night_gpu.sh OUTDIR}; mkdir -p "$DEST/a"
. bench/devbin_env.sh
export PATH=$PATH:/usr/local/cuda/bin
export KERNELPRO_NVCC=$(command -v nvcc)
{ nvidia-smi -L; nproc; } > "$DEST/a/env.txt" 2>&1
START=$SECONDS; TOTAL=${TOTAL:-560}
# left LIMIT: the phase's limit, cut to what the call has left; 0 when under 20 s are left.
left() { local l=$(( TOTAL - (SECONDS - START) )); [ "$l" -lt 20 ] && { echo 0; return; }; [ "$1" -lt "$l" ] && echo "$1" || echo "$l"; }
phase() {  # phase NAME DEFAULT_LIMIT: run NAME's commands under its limit, or say it was skipped
  local t; t=$(left "$2"); [ "$t" = 0 ] && { echo "skipped $1 (no time left)" | tee -a "$DEST/a/phases.txt"; return; }
  local s=$SECONDS; "run_$1" "$t"; echo "$1 $(( SECONDS - s )) s (limit $t)" | tee -a "$DEST/a/phases.txt"
  # A program the phase started under a timeout of its own (its own process group) outlives the phase's
  # timeout: one hung under the profiler held it, and the next phase's every profile failed HARDWARE_BUSY.
  pkill -9 -f -- "$DEST/a/" 2>/dev/null; pkill -9 -f -- "$PWD/.devbin/" 2>/dev/null; sleep 1
}
run_harness() { timeout "$1" .devbin/gpu-harness --ignored --test-threads=1 > "$DEST/a/gpu-harness.txt" 2>&1; grep "test result" "$DEST/a/gpu-harness.txt"; }
# Issue 33: in-process vs ncu one launch vs --full, then profile-on-save (bench/gpu_run.sh profile).
run_profile() { SAVE_BACKENDS=cupti timeout "$1" bash bench/gpu_run.sh profile "$DEST/p" > "$DEST/a/profile.log" 2>&1; tail -12 "$DEST/a/profile.log"; cp "$DEST/p/profile_table.md" "$DEST/a/" 2>/dev/null; }
# The CLI-level GPU tests (tests/gpu.rs: profiles, harness, optimize).
# PIPELINE_TESTS: a test-name filter (default: every one).
run_pipeline() { timeout "$1" .devbin/gpu-pipeline --ignored --test-threads=1 --nocapture ${PIPELINE_TESTS:-} > "$DEST/a/gpu-pipeline.txt" 2>&1; grep "test result\|^test " "$DEST/a/gpu-pipeline.txt" | tail -14; }
# Issue 34's deadline on the real GPU evaluator (a naive 4096³ GEMM given 45 s).
run_deadline() { timeout "$1" .devbin/optimize-deadline --ignored --nocapture a_slow_real_kernel_ends_at_its_limit_on_the_gpu > "$DEST/a/deadline.txt" 2>&1; tail -3 "$DEST/a/deadline.txt"; }
# Issue 34's evaluations per minute, the pre-round binary against this one.
run_evals() { TIME=${TIME:-30} timeout "$1" bash bench/evals_gpu.sh "$DEST/e" 2>&1 | tail -8; }
# Issue 33's diagnosis: the profiler library under each plan and module loading (bench/cupti_probe.sh).
run_probe() { timeout "$1" bash bench/cupti_probe.sh "$DEST/a/probe" > "$DEST/a/probe.log" 2>&1; grep "^== " "$DEST/a/probe/probe.txt" | cut -c1-160; }
# Issue 34 item 4: the SIMT GEMM forms against cuBLAS without TF32 (bench/gemm_gpu.sh).
run_gemm() { timeout "$1" bash bench/gemm_gpu.sh "${GEMM_SIZES:-4096 2048}" > "$DEST/a/gemm.txt" 2>&1; tail -14 "$DEST/a/gemm.txt"; }
run_cute() { timeout "$1" .devbin/cute-tests --ignored --test-threads=1 > "$DEST/a/cute-tests.txt" 2>&1; grep "test result" "$DEST/a/cute-tests.txt"; }
# Issue 29: corpus kernels (TASKS) through the optimizer and against PyTorch.
run_corpus() {
  KB_OUT=corpus-out KB_SECONDS=$1 bash bench/kernelbench/gpu.sh all public-kernels/corpus --tasks "${TASKS:-corpus_xpiler_instancenorm,corpus_infa_softmax}" \
    --budget 30 --optimize-time "${OPT_TIME:-40}" --title "Fetched corpus (issue 29)" > "$DEST/a/corpus.log" 2>&1
  python3 bench/public_kernels/corpus_report.py corpus-out public-kernels/corpus/corpus.json > "$DEST/a/corpus-report.md" 2>&1
  cp corpus-out/results*.jsonl "$DEST/a/" 2>/dev/null; tail -5 "$DEST/a/corpus-report.md"
}
# Issue 34 item 4: the probes of a map's, a column sum's and the SIMT GEMM's forms beside PyTorch (bench/probes/).
run_probes() {
  { timeout 60 bash bench/probes/map_variants.sh; timeout 60 bash bench/probes/column_variants.sh
    timeout 90 bash bench/probes/gemm_variants.sh 4096; } > "$DEST/a/probes.txt" 2>&1; grep -c "ms" "$DEST/a/probes.txt"
}
# Issue 34: the KernelBench slice (resumable: kb-out stays on a warm machine), its tasks' files into $DEST/kb.
run_slice() {
  mkdir -p "$DEST/kb"
  OUT="$DEST/kb" KB_OUT=kb-out KB_SECONDS=$1 bash bench/kernelbench/gpu.sh all bench/kernelbench/tasks --budget 30 \
    --optimize-time 45 --jobs-optimize 8 --trials 20 --max-seconds 0.5 --jobs-measure 3 > "$DEST/a/slice.log" 2>&1
  grep -v "^\[" "$DEST/a/slice.log" | sed -n 3,6p
}
# Issue 34: greedy and random on the slice under the slice's settings (bench/kernelbench/strategies_gpu.sh).
# STRATS (default "greedy random": MCTS's runs are the slice's own) share the phase's time equally; OPT_TIME: each search's --optimize-time; JOBS: searches at a time;
# KB_TASKS: the task files (default the slice; the naive corpus: $(ls tests/fixtures/naive/*/*.cu | grep -v '/clean_\|/expert_')).
run_strategies() {
  local n; n=$(echo ${STRATS:-greedy random} | wc -w)
  STRATS="${STRATS:-greedy random}" OUT="$DEST/st" KB_SECONDS=$(( $1 / n )) bash bench/kernelbench/strategies_gpu.sh --budget 30 \
    --optimize-time "${OPT_TIME:-45}" --jobs-optimize "${JOBS:-8}" > "$DEST/a/strategies.log" 2>&1; tail -"$n" "$DEST/a/strategies.log"
}
declare -A LIMIT=([harness]=40 [profile]=150 [pipeline]=300 [deadline]=70 [evals]=200 [cute]=80 [corpus]=140 [probe]=90 [gemm]=150 [probes]=150 [slice]=480 [strategies]=520)
for p in ${PHASES:-harness profile pipeline deadline evals corpus}; do
  v="T_${p^^}"; phase "$p" "${!v:-${LIMIT[$p]}}"
done
tar czf "$DEST/a.tgz" -C "$DEST" a $(for d in p e kb st; do [ -d "$DEST/$d" ] && echo $d; done) && rm -rf "$DEST/a" "$DEST/p" "$DEST/e" "$DEST/kb" "$DEST/st"
