-- The chat buffer (lspilot://chat): the conversation as it streams (lspilot/update), tool calls
-- with their status (diffs folded under them), and a stored session redrawn from its history.
local config = require('lspilot.config')
local util = require('lspilot.util')

local M = {}

local NAME = 'lspilot://chat'
local ns = vim.api.nvim_create_namespace('lspilot_chat')
local DIFF = '    │ '

---@type table<string, {mark: integer, diffed: boolean, noted?: boolean}>
local tools = {}
---@type table<string, integer> message id -> extmark where its streamed text begins
local starts = {}
local last = { kind = nil, message = nil }

function M.buf()
  local buf = vim.fn.bufnr(NAME)
  if buf ~= -1 and vim.api.nvim_buf_is_loaded(buf) then
    return buf
  end
  -- New, or the user wiped or unloaded it (its text and marks went): start over, so a turn
  -- still running streams on into the new buffer.
  tools, starts, last = {}, {}, {}
  buf = buf ~= -1 and buf or vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, NAME)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = 'markdown'
  vim.bo[buf].modifiable = false
  return buf
end

local function edit(start, finish, lines)
  local buf = M.buf()
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, start, finish, false, lines)
  vim.bo[buf].modifiable = false
end

local function follow()
  local buf = M.buf()
  local count = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    if win ~= vim.api.nvim_get_current_win() then
      vim.api.nvim_win_set_cursor(win, { count, 0 })
    end
  end
end

local function append(lines)
  local buf = M.buf()
  local empty = vim.api.nvim_buf_line_count(buf) == 1 and vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1] == ''
  edit(empty and 0 or -1, -1, lines)
  follow()
end

--- Streamed text: the delta continues the last line.
local function append_text(delta)
  local buf = M.buf()
  local pieces = vim.split(delta, '\n', { plain = true })
  local tail = vim.api.nvim_buf_get_lines(buf, -2, -1, false)[1] or ''
  pieces[1] = tail .. pieces[1]
  edit(-2, -1, pieces)
  follow()
end

--- `head` followed by the lines of `text` (an error's message often has several; a buffer line
--- cannot hold a newline).
local function with_text(head, text)
  local lines = util.lines(text)
  lines[1] = head .. (lines[1] or '')
  return lines
end

local function tool_line(call)
  local title = (util.value(call.title) or ''):gsub('%s*\r?\n%s*', ' ') -- a title of several lines
  local line = ('  ⚙ %s %s — %s'):format(call.tool, title, call.status or '')
  return (line:gsub('%s+—', ' —'))
end

--- Why each file of a change was not applied (the user rejected it, or it changed in the editor
--- during the review though accepted): a completed call may have changed nothing.
local function not_applied(metadata)
  local lines = {}
  for _, file in ipairs(type(metadata.files) == 'table' and metadata.files or {}) do
    local note = util.value(file.note)
    if file.status == 'rejected' and type(note) == 'string' and note ~= '' then
      vim.list_extend(lines, with_text('    ✗ ', note))
    end
  end
  return lines
end

local function tool_update(call)
  local buf = M.buf()
  local known = tools[call.id]
  if not known then
    append({ tool_line(call) })
    local row = vim.api.nvim_buf_line_count(buf) - 1
    tools[call.id] = { mark = vim.api.nvim_buf_set_extmark(buf, ns, row, 0, { right_gravity = false }), diffed = false }
    last.kind = 'tool'
    known = tools[call.id]
  else
    local row = vim.api.nvim_buf_get_extmark_by_id(buf, ns, known.mark, {})[1]
    local old = vim.api.nvim_buf_get_lines(buf, row, row + 1, false)[1] or ''
    vim.bo[buf].modifiable = true
    vim.api.nvim_buf_set_text(buf, row, 0, row, #old, { tool_line(call) })
    vim.bo[buf].modifiable = false
  end
  local metadata = util.value(call.metadata)
  local diff = type(metadata) == 'table' and util.value(metadata.diff) or nil
  if call.status == 'error' and util.value(call.output) then
    diff = call.output
  end
  if type(diff) == 'string' and diff ~= '' and not known.diffed then
    known.diffed = true
    local row = vim.api.nvim_buf_get_extmark_by_id(buf, ns, known.mark, {})[1]
    local lines = vim.tbl_map(function(line)
      return DIFF .. line
    end, util.lines(diff))
    edit(row + 1, row + 1, lines)
  end
  local unapplied = type(metadata) == 'table' and not known.noted and not_applied(metadata) or {}
  if #unapplied > 0 then
    known.noted = true
    local row = vim.api.nvim_buf_get_extmark_by_id(buf, ns, known.mark, {})[1]
    edit(row + 1, row + 1, unapplied)
  end
end

local function block(kind, message)
  if last.kind ~= kind or last.message ~= message then
    append({ '', kind == 'reasoning' and '_thinking:_ ' or '' })
    if message and not starts[message] then
      local row = vim.api.nvim_buf_line_count(M.buf()) - 2
      starts[message] = vim.api.nvim_buf_set_extmark(M.buf(), ns, row, 0, { right_gravity = false })
    end
  end
  last.kind, last.message = kind, message
end

--- A retry after the stream broke off: what streamed of the message is dropped (it comes again).
local function discard(message)
  local mark = message and starts[message]
  local row = mark and vim.api.nvim_buf_get_extmark_by_id(M.buf(), ns, mark, {})[1]
  if row then
    edit(row, -1, {})
    vim.api.nvim_buf_del_extmark(M.buf(), ns, mark)
    starts[message] = nil
  end
end

--- One lspilot/update notification.
function M.update(params)
  local kind = params.kind
  if kind == 'text' or kind == 'reasoning' then
    block(kind, util.value(params.messageId))
    append_text(params.delta or '')
  elseif kind == 'toolCall' then
    tool_update(params)
  elseif kind == 'plan' then
    local lines = { '', 'Plan:' }
    for _, todo in ipairs(params.todos or {}) do
      table.insert(lines, ('- [%s] %s'):format(todo.status == 'completed' and 'x' or ' ', todo.content))
    end
    append(lines)
    last.kind = 'plan'
  elseif kind == 'status' and params.status == 'running' then
    M.user(params.prompt or '')
  elseif kind == 'status' then
    if params.status == 'retrying' and params.discarded then
      discard(util.value(params.messageId))
    end
    local detail = tostring(util.value(params.message) or util.value(params.error) or '')
    append(with_text(('_%s_ '):format(params.status), detail))
    last.kind, last.error = 'status', params.status == 'error' and detail or nil
  elseif kind == 'turnEnd' then
    local reason = params.stopReason
    local err = util.value(params.error)
    if last.kind == 'status' and err and last.error == tostring(err) then
      err = nil -- said just above
    end
    local lines = with_text(('— %s'):format(reason == 'end' and 'done' or reason), err and (': ' .. tostring(err)) or '')
    append(vim.list_extend({ '' }, vim.list_extend(lines, { '' })))
    last.kind = 'end'
  end
end

--- A turn that failed out of the user's sight (the chat is in no window, or shows another
--- session) says why in a notification: the status line is cleared when it ends.
function M.failed(params, shown)
  if params.kind ~= 'turnEnd' or params.stopReason ~= 'error' then
    return
  end
  local buf = vim.fn.bufnr(NAME)
  if not shown or buf == -1 or #vim.fn.win_findbuf(buf) == 0 then
    util.notify('the turn failed: ' .. tostring(util.value(params.error) or 'see :Lspilot log'), vim.log.levels.ERROR)
  end
end

function M.user(prompt)
  append(vim.list_extend({ '## You', '' }, util.lines(prompt)))
  append({ '', '## lspilot' })
  last.kind = 'user'
end

--- Replace the buffer with a stored session (lspilot.history).
function M.redraw(history)
  edit(0, -1, {})
  vim.api.nvim_buf_clear_namespace(M.buf(), ns, 0, -1)
  tools, starts, last = {}, {}, {}
  for _, message in ipairs(history.messages or {}) do
    for _, part in ipairs(message.parts or {}) do
      if message.role == 'user' and part.kind == 'text' then
        M.user(part.text or '')
      elseif part.kind == 'text' or part.kind == 'reasoning' then
        block(part.kind, message.id)
        append_text(part.text or '')
      elseif part.kind == 'tool' then
        local ok, input = pcall(vim.json.decode, part.input or '')
        input = ok and type(input) == 'table' and input or {}
        local title = input.filePath or input.path or input.command or input.pattern or input.query
        tool_update({ id = part.call_id or part.id, tool = part.tool, title = title, status = part.state, metadata = part.metadata })
      elseif part.kind == 'error' then
        append(with_text('_error_ ', part.text or ''))
      end
    end
  end
end

--- Show the chat in a side window (or focus it when shown).
function M.open(focus)
  local buf = M.buf()
  local win = vim.fn.bufwinid(buf)
  if win == -1 then
    local opts = config.options.chat
    local current = vim.api.nvim_get_current_win()
    local where = ({ right = 'botright vertical', left = 'topleft vertical', below = 'botright', above = 'topleft' })[opts.position]
    vim.cmd(('%s %dsplit'):format(where, opts.size))
    win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(win, buf)
    local wo = vim.wo[win]
    wo.wrap, wo.linebreak, wo.number, wo.relativenumber = true, true, false, false
    wo.foldmethod, wo.foldexpr, wo.foldlevel = 'expr', "getline(v:lnum)=~#'^    │'", 0
    wo.winfixwidth = opts.position == 'right' or opts.position == 'left'
    if not focus then
      vim.api.nvim_set_current_win(current)
    end
  elseif focus then
    vim.api.nvim_set_current_win(win)
  end
  follow()
  return buf
end

return M
