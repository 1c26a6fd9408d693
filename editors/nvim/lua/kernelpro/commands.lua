-- :KernelPro* user commands and the client-side handlers for the server's
-- commands (so code lenses and code actions show their results too).
local kp = require('kernelpro')

local M = {}

local function notify(msg, level)
  vim.notify('KernelPro: ' .. msg, level or vim.log.levels.INFO)
end

--- Run a server command (workspace/executeCommand); on_result(err, result).
function M.execute(bufnr, command, arguments, on_result)
  local client = kp.client(bufnr)
  if not client then
    notify('no kernelpro server is attached to this buffer', vim.log.levels.ERROR)
    return
  end
  kp.request(client, 'workspace/executeCommand', { command = command, arguments = arguments }, function(err, result)
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

local function report(what)
  return function(err, result)
    if err then
      notify(what .. ' failed: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    elseif type(result) == 'string' then
      notify(what .. ': ' .. result)
    else
      notify(what .. ' finished' .. (result ~= nil and (': ' .. vim.inspect(result)) or ''))
    end
  end
end

function M.optimize(bufnr, kernel)
  local uri = vim.uri_from_bufnr(bufnr)
  local function run(name)
    if not name then
      return notify('the cursor is not inside a __global__ kernel', vim.log.levels.WARN)
    end
    notify('optimizing ' .. name .. ' (apply the result with a code action when it finishes)')
    M.execute(bufnr, 'kernelpro.optimize', { uri, name }, report('optimize ' .. name))
  end
  if kernel and kernel ~= '' then
    run(kernel)
  else
    M.kernel_at_cursor(bufnr, run)
  end
end

function M.profile(bufnr)
  M.execute(bufnr, 'kernelpro.profile', { vim.uri_from_bufnr(bufnr) }, report('profile'))
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
  M.execute(bufnr, 'kernelpro.doctor', {}, function(err, result)
    if err then
      return notify('doctor failed: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    end
    M.show_markdown(result, 'kernelpro_doctor')
  end)
end

-- Progress tokens the server has begun and not ended: token -> {client_id, title}.
M.active = {}

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
      local pct = value.percentage and (' ' .. value.percentage .. '%') or ''
      vim.api.nvim_echo({ { ('KernelPro: %s %s%s'):format(title, value.message or value.kind or '', pct) } }, false, {})
    end,
  })
end

--- Cancel every running compile/profile/optimize the server reported as cancellable.
function M.cancel()
  for token, p in pairs(M.active) do
    local client = vim.lsp.get_client_by_id(p.client_id)
    if client and p.cancellable ~= false then
      kp.notify(client, 'window/workDoneProgress/cancel', { token = token })
    end
  end
end

-- Server commands met in code lenses and code actions: forward, then show the result.
local function forward(display)
  return function(command, ctx)
    M.execute(ctx.bufnr, command.command, command.arguments, display)
  end
end

function M.register()
  vim.lsp.commands['kernelpro.optimize'] = forward(report('optimize'))
  vim.lsp.commands['kernelpro.profile'] = forward(report('profile'))
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
  cmd('KernelProCancel', M.cancel, { desc = 'KernelPro: cancel running compile/profile/optimize' })
end

return M
