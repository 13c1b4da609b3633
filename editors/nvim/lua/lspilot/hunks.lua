-- How a pending hunk of a review is drawn in its buffer, with extmarks only (the buffer's text is
-- not touched): the removed lines highlighted in place (DiffDelete and a sign), the proposed
-- lines as virtual lines below them (DiffAdd), then a hint of the review keys.
local config = require('lspilot.config')
local util = require('lspilot.util')

local M = {}

M.namespace = vim.api.nvim_create_namespace('lspilot_review')
local ns = M.namespace

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

--- Draw `hunk` in `buf`; its extmarks go to hunk.marks (marks[1] at its first line).
---@param buf integer
---@param hunk lspilot.Hunk
function M.draw(buf, hunk)
  local count = vim.api.nvim_buf_line_count(buf)
  local width = math.max(vim.o.columns, 20)
  local virt = {}
  for _, line in ipairs(hunk.label and { hunk.label } or util.lines(hunk.new_text)) do
    table.insert(virt, { { line .. string.rep(' ', width - vim.fn.strdisplaywidth(line)), 'DiffAdd' } })
  end
  if config.options.review.hint then
    table.insert(virt, { { hint(hunk), 'Comment' } })
  end
  local first = math.min(hunk.old_start - 1, count - 1)
  if hunk.old_lines == 0 then -- a pure insertion before line old_start (or after the last line)
    local above = hunk.old_start - 1 < count
    first = above and hunk.old_start - 1 or count - 1
    hunk.marks = { vim.api.nvim_buf_set_extmark(buf, ns, first, 0, { virt_lines = virt, virt_lines_above = above }) }
    return
  end
  hunk.marks = {}
  local last = math.min(first + hunk.old_lines - 1, count - 1)
  for row = first, last do
    local opts = { line_hl_group = 'DiffDelete', sign_text = config.options.review.sign, sign_hl_group = 'DiffDelete' }
    if row == last then
      opts.virt_lines = virt
    end
    table.insert(hunk.marks, vim.api.nvim_buf_set_extmark(buf, ns, row, 0, opts))
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
