#!/bin/sh
# Run the headless Neovim end-to-end test against the real server.
#   KERNELPRO_BIN (default target/debug/kernelpro)  KP_FIXTURE (default editors/fixtures/kernels_spec.cu:
#   the H200 probe's kernels.cu with a launch spec above saxpy_fp64, so that it can be optimized)
#   KP_OUT (default target/nvim-test.json)          NVIM (default .venv/bin/nvim, else nvim on PATH)
# Exit status is run.lua's: 0 pass, 1 a check failed, 2 timeout/error.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)

if [ -z "${NVIM:-}" ]; then
  if [ -x "$repo/.venv/bin/nvim" ]; then NVIM=$repo/.venv/bin/nvim; else NVIM=nvim; fi
fi
export KERNELPRO_BIN="${KERNELPRO_BIN:-$repo/target/debug/kernelpro}"
export KP_FIXTURE="${KP_FIXTURE:-$repo/editors/fixtures/kernels_spec.cu}"
export KP_OUT="${KP_OUT:-$repo/target/nvim-test.json}"

if ! command -v "$KERNELPRO_BIN" >/dev/null 2>&1; then
  echo "kernelpro server not found at $KERNELPRO_BIN (build it with \`cargo build -p kernelpro\`, or set KERNELPRO_BIN)" >&2
  exit 2
fi

# Keep the user's config, plugins, shada and LSP log out of the test.
# pip's downloads stay in the user's cache (the install check reuses the set-up's wheels).
export PIP_CACHE_DIR="${PIP_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pip}"
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
export XDG_CONFIG_HOME="$home/config" XDG_DATA_HOME="$home/data" XDG_STATE_HOME="$home/state" XDG_CACHE_HOME="$home/cache"

status=0
"$NVIM" --headless -n -i NONE -u "$here/minimal_init.lua" -l "$here/run.lua" || status=$?
if [ "$status" -ne 0 ] && [ -f "$XDG_STATE_HOME/nvim/lsp.log" ]; then
  echo "--- lsp.log (tail)" >&2
  tail -n 40 "$XDG_STATE_HOME/nvim/lsp.log" >&2
fi
exit "$status"
