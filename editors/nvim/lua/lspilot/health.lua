-- :checkhealth lspilot: Neovim version, the lspilot executable, the daemon, the model, the
-- language servers the daemon would use (with install commands) and the log path.
local client = require('lspilot.client')
local config = require('lspilot.config')

local M = {}

local h = vim.health

local function check_model(env, root)
  local model = env.LSPILOT_MODEL or vim.env.LSPILOT_MODEL
  if model and model ~= '' then
    return h.ok('model: ' .. model .. ' (LSPILOT_MODEL)')
  end
  local user = env.LSPILOT_CONFIG_DIR or vim.env.LSPILOT_CONFIG_DIR
    or vim.fs.joinpath(vim.env.XDG_CONFIG_HOME or vim.fs.joinpath(vim.env.HOME, '.config'), 'lspilot')
  local files = {
    vim.fs.joinpath(root, '.lspilot', 'config.toml'),
    vim.fs.joinpath(root, 'lspilot.toml'),
    vim.fs.joinpath(user, 'config.toml'),
  }
  for _, file in ipairs(files) do
    if vim.fn.filereadable(file) == 1 then
      for _, line in ipairs(vim.fn.readfile(file)) do
        local name = line:match('^%s*model%s*=%s*["\'](.-)["\']')
        if name then
          return h.ok(('model: %s (%s)'):format(name, file))
        end
      end
    end
  end
  h.error('no model configured', { 'set `model = "provider/name"` in lspilot.toml, or LSPILOT_MODEL (cmd_env)' })
end

--- `lspilot servers status`: a line per server (name, default, state, languages), then its
--- command or install command, indented.
local function check_servers(exe, env, root)
  local result = vim.system({ exe, 'servers', 'status' }, { cwd = root, env = env, text = true }):wait(60000)
  if result.code ~= 0 then
    return h.error('`lspilot servers status` failed: ' .. vim.trim(result.stderr or ''))
  end
  local lines = vim.split(result.stdout or '', '\n', { trimempty = true })
  for i, line in ipairs(lines) do
    if not line:match('^%s') then
      local name, rest = line:match('^(%S+)%s+(.*)$')
      local default = vim.startswith(rest or '', 'default')
      local missing = (rest or ''):match('%f[%w]missing%f[%W]') ~= nil
      local detail = vim.trim(lines[i + 1] or '')
      if not missing then
        local say = default and h.ok or h.info
        say(('%s: available (%s)'):format(name, detail))
      elseif default then
        h.warn(name .. ': missing', { 'install it: ' .. detail })
      else
        h.info(('%s: not installed (optional; `%s`)'):format(name, detail))
      end
    end
  end
end

function M.check()
  local opts = config.options
  h.start('lspilot')
  local v = vim.version()
  local version = ('%d.%d.%d'):format(v.major, v.minor, v.patch)
  if vim.fn.has('nvim-0.10') == 1 then
    h.ok('Neovim ' .. version)
  else
    h.error('Neovim ' .. version .. ': lspilot requires Neovim >= 0.10')
  end

  local exe = vim.fn.exepath(opts.cmd[1])
  if exe == '' then
    return h.error('`' .. opts.cmd[1] .. '` not found', {
      'put lspilot on PATH (`scripts/dev demo` in its repository makes .venv/bin/lspilot), or set `cmd`',
    })
  end
  h.ok('executable: ' .. exe)

  local c = client.ensure()
  local ready = c and vim.wait(20000, function()
    return c.initialized == true or c:is_stopped()
  end, 20)
  if not c or not ready or c:is_stopped() then
    h.error('the daemon did not start: `' .. table.concat(opts.cmd, ' ') .. '`', { 'see :Lspilot log' })
  else
    local info = c.server_info or {}
    h.ok(('daemon reachable: %s %s, root %s'):format(info.name or 'lspilot', info.version or '?', c.root_dir))
  end
  local root = c and c.root_dir or vim.fn.getcwd()
  local env = vim.tbl_extend('force', {}, opts.cmd_env)

  check_model(env, root)
  check_servers(exe, next(env) and env or nil, root)

  local log = client.log_path()
  if vim.fn.filereadable(log) == 1 then
    h.ok('log: ' .. log)
  else
    h.info('log: ' .. log .. ' (not written yet)')
  end
end

return M
