#!/usr/bin/env bash
# The KernelBench level-1 slice on the GPU machine: run.py's phases, resumable across calls.
# Usage: bash bench/kernelbench/gpu.sh [all|optimize|build|measure|cheats|report] [run.py args...]
#   all (default): optimize → build → measure for every task not done yet, within KB_SECONDS
#   (default 540, under the device's 10-minute command limit); call it again until the log
#   says 0 to run. Results stay in kernelbench-out/ (git-ignored) on a warm machine; when the
#   device tool sets $OUT, the report, summary, raw JSON lines and a tarball of the per-task
#   files (optimize.json, best.cu, result.json, logs) are copied there.
# Needs torch (with Triton) and nvcc on PATH; carry [".devbin"] (bench/devbin.sh
# builds .devbin/kernelpro; or set KERNELPRO_BIN).
set -uo pipefail
cd "$(dirname "$0")/../.."
. bench/devbin_env.sh
PHASE=${1:-all}
[ $# -gt 0 ] && shift
RES=${KB_OUT:-kernelbench-out}
# The device keeps only git-ignored folders between calls (`*-out/`): a run resumed in the next call
# finds nothing in any other (KB_OUT=kb2 lost 18 measured tasks on 2026-12-07).
if ! git check-ignore -q "$RES/" 2>/dev/null; then  # the slash: "/*-out/" names folders, and it may not exist yet
  echo "warning: $RES is not git-ignored, so the GPU machine's next call will not find it: name it *-out" >&2
fi
SECONDS_LEFT=${KB_SECONDS:-540}
mkdir -p "$RES"
RUN="python3 bench/kernelbench/run.py"

copy_back() {
  $RUN --report-only --out "$RES" "$@" > "$RES/report.log" 2>&1
  if [ -n "${OUT:-}" ] && [ -d "${OUT:-}" ]; then
    for f in report.md summary.json results.jsonl env.json cheats.json; do [ -f "$RES/$f" ] && cp "$RES/$f" "$OUT/"; done
    tar czf "$OUT/kernelbench-tasks.tgz" --exclude='build' -C "$RES" tasks 2>/dev/null
  fi
}

case "$PHASE" in
  cheats)
    timeout "$SECONDS_LEFT" $RUN --selftest-cheats --out "$RES" "$@" 2>&1 | tee "$RES/cheats.log"
    rc=${PIPESTATUS[0]}
    [ -n "${OUT:-}" ] && [ -d "${OUT:-}" ] && cp "$RES/cheats.log" "$RES/cheats.json" "$OUT/" 2>/dev/null
    exit "$rc"
    ;;
  report)
    copy_back "$@"
    cat "$RES/report.md"
    ;;
  all | optimize | build | measure)
    { nvidia-smi -L; nvcc --version | tail -1; python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'; } 2>&1 | tee "$RES/machine.txt"
    # SIGTERM first (run.py then ends its workers' process groups), KILL 20 s later.
    timeout -k 20 "$SECONDS_LEFT" $RUN --phase "$PHASE" --out "$RES" --gpus all --time-budget "$((SECONDS_LEFT - 30))" "$@"
    rc=$?
    copy_back "$@"
    cat "$RES/report.md"
    exit "$rc"
    ;;
  *)
    echo "usage: $0 [all|optimize|build|measure|cheats|report] [run.py args...]" >&2
    exit 2
    ;;
esac
