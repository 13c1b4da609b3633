-- lspilot options: the commented defaults, and their validation (`setup()` merges and checks).
local M = {}

---@class lspilot.Config
M.defaults = {
  -- How to start the daemon (an LSP server on stdio).
  cmd = { 'lspilot', 'serve' },
  -- Extra environment for the daemon (e.g. { LSPILOT_MODEL = 'openai/gpt-4.1' }).
  cmd_env = {},
  -- Files or folders that mark a project root; one daemon (LSP client) runs per root.
  root_markers = { '.git', 'lspilot.toml', '.lspilot', 'pyproject.toml', 'package.json' },
  -- Start the daemon when a file is opened (false: on the first :Lspilot command).
  autostart = false,
  -- The file :Lspilot log and :checkhealth show (the daemon does not read it: LSPILOT_DATA_DIR
  -- in cmd_env moves its log); nil: where the daemon logs by default.
  log_file = nil,
  -- Follow the agent: show each place it reads, finds or changes in one reused window
  -- (:Lspilot follow switches it).
  follow = false,
  chat = {
    -- Open the chat buffer when asking.
    open_on_ask = true,
    -- 'right', 'left', 'below' or 'above'.
    position = 'right',
    -- Columns (right/left) or lines (below/above).
    size = 60,
  },
  review = {
    -- Show a one-line key hint under each proposed hunk.
    hint = true,
    -- Sign shown on removed lines.
    sign = '-',
    -- Buffer-local keys, set only while a review is pending in that buffer. None starts with an
    -- operator (c, d, y, g, =, <, >) and `]h`/`[h` are unmapped in Neovim; set a key to false to
    -- leave it unmapped.
    keys = {
      accept = '<localleader>a',
      reject = '<localleader>r',
      reject_with_feedback = '<localleader>f',
      accept_all = '<localleader>A',
      reject_all = '<localleader>R',
      next = ']h',
      prev = '[h',
    },
  },
  permissions = {
    -- After a reject, ask (vim.ui.input) for an optional reason that goes to the model.
    ask_feedback = true,
  },
}

---@type lspilot.Config
M.options = vim.deepcopy(M.defaults)

--- (vim.validate changed signature in 0.11; this works on every supported version.)
local function check(name, value, kind, optional)
  if (value == nil and optional) or type(value) == kind then
    return
  end
  error(('%s: expected %s, got %s'):format(name, kind, vim.inspect(value)), 0)
end

local function validate(opts)
  check('cmd', opts.cmd, 'table')
  check('cmd_env', opts.cmd_env, 'table')
  check('root_markers', opts.root_markers, 'table')
  check('autostart', opts.autostart, 'boolean')
  check('log_file', opts.log_file, 'string', true)
  check('follow', opts.follow, 'boolean')
  check('chat', opts.chat, 'table')
  check('chat.open_on_ask', opts.chat.open_on_ask, 'boolean')
  check('chat.size', opts.chat.size, 'number')
  local positions = { right = true, left = true, below = true, above = true }
  if not positions[opts.chat.position] then
    error('chat.position: expected right, left, below or above, got ' .. vim.inspect(opts.chat.position), 0)
  end
  check('review.hint', opts.review.hint, 'boolean')
  check('review.sign', opts.review.sign, 'string')
  for name, key in pairs(opts.review.keys) do
    if M.defaults.review.keys[name] == nil then
      error('review.keys: unknown key ' .. name, 0)
    end
    if key ~= false and type(key) ~= 'string' then
      error('review.keys.' .. name .. ': expected a string or false', 0)
    end
  end
  check('permissions.ask_feedback', opts.permissions.ask_feedback, 'boolean')
  if #opts.cmd == 0 then
    error('cmd: must name the lspilot executable', 0)
  end
end

--- Merge `opts` over the defaults and validate; errors name the option.
---@param opts? table
function M.set(opts)
  local merged = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
  validate(merged)
  M.options = merged
  return merged
end

return M
