-- lspilot for Neovim: setup and the public Lua API behind :Lspilot. The agent lives in the
-- daemon (`lspilot serve`); this plugin only shows what it sends and answers what it asks.
local config = require('lspilot.config')
local client = require('lspilot.client')
local util = require('lspilot.util')

local M = {}

local token_count = 0
---@type table<integer, integer> client id -> the lspilot.ask request in flight
local asking = {}
local STILL_RUNNING = 'a turn is still running in this chat; wait for it or :Lspilot cancel it'

--- Merge options (see :help lspilot-config) and attach to file buffers as they open.
function M.setup(opts)
  config.set(opts)
  client.watch()
  M._setup = true
end

local function ensure_setup()
  if not M._setup then
    M.setup({})
  end
end

local function current()
  ensure_setup()
  local c = client.ensure()
  if not c then
    util.notify('could not start `' .. table.concat(config.options.cmd, ' ') .. '` (see :checkhealth lspilot)', vim.log.levels.ERROR)
  end
  return c
end

--- The session the chat shows, for client `c` (by project root: a restarted daemon continues it).
local function session(c)
  return client.session[c.root_dir]
end

--- Ask the agent. opts: {range = {first, last} (1-based lines of the current buffer),
--- session_id, agent, model, new_session, on_done = fun(err, result)}.
function M.ask(prompt, opts)
  opts = opts or {}
  if not prompt or prompt == '' then
    return vim.ui.input({ prompt = 'Ask lspilot: ' }, util.protect('ask', function(text)
      if text and text ~= '' then
        M.ask(text, opts)
      end
    end))
  end
  local buf = vim.api.nvim_get_current_buf()
  local c = current()
  if not c then
    return
  end
  local argument = { prompt = prompt, agent = opts.agent, model = opts.model }
  argument.sessionId = opts.session_id or (not opts.new_session and session(c)) or nil
  if argument.sessionId and client.running[argument.sessionId] then
    util.notify(STILL_RUNNING, vim.log.levels.WARN)
    if opts.on_done then
      opts.on_done({ message = STILL_RUNNING }, nil)
    end
    return
  end
  if client.is_file(buf) then
    argument.context = { uri = vim.uri_from_bufnr(buf) }
    if opts.range then
      local last = vim.api.nvim_buf_get_lines(buf, opts.range[2] - 1, opts.range[2], false)[1] or ''
      argument.context.range = {
        start = { line = opts.range[1] - 1, character = 0 },
        ['end'] = { line = opts.range[2] - 1, character = util.utf16(last) },
      }
    end
  end
  if config.options.chat.open_on_ask then
    require('lspilot.chat').open(false)
  end
  token_count = token_count + 1
  client.starting[c.root_dir] = argument.sessionId == nil or nil
  local id
  id = client.exec(c, 'ask', argument, function(err, result)
    if asking[c.id] == id then
      asking[c.id] = nil
    end
    if err and err.exited then -- on_exit told the user; the chat says where the turn stopped
      require('lspilot.chat').update({ kind = 'turnEnd', stopReason = 'error', error = err.message })
    elseif err and (err.message or ''):find('already running', 1, true) then
      err = { code = err.code, message = STILL_RUNNING } -- not the daemon's words with the session id
      util.notify(STILL_RUNNING, vim.log.levels.WARN)
    elseif err then
      util.notify('ask: ' .. (err.message or tostring(err)), vim.log.levels.ERROR)
    elseif not client.session[c.root_dir] then
      client.session[c.root_dir] = result.sessionId
    end
    if opts.on_done then
      opts.on_done(err, result)
    end
  end, ('lspilot-ask-%d'):format(token_count))
  asking[c.id] = id
end

--- Cancel the running turn of the chat's session (else the one running in another session: the
--- user picked another session to look at); its pending reviews are dropped.
function M.cancel()
  local c = current()
  if not c then
    return
  end
  local id = session(c)
  if id and not client.running[id] then
    for other, runner in pairs(client.running) do
      if runner == c.id then
        id = other
        break
      end
    end
  end
  if id then
    require('lspilot.review').clear_session(id)
    client.exec(c, 'cancel', { sessionId = id }, function(err, result)
      if err then
        util.notify('cancel: ' .. (err.message or tostring(err)), vim.log.levels.WARN)
      elseif result and not result.cancelled then
        util.notify("nothing is running in this chat's session", vim.log.levels.INFO)
      end
    end)
  elseif asking[c.id] then
    if vim.fn.has('nvim-0.11') == 1 then
      c:cancel_request(asking[c.id])
    else
      c.cancel_request(asking[c.id])
    end
  else
    util.notify('nothing to cancel', vim.log.levels.INFO)
  end
end

--- Pending proposals and their hunks: {{proposalId, sessionId, uri, bufnr, hunks = {{id, state, ...}}}}.
function M.pending()
  return require('lspilot.review').pending()
end

--- Accept hunk `hunk_id` (default: the hunk under the cursor).
function M.accept(hunk_id)
  return require('lspilot.review').resolve('accepted', hunk_id)
end

--- Reject hunk `hunk_id` (default: under the cursor); `feedback` goes to the model.
function M.reject(hunk_id, feedback)
  return require('lspilot.review').resolve('rejected', hunk_id, feedback)
end

--- Reject the hunk under the cursor, asking (vim.ui.input) what to tell the model.
function M.reject_with_feedback()
  vim.ui.input({ prompt = 'Why reject? (for the agent) ' }, util.protect('reject', function(text)
    if text then
      M.reject(nil, text ~= '' and text or nil)
    end
  end))
end

function M.accept_all()
  return require('lspilot.review').resolve_all('accepted')
end

function M.reject_all(feedback)
  return require('lspilot.review').resolve_all('rejected', feedback)
end

function M.next()
  require('lspilot.review').jump(true)
end

function M.prev()
  require('lspilot.review').jump(false)
end

--- Open the chat buffer (and focus it).
function M.chat()
  ensure_setup()
  return require('lspilot.chat').open(true)
end

--- Pick a stored session (vim.ui.select) and redraw its history in the chat buffer.
---@param on_done? fun(session_id: string)
function M.sessions(on_done)
  local c = current()
  if not c then
    return
  end
  client.exec(c, 'sessions', {}, function(err, sessions)
    if err or #sessions == 0 then
      return util.notify(err and err.message or 'no sessions yet in ' .. c.root_dir, vim.log.levels.INFO)
    end
    vim.ui.select(sessions, {
      prompt = 'lspilot session',
      kind = 'lspilot_session',
      format_item = function(s)
        return ('%s  %s%s'):format(os.date('%Y-%m-%d %H:%M', s.updated), s.title, s.running and ' (running)' or '')
      end,
    }, util.protect('sessions', function(choice)
      if not choice then
        return
      end
      client.exec(c, 'history', { sessionId = choice.sessionId }, function(herr, history)
        if herr then
          return util.notify('history: ' .. herr.message, vim.log.levels.ERROR)
        end
        client.session[c.root_dir] = choice.sessionId
        require('lspilot.chat').redraw(history)
        require('lspilot.chat').open(false)
        if on_done then
          on_done(choice.sessionId)
        end
      end)
    end))
  end)
end

--- Navigation into the quickfix list: op is refs, defs, impls, callers or callees.
function M.navigate(op, on_done)
  ensure_setup()
  require('lspilot.nav').run(op, on_done)
end

--- Follow the agent (show where it reads, finds and changes) or stop; `enabled` nil toggles.
---@param enabled? boolean
---@param on_done? fun(enabled: boolean)
function M.follow(enabled, on_done)
  ensure_setup()
  if enabled == nil then
    enabled = not config.options.follow
  end
  config.options.follow = enabled -- daemons started later follow too
  if not enabled then
    require('lspilot.follow').clear()
  end
  local clients = client.clients()
  local waiting = #clients
  local function done()
    waiting = waiting - 1
    if waiting <= 0 then
      util.notify(enabled and 'following the agent' or 'not following the agent')
      if on_done then
        on_done(enabled)
      end
    end
  end
  for _, c in ipairs(clients) do
    client.exec(c, 'follow', { enabled = enabled }, function(err)
      if err then
        util.notify('follow: ' .. (err.message or tostring(err)), vim.log.levels.WARN)
      end
      done()
    end)
  end
  if #clients == 0 then
    done()
  end
end

--- Open the daemon's log file.
function M.log()
  ensure_setup()
  vim.cmd('split ' .. vim.fn.fnameescape(client.log_path()))
end

--- Statusline text: what the running turn does ('' when idle).
function M.status()
  return client.status
end

--- `:Lspilot reject [hunk] [reason...]`: a first word shaped like a hunk id (`h2`) names the
--- hunk, whether or not one is pending (an unknown id is refused, never taken for a reason);
--- the words after it are the reason.
local function hunk_and_reason(rest)
  local first, after = rest:match('^(%S+)%s*(.-)$')
  if first and first:match('^h%d+$') then
    return first, after ~= '' and after or nil
  end
  return nil, rest ~= '' and rest or nil
end

--- The ids of the pending hunks (each once; a hunk id is per proposal), in order.
local function pending_hunk_ids()
  local ids, seen = {}, {}
  for _, p in ipairs(M.pending()) do
    for _, hunk in ipairs(p.hunks) do
      if hunk.state == 'pending' and not seen[hunk.id] then
        seen[hunk.id] = true
        table.insert(ids, hunk.id)
      end
    end
  end
  table.sort(ids, function(a, b) -- h2 before h10
    return #a < #b or (#a == #b and a < b)
  end)
  return ids
end

local subcommands = {
  ask = function(args, rest)
    M.ask(rest, { range = args.range > 0 and { args.line1, args.line2 } or nil })
  end,
  chat = M.chat,
  cancel = M.cancel,
  sessions = function()
    M.sessions()
  end,
  accept = function(_, rest)
    M.accept(rest ~= '' and rest or nil)
  end,
  reject = function(_, rest)
    M.reject(hunk_and_reason(rest))
  end,
  ['accept-all'] = M.accept_all,
  ['reject-all'] = function(_, rest)
    M.reject_all(rest ~= '' and rest or nil)
  end,
  next = M.next,
  prev = M.prev,
  log = M.log,
  follow = function(_, rest)
    local states = { on = true, off = false }
    if rest ~= '' and states[rest] == nil then
      return util.notify('follow: expected on or off, got ' .. rest, vim.log.levels.ERROR)
    end
    M.follow(states[rest])
  end,
}
for op in pairs(require('lspilot.nav').operations) do
  subcommands[op] = function()
    M.navigate(op)
  end
end

--- :Lspilot {subcommand} [args]
function M.command(args)
  ensure_setup()
  local name, rest = (args.args or ''):match('^%s*(%S*)%s*(.-)%s*$')
  local run = subcommands[name ~= '' and name or 'chat']
  if not run then
    return util.notify('unknown subcommand ' .. name .. '; see :help :Lspilot', vim.log.levels.ERROR)
  end
  util.protect(':Lspilot ' .. name, run)(args, rest)
end

--- Subcommand names; after `accept` or `reject`, the ids of the pending hunks.
function M.complete(arglead, cmdline)
  local before = vim.split(vim.trim(cmdline:sub(1, #cmdline - #arglead)), '%s+')
  local names = {}
  if #before == 1 then
    names = vim.tbl_keys(subcommands)
    table.sort(names)
  elseif #before == 2 and (before[2] == 'accept' or before[2] == 'reject') then
    names = pending_hunk_ids()
  end
  return vim.tbl_filter(function(n)
    return vim.startswith(n, arglead)
  end, names)
end

return M
