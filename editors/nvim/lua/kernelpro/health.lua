-- :checkhealth kernelpro — the server binary, nvcc, ncu and the GPU.
local kp = require('kernelpro')

local M = {}

local health = vim.health

--- Run argv; returns trimmed stdout (or stderr) and the exit code.
local function run(argv)
  local ok, proc = pcall(vim.system, argv, { text = true })
  if not ok then
    return tostring(proc), -1
  end
  local res = proc:wait(15000)
  local out = vim.trim((res.stdout ~= '' and res.stdout) or res.stderr or '')
  return out, res.code
end

--- First executable of: configured path, $CUDA_HOME/bin/NAME, PATH.
local function find_tool(name, configured)
  local candidates = { configured }
  if vim.env.CUDA_HOME then
    table.insert(candidates, vim.env.CUDA_HOME .. '/bin/' .. name)
  end
  table.insert(candidates, name)
  for _, c in pairs(candidates) do
    local path = c and vim.fn.exepath(c)
    if path and path ~= '' then
      return path
    end
  end
end

local function check_server()
  health.start('kernelpro: server')
  local bin = kp.cmd()[1]
  local path = vim.fn.exepath(bin)
  if path == '' then
    health.error(('server binary `%s` not found'):format(bin), {
      'build it with `cargo build --release -p kernelpro` and put target/release on PATH',
      "or pass its path: require('kernelpro').setup({ server_path = '/path/to/kernelpro' })",
    })
    return nil
  end
  local version, code = run({ path, '--version' })
  if code == 0 then
    health.ok(('%s (%s)'):format(version, path))
  else
    health.warn(('%s --version failed (exit %d): %s'):format(path, code, version))
  end
  local clients = vim.lsp.get_clients({ name = kp.name })
  health.info(('%d running client(s)'):format(#clients))
  return path
end

--- The running server's doctor (its settings, trust and words for Neovim), or nil.
local function server_doctor()
  local client = kp.client()
  if not client then
    return nil
  end
  local params = { command = 'kernelpro.doctor', arguments = {} }
  local ok, response
  if vim.fn.has('nvim-0.11') == 1 then
    ok, response = pcall(client.request_sync, client, 'workspace/executeCommand', params, 30000)
  else
    ok, response = pcall(client.request_sync, 'workspace/executeCommand', params, 30000)
  end
  if ok and response and not response.err and type(response.result) == 'string' then
    return response.result
  end
end

--- The server's own view of the tools (same discovery it uses when compiling):
--- the running server's, else `kernelpro doctor`'s.
local function check_doctor(path)
  local out, code = server_doctor(), 0
  local heading = 'kernelpro: doctor (the running server)'
  if not out then
    out, code = run({ path, 'doctor' })
    heading = 'kernelpro: kernelpro doctor'
  end
  if code ~= 0 then
    health.info('`kernelpro doctor` not available: ' .. out)
    return false
  end
  health.start(heading)
  -- Each item is "ok  what: detail" or "!!  what: problem", then an indented "fix: ...".
  local items = {}
  for _, line in ipairs(vim.split(out, '\n', { trimempty = true })) do
    local status, text = line:match('^(%S+)%s+(.*)$')
    local fix = line:match('^%s+fix:%s*(.*)$')
    if fix and #items > 0 then
      table.insert(items[#items].advice, fix)
    elseif status then
      table.insert(items, { status = status, text = text, advice = {} })
    end
  end
  for _, item in ipairs(items) do
    if item.status == 'ok' then
      health.ok(item.text)
    elseif item.status == '!!' then
      health.warn(item.text, item.advice)
    else
      health.error(item.text, item.advice)
    end
  end
  return true
end

local function check_tools(doctor_ran)
  health.start('kernelpro: CUDA tools seen from Neovim')
  local settings = kp.server_settings()
  local missing = doctor_ran and health.info or health.warn
  for _, tool in ipairs({ 'nvcc', 'ncu' }) do
    local path = find_tool(tool, settings[tool])
    if path then
      local version = run({ path, '--version' })
      local last = vim.split(version, '\n', { trimempty = true })
      health.ok(('%s: %s (%s)'):format(tool, last[#last] or '?', path))
    else
      missing(('%s not found in settings.%s, $CUDA_HOME/bin or PATH'):format(tool, tool))
    end
  end
  if vim.fn.executable('nvidia-smi') == 1 then
    local gpus, code = run({ 'nvidia-smi', '-L' })
    if code == 0 and gpus ~= '' then
      for _, gpu in ipairs(vim.split(gpus, '\n', { trimempty = true })) do
        health.ok(gpu)
      end
    else
      health.warn('nvidia-smi -L found no GPU: ' .. gpus, { 'profiling and optimize need a GPU' })
    end
  else
    missing('nvidia-smi not found: no GPU here; static analysis works, profiling and optimize do not')
  end
end

local function check_trust()
  health.start('kernelpro: settings')
  if vim.fn.has('nvim-0.11') == 1 then
    health.ok('Neovim 0.11+: vim.lsp.config / vim.lsp.enable')
  else
    health.warn('Neovim older than 0.11: using the vim.lsp.start fallback')
  end
  if kp.options.trusted then
    health.ok('trusted = true: the server compiles and profiles on save')
  else
    health.warn('trusted = false: the server compiles and runs nothing', {
      "set require('kernelpro').setup({ trusted = true }) for projects you trust, or run :KernelProTrust",
    })
  end
end

function M.check()
  check_trust()
  local path = check_server()
  local doctor_ran = path and check_doctor(path) or false
  -- The server's doctor is what compiles and profiles use; Neovim's own PATH
  -- search would only contradict it, so it runs only when the doctor could not.
  if not doctor_ran then
    check_tools(false)
  end
end

return M
