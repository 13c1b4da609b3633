-- lspilot: the :Lspilot user command and a load guard. Everything else loads on first use
-- from lua/lspilot/ (see :help lspilot).
if vim.g.loaded_lspilot then
  return
end
vim.g.loaded_lspilot = true

if vim.fn.has('nvim-0.10') ~= 1 then
  vim.api.nvim_echo({ { 'lspilot requires Neovim >= 0.10; this is an older version.', 'ErrorMsg' } }, true, {})
  return
end

vim.api.nvim_create_user_command('Lspilot', function(args)
  require('lspilot').command(args)
end, {
  nargs = '*',
  range = true,
  desc = 'lspilot: ask the agent, review its changes, navigate',
  complete = function(arglead, cmdline)
    return require('lspilot').complete(arglead, cmdline)
  end,
})
