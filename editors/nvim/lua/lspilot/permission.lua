-- Permission prompts (lspilot/requestPermission): the four options through vim.ui.select, and
-- for a reject an optional reason (vim.ui.input) that goes to the model.
local config = require('lspilot.config')
local util = require('lspilot.util')

local M = {}

---@param params table the request: {permission, patterns, title, options, ...}
---@param answer fun(result: table) replies to the server
function M.ask(params, answer)
  local what = ('%s %s'):format(params.permission, table.concat(params.patterns or {}, ', '))
  local title = util.value(params.title)
  local prompt = 'lspilot asks: ' .. (title and title ~= '' and (title .. ' (' .. what .. ')') or what)
  vim.ui.select(params.options, {
    prompt = prompt,
    kind = 'lspilot_permission',
    format_item = function(option)
      return option.name
    end,
  }, util.protect('permission prompt', function(choice)
    if not choice then
      answer({ cancelled = true })
    elseif vim.startswith(choice.kind, 'reject') and config.options.permissions.ask_feedback then
      vim.ui.input({ prompt = 'Tell the agent why (optional): ' }, util.protect('permission feedback', function(text)
        answer({ optionId = choice.optionId, feedback = (text and text ~= '') and text or nil })
      end))
    else
      answer({ optionId = choice.optionId })
    end
  end))
end

return M
