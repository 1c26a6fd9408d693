#!/bin/sh
# Screenshot of Neovim showing a KernelPro finding: nvim in a tmux pane, the pane
# captured with colours (tmux capture-pane -e), turned into HTML by aha, and the
# HTML rendered to PNG by headless Chromium. Offline; needs tmux, aha, chromium.
#   KERNELPRO_BIN, KP_FIXTURE as for run.sh; KP_PNG (default docs/img/nvim.png)
#   KP_TXT: also write the pane as plain text there (tmux capture-pane -p)
#   KP_STATE: finding (default: the first finding's float), untrusted (the workspace not
#   trusted: lenses that explain, no runs), optimize (a kernel optimized with the stub
#   evaluator: the message in words and the code action offered)
# Issue 32 item 5: Neovim never stops at "Press ENTER"; the script counts the prompts it saw
# and exits 3 after the picture when there was one.
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
require('kernelpro').setup({ server_path = '$KERNELPRO_BIN', trusted = $( [ "${KP_STATE:-finding}" = untrusted ] && echo false || echo true ),
  settings = { optimize = { evaluator = 'stub:1.5', budget = 4 } } })
LUA

export XDG_CONFIG_HOME="$work/config" XDG_DATA_HOME="$work/data" XDG_STATE_HOME="$work/state"
tmux new-session -d -s "$session" -x 150 -y 42 \
  "$NVIM -n -i NONE -u $work/init.lua --listen $work/nvim.sock $file"
remote() { "$NVIM" --server "$work/nvim.sock" --remote-expr "$1" 2>/dev/null; }

# Wait (up to 120 s) for the server's findings (untrusted: its lenses), then show the state.
i=0
prompts=0
shown() {
  if [ "${KP_STATE:-finding}" = untrusted ]; then tmux capture-pane -p -t "$session" | grep -q "trust the workspace"
  else [ "$(remote 'luaeval("#vim.diagnostic.get(0)")')" -gt 0 ] 2>/dev/null; fi
}
until shown; do
  # A long message (the untrusted notice) used to wait for Enter: counted, answered, and failed on below.
  if tmux capture-pane -p -t "$session" | grep -q "Press ENTER"; then
    prompts=$((prompts + 1)); tmux send-keys -t "$session" Enter
  fi
  i=$((i + 1)); [ $i -lt 240 ] || { echo "nothing to show after 120 s" >&2; exit 2; }
  sleep 0.5
done
case "${KP_STATE:-finding}" in
untrusted)
cat > "$work/show.lua" <<'LUA'
-- The first kernel's lens line, and the kernel hover that says why nothing is compiled.
for i, line in ipairs(vim.api.nvim_buf_get_lines(0, 0, -1, false)) do
  local col = line:find('__global__ void ', 1, true)
  if col then
    vim.api.nvim_win_set_cursor(0, { i, col + #'__global__ void ' })
    break
  end
end
vim.cmd('normal! zt')
vim.defer_fn(function()
  vim.lsp.buf.hover({ border = 'rounded', focusable = false })
end, 300)
LUA
;;
optimize)
cat > "$work/show.lua" <<'LUA'
for i, line in ipairs(vim.api.nvim_buf_get_lines(0, 0, -1, false)) do
  if line:find('__global__ void ', 1, true) then
    vim.api.nvim_win_set_cursor(0, { i + 1, 2 })
    break
  end
end
vim.cmd('normal! zt')
vim.cmd('KernelProOptimize')
LUA
;;
*)
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
;;
esac
remote "luaeval('dofile(\"$work/show.lua\")')" >/dev/null || true
sleep 2
# The optimize state: wait for the search's message (stub evaluator: seconds).
if [ "${KP_STATE:-finding}" = optimize ]; then
  i=0
  until tmux capture-pane -p -t "$session" | grep -q "Apply optimized\|faster"; do
    i=$((i + 1)); [ $i -lt 120 ] || { echo "no optimize message after 60 s" >&2; exit 2; }
    sleep 0.5
  done
  sleep 1
fi
tmux capture-pane -p -t "$session" | grep -q "Press ENTER" && prompts=$((prompts + 1))
[ -z "${KP_TXT:-}" ] || tmux capture-pane -p -t "$session" > "$KP_TXT"

mkdir -p "$(dirname "$KP_PNG")"
tmux capture-pane -e -p -t "$session" | aha --black --title 'KernelPro in Neovim' > "$work/pane.html"
# Match the page to Neovim's default background (aha colours only the cells).
sed -i 's#background-color:black#background-color:\#14161b#; s#<pre>#<pre style="font-family: DejaVu Sans Mono, monospace; font-size: 14px; line-height: 1.2; margin: 8px;">#' "$work/pane.html"
chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --user-data-dir="$work/chromium" --hide-scrollbars \
  --window-size=1290,740 --screenshot="$KP_PNG" "file://$work/pane.html" >/dev/null 2>&1
echo "$KP_PNG"
if [ "$prompts" -gt 0 ]; then
  echo "Neovim stopped at \"Press ENTER\" $prompts time(s)" >&2
  exit 3
fi
