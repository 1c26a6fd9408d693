#!/bin/sh
# Build the VS Code extension into target/kernelpro-VERSION.vsix (esbuild + @vscode/vsce).
# KERNELPRO_BIN=path bundles that server binary as server/<platform>-<arch>/kernelpro,
# so the extension works without the server on PATH. Prints the .vsix path.
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo/editors/vscode"
[ -d node_modules ] || npm ci --no-audit --no-fund >&2

rm -rf server out docs
# Findings link to docs/tools.md beside the server binary (config/src/docs.rs):
# server/<platform>/kernelpro -> docs/tools.md in the extension.
mkdir -p docs
cp "$repo/docs/tools.md" docs/tools.md
if [ -n "${KERNELPRO_BIN:-}" ]; then
  platform=$(node -p 'process.platform + "-" + process.arch')
  mkdir -p "server/$platform"
  cp "$KERNELPRO_BIN" "server/$platform/kernelpro"
fi

version=$(node -p 'require("./package.json").version')
mkdir -p "$repo/target"
out="$repo/target/kernelpro-$version.vsix"
npm run --silent build -- --minify >&2
npx vsce package --no-dependencies --allow-missing-repository --skip-license -o "$out" >&2
rm -rf server docs
echo "$out"
