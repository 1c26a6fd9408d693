#!/bin/sh
# The VS Code end-to-end test: build the .vsix, install code-server if needed,
# and run e2e/code-server.mjs (headless Debian Chromium via playwright-core).
#   KERNELPRO_BIN (default target/debug/kernelpro)  KP_FIXTURE (default editors/fixtures/kernels_spec.cu)
#   KP_OUT (default target/vscode-test.json)        KP_SCREENSHOT (PNG, optional)
#   CODE_SERVER (default target/code-server/..., installed by scripts/install-code-server.sh)
# Exit status: 0 all passed, else the last failing session's (1 a check failed, 2 timeout/error);
# each session writes its report (KP_OUT, KP_OUT-untrusted.json, KP_OUT-missing.json).
set -eu
repo=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$repo"
export KERNELPRO_BIN="${KERNELPRO_BIN:-$repo/target/debug/kernelpro}"
export KP_FIXTURE="${KP_FIXTURE:-$repo/editors/fixtures/kernels_spec.cu}"
export KP_OUT="${KP_OUT:-$repo/target/vscode-test.json}"
export VSIX="$(scripts/build-vsix.sh)"
CODE_SERVER="${CODE_SERVER:-$repo/target/code-server/node_modules/.bin/code-server}"
[ -x "$CODE_SERVER" ] || CODE_SERVER="$(scripts/install-code-server.sh)"
export CODE_SERVER
# Three sessions: the main flow, an untrusted folder, a missing server binary.
status=0
node editors/vscode/e2e/code-server.mjs || status=$?
for mode in untrusted missing; do
  KP_MODE=$mode KP_OUT="${KP_OUT%.json}-$mode.json" KP_SCREENSHOT= node editors/vscode/e2e/code-server.mjs || status=$?
done
exit $status
