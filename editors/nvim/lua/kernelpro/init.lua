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
function M.server_settings()
  return vim.tbl_deep_extend('force', {}, M.options.settings, { trusted = M.options.trusted })
end

function M.cmd()
  return M.options.cmd or { M.options.server_path, 'lsp' }
end

local function on_attach(client, bufnr)
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
  if M.options.progress then
    require('kernelpro.commands').watch_progress()
  end
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
