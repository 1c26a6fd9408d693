-- :KernelPro* user commands and the client-side handlers for the server's
-- commands (so code lenses and code actions show their results too).
local kp = require('kernelpro')

local M = {}

local function notify(msg, level)
  kp.say(msg, level or vim.log.levels.INFO)
end

--- Why no server is attached, and what to do about it, in words.
function M.why_no_server()
  local bin = kp.cmd()[1]
  if vim.fn.executable(bin) == 0 then
    return ('the server binary `%s` was not found. Build it (`cargo build --release -p kernelpro` in a KernelPro checkout) '
      .. "and put target/release on PATH, or give its path: `require('kernelpro').setup({ server_path = '/path/to/kernelpro' })`"):format(bin)
  end
  local ft = vim.bo.filetype
  if not vim.tbl_contains(kp.options.filetypes, ft) then
    return ('no kernelpro server is attached: this buffer\'s filetype is `%s`, and KernelPro starts for %s'):format(
      ft, table.concat(kp.options.filetypes, ', '))
  end
  return ('no kernelpro server is attached (`%s` exists): it may have exited; see :LspLog, or :checkhealth kernelpro'):format(bin)
end

local next_token = 0

--- Run a server command (workspace/executeCommand); on_result(err, result).
--- With `progress`, the request carries its own work-done token: the server
--- reports progress on it (:KernelProCancel can stop it) and leaves telling
--- the result to us, so nothing is shown twice.
function M.execute(bufnr, command, arguments, on_result, progress)
  local client = kp.client(bufnr)
  if not client then
    notify(M.why_no_server(), vim.log.levels.ERROR)
    return
  end
  local params = { command = command, arguments = arguments }
  if progress then
    next_token = next_token + 1
    params.workDoneToken = ('kernelpro-nvim-%d-%d'):format(vim.fn.getpid(), next_token)
  end
  kp.request(client, 'workspace/executeCommand', params, function(err, result)
    on_result(err, result)
  end, bufnr)
end

local function contains(range, pos)
  local s, e = range.start, range['end']
  if pos.line < s.line or pos.line > e.line then
    return false
  end
  if pos.line == s.line and pos.character < s.character then
    return false
  end
  return not (pos.line == e.line and pos.character > e.character)
end

local function is_kernel(sym)
  local detail = (sym.detail or ''):lower()
  return detail:find('__global__', 1, true) ~= nil or detail:find('kernel', 1, true) ~= nil
end

--- Flatten DocumentSymbol trees and SymbolInformation lists to {name, detail, kind, range}.
local function flatten(symbols, out)
  for _, sym in ipairs(symbols or {}) do
    table.insert(out, {
      name = sym.name,
      detail = sym.detail,
      kind = sym.kind,
      range = sym.range or (sym.location and sym.location.range),
    })
    flatten(sym.children, out)
  end
  return out
end

--- The innermost kernel whose range holds `pos` (0-based line/character), or nil.
function M.kernel_at(symbols, pos)
  local best
  for _, sym in ipairs(flatten(symbols, {})) do
    if sym.range and is_kernel(sym) and contains(sym.range, pos) then
      if not best or sym.range.start.line >= best.range.start.line then
        best = sym
      end
    end
  end
  return best and best.name
end

--- Ask the server (documentSymbol) which kernel encloses the cursor; callback(name|nil).
function M.kernel_at_cursor(bufnr, callback)
  local client = kp.client(bufnr)
  if not client then
    return callback(nil)
  end
  local cursor = vim.api.nvim_win_get_cursor(0)
  local pos = { line = cursor[1] - 1, character = cursor[2] }
  local params = { textDocument = vim.lsp.util.make_text_document_params(bufnr) }
  kp.request(client, 'textDocument/documentSymbol', params, function(err, result)
    callback(not err and M.kernel_at(result, pos) or nil)
  end, bufnr)
end

--- Markdown (string or MarkupContent) in a floating window.
function M.show_markdown(text, focus_id)
  if type(text) == 'table' then
    text = text.value or vim.inspect(text)
  end
  local lines = vim.split(text or '', '\n', { plain = true })
  return vim.lsp.util.open_floating_preview(lines, 'markdown', {
    border = 'rounded',
    focus_id = focus_id,
    max_width = math.floor(vim.o.columns * 0.8),
    max_height = math.floor(vim.o.lines * 0.7),
  })
end

--- A server command's reply in words for `what` ("optimize saxpy"), never a
--- Lua table: the server's `message`, else what the reply says.
function M.describe(what, result)
  if type(result) == 'string' then
    return result
  end
  if type(result) ~= 'table' then
    return what .. ' finished'
  end
  if type(result.message) == 'string' and result.message ~= '' then
    return result.message
  end
  if result.cancelled then
    return what .. ' was cancelled'
  end
  if type(result.error) == 'string' then
    return what .. ' failed: ' .. result.error
  end
  if type(result.title) == 'string' then
    return result.title
  end
  return what .. ' finished'
end

local function report(what)
  return function(err, result)
    if err then
      notify(what .. ' failed: ' .. (err.message or ('error ' .. tostring(err.code))), vim.log.levels.ERROR)
    else
      local failed = type(result) == 'table' and result.error ~= nil
      notify(M.describe(what, result), failed and vim.log.levels.WARN or vim.log.levels.INFO)
    end
  end
end

function M.optimize(bufnr, kernel)
  -- No server: say so (not "the cursor is not inside a kernel", which it cannot tell).
  if not kp.client(bufnr) then
    return notify(M.why_no_server(), vim.log.levels.ERROR)
  end
  local uri = vim.uri_from_bufnr(bufnr)
  local function run(name)
    if not name then
      return notify('the cursor is not inside a __global__ kernel', vim.log.levels.WARN)
    end
    notify('optimizing ' .. name .. ' (apply the result with a code action when it finishes)')
    M.execute(bufnr, 'kernelpro.optimize', { uri, name }, report('optimize ' .. name), true)
  end
  if kernel and kernel ~= '' then
    run(kernel)
  else
    M.kernel_at_cursor(bufnr, run)
  end
end

function M.profile(bufnr)
  if not kp.client(bufnr) then
    return notify(M.why_no_server(), vim.log.levels.ERROR)
  end
  notify('profiling (:KernelProCancel stops it)')
  M.execute(bufnr, 'kernelpro.profile', { vim.uri_from_bufnr(bufnr) }, report('profile'), true)
end

function M.sass(bufnr, line0)
  M.execute(bufnr, 'kernelpro.showSass', { vim.uri_from_bufnr(bufnr), line0 }, function(err, result)
    if err then
      return notify('showSass failed: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    end
    M.show_markdown(result, 'kernelpro_sass')
  end)
end

function M.doctor(bufnr)
  if not kp.client(bufnr) then
    -- Say what is missing rather than only that nothing is attached.
    return M.show_markdown('# KernelPro doctor\n\n' .. M.why_no_server(), 'kernelpro_doctor')
  end
  M.execute(bufnr, 'kernelpro.doctor', {}, function(err, result)
    if err then
      return notify('doctor failed: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    end
    M.show_markdown(result, 'kernelpro_doctor')
  end)
end

--- Installs the pinned CUDA compiler wheels into Neovim's data folder (the
--- server does it: `kernelpro.installCuda`) and points the server at its nvcc;
--- later sessions find it there by themselves.
function M.install_cuda(bufnr)
  if not kp.client(bufnr) then
    return notify(M.why_no_server(), vim.log.levels.WARN)
  end
  notify('installing the CUDA compiler into ' .. kp.cuda_dir() .. ' (a minute or two)…')
  M.execute(bufnr, 'kernelpro.installCuda', { kp.cuda_dir() }, function(err, result)
    if err then
      return notify('installing the CUDA compiler failed: ' .. (err.message or tostring(err)), vim.log.levels.ERROR)
    end
    if type(result) ~= 'table' or not result.nvcc then
      return notify((type(result) == 'table' and result.message) or 'installing the CUDA compiler failed', vim.log.levels.ERROR)
    end
    kp.update_settings({ settings = { nvcc = result.nvcc } })
    notify(result.message)
  end)
end

-- Progress tokens the server has begun and not ended: token -> {client_id, title}.
M.active = {}

--- The command-line text for one progress value, or nil to clear it: an
--- analysis that ends without a message leaves nothing behind.
function M.progress_line(title, value)
  -- The per-save analysis is titled just "KernelPro".
  local what = (title and title ~= '' and title ~= 'KernelPro') and title or nil
  local message = value.message ~= '' and value.message or nil
  if value.kind == 'end' then
    if not message then
      return nil
    end
    return 'KernelPro: ' .. (what and (what .. ': ') or '') .. message
  end
  -- The percentage right after the title: a line cut to the command line keeps it.
  local pct = value.percentage and (' (' .. value.percentage .. '%)') or ''
  local head = what and (what .. pct) or nil
  local text = table.concat(vim.tbl_filter(function(x)
    return x ~= nil
  end, { head, message }), ': ')
  if not head then
    text = (text ~= '' and text or 'working') .. pct
  end
  return 'KernelPro: ' .. text
end

function M.watch_progress()
  vim.api.nvim_create_autocmd('LspProgress', {
    group = vim.api.nvim_create_augroup('kernelpro_progress', { clear = true }),
    callback = function(ev)
      local client = vim.lsp.get_client_by_id(ev.data.client_id)
      if not client or client.name ~= kp.name then
        return
      end
      local token, value = ev.data.params.token, ev.data.params.value or {}
      if value.kind == 'begin' then
        M.active[token] = { client_id = client.id, title = value.title, cancellable = value.cancellable }
      end
      local title = (M.active[token] or {}).title or value.title or ''
      if value.kind == 'end' then
        M.active[token] = nil
      end
      if kp.options.progress then
        -- A run we asked for ends in its reply's message (one per failure, not
        -- the progress's "failed: …" too): its end only clears the line.
        local ours = type(token) == 'string' and token:find('^kernelpro%-nvim%-') ~= nil
        local line = (value.kind == 'end' and ours) and '' or (M.progress_line(title, value) or '')
        vim.api.nvim_echo({ { kp.one_line(line, math.max(vim.v.echospace, 20) - 1) } }, false, {})
      end
    end,
  })
end

--- Cancel every running compile/profile/optimize the server reported as
--- cancellable; says so when there is none. Returns how many were cancelled.
function M.cancel()
  local n = 0
  for token, p in pairs(M.active) do
    local client = vim.lsp.get_client_by_id(p.client_id)
    if client and p.cancellable ~= false then
      kp.notify(client, 'window/workDoneProgress/cancel', { token = token })
      n = n + 1
    end
  end
  if n == 0 then
    notify('nothing to cancel (no optimize or profile is running)')
  end
  return n
end

-- Server commands met in code lenses and code actions: forward, then show the result.
local function forward(display, progress)
  return function(command, ctx)
    M.execute(ctx.bufnr, command.command, command.arguments, display, progress)
  end
end

function M.register()
  vim.lsp.commands['kernelpro.optimize'] = function(command, ctx)
    local kernel = (command.arguments or {})[2]
    forward(report('optimize' .. (kernel and (' ' .. kernel) or '')), true)(command, ctx)
  end
  vim.lsp.commands['kernelpro.profile'] = forward(report('profile'), true)
  vim.lsp.commands['kernelpro.showSass'] = forward(function(err, result)
    if not err then
      M.show_markdown(result, 'kernelpro_sass')
    end
  end)

  local cmd = vim.api.nvim_create_user_command
  cmd('KernelProOptimize', function(a)
    M.optimize(vim.api.nvim_get_current_buf(), a.args)
  end, { nargs = '?', desc = 'KernelPro: optimize the kernel under the cursor (or the named one)' })
  cmd('KernelProProfile', function()
    M.profile(vim.api.nvim_get_current_buf())
  end, { desc = 'KernelPro: profile this file with ncu' })
  cmd('KernelProSass', function(a)
    local line1 = tonumber(a.args) or a.line1
    M.sass(vim.api.nvim_get_current_buf(), line1 - 1)
  end, { nargs = '?', range = true, desc = 'KernelPro: SASS for the cursor line (or [line])' })
  cmd('KernelProDoctor', function()
    M.doctor(vim.api.nvim_get_current_buf())
  end, { desc = 'KernelPro: what the server found (nvcc, ncu, GPU)' })
  cmd('KernelProTrust', function()
    kp.update_settings({ trusted = true })
    notify('workspace trusted: the server may now compile and run code')
  end, { desc = 'KernelPro: let the server compile and run code here' })
  cmd('KernelProCancel', function()
    M.cancel()
  end, { desc = 'KernelPro: cancel running compile/profile/optimize' })
  cmd('KernelProMessages', function()
    M.show_markdown(table.concat(kp.messages, '\n\n'), 'kernelpro_messages')
  end, { desc = 'KernelPro: the last messages in full' })
  cmd('KernelProInstallCuda', function()
    M.install_cuda(vim.api.nvim_get_current_buf())
  end, { desc = 'KernelPro: install the CUDA compiler where KernelPro finds it' })
end

return M
