-- Headless end-to-end test of the Neovim client against the real server.
--   KERNELPRO_BIN  server binary         KP_FIXTURE  .cu file (copied to a temp project)
--   KP_OUT         JSON report path      KP_TIMEOUT_MS  overall deadline (default 300000)
-- Exit 0: every check passed; 1: a check failed; 2: timed out or errored.
-- The JSON holds what the editor saw, so the Rust test can assert on it too.
local bin = assert(os.getenv('KERNELPRO_BIN'), 'KERNELPRO_BIN is not set')
local fixture = assert(os.getenv('KP_FIXTURE'), 'KP_FIXTURE is not set')
local out_path = assert(os.getenv('KP_OUT'), 'KP_OUT is not set')
local deadline = vim.uv.now() + tonumber(os.getenv('KP_TIMEOUT_MS') or '300000')

local report = { nvim = tostring(vim.version()), fixture = fixture, checks = {} }

local function finish(code)
  local f = assert(io.open(out_path, 'w'))
  f:write(vim.json.encode(report))
  f:close()
  for _, client in ipairs(vim.lsp.get_clients()) do
    client:stop(true)
  end
  os.exit(code)
end

--- Wait for cond() or give up: the report records what was awaited.
local function wait_for(what, cond)
  local left = deadline - vim.uv.now()
  if left <= 0 or not vim.wait(left, cond, 50) then
    report.error = 'timeout waiting for ' .. what
    finish(2)
  end
end

--- The result of a request, or (with `soft`) nil and the error message.
local function request(client, method, params, bufnr, soft)
  local done, response
  client:request(method, params, function(err, result)
    done, response = true, { err = err, result = result }
  end, bufnr)
  wait_for('response to ' .. method, function()
    return done
  end)
  if response.err then
    local message = method .. ': ' .. (response.err.message or vim.inspect(response.err))
    if soft then
      return nil, message
    end
    report.error = message
    finish(2)
  end
  return response.result
end

local function main()
-- A temporary project: the fixture and its headers beside a .git root marker.
local project = vim.fn.tempname()
vim.fn.mkdir(project .. '/.git', 'p')
local fixture_dir = vim.fs.dirname(fixture)
for name in vim.fs.dir(fixture_dir) do
  if name == vim.fs.basename(fixture) or name:match('%.cuh$') or name:match('%.h$') then
    vim.uv.fs_copyfile(fixture_dir .. '/' .. name, project .. '/' .. name)
    vim.uv.fs_chmod(project .. '/' .. name, tonumber('644', 8))
  end
end
local source = project .. '/' .. vim.fs.basename(fixture)

-- Count every publish and watch progress, to know when the server has settled.
local publishes, active_progress = 0, {}
-- Findings must never blink off while a save is analysed: once the file had
-- some, a publish of none for it is a flicker.
report.flicker = { had_findings = false, empty_publishes = 0 }
local default_publish = vim.lsp.handlers['textDocument/publishDiagnostics']
vim.lsp.handlers['textDocument/publishDiagnostics'] = function(err, result, ctx)
  publishes = publishes + 1
  if result and vim.uri_to_fname(result.uri) == vim.uv.fs_realpath(source) then
    if #result.diagnostics > 0 then
      report.flicker.had_findings = true
    elseif report.flicker.had_findings then
      report.flicker.empty_publishes = report.flicker.empty_publishes + 1
    end
  end
  return default_publish(err, result, ctx)
end
report.progress = {}
vim.api.nvim_create_autocmd('LspProgress', {
  callback = function(ev)
    local token, value = ev.data.params.token, ev.data.params.value or {}
    if value.kind == 'begin' then
      active_progress[token] = true
      table.insert(report.progress, value.title)
    elseif value.kind == 'end' then
      active_progress[token] = nil
    end
  end,
})
local function settled_after(count)
  return function()
    return publishes > count and next(active_progress) == nil
  end
end

require('kernelpro').setup({
  server_path = bin,
  trusted = true,
  settings = { optimize = { evaluator = 'stub:1.5', budget = 4, timeSecs = 120 } },
})

-- What the user reads: every vim.notify and every echo on the command line.
report.notified = {}
local default_notify = vim.notify
vim.notify = function(msg, level)
  table.insert(report.notified, { msg = msg, level = level })
end
report.echoed = {}
local real_echo = vim.api.nvim_echo
vim.api.nvim_echo = function(chunks, history, opts)
  table.insert(report.echoed, table.concat(vim.tbl_map(function(c)
    return c[1]
  end, chunks)))
  return real_echo(chunks, history, opts)
end
--- The first message notified after `count` that contains `needle`.
local function notified_after(count, needle)
  for i = count + 1, #report.notified do
    if report.notified[i].msg:find(needle, 1, true) then
      return report.notified[i].msg
    end
  end
end

vim.cmd.edit(vim.fn.fnameescape(source))
local bufnr = vim.api.nvim_get_current_buf()
report.filetype = vim.bo[bufnr].filetype
local kp = require('kernelpro')
wait_for('the kernelpro client to attach', function()
  return kp.client(bufnr) ~= nil and kp.client(bufnr).initialized
end)
local client = kp.client(bufnr)
report.server = client.server_info
report.offset_encoding = client.offset_encoding

-- didOpen, then didSave: each must bring diagnostics.
wait_for('diagnostics after open', settled_after(0))
local before_save = publishes
vim.cmd.write()
-- The fixture has findings: wait until the compile after the save has published them.
wait_for('diagnostics after save', function()
  return settled_after(before_save)() and #vim.diagnostic.get(bufnr) > 0
end)

-- The analysis's progress ends without leaving "KernelPro end" behind.
report.echo_after_save = report.echoed[#report.echoed]

local function to_report(d)
  return {
    line = d.lnum,
    col = d.col,
    severity = vim.diagnostic.severity[d.severity],
    source = d.source,
    code = d.code,
    message = d.message,
  }
end
report.diagnostics = vim.tbl_map(to_report, vim.diagnostic.get(bufnr))

local text_document = vim.lsp.util.make_text_document_params(bufnr)

-- Symbols, and the plugin's "which kernel is under the cursor".
local symbols = request(client, 'textDocument/documentSymbol', { textDocument = text_document }, bufnr)
report.symbols = vim.tbl_map(function(s)
  local range = s.range or s.location.range
  return { name = s.name, detail = s.detail, kind = vim.lsp.protocol.SymbolKind[s.kind], line = range.start.line }
end, symbols or {})

local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
local kernel_line, kernel_name, kernel_col
for i, line in ipairs(lines) do
  local col, name = line:match('__global__%s+void%s+()([%w_]+)')
  if name then
    kernel_line, kernel_name, kernel_col = i - 1, name, col - 1
    break
  end
end
report.kernel = { name = kernel_name, line = kernel_line }

vim.api.nvim_win_set_cursor(0, { kernel_line + 2, 2 })
local commands = require('kernelpro.commands')
local at_cursor, asked = nil, false
commands.kernel_at_cursor(bufnr, function(name)
  at_cursor, asked = name, true
end)
wait_for('kernel_at_cursor', function()
  return asked
end)
report.kernel_at_cursor = at_cursor

-- Hover on the kernel name, and on the line of the first static finding.
local function hover(line, character)
  local result = request(client, 'textDocument/hover', {
    textDocument = text_document,
    position = { line = line, character = character },
  }, bufnr)
  local contents = result and result.contents
  if type(contents) == 'table' then
    contents = contents.value or vim.inspect(contents)
  end
  return { line = line, text = contents }
end
report.hover_kernel = hover(kernel_line, kernel_col + 1)
-- The most severe static finding (a warning beats a hint on the signature).
local finding_line, finding_severity = kernel_line + 1, math.huge
for _, d in ipairs(vim.diagnostic.get(bufnr)) do
  if d.source == 'kernelpro' and d.severity < finding_severity then
    finding_line, finding_severity = d.lnum, d.severity
  end
end
report.hover_line = hover(finding_line, 2)

-- A code line without a finding that KernelPro alone does hover (its SASS).
local plain_line, plain_col, plain_alone = 0, 0, nil
for i, line in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)) do
  if #vim.diagnostic.get(bufnr, { lnum = i - 1 }) == 0 and line:match('^%s+%w') and not line:find('__global__', 1, true) then
    local h = hover(i - 1, #line:match('^%s*'))
    if type(h.text) == 'string' and h.text ~= '' then
      plain_line, plain_col, plain_alone = i - 1, #line:match('^%s*'), h
      break
    end
  end
end
-- Beside clangd, KernelPro hovers only on findings' lines and kernel names.
local fake_clangd = vim.lsp.start({
  name = 'clangd',
  root_dir = project,
  cmd = function(dispatchers)
    local closing, id = false, 0
    local function close()
      if not closing then
        closing = true
        vim.schedule(function()
          dispatchers.on_exit(0, 0)
        end)
      end
    end
    return {
      request = function(method, _, callback)
        id = id + 1
        vim.schedule(function()
          callback(nil, method == 'initialize' and { capabilities = { hoverProvider = true } } or nil)
        end)
        return true, id
      end,
      notify = function(method)
        if method == 'exit' then
          close()
        end
        return true
      end,
      is_closing = function()
        return closing
      end,
      terminate = close,
    }
  end,
}, { bufnr = bufnr })
wait_for('the fake clangd to attach', function()
  return #vim.lsp.get_clients({ name = 'clangd', bufnr = bufnr }) > 0
end)
report.quiet_hover = {
  plain_alone = plain_alone,
  plain = hover(plain_line, plain_col),
  kernel = hover(kernel_line, kernel_col + 1),
  finding = hover(finding_line, 2),
}
vim.lsp.stop_client(fake_clangd, true)
wait_for('the fake clangd to stop', function()
  return #vim.lsp.get_clients({ name = 'clangd' }) == 0
end)

-- SASS for that line, through the plugin's command (opens a float).
vim.api.nvim_win_set_cursor(0, { finding_line + 1, 0 })
vim.cmd('KernelProSass')
local function float_text()
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(win).relative ~= '' then
      return table.concat(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false), '\n')
    end
  end
end
wait_for('the SASS float', function()
  return float_text() ~= nil
end)
report.sass_float = float_text()

-- Code lenses: the raw response and what the editor displays.
local lenses = request(client, 'textDocument/codeLens', { textDocument = text_document }, bufnr) or {}
report.code_lens = vim.tbl_map(function(l)
  local cmd = l.command or {}
  return { line = l.range.start.line, title = cmd.title, command = cmd.command, arguments = cmd.arguments }
end, lenses)
-- The plugin refreshes them when findings are published; nothing to do here.
wait_for('displayed code lenses', function()
  return #vim.lsp.codelens.get(bufnr) > 0
end)
report.code_lens_displayed = #vim.lsp.codelens.get(bufnr)

-- Optimize through the code action, then apply the finished search's edit.
local function code_actions(line)
  local position = { line = line or kernel_line, character = kernel_col }
  return request(client, 'textDocument/codeAction', {
    textDocument = text_document,
    range = { start = position, ['end'] = position },
    context = { diagnostics = {}, triggerKind = 1 },
  }, bufnr) or {}
end
local function titles(actions)
  return vim.tbl_map(function(a)
    return a.title
  end, actions)
end
local function find(actions, prefix)
  for _, a in ipairs(actions) do
    if vim.startswith(a.title, prefix) then
      return a
    end
  end
end

local actions = code_actions()
report.optimize = { actions_before = titles(actions) }
local optimize = find(actions, 'Optimize kernel')
if optimize then
  local command = type(optimize.command) == 'table' and optimize.command or optimize
  report.optimize.command = { command = command.command, arguments = command.arguments }
  local before_optimize, notes_before = publishes, #report.notified
  -- As choosing the code action does: the plugin's handler runs the command and says the result.
  vim.lsp.commands[command.command](command, { bufnr = bufnr, client_id = client.id })
  wait_for('the optimize result in words', function()
    report.optimize.message = notified_after(notes_before, 'saxpy')
    return report.optimize.message ~= nil and not report.optimize.message:find('optimizing', 1, true)
  end)
  wait_for('the server to settle after optimize', function()
    return next(active_progress) == nil
  end)
  report.optimize.publishes_during = publishes - before_optimize
  local after = code_actions()
  report.optimize.actions_after = titles(after)
  -- Unsaved edits (issue 22, items 2 and 3). Two lines inserted far above the
  -- kernel: the result stays applicable, hover and lenses move with the text.
  local function break_undo()
    vim.cmd('let &undolevels = &undolevels')
  end
  local function enabled(actions, prefix)
    local a = find(actions, prefix)
    return a ~= nil and a.disabled == nil
  end
  report.edits = {}
  local hover_before = hover(finding_line, 2).text
  break_undo()
  vim.api.nvim_buf_set_lines(bufnr, 0, 0, false, { '// a note far from the kernel', '// and another' })
  break_undo()
  report.edits.apply_after_far_edit = enabled(code_actions(kernel_line + 2), 'Apply optimized')
  -- The same listing, titled with the line's number now.
  local function listing(t)
    return t and (t:gsub('SASS of line %d+', 'SASS of line N'))
  end
  local hover_after = hover(finding_line + 2, 2).text
  report.edits.hover_follows = hover_before ~= nil and listing(hover_after) == listing(hover_before)
    and (hover_before:find('SASS of line', 1, true) == nil
      or hover_after:find('SASS of line ' .. (finding_line + 3), 1, true) ~= nil)
  local moved_lenses = request(client, 'textDocument/codeLens', { textDocument = text_document }, bufnr) or {}
  report.edits.lens_lines = vim.tbl_map(function(l)
    return l.range.start.line
  end, vim.tbl_filter(function(l)
    return l.command and l.command.command == 'kernelpro.optimize' and l.command.arguments[2] == kernel_name
  end, moved_lenses))
  vim.cmd('silent undo')
  report.edits.undone = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), '\n') == table.concat(lines, '\n')
  report.edits.apply_after_undo = enabled(code_actions(kernel_line), 'Apply optimized')
  -- An edit of the kernel's own lines: the action cannot apply, and choosing
  -- it (Neovim 0.11 lists disabled actions) says why instead of nothing.
  break_undo()
  vim.api.nvim_buf_set_text(bufnr, kernel_line + 1, 0, kernel_line + 1, 0, { '  ' })
  break_undo()
  local dead = find(code_actions(kernel_line), 'Apply optimized')
  report.edits.disabled_reason = dead and dead.disabled and dead.disabled.reason
  if dead and dead.command then
    local notes0, echoes0 = #report.notified, #report.echoed
    client:exec_cmd(dead.command, { bufnr = bufnr })
    -- The server's window/showMessage: Neovim 0.11 echoes warnings, notifies others.
    wait_for('why the optimized kernel cannot be applied', function()
      report.edits.chosen_dead_action = notified_after(notes0, 'cannot be applied')
      for i = echoes0 + 1, #report.echoed do
        if report.echoed[i]:find('cannot be applied', 1, true) then
          report.edits.chosen_dead_action = report.echoed[i]
        end
      end
      return report.edits.chosen_dead_action ~= nil
    end)
  end
  vim.cmd('silent undo')
  after = code_actions()
  local apply = find(after, 'Apply optimized')
  if apply then
    if not apply.edit and (client.server_capabilities.codeActionProvider or {}).resolveProvider then
      apply = request(client, 'codeAction/resolve', apply, bufnr)
    end
    local text_before = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), '\n')
    vim.lsp.util.apply_workspace_edit(apply.edit, client.offset_encoding)
    local text_after = table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), '\n')
    report.optimize.applied = apply.title
    report.optimize.buffer_changed = text_before ~= text_after
    local diff = vim.text and vim.text.diff or vim.diff
    report.optimize.diff = diff(text_before .. '\n', text_after .. '\n', { ctxlen = 0 })
  end
end

-- A long optimize, cancelled with :KernelProCancel once it reports progress:
-- said as cancelled, never as "Apply optimized …".
local before_settings = publishes
kp.update_settings({ settings = { optimize = { budget = 500 } } })
-- A settings change re-analyses the file; start once that has settled.
wait_for('the re-analysis after a settings change', settled_after(before_settings))
local notes_before = #report.notified
vim.cmd('KernelProOptimize ' .. kernel_name)
local echoes_before = #report.echoed
-- Issue 32: the percentage moves past 0% though the budget (500) is far above what is tried.
-- (The line is cut to the command line's width with "…": the best may be cut off.)
wait_for('optimize progress with a best so far and a percentage above 0, to cancel', function()
  for i = echoes_before + 1, #report.echoed do
    -- One evaluation in: the stub's best (1.50x) is there to be kept by the cancel.
    local pct, done = report.echoed[i]:match('Optimizing [%w_]+ %((%d+)%%%): (%d+)/%d+ evaluations')
    if tonumber(pct or '0') > 0 and tonumber(done or '0') > 0 then
      report.optimize_progress = report.echoed[i]
      return true
    end
  end
  return false
end)
vim.cmd('KernelProCancel')
wait_for('the cancelled optimize in words', function()
  report.cancelled_message = notified_after(notes_before, 'cancelled')
  return report.cancelled_message ~= nil
end)
kp.update_settings({ settings = { optimize = { budget = 4 } } })

-- Profile: progress, then the reply in words (here: why it could not run), naming Neovim's settings.
notes_before = #report.notified
vim.cmd('KernelProProfile')
wait_for('the profile result in words', function()
  for i = notes_before + 1, #report.notified do
    local msg = report.notified[i].msg
    if msg:find('rofil', 1, true) and not msg:find('KernelProCancel', 1, true) then
      report.profile_message = msg
      return true
    end
  end
  return false
end)


-- :KernelProInstallCuda: the pinned compiler into Neovim's data folder, and the server uses it.
local before_install = #report.notified
vim.cmd('KernelProInstallCuda')
wait_for('the CUDA compiler install', function()
  return notified_after(before_install, 'The CUDA compiler is installed') ~= nil or notified_after(before_install, 'failed') ~= nil
end)
report.install_message = notified_after(before_install, 'The CUDA compiler is installed') or notified_after(before_install, 'failed')
report.managed_nvcc = kp.managed_nvcc()
report.server_nvcc = (kp.client(bufnr).settings.kernelpro or {}).nvcc

-- Untrusted (issue 22, item 9): no Optimize or Profile lens is offered, and
-- :KernelProTrust analyses the file again at once, without a save.
local function lens_commands()
  local got = request(client, 'textDocument/codeLens', { textDocument = text_document }, bufnr) or {}
  return vim.tbl_map(function(l)
    return l.command and l.command.command or ''
  end, got)
end
local before_untrust = publishes
kp.update_settings({ trusted = false })
wait_for('the republish once untrusted', settled_after(before_untrust))
report.untrusted = { lens_commands = lens_commands(), notified_before = #report.notified }
local before_trust = publishes
vim.cmd('KernelProTrust')
wait_for('the analysis after :KernelProTrust', function()
  return settled_after(before_trust)() and #vim.diagnostic.get(bufnr, { severity = vim.diagnostic.severity.WARN }) > 0
end)
report.untrusted.reanalysed_without_save = true
report.untrusted.trusted_lens_commands = lens_commands()

-- :checkhealth kernelpro, as a user would read it.
vim.cmd('checkhealth kernelpro')
report.health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')

-- Issue 32: a server message (the untrusted notice on open, a failure) goes
-- through the plugin's one-line notify, once, without "KernelPro: " twice.
local before_sm = #report.notified
local show_message = client.handlers and client.handlers['window/showMessage']
if show_message then
  show_message(nil, { type = 3, message = 'KernelPro: workspace not trusted: nothing is compiled, checked or profiled here' }, { client_id = client.id })
end
report.show_message = notified_after(before_sm, 'workspace not trusted')
report.show_message_count = #report.notified - before_sm

-- No server binary: :KernelProDoctor says what is missing and how to fix it.
for _, c in ipairs(vim.lsp.get_clients({ name = kp.name })) do
  c:stop(true)
end
wait_for('the server to stop', function()
  return #vim.lsp.get_clients({ name = kp.name }) == 0
end)
kp.options.server_path = project .. '/no-such-kernelpro'
for _, win in ipairs(vim.api.nvim_list_wins()) do
  if vim.api.nvim_win_get_config(win).relative ~= '' then
    vim.api.nvim_win_close(win, true)
  end
end
vim.cmd('KernelProDoctor')
report.doctor_missing = float_text()

-- Issue 32: with no server, :KernelProOptimize says the server is missing (not
-- "the cursor is not inside a kernel"); :KernelProCancel with nothing running says so.
local before_ns = #report.notified
vim.cmd('KernelProOptimize')
report.optimize_no_server = notified_after(before_ns, 'no-such-kernelpro')
report.optimize_no_server_cursor = notified_after(before_ns, 'cursor')
before_ns = #report.notified
vim.cmd('KernelProCancel')
report.cancel_nothing = notified_after(before_ns, 'nothing to cancel')
-- Issue 32: with Neovim's own vim.notify a long message is one line that fits
-- the command line (a wider one stops at "Press ENTER"), kept whole for :KernelProMessages.
local capture = vim.notify
vim.notify = default_notify
local echo_before = #report.echoed
kp.say(('a long failure message that goes on and on '):rep(12) .. '\nand a second line', vim.log.levels.WARN)
vim.notify = capture
report.long_echo = report.echoed[echo_before + 1]
report.echospace = vim.v.echospace
report.long_kept = kp.messages[#kp.messages]

local function check(name, ok)
  report.checks[name] = ok and true or false
end
check('filetype_cuda', report.filetype == 'cuda')
check('diagnostics', #report.diagnostics > 0)
check('kernel_at_cursor', report.kernel_at_cursor == kernel_name)
check('hover_kernel', type(report.hover_kernel.text) == 'string' and report.hover_kernel.text:find(kernel_name, 1, true))
check('hover_line', type(report.hover_line.text) == 'string' and report.hover_line.text ~= '')
check('sass_float', report.sass_float and report.sass_float ~= '')
check('code_lens_optimize', vim.iter(report.code_lens):any(function(l)
  return l.command == 'kernelpro.optimize'
end))
check('code_lens_displayed', report.code_lens_displayed > 0)
check('optimize_action', report.optimize.command ~= nil)
check('optimize_applied', report.optimize.buffer_changed == true)
-- Unsaved edits: the result survives an edit elsewhere and an undo; hover and lenses follow the lines.
check('optimize_survives_far_edit', report.edits and report.edits.apply_after_far_edit == true)
check('optimize_reoffered_after_undo', report.edits and report.edits.undone and report.edits.apply_after_undo == true)
check('hover_follows_unsaved_edits', report.edits and report.edits.hover_follows == true)
check('lenses_follow_unsaved_edits', report.edits and vim.tbl_contains(report.edits.lens_lines, kernel_line + 2))
check('dead_action_says_why', report.edits and type(report.edits.disabled_reason) == 'string'
  and type(report.edits.chosen_dead_action) == 'string'
  and report.edits.chosen_dead_action:find('changed since the search', 1, true) ~= nil)
check('untrusted_offers_no_runs', report.untrusted and #report.untrusted.lens_commands > 0
  and not vim.tbl_contains(report.untrusted.lens_commands, 'kernelpro.optimize')
  and not vim.tbl_contains(report.untrusted.lens_commands, 'kernelpro.profile')
  and vim.tbl_contains(report.untrusted.trusted_lens_commands, 'kernelpro.optimize'))
check('trust_reanalyses_without_save', report.untrusted and report.untrusted.reanalysed_without_save == true)
check('no_flicker_on_save', report.flicker.had_findings and report.flicker.empty_publishes == 0)
check('health', report.health:find('kernelpro: server', 1, true) ~= nil)
-- :checkhealth agrees with itself: the running server's doctor, in Neovim's words.
check('health_consistent', report.health:find('doctor (the running server)', 1, true) ~= nil
  and not report.health:find('not found in settings.nvcc', 1, true)
  and not report.health:find('kernelpro.ncu', 1, true))
-- Words, not data: no Lua table in any message; nothing left on the command line after a save.
local function words(msg)
  -- Code in backticks (a spec line such as `grid = ceil_div(N, 1024)`) is words too.
  local prose = type(msg) == 'string' and msg:gsub('`[^`]*`', '') or nil
  return prose ~= nil and not prose:find('{', 1, true) and not prose:find(' = ', 1, true)
end
check('notify_words', vim.iter(report.notified):all(function(n)
  return words(n.msg)
end))
check('optimize_message', words(report.optimize.message) and report.optimize.message:find('Apply optimized', 1, true) ~= nil)
check('no_progress_end_left', report.echo_after_save == '' and not vim.iter(report.echoed):any(function(e)
  return e:find('KernelPro end', 1, true) ~= nil
end))
check('optimize_cancelled', words(report.cancelled_message)
  and report.cancelled_message:find('was cancelled after', 1, true) ~= nil
  and report.cancelled_message:find('best verified version so far is 1.50x', 1, true) ~= nil
  and not report.cancelled_message:find('Apply optimized', 1, true))
check('profile_words', words(report.profile_message)
  and (not report.profile_message:find('ncu was not found', 1, true) or report.profile_message:find('settings.ncu', 1, true) ~= nil)
  and not report.profile_message:find('kernelpro.ncu', 1, true))
check('quiet_hover_beside_clangd', report.quiet_hover.plain_alone ~= nil and report.quiet_hover.plain.text == nil
  and type(report.quiet_hover.finding.text) == 'string' and report.quiet_hover.finding.text ~= ''
  and type(report.quiet_hover.kernel.text) == 'string' and report.quiet_hover.kernel.text:find(kernel_name, 1, true) ~= nil)
check('install_cuda', words(report.install_message) and report.install_message:find('The CUDA compiler is installed', 1, true) ~= nil
  and report.managed_nvcc ~= nil and report.managed_nvcc:find(vim.fn.stdpath('data'), 1, true) == 1
  and report.server_nvcc == report.managed_nvcc)
check('doctor_missing_binary', type(report.doctor_missing) == 'string'
  and report.doctor_missing:find('no-such-kernelpro', 1, true) ~= nil
  and report.doctor_missing:find('server_path', 1, true) ~= nil)
check('optimize_progress_moves', report.optimize_progress ~= nil)
check('server_message_once', report.show_message ~= nil and report.show_message_count == 1
  and not report.show_message:find('KernelPro: KernelPro', 1, true))
check('optimize_without_server_says_so', report.optimize_no_server ~= nil and report.optimize_no_server_cursor == nil)
check('cancel_with_nothing_running_says_so', report.cancel_nothing ~= nil)
check('long_message_one_line', type(report.long_echo) == 'string' and not report.long_echo:find('\n', 1, true)
  and vim.fn.strdisplaywidth(report.long_echo) <= math.max(report.echospace, 20)
  and type(report.long_kept) == 'string' and report.long_kept:find('second line', 1, true) ~= nil)

local failed = vim.tbl_filter(function(name)
  return not report.checks[name]
end, vim.tbl_keys(report.checks))
table.sort(failed)
report.failed = failed
return #failed == 0 and 0 or 1
end

local ok, code = xpcall(main, debug.traceback)
if not ok then
  report.error = code
end
finish(ok and code or 2)
