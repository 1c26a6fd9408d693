#!/usr/bin/env bash
# The tracing output shown in docs/tracing.md, produced again: the server's
# log of one save (scripts/trace_save.py: the real binary over stdio,
# KERNELPRO_LOG=debug, the real nvcc of .venv on examples/saxpy.cu) and the
# CLI's `--verbose` log of one optimize with the stub evaluator (compiles for
# real, invents the timings: no GPU needed). Raw output into docs/tracing/.
#
#   bash scripts/trace-demo.sh            (after `bash scripts/setup.sh`)
#   bash scripts/trace-demo.sh gpu OUT    (on a GPU machine, KERNELPRO_BIN set: one optimize with
#                                          the real GPU evaluator into OUT/optimize-gpu.{log,out})
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = gpu ]; then
  out=${2:?usage: trace-demo.sh gpu OUTDIR}; mkdir -p "$out"
  bin=${KERNELPRO_BIN:?KERNELPRO_BIN names the kernelpro binary}
  # The same optimize as below, timed on the GPU (the original profiled first, as a user runs it).
  "$bin" optimize --verbose examples/saxpy.cu --kernel saxpy --budget 6 --strategy greedy \
    >"$out/optimize-gpu.out" 2>"$out/optimize-gpu.log" || echo "optimize exited $?" >>"$out/optimize-gpu.out"
  sed -i "s#$PWD#<repo>#g; s#/tmp/kernelpro-[A-Za-z0-9_-]*#<tmp>#g" "$out"/optimize-gpu.*
  { nvidia-smi -L; echo "produced $(date -u +%Y-%m-%dT%H:%MZ) by scripts/trace-demo.sh gpu"; } >"$out/optimize-gpu.txt" 2>&1
  exit 0
fi
export KERNELPRO_VENV="${KERNELPRO_VENV:-$PWD/.venv}"
cargo build --quiet -p kernelpro
bin="$PWD/target/debug/kernelpro"
out=docs/tracing
mkdir -p "$out"

# One save: the lines the editor's log gets, seconds since the didSave.
python3 scripts/trace_save.py "$bin" examples/saxpy.cu >"$out/save.log" 2>"$out/save-open.log"

# One optimize: stderr is the log (seconds since the start), stdout the result.
"$bin" optimize --verbose examples/saxpy.cu --kernel saxpy --evaluator stub:1.5 --budget 6 \
  --strategy greedy --no-profile >"$out/optimize.out" 2>"$out/optimize.log"

# Where the file's own folder appears, the reader's checkout stands in its place.
sed -i "s#$PWD#<repo>#g; s#/tmp/kernelpro-[A-Za-z0-9_-]*#<tmp>#g" "$out"/*.log "$out"/*.out
{
  echo "produced $(date -u +%Y-%m-%dT%H:%MZ) by scripts/trace-demo.sh at $(git rev-parse --short HEAD)"
  nvcc=$(ls "$KERNELPRO_VENV"/lib/python3*/site-packages/nvidia/cu*/bin/nvcc 2>/dev/null | head -1)
  echo "nvcc: .venv/${nvcc#"$KERNELPRO_VENV"/} $("${nvcc:-false}" --version 2>/dev/null | tail -1)"
  echo "cores: $(nproc); the optimize ran with the stub evaluator (no GPU): its times are invented"
} >"$out/README.txt"
wc -l "$out"/*.log
