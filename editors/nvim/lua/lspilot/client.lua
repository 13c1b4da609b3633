-- The LSP client of `lspilot serve`: started with vim.lsp.start (one per project root, no
-- transport of its own), the handlers for lspilot's server->client messages, and command calls.
local config = require('lspilot.config')
local util = require('lspilot.util')

local M = {}

local NAME = 'lspilot'
local has_011 = vim.fn.has('nvim-0.11') == 1

---@type string status line text ('' when idle)
M.status = ''

---@type table<string, string> project root -> the session the chat shows (kept when its daemon
--- exits: the next one continues it)
M.session = {}

---@type table<string, boolean> project root -> an ask that starts a new session is on its way:
--- the chat shows that session from its first update
M.starting = {}

---@type table<string, integer> session id -> the client whose daemon runs a turn in it
M.running = {}

---@type table<integer, table<integer, function>> client id -> request id -> its callback
local inflight = {}

local function set_status(text)
  M.status = text
  pcall(vim.api.nvim_exec_autocmds, 'User', { pattern = 'LspilotStatus', modeline = false })
  vim.cmd('redrawstatus')
end

--- A normal file buffer (not chat, help, quickfix, terminal...).
function M.is_file(buf)
  return vim.api.nvim_buf_is_valid(buf)
    and vim.bo[buf].buftype == ''
    and vim.api.nvim_buf_get_name(buf) ~= ''
end

function M.root(buf)
  local root = M.is_file(buf) and vim.fs.root(buf, config.options.root_markers) or nil
  return vim.fs.normalize(root or vim.fn.getcwd())
end

--- All running lspilot clients (optionally only the one for `root`).
function M.clients(root)
  local found = {}
  for _, client in ipairs(vim.lsp.get_clients({ name = NAME })) do
    if not root or client.root_dir == root then
      table.insert(found, client)
    end
  end
  return found
end

function M.request(client, method, params, handler, buf)
  if has_011 then
    return client:request(method, params, handler, buf)
  end
  return client.request(method, params, handler, buf)
end

--- Run `lspilot.<name>` with one object argument; `callback(err, result)` on the main loop.
--- If the daemon exits first, `callback` gets an error with `exited = true` (Neovim drops the
--- callbacks of requests a dead server never answered).
---@return integer? request id
function M.exec(client, name, argument, callback, token)
  local params = { command = 'lspilot.' .. name, arguments = { argument }, workDoneToken = token }
  local pending = inflight[client.id] or {}
  inflight[client.id] = pending
  local id, done = nil, false
  local function finish(err, result)
    if done then
      return -- answered already (the daemon exited first)
    end
    done = true
    if id then
      pending[id] = nil
    end
    util.protect('lspilot.' .. name, callback)(err, result)
  end
  local ok
  ok, id = M.request(client, 'workspace/executeCommand', params, finish)
  if not ok then
    return nil
  end
  pending[id] = finish
  return id
end

--- Answer every command still waiting on client `client_id` with `message`.
local function fail_inflight(client_id, message)
  local pending = inflight[client_id] or {}
  inflight[client_id] = nil
  for _, finish in pairs(pending) do
    finish({ code = -32097, message = message, exited = true })
  end
end

local function attach_loaded(client)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and M.is_file(buf) then
      local path = vim.fs.normalize(vim.api.nvim_buf_get_name(buf))
      if vim.startswith(path, client.root_dir .. '/') then
        vim.lsp.buf_attach_client(buf, client.id)
      end
    end
  end
end

local function handlers()
  local review = require('lspilot.review')
  local chat = require('lspilot.chat')
  return {
    ['lspilot/update'] = util.protect('lspilot/update', function(_, params, ctx)
      local shown = M.on_update(params, ctx.client_id)
      if shown then
        chat.update(params)
      end
      chat.failed(params, shown)
      review.on_update(params)
      require('lspilot.permission').on_update(params)
      return vim.NIL
    end),
    ['lspilot/reviewEdit'] = function(_, params, ctx)
      return M.deferred('review', ctx, function(answer)
        review.open(params, ctx.client_id, answer)
      end, { decision = 'cancelled' })
    end,
    ['lspilot/requestPermission'] = function(_, params, ctx)
      return M.deferred('permission prompt', ctx, function(answer)
        require('lspilot.permission').ask(params, answer, ctx.client_id)
      end, { cancelled = true })
    end,
    ['lspilot/question'] = function(_, params, ctx)
      return M.deferred('question', ctx, function(answer)
        require('lspilot.permission').question(params, answer, ctx.client_id)
      end, { cancelled = true })
    end,
    ['workspace/applyEdit'] = function(err, params, ctx)
      return require('lspilot.apply').handler(err, params, ctx)
    end,
    ['window/showDocument'] = function(err, params, ctx)
      return require('lspilot.follow').handler(err, params, ctx)
    end,
    ['$/progress'] = util.protect('$/progress', function(err, params, ctx)
      local value = params and params.value or {}
      if value.kind == 'end' then
        set_status('')
      elseif value.message then
        set_status('lspilot: ' .. value.message)
      end
      return vim.lsp.handlers['$/progress'](err, params, ctx)
    end),
  }
end

--- Answer a server request later: Neovim runs request handlers in a coroutine (as its own
--- window/showMessageRequest does), so the handler yields until `start` calls `answer(result)`.
function M.deferred(what, _, start, fallback)
  local co, is_main = coroutine.running()
  if not co or is_main then
    util.notify(what .. ': this Neovim cannot answer later; dismissed', vim.log.levels.WARN)
    return fallback
  end
  local answered = false
  local ok, err = pcall(start, function(result)
    if answered then
      return
    end
    answered = true
    vim.schedule(function()
      coroutine.resume(co, result)
    end)
  end)
  if not ok then
    util.notify(what .. ' failed: ' .. tostring(err), vim.log.levels.ERROR)
    return fallback
  end
  return coroutine.yield()
end

--- Track the session shown and the status from a `lspilot/update`. Returns true when the update
--- is of the session the chat shows: a turn of another session (one the user left for a new
--- one, or picked away from) runs on in the status line and its reviews, not in the chat.
function M.on_update(params, client_id)
  local client = vim.lsp.get_client_by_id(client_id)
  local root = client and client.root_dir
  local starts = params.kind == 'status' and params.status == 'running'
  if root and (M.session[root] == nil or (starts and M.starting[root])) then
    M.session[root], M.starting[root] = params.sessionId, nil
  end
  if params.kind == 'status' and params.status == 'running' then
    M.running[params.sessionId] = client_id
  elseif params.kind == 'turnEnd' then
    M.running[params.sessionId] = nil
  end
  if params.kind == 'status' and params.status == 'waiting for review' then
    set_status('lspilot: waiting for review')
  elseif params.kind == 'status' and params.status then
    set_status('lspilot: ' .. params.status)
  elseif params.kind == 'turnEnd' then
    set_status('')
  end
  return root ~= nil and M.session[root] == params.sessionId
end

local function start_config(root)
  local opts = config.options
  return {
    name = NAME,
    cmd = opts.cmd,
    cmd_env = opts.cmd_env,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = vim.fs.basename(root) } },
    init_options = { lspilot = { review = true, permissions = true, questions = true, follow = opts.follow } },
    -- Every edit goes to the daemon at once. Neovim flushes debounced changes before a request
    -- or notification, but not before a reply: a review or permission answer sent within
    -- 150 ms of typing would be judged against the buffer's older text. (Neovim applies the
    -- smallest debounce of the clients that share the sync kind and position encoding.)
    flags = { debounce_text_changes = 0 },
    handlers = handlers(),
    on_init = function(client)
      vim.schedule(util.protect('attaching buffers', function()
        attach_loaded(client)
      end))
    end,
    on_exit = vim.schedule_wrap(util.protect('daemon exit', function(code, signal, client_id)
      require('lspilot.review').clear_client(client_id)
      require('lspilot.permission').clear_client(client_id)
      set_status('')
      for session_id, runner in pairs(M.running) do
        if runner == client_id then
          M.running[session_id] = nil
        end
      end
      local how = signal ~= 0 and ('signal %d'):format(signal) or ('code %d'):format(code)
      fail_inflight(client_id, ('the daemon exited (%s); see :Lspilot log'):format(how))
      if code ~= 0 or signal ~= 0 then
        util.notify(('the daemon exited with %s; see :Lspilot log'):format(how), vim.log.levels.WARN)
      end
    end)),
  }
end

--- The client for `buf`'s root, started if needed (a file buffer is attached to it).
---@param buf? integer
---@return vim.lsp.Client?
function M.ensure(buf)
  buf = buf or vim.api.nvim_get_current_buf()
  local root = M.root(buf)
  local existing = M.clients(root)[1]
  if not M.is_file(buf) then
    if existing or M.clients()[1] then
      return existing or M.clients()[1]
    end
    local id = has_011 and vim.lsp.start(start_config(root), { attach = false })
      or vim.lsp.start_client(start_config(root))
    return id and vim.lsp.get_client_by_id(id) or nil
  end
  local id = vim.lsp.start(start_config(root), { bufnr = buf })
  return id and vim.lsp.get_client_by_id(id) or nil
end

--- Attach file buffers opened later to their root's client (or start it, with `autostart`).
function M.watch()
  local group = vim.api.nvim_create_augroup('lspilot', { clear = true })
  vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile' }, {
    group = group,
    callback = util.protect('attaching a buffer', function(ev)
      if not M.is_file(ev.buf) then
        return
      end
      local client = M.clients(M.root(ev.buf))[1]
      if client then
        vim.lsp.buf_attach_client(ev.buf, client.id)
      elseif config.options.autostart then
        M.ensure(ev.buf)
      end
    end),
  })
end

--- Where the daemon logs (as daemon/config.py's log_dir decides).
function M.log_path()
  if config.options.log_file then
    return config.options.log_file
  end
  local data = config.options.cmd_env.LSPILOT_DATA_DIR or vim.env.LSPILOT_DATA_DIR
  if data then
    return vim.fs.joinpath(data, 'logs', 'lspilot.log')
  end
  if vim.fn.has('mac') == 1 then
    return vim.fs.joinpath(vim.env.HOME, 'Library', 'Logs', 'lspilot', 'lspilot.log')
  end
  local state = vim.env.XDG_STATE_HOME or vim.fs.joinpath(vim.env.HOME, '.local', 'state')
  return vim.fs.joinpath(state, 'lspilot', 'log', 'lspilot.log')
end

return M
