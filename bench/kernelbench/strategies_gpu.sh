#!/usr/bin/env bash
# Issue 34: MCTS vs greedy vs random on the KernelBench slice, each strategy's optimizer runs under
# the same settings as the slice's own run (bench/kernelbench/gpu.sh: --budget, --optimize-time,
# --jobs-optimize), optimize phase only: the comparison is of the optimizer's verified speedups
# over the naive kernel (bench/compare_strategies.py on each run's tasks/NAME/optimize.json).
# MCTS's runs are the slice's own (its kernelbench-tasks.tgz); this script runs the others.
# Usage (device, carry [".devbin"]): STRATS="greedy random" bash bench/kernelbench/strategies_gpu.sh [run.py args...]
#   Each strategy's tasks tarball lands in $OUT/STRATEGY/ (KB_SECONDS each, default 250). KB_TASKS: the task
#   files or folder (default bench/kernelbench/tasks).
set -uo pipefail
cd "$(dirname "$0")/../.."
for s in ${STRATS:-greedy random}; do
  mkdir -p "${OUT:-strategies-out}/$s"
  # shellcheck disable=SC2086 # KB_TASKS: one folder or several files
  OUT="${OUT:-strategies-out}/$s" KB_OUT="kb-$s-out" KB_SECONDS=${KB_SECONDS:-250} \
    bash bench/kernelbench/gpu.sh optimize ${KB_TASKS:-bench/kernelbench/tasks} --strategy "$s" "$@" > "${OUT:-strategies-out}/$s/run.log" 2>&1
  grep -c '"speedup"' kb-$s-out/tasks/*/optimize.json 2>/dev/null | wc -l | sed "s/^/$s: optimize.json files: /"
done
