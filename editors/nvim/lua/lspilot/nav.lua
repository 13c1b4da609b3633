-- Navigation through the daemon (lspilot.navigate: the lsp tool's answer) into the quickfix list.
local client = require('lspilot.client')
local util = require('lspilot.util')

local M = {}

--- :Lspilot subcommand -> lsp tool operation.
M.operations = {
  refs = 'findReferences',
  defs = 'goToDefinition',
  impls = 'goToImplementation',
  callers = 'incomingCalls',
  callees = 'outgoingCalls',
}

local function absolute(root, path)
  if vim.startswith(path, '/') or path:match('^%a:[/\\]') then
    return path
  end
  return vim.fs.joinpath(root, path)
end

--- The loaded buffer of `file`, by its exact name (bufnr() would read `[id].tsx` as a pattern).
local function loaded_buf(file)
  local name = vim.fs.normalize(file)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.fs.normalize(vim.api.nvim_buf_get_name(buf)) == name then
      return buf
    end
  end
end

--- The lines of `file`: its loaded buffer's, else the file's (cached for one answer).
local function file_lines(file, cache)
  if not cache[file] then
    local buf = loaded_buf(file)
    cache[file] = buf and vim.api.nvim_buf_get_lines(buf, 0, -1, false)
      or (vim.fn.filereadable(file) == 1 and vim.fn.readfile(file) or {})
  end
  return cache[file]
end

--- A quickfix item for a place in the answer: its columns count characters (code points), a
--- quickfix column counts bytes, so the line says where the character is.
local function item(file, place, text, cache)
  local line = file_lines(file, cache)[place.line] or ''
  local col = vim.fn.byteidxcomp(line, math.max(place.character - 1, 0)) -- composing chars count, as in the daemon
  col = (col < 0 and #line or col) + 1
  return { filename = file, lnum = place.line, col = col, text = text or vim.trim(line) }
end

--- Quickfix items from a navigate answer: its locations, or for calls each call site (the
--- caller's or callee's name, then the line), else the caller or callee itself.
function M.items(root, answer)
  local items, cache = {}, {}
  for _, loc in ipairs(util.value(answer.locations) or {}) do
    table.insert(items, item(absolute(root, loc.path), loc, nil, cache))
  end
  for _, call in ipairs(util.value(answer.calls) or {}) do
    local label = ('%s (%s)'):format(call.name, call.kind)
    local sites, from = util.value(call.fromRanges) or {}, util.value(call.fromPath)
    if #sites > 0 and from then
      for _, site in ipairs(sites) do
        local entry = item(absolute(root, from), site, nil, cache)
        entry.text = label .. ': ' .. entry.text
        table.insert(items, entry)
      end
    else
      table.insert(items, item(absolute(root, call.path), call, label, cache))
    end
  end
  return items
end

--- Ask the daemon for `op` (a key of M.operations) at the cursor; fill the quickfix list, and
--- open it (or go to the one place there is, if the user is still where they asked).
---@param on_done? fun(items: table[]) called after the list is set (tests, scripts)
function M.run(op, on_done)
  local operation = M.operations[op]
  if not operation then
    error('unknown navigation ' .. tostring(op))
  end
  local buf = vim.api.nvim_get_current_buf()
  local c = client.ensure(buf)
  if not c then
    return util.notify('could not start the daemon', vim.log.levels.ERROR)
  end
  local pos = vim.api.nvim_win_get_cursor(0)
  local line = vim.api.nvim_buf_get_lines(buf, pos[1] - 1, pos[1], false)[1] or ''
  local argument = {
    operation = operation,
    uri = vim.uri_from_bufnr(buf),
    position = { line = pos[1] - 1, character = util.utf16(line, pos[2]) },
  }
  client.exec(c, 'navigate', argument, function(err, answer)
    if err then
      return util.notify(op .. ': ' .. (err.message or tostring(err)), vim.log.levels.WARN)
    end
    local items = M.items(c.root_dir, answer)
    vim.fn.setqflist({}, ' ', { title = 'lspilot: ' .. (answer.title or op), items = items })
    if #items == 0 then
      util.notify((vim.split(answer.text or 'nothing found', '\n')[1]), vim.log.levels.INFO)
    elseif #items == 1 and vim.api.nvim_get_current_buf() == buf then
      vim.cmd('cfirst') -- one place: go there, as vim.lsp.buf.definition() does
    else
      vim.cmd('botright copen')
    end
    if on_done then
      on_done(items)
    end
  end)
end

return M
