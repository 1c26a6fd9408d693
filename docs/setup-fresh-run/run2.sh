#!/bin/bash
# The part of scripts/test.sh after `cargo test` (vitest and the code-server e2e), run again with Node
# given the sandbox proxy's CA (NODE_EXTRA_CA_CERTS): the first run's `npm ci --silent` failed on
# SELF_SIGNED_CERT_IN_CHAIN without a word. Same checkout, same commit.
set -u
cd "$HOME/kernelpro"
export NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
export CARGO_INCREMENTAL=0
start=$(date +%s)
echo "start test.sh's editor part (NODE_EXTRA_CA_CERTS set) at $(date -u +%H:%M:%S)" >> ~/logs/summary.txt
status=0
cargo build --quiet -p kernelpro
export KERNELPRO_BIN="$PWD/target/debug/kernelpro" KP_REQUIRE_SERVER=1
( cd editors/vscode && npm ci --no-audit --no-fund --loglevel=error && npm test ) || status=1
( cd editors/vscode && npm run --silent e2e ) || status=1
echo "test.sh's editor part: exit $status, wall $(( $(date +%s) - start )) s, ended $(date -u +%H:%M:%S)" >> ~/logs/summary.txt
exit $status
