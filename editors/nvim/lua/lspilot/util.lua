-- Small shared helpers: protected callbacks and notifications scheduled on the main loop.
local M = {}

--- Notify once, on the main loop (safe from fast events and LSP callbacks).
---@param msg string
---@param level? integer vim.log.levels.*
function M.notify(msg, level)
  vim.schedule(function()
    vim.notify('lspilot: ' .. msg, level or vim.log.levels.INFO, { title = 'lspilot' })
  end)
end

--- Wrap `fn` so an error becomes one notification instead of a traceback.
---@generic F: function
---@param what string what the callback does, for the message
---@param fn F
---@return F
function M.protect(what, fn)
  return function(...)
    local ok, result = pcall(fn, ...)
    if not ok then
      M.notify(what .. ' failed: ' .. tostring(result), vim.log.levels.ERROR)
      return nil
    end
    return result
  end
end

--- Split text into lines (a trailing newline does not make an extra empty line; a CRLF file's
--- "\r" goes with its "\n", as in a buffer with 'fileformat' dos).
---@param text string
---@return string[]
function M.lines(text)
  if text == '' then
    return {}
  end
  local lines = vim.split(text, '\r?\n')
  if lines[#lines] == '' then
    table.remove(lines)
  end
  return lines
end

--- The LSP (UTF-16) column of byte offset `col` (0-based) on `line`; its end when `col` is nil.
function M.utf16(line, col)
  col = math.min(col or #line, #line)
  if vim.fn.has('nvim-0.11') == 1 then
    return vim.str_utfindex(line, 'utf-16', col)
  end
  return select(2, vim.str_utfindex(line, col))
end

--- A JSON null (vim.NIL) or nil becomes nil.
function M.value(v)
  if v == vim.NIL then
    return nil
  end
  return v
end

return M
