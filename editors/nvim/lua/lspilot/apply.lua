-- The daemon's workspace/applyEdit: Neovim's own handler applies it (undo works; the user saves),
-- then a new file the user accepted in a review is written. Unlike a change to a file the user
-- may be editing, a new file holds no text of theirs to keep unsaved, and left in its buffer it
-- would not exist for the agent's next command (its tests, a build); VS Code writes it too.
local util = require('lspilot.util')

local M = {}

---@type table<string, string> uri of an accepted new file -> its session, until its edit arrives
local awaiting = {}

--- The new file `uri` was accepted: write its buffer once the daemon's edit has filled it.
function M.expect(uri, session)
  awaiting[uri] = session
end

--- The turn of `session` ended: an edit the daemon did not send (it refused the change) never comes.
function M.forget(session)
  for uri, owner in pairs(awaiting) do
    if owner == session then
      awaiting[uri] = nil
    end
  end
end

local function text_uris(edit)
  local uris = vim.tbl_keys(edit.changes or {})
  for _, change in ipairs(edit.documentChanges or {}) do
    if change.textDocument then
      table.insert(uris, change.textDocument.uri)
    end
  end
  return uris
end

local function write(uri)
  local buf = vim.uri_to_bufnr(uri)
  local name = vim.api.nvim_buf_get_name(buf)
  vim.fn.mkdir(vim.fs.dirname(name), 'p')
  vim.api.nvim_buf_call(buf, function()
    vim.cmd('silent write')
  end)
end

function M.handler(err, params, ctx)
  local result = vim.lsp.handlers['workspace/applyEdit'](err, params, ctx)
  if result and result.applied then
    for _, uri in ipairs(text_uris(params.edit)) do
      if awaiting[uri] then
        awaiting[uri] = nil
        util.protect('writing the new file ' .. vim.uri_to_fname(uri), write)(uri)
      end
    end
  end
  return result
end

return M
