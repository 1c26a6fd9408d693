#!/usr/bin/env bash
# Every test, with the real tools: installs them first (CUDA compiler wheels
# and Neovim into .venv, Debian packages for the editor tests, node packages),
# then runs the Rust suite (unit, fixture, end-to-end LSP, real Neovim) and the
# VS Code extension's tests (vitest, protocol against the real server, and a
# real VS Code: code-server driven by headless Chromium). CI runs this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export KERNELPRO_VENV="$PWD/.venv"

# Debian packages for the VS Code end-to-end test and the native modules it builds.
need=()
for pkg in chromium ripgrep libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev pkg-config; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

# Incremental caches double the target folder and CI builds once.
export CARGO_INCREMENTAL=0

status=0
# rustfmt.toml is the one style; a file that differs fails CI (run `cargo fmt --all`).
cargo fmt --all --check || { echo "rustfmt: run cargo fmt --all" >&2; status=1; }
cargo test --workspace --no-fail-fast || status=1

cargo build --quiet -p kernelpro
export KERNELPRO_BIN="$PWD/target/debug/kernelpro" KP_REQUIRE_SERVER=1
( cd editors/vscode && npm ci --no-audit --no-fund --silent && npm test ) || status=1
( cd editors/vscode && npm run --silent e2e ) || status=1
exit $status
