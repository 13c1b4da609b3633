-- How a pending hunk of a review is drawn in its buffer, with extmarks only (the buffer's text is
-- not touched): the removed lines highlighted in place (DiffDelete and a sign), the proposed
-- lines as virtual lines below them (DiffAdd), then a hint of the review keys.
local config = require('lspilot.config')
local util = require('lspilot.util')

local M = {}

M.namespace = vim.api.nvim_create_namespace('lspilot_review')
local ns = M.namespace
local CONTINUED = '↪ '  -- before the rest of a proposed line too long for the window

local function key_text(lhs)
  local leader = vim.g.maplocalleader or '\\'
  return (lhs:gsub('<[Ll]ocal[Ll]eader>', leader))
end

local function hint(hunk)
  local map = config.options.review.keys
  local parts = { 'lspilot ' .. hunk.id .. ':' }
  for _, name in ipairs({ 'accept', 'reject', 'reject_with_feedback', 'accept_all', 'next' }) do
    if map[name] then
      table.insert(parts, key_text(map[name]) .. ' ' .. name:gsub('_', ' '))
    end
  end
  return table.concat(parts, '  ')
end

--- The width of the text area of the (first) window showing `buf`: virtual lines neither wrap
--- nor scroll sideways, so a longer proposed line is cut there.
local function text_width(buf)
  local win = vim.fn.bufwinid(buf)
  local info = vim.fn.getwininfo(win)[1]
  if not info then
    return vim.o.columns
  end
  -- An 'auto' sign column our signs open is counted in textoff only after the next redraw.
  local signs = vim.wo[win].signcolumn:find('^auto') and 2 or 0
  return math.max(info.width - info.textoff - signs, 10)
end

--- `line` in pieces of at most `width` cells (a tab as wide as it is drawn in `buf`).
local function wrap(buf, line, width)
  local tabstop = vim.bo[buf].tabstop
  local pieces, start, cells = {}, 1, 0
  local starts = vim.str_utf_pos(line)
  for i, at in ipairs(starts) do
    local char = line:sub(at, (starts[i + 1] or #line + 1) - 1)
    local w = char == '\t' and tabstop - cells % tabstop or vim.api.nvim_strwidth(char)
    if cells + w > width and at > start then
      table.insert(pieces, line:sub(start, at - 1))
      start, cells = at, 0
      w = char == '\t' and tabstop or w
    end
    cells = cells + w
  end
  table.insert(pieces, line:sub(start))
  return pieces
end

--- The virtual lines of `hunk`: its proposed lines, cut to the width of the window, and the hint.
local function virt_lines(buf, hunk)
  local width = text_width(buf)
  local virt = {}
  if hunk.note then -- what accepting it also does to the file (a move, a deletion)
    table.insert(virt, { { hunk.note, 'WarningMsg' } })
  end
  for _, line in ipairs(hunk.label and { hunk.label } or util.lines(hunk.new_text)) do
    for i, piece in ipairs(wrap(buf, line, width - 2)) do -- 2 cells for the continuation mark
      local fill = string.rep(' ', width - 2 - vim.fn.strdisplaywidth(piece))
      local chunks = { { piece, 'DiffAdd' }, { fill .. (i == 1 and '  ' or ''), 'DiffAdd' } }
      table.insert(virt, i == 1 and chunks or { { CONTINUED, 'NonText' }, unpack(chunks) })
    end
  end
  if config.options.review.hint then
    table.insert(virt, { { hint(hunk), 'Comment' } })
  end
  return virt
end

--- The options of a mark of `hunk`; `virt` (its virtual lines) goes on the last one.
local function mark_opts(hunk, virt)
  if hunk.old_lines == 0 then -- a pure insertion: one mark, no line of its own
    return { virt_lines = virt, virt_lines_above = hunk.above }
  end
  local sign = config.options.review.sign
  return { line_hl_group = 'DiffDelete', sign_text = sign, sign_hl_group = 'DiffDelete', virt_lines = virt }
end

--- Draw `hunk` in `buf`; its extmarks go to hunk.marks (marks[1] at its first line).
---@param buf integer
---@param hunk lspilot.Hunk
function M.draw(buf, hunk)
  local count = vim.api.nvim_buf_line_count(buf)
  local first = math.min(hunk.old_start - 1, count - 1)
  local last = math.min(first + hunk.old_lines - 1, count - 1)
  if hunk.old_lines == 0 then -- before line old_start (or after the last line)
    hunk.above = hunk.old_start - 1 < count
    first = hunk.above and hunk.old_start - 1 or count - 1
    last = first
  end
  hunk.marks = {}
  for row = first, last do
    table.insert(hunk.marks, vim.api.nvim_buf_set_extmark(buf, ns, row, 0, mark_opts(hunk, nil)))
  end
  M.refit(buf, hunk) -- the proposed lines, for the width left by the sign column its marks may add
end

--- Lay the proposed lines of a drawn `hunk` out again for the width its window has now.
function M.refit(buf, hunk)
  local id = hunk.marks[#hunk.marks]
  local at = vim.api.nvim_buf_get_extmark_by_id(buf, ns, id, {})
  if at[1] then
    local opts = mark_opts(hunk, virt_lines(buf, hunk))
    opts.id = id
    vim.api.nvim_buf_set_extmark(buf, ns, at[1], at[2], opts)
  end
end

--- Take `hunk`'s marks out of `buf`.
function M.erase(buf, hunk)
  for _, id in ipairs(hunk.marks or {}) do
    pcall(vim.api.nvim_buf_del_extmark, buf, ns, id)
  end
  hunk.marks = {}
end

--- The 0-based first row of a drawn hunk, as its extmark has moved with the user's edits.
function M.row(buf, hunk)
  return vim.api.nvim_buf_get_extmark_by_id(buf, ns, hunk.marks[1], {})[1]
end

return M
