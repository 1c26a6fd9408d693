#!/usr/bin/env bash
# The tracing output shown in docs/tracing.md, produced again: the server's
# log of one save (scripts/trace_save.py: the real binary over stdio,
# KERNELPRO_LOG=debug, the real nvcc of .venv on examples/saxpy.cu) and the
# CLI's `--verbose` log of one optimize with the stub evaluator (compiles for
# real, invents the timings: no GPU needed). Raw output into docs/tracing/.
#
#   bash scripts/trace-demo.sh            (after `bash scripts/setup.sh`)
set -euo pipefail
cd "$(dirname "$0")/.."
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
