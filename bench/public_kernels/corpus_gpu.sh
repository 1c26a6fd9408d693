#!/usr/bin/env bash
# The fetched corpus (issue 29 item 5) on the GPU machine: the naive kernels through kernelpro's
# optimizer (budget 30, at most 90 s of search a kernel, built-in rewrites only: run.py's defaults, no
# LLM, no ncu) and measured against PyTorch eager and torch.compile; the expert twins measured as their
# authors wrote them (budget 0). Resumable: call it again until the log says 0 to run; results stay in
# $KB_OUT (default corpus-out, git-ignored) on a warm machine and are copied to $OUT.
#
# The task files are fetched code, git-ignored: make them here first
# (python3 bench/public_kernels/fetch_corpus.py) and carry them with the working tree:
#   run(command="bash bench/public_kernels/corpus_gpu.sh", carry=[".devbin", "public-kernels/corpus"])
# then the table: python3 bench/public_kernels/corpus_report.py corpus-out (also written to $OUT).
set -uo pipefail
cd "$(dirname "$0")/../.."
export KB_OUT=${KB_OUT:-corpus-out}
export KB_SECONDS=${KB_SECONDS:-540}
# Seconds kept for the expert twins after the naive kernels (default 120).
EXPERT_SECONDS=${EXPERT_SECONDS:-120}
CORPUS=${CORPUS:-public-kernels/corpus}
list() { python3 -c "import json,sys; print(','.join(t['task'] for t in json.load(open('$CORPUS/corpus.json')) if t['role'] == sys.argv[1]))" "$1"; }
. bench/devbin_env.sh
start=$SECONDS
# The naive kernels with the optimizer first (OPT_TIME s of search each, default 60, at most the issue's
# 90), then the expert twins measured as their authors wrote them (no search) with what time is left.
KB_SECONDS=$((KB_SECONDS - EXPERT_SECONDS)) bash bench/kernelbench/gpu.sh all "$CORPUS" --tasks "$(list naive)" \
  --budget 30 --optimize-time "${OPT_TIME:-60}" --title "Fetched corpus (issue 29)" "$@"
rc=$?
left=$((KB_SECONDS - (SECONDS - start)))
[ "$left" -gt 60 ] && KB_SECONDS=$left bash bench/kernelbench/gpu.sh all "$CORPUS" --tasks "$(list expert)" --budget 0 \
  --title "Fetched corpus: expert twins" "$@"
# run.py's report covers the last --tasks list only; the corpus table reads every task's result.json.
python3 bench/kernelbench/run.py --report-only --out "$KB_OUT" --title "Fetched corpus (issue 29), all tasks" "$CORPUS" > /dev/null 2>&1
python3 bench/public_kernels/corpus_report.py "$KB_OUT" "$CORPUS/corpus.json" | tee "$KB_OUT/corpus-report.md"
if [ -n "${OUT:-}" ] && [ -d "${OUT:-}" ]; then
  cp "$KB_OUT/corpus-report.md" "$KB_OUT/report.md" "$KB_OUT/results.jsonl" "$KB_OUT/summary.json" "$OUT/" 2>/dev/null
  tar czf "$OUT/corpus-tasks.tgz" --exclude='build' --exclude='*.cu' -C "$KB_OUT" tasks 2>/dev/null
fi
exit "$rc"
