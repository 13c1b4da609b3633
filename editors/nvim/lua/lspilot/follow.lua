-- Following the agent: the daemon's `window/showDocument` requests (takeFocus false) shown in
-- one reused window, without moving the user out of the window they are in. Neovim's own
-- handler would open a new split for every file shown without focus.
local util = require('lspilot.util')

local M = {}

M.namespace = vim.api.nvim_create_namespace('lspilot_follow')
vim.api.nvim_set_hl(0, 'LspilotFollow', { default = true, link = 'Visual' })

---@type integer? the window the last place was shown in
local last_win

--- Stop highlighting the last place shown.
function M.clear()
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    vim.api.nvim_buf_clear_namespace(buf, M.namespace, 0, -1)
  end
end

local function is_file_window(win)
  local buf = vim.api.nvim_win_get_buf(win)
  return vim.api.nvim_win_get_config(win).relative == '' and vim.bo[buf].buftype == ''
end

--- Where to show `buf`: a window of this tab showing it already; else the window used last
--- time; else a file window other than the current one; else the current one if it shows a
--- file; else (only chat, quickfix...) a new split beside the current window, reused after.
local function window_for(buf)
  local wins = vim.api.nvim_tabpage_list_wins(0)
  for _, win in ipairs(wins) do
    if vim.api.nvim_win_get_buf(win) == buf then
      return win
    end
  end
  if last_win and vim.tbl_contains(wins, last_win) and is_file_window(last_win) then
    return last_win
  end
  local current = vim.api.nvim_get_current_win()
  for _, win in ipairs(wins) do
    if win ~= current and is_file_window(win) then
      return win
    end
  end
  if is_file_window(current) then
    return current
  end
  return vim.api.nvim_open_win(buf, false, { split = 'left', win = current })
end

--- The byte column of UTF-16 column `units` on `line` (clamped to the line).
local function byte_column(line, units)
  if vim.fn.has('nvim-0.11') == 1 then
    return vim.str_byteindex(line, 'utf-16', units, false)
  end
  local ok, col = pcall(vim.str_byteindex, line, units, true)
  return ok and col or #line
end

--- (row, byte column), 0-based, of an LSP position in `buf`.
local function position(buf, pos)
  local count = vim.api.nvim_buf_line_count(buf)
  local row = math.min(pos.line, count - 1)
  local line = vim.api.nvim_buf_get_lines(buf, row, row + 1, false)[1] or ''
  return row, pos.line < count and byte_column(line, pos.character) or 0
end

--- Show a place in the reused window; the selection is highlighted until the next place.
function M.show(buf, selection)
  vim.fn.bufload(buf)
  vim.bo[buf].buflisted = true
  local win = window_for(buf)
  last_win = win
  if vim.api.nvim_win_get_buf(win) ~= buf then
    vim.api.nvim_win_set_buf(win, buf)
  end
  M.clear()
  if not selection then
    return win
  end
  local row, col = position(buf, selection.start)
  local end_row, end_col = position(buf, selection['end'])
  vim.api.nvim_win_set_cursor(win, { row + 1, col })
  vim.api.nvim_win_call(win, function()
    vim.cmd('normal! zz')
  end)
  if end_row > row or end_col > col then
    vim.api.nvim_buf_set_extmark(buf, M.namespace, row, col, {
      end_row = end_row,
      end_col = end_col,
      hl_group = 'LspilotFollow',
      hl_eol = end_row > row,
    })
  end
  return win
end

--- The `window/showDocument` handler of lspilot's client.
function M.handler(err, params, ctx)
  if params.external or params.takeFocus then
    return vim.lsp.handlers['window/showDocument'](err, params, ctx)
  end
  local ok, result = pcall(M.show, vim.uri_to_bufnr(params.uri), params.selection)
  if not ok then
    util.notify('following: ' .. tostring(result), vim.log.levels.WARN)
  end
  return { success = ok }
end

return M
