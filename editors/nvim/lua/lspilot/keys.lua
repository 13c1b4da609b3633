-- The review keys: buffer-local mappings that exist only while a review is pending in the
-- buffer (see :help lspilot-review-keys); a buffer-local mapping they hide is restored after.
local config = require('lspilot.config')
local util = require('lspilot.util')

local M = {}

--- Buffer-local mappings the review keys replaced: buffer -> lhs -> maparg() or false.
local saved = {}

function M.set(buf)
  if saved[buf] then
    return
  end
  saved[buf] = {}
  local api = require('lspilot')
  local actions = {
    accept = function() api.accept() end,
    reject = function() api.reject() end,
    reject_with_feedback = function() api.reject_with_feedback() end,
    accept_all = function() api.accept_all() end,
    reject_all = function() api.reject_all() end,
    next = function() api.next() end,
    prev = function() api.prev() end,
  }
  for name, lhs in pairs(config.options.review.keys) do
    if lhs then
      local old = vim.fn.maparg(lhs, 'n', false, true)
      saved[buf][lhs] = (old.buffer == 1) and old or false
      vim.keymap.set('n', lhs, util.protect('review ' .. name, actions[name]), {
        buffer = buf,
        desc = 'lspilot: ' .. name:gsub('_', ' '),
      })
    end
  end
end

function M.unset(buf)
  if not saved[buf] or not vim.api.nvim_buf_is_valid(buf) then
    saved[buf] = nil
    return
  end
  for lhs, old in pairs(saved[buf]) do
    pcall(vim.keymap.del, 'n', lhs, { buffer = buf })
    if old then
      vim.api.nvim_buf_call(buf, function()
        vim.fn.mapset('n', false, old)
      end)
    end
  end
  saved[buf] = nil
end

return M
