#!/bin/sh
# Install code-server 4.100.3 (the last release that runs on Node 20) for the
# VS Code end-to-end test, using only the npm registry and Debian packages.
# Its own postinstall cannot run here: npm 11 blocks dependency install scripts,
# @vscode/ripgrep downloads rg at install time, and node-pty's post-install calls
# `npx node-gyp`. So: fetch with --ignore-scripts, put Debian's rg where
# @vscode/ripgrep looks, build the native modules against /usr/include/node,
# then do postinstall.sh's remaining steps (symlinks, extensions' typescript).
# Needs: apt-get install -y chromium ripgrep libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev pkg-config g++ make python3
# Usage: scripts/install-code-server.sh [PREFIX]   (default target/code-server); prints the code-server path.
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
prefix=${1:-$repo/target/code-server}
version=4.100.3
native="node-pty @parcel/watcher kerberos native-watchdog @vscode/spdlog @vscode/deviceid"

mkdir -p "$prefix"
cd "$prefix"
[ -f package.json ] || echo '{"name":"kernelpro-code-server","private":true}' > package.json
npm install --no-audit --no-fund --ignore-scripts "code-server@$version" >&2
# argon2's prebuilt download fails offline; node-pre-gyp then builds it.
echo "allow-scripts=argon2" > .npmrc
npm_config_nodedir=/usr npm rebuild argon2 >&2
ls node_modules/argon2/lib/binding/napi-v*/argon2.node >/dev/null

cd node_modules/code-server/lib/vscode
npm install --no-audit --no-fund --omit=dev --ignore-scripts >&2
mkdir -p node_modules/@vscode/ripgrep/bin
cp "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
echo "allow-scripts=$(echo $native | tr ' ' ',')" > .npmrc
# node-pty's post-install only regenerates compile_commands.json (npx node-gyp,
# not offline); its module is already built by then, so its failure is ignored.
npm_config_nodedir=/usr npm rebuild $native >&2 || true
for m in node-pty/build/Release/pty.node kerberos/build/Release/kerberos.node \
         native-watchdog/build/Release/watchdog.node @vscode/spdlog/build/Release/spdlog.node; do
  [ -f "node_modules/$m" ] || { echo "native module missing: $m" >&2; exit 1; }
done

rm -rf node_modules.asar && ln -s node_modules node_modules.asar
(cd bin/remote-cli && rm -f code-server && ln -s code-linux.sh code-server)
(cd bin/helpers && rm -f browser.sh && ln -s browser-linux.sh browser.sh)
cd extensions
npm install --no-audit --no-fund --omit=dev --ignore-scripts >&2
node postinstall.mjs >/dev/null
echo "$prefix/node_modules/.bin/code-server"
