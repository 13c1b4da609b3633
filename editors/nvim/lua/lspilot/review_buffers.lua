-- What happens to a reviewed buffer besides the review keys: its windows resized (the proposed
-- lines are laid out again), the buffer unloaded and loaded again (the review is drawn again), or
-- renamed (the review ends).
local hunks = require('lspilot.hunks')
local keys = require('lspilot.keys')
local util = require('lspilot.util')

local M = {}

--- Watch the buffers of `review`'s proposals (review.lua calls it once, passing itself).
function M.watch(review)
  local group = vim.api.nvim_create_augroup('lspilot_review', { clear = true })

  --- Proposed lines are cut to the width of their window: laid out again when windows change.
  vim.api.nvim_create_autocmd({ 'WinResized', 'VimResized', 'BufWinEnter' }, {
    group = group,
    callback = util.protect('fitting a review to its window', function()
      for _, p in ipairs(review.proposals) do
        for _, hunk in ipairs(p.unloaded and {} or p.hunks) do
          if hunk.state == 'pending' then
            hunks.refit(p.buf, hunk)
          end
        end
      end
    end),
  })
  --- A reviewed buffer unloaded or wiped (`:bdelete`, `:bwipeout`) loses its marks; the review
  --- stays pending and is drawn again when the file is loaded again (`:Lspilot next` does that).
  vim.api.nvim_create_autocmd('BufUnload', {
    group = group,
    callback = util.protect('closing a reviewed buffer', function(ev)
      for _, p in ipairs(review.proposals) do
        if p.buf == ev.buf and not p.unloaded then
          for _, hunk in ipairs(p.hunks) do
            hunks.erase(p.buf, hunk)
          end
          p.unloaded = true
        end
      end
      keys.unset(ev.buf)
    end),
  })
  vim.api.nvim_create_autocmd('BufReadPost', {
    group = group,
    callback = util.protect('showing a review again', function(ev)
      local name = vim.api.nvim_buf_get_name(ev.buf)
      for _, p in ipairs(review.proposals) do
        if p.unloaded and vim.uri_to_fname(p.uri) == name then
          p.buf, p.unloaded = ev.buf, nil
          for _, hunk in ipairs(p.hunks) do
            if hunk.state == 'pending' then
              hunks.draw(p.buf, hunk)
            end
          end
          keys.set(ev.buf)
        end
      end
    end),
  })

  --- A reviewed buffer renamed (`:saveas`, `:file`) no longer shows the file its review is about:
  --- the review ends with nothing applied, and the user and the agent are told the new name.
  --- Applying to the old path would write a file the user left; applying to the renamed buffer would
  --- change a file the agent never proposed to change (and the protocol cannot move a proposal).
  vim.api.nvim_create_autocmd('BufFilePost', {
    group = group,
    callback = util.protect('ending the review of a renamed buffer', function(ev)
      local name = vim.api.nvim_buf_get_name(ev.buf)
      for _, p in ipairs(vim.list_slice(review.proposals)) do -- a copy: remove() edits it
        local old = vim.uri_to_fname(p.uri)
        if p.buf == ev.buf and not p.unloaded and vim.fn.resolve(old) ~= vim.fn.resolve(name) then
          local from = vim.fn.fnamemodify(old, ':.')
          local to = name == '' and 'a buffer without a name' or vim.fn.fnamemodify(name, ':.')
          local why = '%s was renamed to %s in the editor during the review, which ended it; nothing was applied.'
          review.remove(p)
          p.answer({ decision = 'reject', feedback = why:format(from, to) })
          local said = '%s is now %s: its review ended, nothing was applied (the agent is told)'
          util.notify(said:format(from, to), vim.log.levels.WARN)
        end
      end
    end),
  })
end

return M
