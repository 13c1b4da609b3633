-- Permission prompts (lspilot/requestPermission): the four options through vim.ui.select, and
-- for a reject an optional reason (vim.ui.input) that goes to the model. The agent's questions
-- (lspilot/question): its options and a free answer, or vim.ui.input alone. One prompt at a time:
-- the agent's tool calls of one step run at once, and a picker opened over another closes it
-- (telescope, fzf-lua, snacks...), which answered the first as dismissed and stopped the turn.
local config = require('lspilot.config')
local util = require('lspilot.util')

local M = {}

---@type {params: table, answer: fun(result: table), client_id?: integer, show: function}[] prompts not shown yet
local waiting = {}
local showing = false
---@type {item: table, finish: fun(result: table)}? the prompt shown now
local current = nil

-- What "always" does, as the daemon worked it out: "remembers: P; counts as once for Q: why".
local function always_scope(params)
  local parts = {}
  if type(params.always) == 'table' and #params.always > 0 then
    table.insert(parts, 'remembers: ' .. table.concat(params.always, ', '))
  end
  for _, refused in ipairs(type(params.alwaysRefused) == 'table' and params.alwaysRefused or {}) do
    table.insert(parts, ('counts as once for %s: %s'):format(refused.pattern, refused.reason))
  end
  return table.concat(parts, '; ')
end

local function prompt(params, answer)
  local scope = always_scope(params)
  local what = ('%s %s'):format(params.permission, table.concat(params.patterns or {}, ', '))
  local title = util.value(params.title)
  local text = 'lspilot asks: ' .. (title and title ~= '' and (title .. ' (' .. what .. ')') or what)
  vim.ui.select(params.options, {
    prompt = text,
    kind = 'lspilot_permission',
    format_item = function(option)
      if option.kind == 'allow_always' and scope ~= '' then
        return ('%s (%s)'):format(option.name, scope)
      end
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

local OWN_WORDS = 'Answer in your own words...'

-- A question of the agent: vim.ui.select over its options and a last item to type an answer
-- instead, or vim.ui.input alone when it has none.
local function question(params, answer)
  local text = 'lspilot asks: ' .. tostring(util.value(params.question) or '')
  local function typed()
    vim.ui.input({ prompt = text .. ' ' }, util.protect('question', function(input)
      answer((input and input ~= '') and { answer = input } or { cancelled = true })
    end))
  end
  local options = type(params.options) == 'table' and params.options or {}
  if #options == 0 then
    return typed()
  end
  local items = vim.list_extend(vim.deepcopy(options), { OWN_WORDS })
  vim.ui.select(items, { prompt = text, kind = 'lspilot_question' }, util.protect('question', function(choice, index)
    if not choice then
      answer({ cancelled = true })
    elseif index == #items then
      typed()
    else
      answer({ answer = choice })
    end
  end))
end

local function show_next()
  if showing or #waiting == 0 then
    return
  end
  local item = table.remove(waiting, 1)
  showing = true
  local done = false
  local function finish(result)
    if done then
      return
    end
    done, showing, current = true, false, nil
    item.answer(result)
    vim.schedule(show_next)
  end
  current = { item = item, finish = finish }
  local ok, err = pcall(item.show, item.params, finish)
  if not ok then
    util.notify('prompt failed: ' .. tostring(err), vim.log.levels.ERROR)
    finish({ cancelled = true })
  end
end

---@param params table the request: {sessionId, permission, patterns, title, options, ...}
---@param answer fun(result: table) replies to the server
---@param client_id? integer the daemon asking
function M.ask(params, answer, client_id)
  table.insert(waiting, { params = params, answer = answer, client_id = client_id, show = prompt })
  show_next()
end

---@param params table the request: {sessionId, question, options}
---@param answer fun(result: table) replies to the server: {answer} or {cancelled = true}
---@param client_id? integer the daemon asking
function M.question(params, answer, client_id)
  table.insert(waiting, { params = params, answer = answer, client_id = client_id, show = question })
  show_next()
end

--- Prompts whose request is gone (their turn ended, the daemon exited) are dropped; the one
--- shown stops holding up the next (a picker that stays open, as telescope's, answers nothing).
local function drop(pred)
  for i = #waiting, 1, -1 do
    if pred(waiting[i]) then
      table.remove(waiting, i).answer({ cancelled = true })
    end
  end
  if current and pred(current.item) then
    current.finish({ cancelled = true })
  end
end

function M.clear_client(client_id)
  drop(function(item)
    return item.client_id == client_id
  end)
end

function M.on_update(params)
  if params.kind == 'turnEnd' then
    drop(function(item)
      return item.params.sessionId == params.sessionId
    end)
  end
end

return M
