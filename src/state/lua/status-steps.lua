--[[
How a data point's status moves, for the state script (apply-readings.lua, which this file is put in
front of): a status change with its event, the rules that wait (`for`) and their deadlines, and the
stale rule. Everything here works on one data point's unpacked state `p` and its rule metadata
`meta`, and appends the events it creates to the device's list `ctx.events` (written by the caller
after the state), so the step stays one atomic script per device.

meta (one per rule list, see apply-readings.lua): st statuses, ds event texts, ri fingerprint,
sup suppressed 0|1, ty sensorType; with waiting rules fd = each rule's duration ms (0: at once);
with a stale rule sa = after ms, ss = its status, sd = its event text ('No value for 30 min').

Waiting rules, in measurement time: the rules the current value meets are held in `p.held`, in
preference order (most severe first), each waiting one with the time its condition began to hold
(`{rule, sinceMs}`). A rule's deadline is sinceMs + its duration. A value enters the first held rule
that applies at once or whose duration is met at the value's time. A deadline that passes with no
value before it is applied at the deadline itself, with the value that held: by the scheduler's
timer (tick), or — when a value measured after it is applied first — just before that value. Either
way the result is that of applying values and deadlines in the order of their times, and the
deadline's time becomes the data point's effective time (`p.u`, offset -1), so a value measured
before it goes to history only.

Stale, in receive time: a data point whose current value was received `sa` ago gets status `ss`
(rule index STALE) at a tick, if its device has sent a payload since and its contact is not lost;
otherwise it waits for the device's next contact (device field `@sw`). Its next value replaces it.
]]
local STALE = -2
-- No rule held (shared, never changed): most data points most of the time.
local NO_HELD = {}

local function statusOf(meta, rule)
  if rule >= 0 then return meta.st[rule + 1] end
  if rule == STALE then return meta.ss end
  return 'SUCCESS'
end

-- The held rules as stored: `2@1764230400000,0` (held[i] = {rule, sinceMs or nil}).
local function parseHeld(text)
  local held = {}
  if text == '' then return held end
  for part in string.gmatch(text, '[^,]+') do
    local at = string.find(part, '@', 1, true)
    if at then
      held[#held + 1] = { tonumber(string.sub(part, 1, at - 1)), tonumber(string.sub(part, at + 1)) }
    else
      held[#held + 1] = { tonumber(part), nil }
    end
  end
  return held
end

local function formatHeld(held)
  if #held == 0 then return '' end
  local parts = {}
  for i, h in ipairs(held) do
    if h[2] then parts[i] = string.format('%d@%d', h[1], h[2]) else parts[i] = string.format('%d', h[1]) end
  end
  return table.concat(parts, ',')
end

-- Moves p to `rule` (its status) at `atMs`: status since, and the event of a status change — or,
-- for a suppressed data point, the change its alarm must follow without an event. `text` is the
-- rule's event text; `valueJson` and `shown` the value the event names; `idTail` ends the event's
-- id after the time (a value's sub-ms offset, `t` for a deadline, `s` for stale), built only for an
-- event: most values change no status.
local function changeStatus(ctx, p, s, meta, rule, atMs, idTail, valueJson, shown, text)
  local status = statusOf(meta, rule)
  if status ~= p.s or p.u == nil then p.ss = atMs end
  if status ~= p.s then
    local sensor = ctx.names[s]
    if meta.sup == 0 then
      local message
      if status == 'SUCCESS' then
        message = sensor .. ' - Returned to success status - SUCCESS - ' .. shown
      else
        message = sensor .. ' - ' .. text .. ' - ' .. status .. ' - ' .. shown
      end
      ctx.events[#ctx.events + 1] = { ctx.env .. '/' .. ctx.device .. '/' .. sensor .. '/'
        .. string.format('%d', atMs) .. '.' .. idTail, sensor, meta.ty, valueJson, status, 'Sensors', message,
        atMs }
    else
      ctx.silenced = ctx.silenced or {}
      ctx.silenced[#ctx.silenced + 1] = { sensor, status, atMs }
    end
  end
  p.s, p.r = status, rule
  p.changed = true
end

-- The value JSON a status entered without a new value names: the one this script holds for p, else
-- the stored one (read with the state at a tick, else here).
local function heldValueJson(ctx, p)
  if p.v ~= nil then return p.v end
  if p.stored then return p.stored end
  return redis.call('HGET', ctx.stateKey, p.f.v) or 'null'
end

-- The earliest deadline of a held waiting rule not yet met at p's effective time, before `horizon`
-- (up to and including it when `inclusive`); nil when none.
local function dueDeadline(p, meta, horizon, inclusive)
  local best = nil
  for _, h in ipairs(p.held) do
    if h[2] then
      local dl = h[2] + meta.fd[h[1] + 1]
      if dl > p.u and (dl < horizon or (inclusive and dl == horizon)) and (best == nil or dl < best) then
        best = dl
      end
    end
  end
  return best
end

-- Applies the deadlines of p's waiting rules that fall before `horizon` (a new value's time), or up
-- to it (a tick's), in time order, each with the value that held.
local function fireDeadlines(ctx, p, s, meta, horizon, inclusive)
  if meta.fd == nil or p.u == nil then return end
  for _ = 1, #p.held do
    local dl = dueDeadline(p, meta, horizon, inclusive)
    if dl == nil then return end
    local rule = -1
    for _, h in ipairs(p.held) do
      local wait = meta.fd[h[1] + 1]
      if wait == 0 or h[2] + wait <= dl then
        rule = h[1]
        break
      end
    end
    changeStatus(ctx, p, s, meta, rule, dl, 't', heldValueJson(ctx, p), p.cv, meta.ds[rule + 1])
    p.u, p.t = dl, -1
  end
end

-- The rule a new value at `ms` enters under waiting rules: `matches` lists the rules it meets in
-- preference order (for the previous rule in force); p.held becomes them, keeping the start of
-- each that held before.
local function enterWaiting(p, meta, matches, ms)
  if #matches == 0 then
    p.held = NO_HELD
    return -1
  end
  local since = nil
  for _, h in ipairs(p.held) do
    if h[2] then
      since = since or {}
      since[h[1]] = h[2]
    end
  end
  local held = {}
  local rule = -1
  for i, r in ipairs(matches) do
    local wait = meta.fd[r + 1]
    local start = nil
    if wait > 0 then start = (since and since[r]) or ms end
    held[i] = { r, start }
    if rule < 0 and (wait == 0 or ms - start >= wait) then rule = r end
  end
  p.held = held
  return rule
end

-- Marks p stale at a tick (`nowMs`) when its value is overdue and the device has sent a payload
-- since while its contact is not lost. Returns true when it is overdue but must wait for contact.
local function checkStale(ctx, p, s, meta, nowMs)
  if meta.sa == nil or p.u == nil or p.r == STALE or p.rcv == nil then return false end
  local due = p.rcv + meta.sa
  if due > nowMs then return false end
  if not (ctx.lastContact ~= nil and ctx.lastContact > p.rcv) or ctx.isLost then return true end
  p.held = NO_HELD
  changeStatus(ctx, p, s, meta, STALE, due, 's', heldValueJson(ctx, p), p.cv, meta.sd)
  return false
end

-- p's next timer: the deadline of a waiting rule, or when it goes stale; nil when none.
local function nextDeadline(p, meta, waitsForContact)
  local nd = nil
  if meta.fd ~= nil and p.u ~= nil then
    for _, h in ipairs(p.held) do
      if h[2] then
        local dl = h[2] + meta.fd[h[1] + 1]
        if dl > p.u and (nd == nil or dl < nd) then nd = dl end
      end
    end
  end
  if meta.sa ~= nil and p.u ~= nil and p.r ~= STALE and p.rcv ~= nil and not waitsForContact then
    local due = p.rcv + meta.sa
    if nd == nil or due < nd then nd = due end
  end
  return nd
end
