-- :BcodeEvidence, surviving mutants into the quickfix list; and :BcodePack,
-- the context pack in a floating window.
local config = require('bcode.config')
local lsp = require('bcode.lsp')
local ui = require('bcode.ui')

local M = {}

local function err_text(err)
  return type(err) == 'table' and (err.message or vim.inspect(err)) or tostring(err)
end

-- bcode's one reported rule (verify.MutantAttention, docs/lsp.md):
-- survivors warn; not covered, timed out and unjudged mutants inform.
local kinds = { survived = 'W', not_covered = 'I', timeout = 'I', no_verdict = 'I' }

--- items turns a bcode/evidence report into quickfix items: survivors as
--- warnings, not-covered, timed-out and unjudged mutants as info, the rest
--- (killed, unviable, ignored) left out.
function M.items(report, root)
  local out = {}
  for _, m in ipairs(report.mutants or {}) do
    local kind = kinds[m.verdict]
    if kind then
      local flat = function(s) return (s or ''):gsub('%s+', ' ') end
      out[#out + 1] = {
        filename = root .. '/' .. m.file, lnum = m.line, col = m.col,
        end_lnum = m.end_line, end_col = m.end_col, type = kind,
        text = ('%s: `%s` → `%s` (%s) [%s]'):format(m.verdict, flat(m.original), flat(m.mutated), m.operator, m.id),
      }
    end
  end
  table.sort(out, function(a, b)
    if a.filename ~= b.filename then return a.filename < b.filename end
    return a.lnum < b.lnum
  end)
  return out
end

--- fill puts a report into the quickfix list.
function M.fill(report, root)
  local items = M.items(report, root)
  local survived = 0
  for _, it in ipairs(items) do if it.type == 'W' then survived = survived + 1 end end
  local n = #(report.mutants or {})
  local title = ('bcode evidence: %d of %d mutants survive'):format(survived, n)
  if report.state == 'none' then
    title = 'bcode evidence: no run yet (save a Go file or run :BcodeEvidence)'
  elseif n == 0 then
    -- Say why there is nothing: no change, no Go files, no mutable code.
    local notes = report.notes or {}
    title = 'bcode evidence: ' .. (notes[#notes] or 'no mutants on the changed lines')
  end
  vim.fn.setqflist({}, ' ', { title = title, items = items })
  return items, title
end

--- run is :BcodeEvidence: start a run, wait for it, fill the quickfix list.
--- With bang, only load the last report.
function M.run(bang, done)
  local bufnr = vim.api.nvim_get_current_buf()
  local client = lsp.client(bufnr)
  local root = client and client.config.root_dir or vim.fn.getcwd()
  local function load()
    lsp.request('bcode/evidence', { wait = true }, function(err, report)
      if err then
        lsp.notify('loading the evidence report: ' .. err_text(err), vim.log.levels.ERROR)
      elseif report.state == 'failed' then
        lsp.notify('evidence failed: ' .. (report.error or '?'), vim.log.levels.ERROR)
      else
        local items, title = M.fill(report, root)
        -- The quickfix title names bcode; the message has the prefix.
        lsp.notify((title:gsub('^bcode evidence: ', 'evidence: ')))
        if config.options.open_quickfix and #items > 0 then vim.cmd('copen') end
      end
      if done then done(err, report) end
    end, bufnr)
  end
  if bang then return load() end
  lsp.command('bcode.evidence.run', vim.empty_dict(), function(err)
    if err then
      lsp.notify('starting evidence: ' .. err_text(err), vim.log.levels.ERROR)
      if done then done(err) end
      return
    end
    lsp.notify('evidence running…')
    load()
  end, bufnr)
end

--- pack is :BcodePack: the context pack for the selected lines (or the
--- cursor's line) in a floating window.
function M.pack(line1, line2, done)
  local bufnr = vim.api.nvim_get_current_buf()
  local args = {
    uri = vim.uri_from_bufnr(bufnr),
    range = { start = { line = line1 - 1, character = 0 }, ['end'] = { line = line2, character = 0 } },
  }
  lsp.command('bcode.pack.preview', args, function(err, r)
    if err then
      lsp.notify('context pack: ' .. err_text(err), vim.log.levels.ERROR)
    elseif not r.shown then
      -- The server could not show it through window/showDocument: the
      -- text is in the result.
      ui.float(r.text, r.uri)
    end
    if done then done(err, r) end
  end, bufnr)
end

return M
