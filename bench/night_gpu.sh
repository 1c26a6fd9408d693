#!/usr/bin/env bash
# One device call for the three open issues after a round's merges (2026-12-06 night), each phase
# under its own time limit so the call ends within the device's 10 minutes:
#   the GPU worker's tests; issue 34's evaluations per minute (bench/evals_gpu.sh, the pre-round
#   binary .devbin/kernelpro-base.gz against this one); issue 33's profile comparison (in-process
#   vs ncu one launch vs --full, profile-on-save in-process: bench/gpu_run.sh profile); issue 29's
#   worst corpus kernels through the optimizer (bench/kernelbench/gpu.sh, TASKS below).
# Usage (device, carry [".devbin", "public-kernels/corpus"]): bash bench/night_gpu.sh "$OUT"
set -uo pipefail
cd "$(dirname "$0")/.."
DEST=${1:?usage: night_gpu.sh OUTDIR}; mkdir -p "$DEST/a"
for g in .devbin/*.gz; do gunzip -kf "$g"; chmod +x "${g%.gz}"; done
. bench/devbin_env.sh
export PATH=$PATH:/usr/local/cuda/bin
{ nvidia-smi -L; nproc; } > "$DEST/a/env.txt" 2>&1
KERNELPRO_NVCC=$(command -v nvcc) timeout "${T_HARNESS:-60}" .devbin/gpu-harness --ignored --test-threads=1 > "$DEST/a/gpu-harness.txt" 2>&1
grep "test result" "$DEST/a/gpu-harness.txt"
# Issue 34's deadline on the real GPU evaluator (a naive 4096³ GEMM given 45 s), where the binary was built.
[ -x .devbin/optimize-deadline ] && KERNELPRO_NVCC=$(command -v nvcc) timeout "${T_DEADLINE:-70}" .devbin/optimize-deadline --ignored --nocapture \
  a_slow_real_kernel_ends_at_its_limit_on_the_gpu > "$DEST/a/deadline.txt" 2>&1
tail -3 "$DEST/a/deadline.txt" 2>/dev/null
TIME=${TIME:-30} timeout "${T_EVALS:-230}" bash bench/evals_gpu.sh "$DEST/e" 2>&1 | tail -8
SAVE_BACKENDS=cupti timeout "${T_PROFILE:-150}" bash bench/gpu_run.sh profile "$DEST/p" > "$DEST/a/profile.log" 2>&1
tail -12 "$DEST/a/profile.log"
TASKS=${TASKS:-corpus_xpiler_instancenorm,corpus_infa_softmax,corpus_cba_matrix_mul,corpus_bruce_reduce_atomic}
KB_OUT=corpus-out KB_SECONDS=${T_CORPUS:-140} bash bench/kernelbench/gpu.sh all public-kernels/corpus --tasks "$TASKS" \
  --budget 30 --optimize-time "${OPT_TIME:-40}" --title "Fetched corpus, worst kernels (issue 29)" > "$DEST/a/corpus.log" 2>&1
python3 bench/public_kernels/corpus_report.py corpus-out public-kernels/corpus/corpus.json > "$DEST/a/corpus-report.md" 2>&1
cp corpus-out/results.jsonl "$DEST/a/corpus-results.jsonl" 2>/dev/null
tail -5 "$DEST/a/corpus-report.md"
tar czf "$DEST/a.tgz" -C "$DEST" a && rm -rf "$DEST/a"
