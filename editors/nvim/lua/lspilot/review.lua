-- Inline review of the agent's proposed changes (lspilot/reviewEdit), hunk by hunk.
--
-- The buffer is not modified while a review is pending: its hunks are drawn with extmarks
-- (hunks.lua), and the review keys are set in it (keys.lua).
-- When every hunk of a proposal is resolved the answer goes back to the server, which applies
-- the accepted hunks with workspace/applyEdit (so `u` undoes them; the user saves, but for a new
-- file, which apply.lua writes). A file not shown yet is opened in a split and attached like any
-- buffer, so it takes the change that way too.
local apply = require('lspilot.apply')
local client = require('lspilot.client')
local hunks = require('lspilot.hunks')
local keys = require('lspilot.keys')
local util = require('lspilot.util')

local M = {}

---@class lspilot.Hunk
---@field id string
---@field old_start integer 1-based
---@field old_lines integer
---@field new_text string
---@field state 'pending'|'accepted'|'rejected'
---@field feedback? string
---@field marks integer[] extmark ids; marks[1] is at the hunk's first line
---@field label? string what a change without hunks does (shown instead of new lines)
---@field above? boolean a pure insertion's mark is above its line (else below the last line)

---@class lspilot.Proposal
---@field id string
---@field session string
---@field client_id integer
---@field uri string
---@field buf integer
---@field hunks lspilot.Hunk[]
---@field answer fun(result: table)
---@field unloaded? boolean its buffer was unloaded or wiped (marks gone) and is not shown again yet
---@field created? boolean the review made its buffer (there was none for the file)
---@field new_file? boolean the file does not exist: accepted, it is written (apply.lua)

---@type lspilot.Proposal[]
M.proposals = {}

local function pending_in(buf)
  local found = {}
  for _, p in ipairs(M.proposals) do
    if p.buf == buf and not p.unloaded then
      for _, hunk in ipairs(p.hunks) do
        if hunk.state == 'pending' then
          table.insert(found, { proposal = p, hunk = hunk, row = hunks.row(p.buf, hunk) })
        end
      end
    end
  end
  table.sort(found, function(a, b)
    return a.row < b.row
  end)
  return found
end

local function displayed(buf)
  return buf > 0 and vim.fn.bufwinid(buf) ~= -1
end

--- A window to split from: the current one unless it shows the chat.
local function home_window()
  local chat = vim.fn.bufnr('lspilot://chat')
  if vim.api.nvim_win_get_buf(0) ~= chat then
    return vim.api.nvim_get_current_win()
  end
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) ~= chat then
      return win
    end
  end
  return vim.api.nvim_get_current_win()
end

--- The buffer of `uri`, loaded and shown in a window (a split of the code window if it was not).
local function show_file(uri, client_id)
  local buf = vim.fn.bufadd(vim.uri_to_fname(uri))
  if not displayed(buf) then
    vim.api.nvim_win_call(home_window(), function()
      vim.cmd('sbuffer ' .. buf)
    end)
  end
  vim.fn.bufload(buf)
  -- A file opened just now (baseVersion null) is attached as any other (BufReadPost), and in any
  -- case to the daemon asking: it sees it open and applies the accepted hunks in this buffer.
  if client.is_file(buf) then
    vim.lsp.buf_attach_client(buf, client_id)
  end
  return buf
end

--- What a proposal does to its file besides changing lines (nil: nothing). `empty`: it has no
--- hunks, so that is all it does (it still needs the user's yes); else it is said above its
--- first hunk, as accepting it all does more than change those lines.
local function file_note(params, empty)
  local to = util.value(params.newUri)
  if to then
    return 'lspilot moves this file to ' .. vim.fn.fnamemodify(vim.uri_to_fname(to), ':.')
  end
  if params.isDeletion then
    return empty and 'lspilot deletes this empty file' or 'lspilot deletes this file'
  end
  if empty then
    return params.isNewFile and 'lspilot creates this file, empty' or 'no line changes'
  end
end

--- The windows showing `p`'s buffer, but the one the user is in, are scrolled to its first hunk
--- when none of its hunks is in view (a split the review opened showed the top of the file).
local function into_view(p)
  local rows = vim.tbl_map(function(hunk)
    return hunks.row(p.buf, hunk) + 1
  end, p.hunks)
  for _, win in ipairs(vim.fn.win_findbuf(p.buf)) do
    local top, bottom = vim.fn.line('w0', win), vim.fn.line('w$', win)
    local seen = vim.iter(rows):any(function(row)
      return row >= top and row <= bottom
    end)
    if win ~= vim.api.nvim_get_current_win() and not seen then
      vim.api.nvim_win_set_cursor(win, { math.min(unpack(rows)), 0 })
      vim.api.nvim_win_call(win, function()
        vim.cmd('normal! zz')
      end)
    end
  end
end

--- Show a lspilot/reviewEdit request in its buffer; `answer(result)` replies to the server.
function M.open(params, client_id, answer)
  local created = vim.fn.bufexists(vim.uri_to_fname(params.uri)) == 0
  local buf = show_file(params.uri, client_id)
  ---@type lspilot.Proposal
  local p = {
    id = params.proposalId,
    session = params.sessionId,
    client_id = client_id,
    uri = params.uri,
    buf = buf,
    hunks = {},
    answer = answer,
    created = created,
    new_file = params.isNewFile,
  }
  for _, h in ipairs(params.hunks) do
    table.insert(p.hunks, { id = h.id, old_start = h.oldStart, old_lines = h.oldLines, new_text = h.newText })
  end
  if #p.hunks == 0 then -- no line differs: a move, a new empty file, an empty file deleted
    table.insert(p.hunks, { id = 'file', old_start = 1, old_lines = 0, new_text = '', label = file_note(params, true) })
  else
    p.hunks[1].note = file_note(params, false)
  end
  for _, hunk in ipairs(p.hunks) do
    hunk.state = 'pending'
    hunks.draw(p.buf, hunk)
  end
  table.insert(M.proposals, p)
  keys.set(buf)
  into_view(p)
end

--- A buffer the review made for a file that does not exist (a new file) goes with its split when
--- the review ends without creating the file, unless the user typed in it or renamed it.
local function drop_unborn(p)
  local name = vim.uri_to_fname(p.uri)
  if not p.created or p.unloaded or not vim.api.nvim_buf_is_valid(p.buf) or vim.uv.fs_stat(name) then
    return
  end
  for _, hunk in ipairs(p.hunks) do
    if hunk.state == 'accepted' then
      return
    end
  end
  if not vim.bo[p.buf].modified and vim.api.nvim_buf_get_name(p.buf) == name then
    vim.api.nvim_buf_delete(p.buf, {})
  end
end

function M.remove(p)
  for i, other in ipairs(M.proposals) do
    if other == p then
      table.remove(M.proposals, i)
      break
    end
  end
  for _, hunk in ipairs(p.hunks) do
    hunks.erase(p.buf, hunk)
  end
  if #pending_in(p.buf) == 0 then
    keys.unset(p.buf)
    drop_unborn(p)
  end
end

--- Every hunk of `p` is resolved: answer the server.
function M.finish(p)
  M.remove(p)
  local accepted, feedback = {}, {}
  for _, hunk in ipairs(p.hunks) do
    if hunk.state == 'accepted' then
      table.insert(accepted, hunk.id)
    end
    if hunk.feedback and hunk.feedback ~= '' then
      table.insert(feedback, #p.hunks > 1 and (hunk.id .. ': ' .. hunk.feedback) or hunk.feedback)
    end
  end
  local result = { decision = 'partial', acceptedHunkIds = accepted }
  if #accepted == #p.hunks then
    result = { decision = 'accept' }
  elseif #accepted == 0 then
    result = { decision = 'reject' }
  end
  if #feedback > 0 then
    result.feedback = table.concat(feedback, '\n')
  end
  if p.new_file and #accepted > 0 then
    apply.expect(p.uri, p.session)
  end
  p.answer(result)
end

local function settle(p, hunk, state, feedback)
  hunk.state, hunk.feedback = state, feedback
  hunks.erase(p.buf, hunk)
  for _, other in ipairs(p.hunks) do
    if other.state == 'pending' then
      return
    end
  end
  M.finish(p)
end

--- The pending hunk `id` (in the current buffer first), or the one under the cursor.
local function find(id)
  local buf = vim.api.nvim_get_current_buf()
  if id then
    local order = vim.list_extend(pending_in(buf), {})
    for _, p in ipairs(M.proposals) do
      for _, hunk in ipairs(p.hunks) do
        if hunk.state == 'pending' then
          table.insert(order, { proposal = p, hunk = hunk })
        end
      end
    end
    for _, item in ipairs(order) do
      if item.hunk.id == id then
        return item.proposal, item.hunk
      end
    end
    return nil
  end
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  for _, item in ipairs(pending_in(buf)) do
    if row >= item.row and row < item.row + math.max(item.hunk.old_lines, 1) then
      return item.proposal, item.hunk
    end
  end
end

--- Accept or reject one hunk (by id, else the one under the cursor). Returns false if none.
function M.resolve(state, id, feedback)
  local p, hunk = find(id)
  if not p or not hunk then
    util.notify(id and ('no pending hunk ' .. id) or 'no pending hunk under the cursor', vim.log.levels.WARN)
    return false
  end
  settle(p, hunk, state, feedback)
  return true
end

--- Accept or reject every pending hunk of the proposal in the current buffer (else the oldest).
function M.resolve_all(state, feedback)
  local buf = vim.api.nvim_get_current_buf()
  local target = M.proposals[1]
  for _, p in ipairs(M.proposals) do
    if p.buf == buf then
      target = p
      break
    end
  end
  if not target then
    util.notify('no pending proposal', vim.log.levels.WARN)
    return false
  end
  for _, hunk in ipairs(target.hunks) do
    if hunk.state == 'pending' then
      hunk.state, hunk.feedback = state, feedback
      feedback = nil -- said once
    end
  end
  M.finish(target)
  return true
end

--- Move the cursor to the next (or previous) pending hunk, going to its buffer if needed.
function M.jump(forward)
  local buf = vim.api.nvim_get_current_buf()
  local items = pending_in(buf)
  local first = M.proposals[1]
  if #items == 0 and first then
    if first.unloaded or not displayed(first.buf) then -- a closed buffer is drawn again (BufReadPost)
      show_file(first.uri, first.client_id)
    end
    buf = first.buf
    vim.api.nvim_set_current_win(vim.fn.bufwinid(buf))
    items = pending_in(buf)
  end
  if #items == 0 then
    util.notify('no pending hunks', vim.log.levels.INFO)
    return
  end
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  local target = forward and items[1] or items[#items]
  for i = 1, #items do
    local item = forward and items[i] or items[#items - i + 1]
    if (forward and item.row > row) or (not forward and item.row < row) then
      target = item
      break
    end
  end
  vim.api.nvim_win_set_cursor(0, { target.row + 1, 0 })
end

--- Drop pending proposals (the server cancelled them: turn cancelled or ended, daemon gone).
local function drop(pred)
  for i = #M.proposals, 1, -1 do
    local p = M.proposals[i]
    if pred(p) then
      M.remove(p)
    end
  end
end

function M.clear_session(session)
  drop(function(p)
    return p.session == session
  end)
end

function M.clear_client(client_id)
  drop(function(p)
    return p.client_id == client_id
  end)
end

function M.on_update(params)
  if params.kind == 'turnEnd' then
    M.clear_session(params.sessionId)
    apply.forget(params.sessionId)
  end
end

--- Pending proposals and their hunks (plain data).
function M.pending()
  local out = {}
  for _, p in ipairs(M.proposals) do
    local items = {}
    for _, hunk in ipairs(p.hunks) do
      table.insert(items, { id = hunk.id, state = hunk.state, oldStart = hunk.old_start, oldLines = hunk.old_lines, newText = hunk.new_text })
    end
    table.insert(out, { proposalId = p.id, sessionId = p.session, uri = p.uri, bufnr = p.buf, hunks = items })
  end
  return out
end

require('lspilot.review_buffers').watch(M)

M.namespace = hunks.namespace

return M
