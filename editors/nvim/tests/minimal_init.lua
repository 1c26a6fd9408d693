-- Minimal config for the headless tests: only this plugin on the runtimepath.
local tests = vim.fs.dirname(debug.getinfo(1, 'S').source:sub(2))
local plugin = vim.fs.dirname(tests)

vim.opt.runtimepath:prepend(plugin)
vim.opt.swapfile = false
vim.opt.shadafile = 'NONE'
vim.cmd('filetype on')
