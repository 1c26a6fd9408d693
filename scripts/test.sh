#!/usr/bin/env bash
# Every test, with the real tools: installs them first (CUDA compiler wheels
# and Neovim into .venv, Debian packages for the editor tests with root or
# sudo, node packages; see the README's requirements),
# then runs the Rust suite (unit, fixture, end-to-end LSP, real Neovim) and the
# VS Code extension's tests (vitest, protocol against the real server, and a
# real VS Code: code-server driven by headless Chromium). CI runs this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export KERNELPRO_VENV="$PWD/.venv"

# What the README's requirements table lists, checked first so a missing one
# is named here rather than as a failure deep in a build.
missing=()
command -v g++ >/dev/null 2>&1 || missing+=("g++ (nvcc's host compiler: Debian build-essential)")
command -v node >/dev/null 2>&1 || missing+=("Node.js 20 (the VS Code extension's tests)")
command -v npm >/dev/null 2>&1 || missing+=("npm (the VS Code extension's tests)")
if [ ${#missing[@]} -gt 0 ]; then
  printf 'test.sh: missing %s\n' "${missing[@]}" >&2
  exit 1
fi

# Debian packages for the VS Code end-to-end test: headless Chromium drives
# code-server, whose search needs ripgrep and whose native modules build
# against the -dev packages. Installed system-wide, so with root or sudo.
need=()
for pkg in chromium ripgrep libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev pkg-config make; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
  elif command -v sudo >/dev/null 2>&1; then
    SUDO=sudo
  else
    echo "test.sh: the VS Code end-to-end test needs these Debian packages, and installing them needs root or sudo:" >&2
    echo "  apt-get install ${need[*]}" >&2
    echo "(headless Chromium drives code-server; ripgrep is its search; the rest build its native modules)" >&2
    exit 1
  fi
  $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

# Incremental caches double the target folder and CI builds once.
export CARGO_INCREMENTAL=0

status=0
# rustfmt.toml is the one style; a file that differs fails CI (run `cargo fmt --all`).
cargo fmt --all --check || { echo "rustfmt: run cargo fmt --all" >&2; status=1; }
# Clippy's warnings are errors (every target: tests and benches too). Before
# the tests: it checks what they are about to build.
cargo clippy --workspace --all-targets -- -D warnings || { echo "clippy: fix the warnings above" >&2; status=1; }
cargo test --workspace --no-fail-fast || status=1

cargo build --quiet -p kernelpro
export KERNELPRO_BIN="$PWD/target/debug/kernelpro" KP_REQUIRE_SERVER=1
# npm's errors stay visible (a fresh system behind a TLS-intercepting proxy failed here without a
# word under --silent: Node needs the proxy's CA in NODE_EXTRA_CA_CERTS, see README).
( cd editors/vscode && npm ci --no-audit --no-fund --loglevel=error && npm test ) ||
  { echo "test.sh: the VS Code extension's npm ci or vitest failed (see above)" >&2; status=1; }
( cd editors/vscode && npm run --silent e2e ) || status=1
exit $status
