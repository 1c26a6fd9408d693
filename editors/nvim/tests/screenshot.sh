#!/bin/sh
# Screenshot of Neovim showing a KernelPro finding: nvim in a tmux pane, the pane
# captured with colours (tmux capture-pane -e), turned into HTML by aha, and the
# HTML rendered to PNG by headless Chromium. Offline; needs tmux, aha, chromium.
#   KERNELPRO_BIN, KP_FIXTURE as for run.sh; KP_PNG (default docs/img/nvim.png)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
NVIM=${NVIM:-$repo/.venv/bin/nvim}
KERNELPRO_BIN=${KERNELPRO_BIN:-$repo/target/debug/kernelpro}
KP_FIXTURE=${KP_FIXTURE:-$repo/tests/fixtures/h200-probe/kernels.cu}
KP_PNG=${KP_PNG:-$repo/docs/img/nvim.png}

work=$(mktemp -d)
session=kp-shot-$$
trap 'tmux kill-session -t "$session" 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/project/.git"
cp "$KP_FIXTURE" "$work/project/" && chmod 644 "$work/project/"*
file="$work/project/$(basename "$KP_FIXTURE")"
cat > "$work/init.lua" <<LUA
dofile('$here/minimal_init.lua')
vim.o.termguicolors = true
vim.o.number = true
vim.o.signcolumn = 'yes'
-- Warnings as text, so the code lenses stay visible on lines with only hints.
vim.diagnostic.config({ virtual_text = { severity = { min = vim.diagnostic.severity.WARN } } })
require('kernelpro').setup({ server_path = '$KERNELPRO_BIN', trusted = true })
LUA

export XDG_CONFIG_HOME="$work/config" XDG_DATA_HOME="$work/data" XDG_STATE_HOME="$work/state"
tmux new-session -d -s "$session" -x 150 -y 42 \
  "$NVIM -n -i NONE -u $work/init.lua --listen $work/nvim.sock $file"
remote() { "$NVIM" --server "$work/nvim.sock" --remote-expr "$1" 2>/dev/null; }

# Wait (up to 120 s) for the server's findings, then put the cursor on the first.
i=0
until [ "$(remote 'luaeval("#vim.diagnostic.get(0)")')" -gt 0 ] 2>/dev/null; do
  i=$((i + 1)); [ $i -lt 240 ] || { echo "no diagnostics after 120 s" >&2; exit 2; }
  sleep 0.5
done
cat > "$work/show.lua" <<'LUA'
local all = vim.diagnostic.get(0)
table.sort(all, function(a, b)
  return a.severity < b.severity or (a.severity == b.severity and a.lnum < b.lnum)
end)
local d = all[1]
vim.api.nvim_win_set_cursor(0, { d.lnum + 1, d.col })
vim.cmd('normal! zz')
-- After the cursor move has been seen, or CursorMoved would close the float.
vim.defer_fn(function()
  vim.diagnostic.open_float({ focus = false, border = 'rounded' })
end, 300)
LUA
remote "luaeval('dofile(\"$work/show.lua\")')" >/dev/null || true
sleep 2

mkdir -p "$(dirname "$KP_PNG")"
tmux capture-pane -e -p -t "$session" | aha --black --title 'KernelPro in Neovim' > "$work/pane.html"
# Match the page to Neovim's default background (aha colours only the cells).
sed -i 's#background-color:black#background-color:\#14161b#; s#<pre>#<pre style="font-family: DejaVu Sans Mono, monospace; font-size: 14px; line-height: 1.2; margin: 8px;">#' "$work/pane.html"
chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --user-data-dir="$work/chromium" --hide-scrollbars \
  --window-size=1290,740 --screenshot="$KP_PNG" "file://$work/pane.html" >/dev/null 2>&1
echo "$KP_PNG"
