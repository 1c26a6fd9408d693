-- KernelPro client for Neovim: starts `kernelpro lsp` for CUDA buffers and
-- adds the :KernelPro* commands. Server contract: docs in the repo's
-- protocol notes (initialization options = the "kernelpro" settings section).
local M = {}

M.name = 'kernelpro'

-- Options that belong to the plugin; everything under `settings` goes to the
-- server unchanged (initializationOptions and workspace/configuration).
local defaults = {
  cmd = nil, -- default: { server_path, 'lsp' }
  server_path = 'kernelpro',
  filetypes = { 'cuda' },
  root_markers = { 'compile_commands.json', '.git' },
  trusted = false, -- the server compiles and runs nothing until this is true
  settings = {},
  codelens = true, -- show code lenses, refreshed when findings change
  progress = true, -- echo compile/profile/optimize progress
  -- When to show KernelPro hovers. 'auto': everywhere, except that beside
  -- clangd (or ccls) only on lines with a KernelPro finding and on kernel
  -- names; 'always'; 'off'.
  hover = 'auto',
  on_attach = nil,
  capabilities = nil,
}

M.options = vim.deepcopy(defaults)

-- Client methods became colon calls in 0.11; 0.10 has plain functions.
local has_011 = vim.fn.has('nvim-0.11') == 1

function M.request(client, method, params, handler, bufnr)
  if has_011 then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

function M.notify(client, method, params)
  if has_011 then
    return client:notify(method, params)
  end
  return client.notify(method, params)
end

--- The settings table the server sees: user settings plus `trusted`.
--- Where :KernelProInstallCuda puts the CUDA compiler.
function M.cuda_dir()
  return vim.fs.joinpath(vim.fn.stdpath('data'), 'kernelpro', 'cuda')
end

--- The nvcc :KernelProInstallCuda installed, if any.
function M.managed_nvcc()
  local found = vim.fn.glob(vim.fs.joinpath(M.cuda_dir(), 'lib', 'python3*', 'site-packages', 'nvidia', 'cu13', 'bin', 'nvcc'), true, true)
  return found[1]
end

function M.server_settings()
  local settings = vim.tbl_deep_extend('force', {}, M.options.settings, { trusted = M.options.trusted })
  -- The user's own nvcc wins; else the one KernelPro installed.
  if settings.nvcc == nil then
    settings.nvcc = M.managed_nvcc()
  end
  return settings
end

function M.cmd()
  return M.options.cmd or { M.options.server_path, 'lsp' }
end

-- Language servers that already explain C++ identifiers on hover.
M.cpp_servers = { clangd = true, ccls = true }

--- Whether KernelPro should answer a hover (the same rule as VS Code's hover.ts).
function M.should_hover(mode, other_cpp, on_finding, on_kernel)
  if mode == 'off' then
    return false
  end
  if mode == 'always' or not other_cpp then
    return true
  end
  return on_finding or on_kernel
end

--- Is a C++ server beside KernelPro on `bufnr`?
local function other_cpp(bufnr)
  for _, c in ipairs(vim.lsp.get_clients({ bufnr = bufnr })) do
    if M.cpp_servers[c.name] then
      return true
    end
  end
  return false
end

--- Is `pos` (0-based) on a line with a KernelPro finding, or on a kernel's name?
local function adds_something(client, bufnr, pos)
  local ns = vim.lsp.diagnostic.get_namespace(client.id)
  if #vim.diagnostic.get(bufnr, { namespace = ns, lnum = pos.line }) > 0 then
    return true
  end
  local line = vim.api.nvim_buf_get_lines(bufnr, pos.line, pos.line + 1, false)[1] or ''
  local s = pos.character + 1
  while s > 1 and line:sub(s - 1, s - 1):match('[%w_]') do
    s = s - 1
  end
  return line:sub(s, pos.character + 1):match('^[%w_]') ~= nil and line:sub(1, s - 1):find('__global__', 1, true) ~= nil
end

--- Beside clangd, hover only where KernelPro adds something: the client's
--- hover requests elsewhere are answered with nothing, without the server.
local function quiet_hover(client)
  local request = client.request
  local function filtered(method, params, handler, bufnr)
    if method == 'textDocument/hover' and params and params.position then
      bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
      if not M.should_hover(M.options.hover, other_cpp(bufnr), adds_something(client, bufnr, params.position), false) then
        if handler then
          vim.schedule(function()
            handler(nil, nil, { method = method, client_id = client.id, bufnr = bufnr, params = params })
          end)
        end
        return true, -1
      end
    end
    return nil
  end
  -- Called as client:request(...) (0.11) or client.request(...) (0.10).
  client.request = function(...)
    local args = { ... }
    local first = type(args[1]) == 'table' and 2 or 1
    local ok, id = filtered(args[first], args[first + 1], args[first + 2], args[first + 3])
    if ok then
      return ok, id
    end
    return request(...)
  end
end

local function on_attach(client, bufnr)
  if not client._kernelpro_quiet_hover then
    client._kernelpro_quiet_hover = true
    quiet_hover(client)
  end
  if M.options.codelens and client.server_capabilities.codeLensProvider then
    local group = vim.api.nvim_create_augroup('kernelpro_codelens_' .. bufnr, { clear = true })
    -- Lenses come from the same analysis as the findings, so a new publish
    -- (DiagnosticChanged) is when they change after a save.
    vim.api.nvim_create_autocmd({ 'BufEnter', 'InsertLeave', 'DiagnosticChanged' }, {
      group = group,
      buffer = bufnr,
      callback = function()
        vim.lsp.codelens.refresh({ bufnr = bufnr })
      end,
    })
    vim.lsp.codelens.refresh({ bufnr = bufnr })
  end
  if M.options.on_attach then
    M.options.on_attach(client, bufnr)
  end
end

--- vim.notify is Neovim's own (not a notification plugin's): it echoes, and a
--- message wider than the command line stops everything at "Press ENTER"
--- (`nvim --remote-expr` calls hang behind it).
local function default_notify()
  local info = debug.getinfo(vim.notify, 'S')
  return info ~= nil and info.source:find('vim/_editor.lua', 1, true) ~= nil
end

--- `msg` on one line of at most `width` display cells ("…" where cut).
function M.one_line(msg, width)
  local line = tostring(msg):gsub('%s*\n%s*', ' ')
  if width < 2 or vim.fn.strdisplaywidth(line) <= width then
    return line
  end
  local cut = vim.fn.strcharpart(line, 0, width - 1)
  while vim.fn.strdisplaywidth(cut) > width - 1 do
    cut = vim.fn.strcharpart(cut, 0, vim.fn.strchars(cut) - 1)
  end
  return cut .. '…'
end

--- The last messages in full (a one-line echo may be cut): :KernelProMessages.
M.messages = {}

--- Tell the user `msg` (prefixed "KernelPro: "): through a notification
--- plugin as it is; with Neovim's own vim.notify, on one line that fits the
--- command line (never a "Press ENTER" prompt), kept whole in M.messages.
function M.say(msg, level)
  msg = 'KernelPro: ' .. tostring(msg):gsub('^KernelPro: ', '')
  table.insert(M.messages, msg)
  if #M.messages > 50 then
    table.remove(M.messages, 1)
  end
  if not default_notify() then
    return vim.notify(msg, level)
  end
  local width = math.max(vim.v.echospace, 20) - 1
  local line = M.one_line(msg, width)
  local hl = (level == vim.log.levels.ERROR and 'ErrorMsg') or (level == vim.log.levels.WARN and 'WarningMsg') or nil
  vim.api.nvim_echo({ { line, hl } }, true, {})
end

local SHOW_MESSAGE_LEVEL = { [1] = vim.log.levels.ERROR, [2] = vim.log.levels.WARN, [3] = vim.log.levels.INFO, [4] = vim.log.levels.DEBUG }

--- The client configuration handed to vim.lsp.config / vim.lsp.start.
function M.lsp_config()
  local settings = M.server_settings()
  return {
    cmd = M.cmd(),
    filetypes = M.options.filetypes,
    root_markers = M.options.root_markers,
    init_options = settings,
    -- Answered from here when the server pulls workspace/configuration.
    settings = { kernelpro = settings },
    capabilities = M.options.capabilities,
    on_attach = on_attach,
    -- The server's messages (the untrusted notice on open, failures) on one
    -- line through M.say, not the default handler's multi-line echo.
    handlers = {
      ['window/showMessage'] = function(_, params)
        if params and params.message then
          M.say(params.message, SHOW_MESSAGE_LEVEL[params.type] or vim.log.levels.INFO)
        end
        return vim.NIL
      end,
    },
  }
end

--- Neovim 0.10 has no vim.lsp.config/enable: start the client per buffer.
local function start_legacy(config)
  vim.api.nvim_create_autocmd('FileType', {
    group = vim.api.nvim_create_augroup('kernelpro_start', { clear = true }),
    pattern = config.filetypes,
    callback = function(args)
      local legacy = vim.tbl_extend('force', config, {
        name = M.name,
        root_dir = vim.fs.root(args.buf, config.root_markers),
      })
      legacy.filetypes, legacy.root_markers = nil, nil
      vim.lsp.start(legacy, { bufnr = args.buf })
    end,
  })
end

--- Configure and enable the server. `opts` fields are listed in `defaults`.
function M.setup(opts)
  M.options = vim.tbl_deep_extend('force', vim.deepcopy(defaults), opts or {})
  local config = M.lsp_config()
  if vim.lsp.config and vim.lsp.enable then
    vim.lsp.config(M.name, config)
    vim.lsp.enable(M.name)
  else
    start_legacy(config)
  end
  require('kernelpro.commands').register()
  -- Always watched (:KernelProCancel needs the running tokens); echoed only with `progress`.
  require('kernelpro.commands').watch_progress()
  -- A missing server binary would otherwise show nothing at all.
  vim.api.nvim_create_autocmd('FileType', {
    group = vim.api.nvim_create_augroup('kernelpro_missing', { clear = true }),
    pattern = M.options.filetypes,
    once = true,
    callback = function()
      if vim.fn.executable(M.cmd()[1]) == 0 then
        M.say(require('kernelpro.commands').why_no_server(), vim.log.levels.WARN)
      end
    end,
  })
end

--- The running KernelPro client attached to `bufnr` (or any, if none is).
function M.client(bufnr)
  local clients = vim.lsp.get_clients({ name = M.name, bufnr = bufnr })
  if #clients == 0 and bufnr then
    clients = vim.lsp.get_clients({ name = M.name })
  end
  return clients[1]
end

--- Change settings at run time (e.g. trust) without restarting the server.
function M.update_settings(changes)
  M.options = vim.tbl_deep_extend('force', M.options, changes)
  local settings = M.server_settings()
  for _, client in ipairs(vim.lsp.get_clients({ name = M.name })) do
    client.settings = { kernelpro = settings }
    M.notify(client, 'workspace/didChangeConfiguration', { settings = { kernelpro = settings } })
  end
end

return M
