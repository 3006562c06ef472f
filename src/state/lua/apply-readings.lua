--[[
Applies the readings of several devices of one worker step, each device atomically: current state
per data point, status and Sensors events, device contact, availability deadline and the
"Contact restored" event, the device's timer for rules that wait and stale rules, and the
environment's alarm index (alarm-index.lua, put in front of this file), which changes only with a
status. status-steps.lua, also in front, holds how a status moves: waiting rules, deadlines, stale.
A device's entry may also be a tick (its timer came due, queued by the scheduler into the device's
partition): it reads every data point with timers and applies what came due by nowMs.

Statuses are decided by the worker in JavaScript for every possible previous rule (the domain's
possibleOutcomes), so this script only picks the outcome that matches the stored previous rule:
no threshold logic is duplicated here, and concurrent workers can never interleave a
read-modify-write of the same data point.

KEYS[1] availability deadlines   KEYS[2] event outbox stream   KEYS[3] device timers
then per device i (from 0): KEYS[4+6i] device state hash, KEYS[5+6i] environment events zset,
                            KEYS[6+6i] device events zset, KEYS[7+6i] environment alarm index,
                            KEYS[8+6i] environment alarm records, KEYS[9+6i] the environment's
                            devices never heard from (a device's first contact takes it out)
ARGV[1] JSON: {
  n = nowMs, cap = eventsCap, omax = outboxMax,
  m = { {st = {status per rule}, ds = {event text per rule}, ri = fingerprint, sup = 0|1,
         ty = sensorType[, fd = {duration ms per rule}][, sa = stale after ms, ss = its status,
         sd = its event text]} … }                 (rule metadata, shared by devices)
  d = { {env, device, displayName, contactMs, contactIso, timeoutMs,
         {sensor name …}, {index into m of each sensor …},
         {sensor index, ms, off, valueJson, currentValue, outcomes, number, receivedMs,
          sensor index, ms, off, …},               (VALUE_STRIDE slots per value, flat)
         tick (0|1), all (0|1: the values are of every data point of the definition)} … }
}
Values are sorted by ms, off. outcomes: the rule index for each previous rule -1..n-1 as a list,
or one number when every previous rule gives the same; with waiting rules (fd), the rules met in
preference order for each previous rule, a list of lists (one list when the previous rule changes
nothing), or -1 when the value meets no rule. number: what history aggregates — true (the number is valueJson's), a number (a
boolean's 1/0) or false (text and GPS: none). One flat list per device instead of a list per
value: decoding made a table per list, most of the cost.
Returns per device: the status applied per value, or '' where the value was older than the stored
one (history only) or a replay of it.

Errors: a device's writes (state, then deadline, then events) come after everything that can fail
on its data — the known case is more fields than unpack takes; an argument the JSON decoder refuses
fails the call before any device. So when the script raises an error on a device, it has written
nothing of it, and the devices before it in the call are fully applied. The worker then runs each
device of the call again on its own (state-store.ts): applying is by measurement time, so a second
run of an applied device changes no value, status, contact or deadline and emits no event (it only
marks the value's hour late, which sends readers of that hour to InfluxDB). One error is not the
data's fault: a data point stored in a layout this script does not know (a newer Vigil wrote it, or
a migration has not run) fails the call with `STATE_LAYOUT_UNKNOWN …`, and the worker retries the
whole step rather than fail the device's payloads.

State hash layout (point-record.ts decodes it; state-keys.ts STATE_FIELD): per data point
`<sensor>|v`, the value as JSON, and `<sensor>|p`, the rest packed as POINT_FORMAT: layout version
(2), then as little-endian doubles the measurement ms, sub-ms offset, rule index, last success ms
(NaN: never), status since ms, the current hour (hour, count, total, min, max, late flag; hour -1:
none) and the current value's receive time, then the status, the rules fingerprint and the held
rules as zero-terminated strings, then the value as shown (length-prefixed). One packed field
instead of eight text fields: the script's cost is mostly per field read and written (31 against
53 µs per device, bench/state-script.ts), and numbers are exact and need no text conversion.
Device fields: `@lc` (last contact ms), `@lost`, `@dl` (the availability deadline in the deadlines
set), `@to` (the availability timeout ms), `@tm` (the device's entry in the timers set: no later
than its earliest deadline), `@sw` (a stale data point waits for the device's next contact).
]]
local a = cjson.decode(ARGV[1])
local deadlines, outbox, timers = KEYS[1], KEYS[2], KEYS[3]
local KEYS_PER_DEVICE = 6
local FIRST_DEVICE_KEY = 4
-- The guard (state-store.ts StateGuard): the worker's partition leases, as when its step read the
-- payloads (KEYS after the devices' keys, values in `g`). A worker that lost a lease meanwhile is
-- refused before anything is written.
if a.g then
  local base = FIRST_DEVICE_KEY - 1 + KEYS_PER_DEVICE * #a.d
  for j, value in ipairs(a.g) do
    if redis.call('GET', KEYS[base + j]) ~= value then
      return redis.error_reply('VIGIL_GUARD_LOST a partition lease changed hands')
    end
  end
end
local nowMs, metas = a.n, a.m
local nowText = string.format('%d', nowMs)
local HOUR_MS = 3600000
local POINT_FORMAT = '<BddddddddddddsssI4c0'
local POINT_LAYOUT = 2
local NEVER = 0 / 0
local VALUE_STRIDE = 8
-- A device's timer earlier than its next deadline is moved to it by a step that knows every
-- deadline (it has a value of every data point) when the timer falls due within this many ms.
local TIMER_SOON_MS = 10000
local capped = {}
-- Field names per data point name, made once per call: devices of one definition share them.
local fieldNames = {}
local function fieldsOf(name)
  local f = fieldNames[name]
  if f == nil then
    f = { v = name .. '|v', p = name .. '|p' }
    fieldNames[name] = f
  end
  return f
end

-- A data point's state out of its packed field (false: no value yet). Nil for a layout this script
-- does not know: the caller refuses the device (STATE_LAYOUT_UNKNOWN).
local function unpackPoint(f, raw, meta)
  -- Every field the point gets is named in its constructor (v and changed too, as nil), so the
  -- table is made at its final size rather than grown field by field.
  if not raw then
    return { f = f, u = nil, t = nil, r = -1, ls = nil, ss = nil, hh = -1, hn = 0, hs = 0, hmin = 0,
      hmax = 0, hlate = 0, rcv = nil, s = 'SUCCESS', ri = nil, held = NO_HELD, cv = '', v = nil,
      stored = nil, changed = nil }
  end
  if string.byte(raw, 1) ~= POINT_LAYOUT then return nil end
  local _, u, t, r, ls, ss, hh, hn, hs, hmin, hmax, hlate, rcv, s, ri, heldText, cv =
    struct.unpack(POINT_FORMAT, raw)
  if ls ~= ls then ls = nil end
  if rcv ~= rcv then rcv = nil end
  -- Held rules only mean something for the rule list they were recorded with.
  local held = NO_HELD
  if heldText ~= '' and meta.fd ~= nil and ri == meta.ri then held = parseHeld(heldText) end
  return { f = f, u = u, t = t, r = r, ls = ls, ss = ss, hh = hh, hn = hn, hs = hs, hmin = hmin,
    hmax = hmax, hlate = hlate, rcv = rcv, s = s, ri = ri, held = held, cv = cv, v = nil, stored = nil,
    changed = nil }
end

-- A state this script cannot read is never taken for a fresh data point (which would be SUCCESS,
-- and every stored problem a new event): the call fails before anything of the device is written,
-- with the catalogue code as the error's first word, which the worker reads (state-store.ts).
local function refuseUnknownLayout(env, device, sensor, raw)
  error(redis.error_reply('STATE_LAYOUT_UNKNOWN ' .. env .. '/' .. device .. ': data point ' .. sensor
    .. ' is stored in layout ' .. tostring(string.byte(raw, 1)) .. '; this version of Vigil knows '
    .. POINT_LAYOUT))
end

local function packPoint(p)
  local heldText = ''
  if p.held ~= NO_HELD then heldText = formatHeld(p.held) end
  return struct.pack(POINT_FORMAT, POINT_LAYOUT, p.u, p.t, p.r, p.ls or NEVER, p.ss, p.hh, p.hn, p.hs,
    p.hmin, p.hmax, p.hlate, p.rcv or NEVER, p.s, p.ri, heldText, #p.cv, p.cv)
end

-- Device and event helpers take what they need as arguments: closures made per device were a
-- measurable share of the script's cost per device.
local function emit(dev, envEvents, devEvents, id, sensorName, sensorType, valueJson, status, category,
                    message)
  local json = '{"id":' .. cjson.encode(id) .. ',"env":' .. cjson.encode(dev[1]) .. ',"deviceName":'
    .. cjson.encode(dev[2]) .. ',"displayName":' .. cjson.encode(dev[3]) .. ',"sensorName":'
    .. cjson.encode(sensorName) .. ',"sensorType":' .. cjson.encode(sensorType) .. ',"sensorValue":'
    .. valueJson .. ',"eventStatus":' .. cjson.encode(status) .. ',"eventCategory":'
    .. cjson.encode(category) .. ',"eventMessage":' .. cjson.encode(message) .. ',"receivedMs":' .. nowText
    .. '}'
  redis.call('ZADD', envEvents, nowMs, json)
  redis.call('ZADD', devEvents, nowMs, json)
  redis.call('XADD', outbox, '*', 'e', json)
  capped[envEvents] = true
  capped[devEvents] = true
  return json
end

-- The current value's clock hour: hour (epoch ms / 3,600,000), count, total, min and max
-- of the numeric values that became current in it, and whether a value of that hour came that did
-- not (older than the current one, or a repeat: which of the two cannot be told, so the reader
-- asks InfluxDB, where a repeat lands on the same point). Each value becomes current once, so a
-- replayed step counts nothing twice.
local function addToHour(p, ms, x)
  local hour = math.floor(ms / HOUR_MS)
  if p.hh == hour then
    p.hn, p.hs = p.hn + 1, p.hs + x
    if x < p.hmin then p.hmin = x end
    if x > p.hmax then p.hmax = x end
  else
    p.hh, p.hn, p.hs, p.hmin, p.hmax, p.hlate = hour, 1, x, x, x, 0
  end
  p.changed = true
end

local function lateInHour(p, ms)
  if p.hh == math.floor(ms / HOUR_MS) and p.hlate == 0 then
    p.hlate = 1
    p.changed = true
  end
end

-- The rule a value enters through `outcomes` (see the top of this file), given the rule in force.
local function ruleOfValue(ctx, p, s, meta, ms, outcomes)
  local prevRule = p.r
  -- A rule index only means something for the rule list it was recorded with; a stale status
  -- comes from no rule.
  if p.ri ~= meta.ri or prevRule == STALE then prevRule = -1 end
  if meta.fd ~= nil then
    fireDeadlines(ctx, p, s, meta, ms, false)
    -- -1: the value meets no rule (whatever the previous one).
    if outcomes == -1 then return enterWaiting(p, meta, NO_HELD, ms) end
    return enterWaiting(p, meta, outcomes[prevRule + 2] or outcomes[1], ms)
  end
  if type(outcomes) == 'table' then return outcomes[prevRule + 2] or outcomes[1] end
  return outcomes
end

-- Applies one value to its data point: history only when not newer than the current value.
local function applyValue(ctx, p, s, meta, j, vals)
  local ms, off, valueJson, currentValue, outcomes, number, receivedMs =
    vals[j + 1], vals[j + 2], vals[j + 3], vals[j + 4], vals[j + 5], vals[j + 6], vals[j + 7]
  if p.u ~= nil and (ms < p.u or (ms == p.u and off <= p.t)) then
    if number ~= false then lateInHour(p, ms) end
    return ''
  end
  local rule = ruleOfValue(ctx, p, s, meta, ms, outcomes)
  if rule == -1 then p.ls = ms end
  if p.u == nil or rule ~= p.r or statusOf(meta, rule) ~= p.s then
    changeStatus(ctx, p, s, meta, rule, ms, off, valueJson, currentValue, meta.ds[rule + 1])
  end
  p.u, p.t, p.ri, p.v, p.rcv = ms, off, meta.ri, valueJson, receivedMs
  -- The value as shown is kept only where a deadline may need it for its event.
  if meta.fd ~= nil or meta.sa ~= nil then p.cv = currentValue else p.cv = '' end
  if number == true then
    addToHour(p, ms, tonumber(valueJson))
  elseif number ~= false then
    addToHour(p, ms, number)
  end
  return p.s
end

local function applyDevice(i, dev)
  local at = FIRST_DEVICE_KEY + KEYS_PER_DEVICE * i
  local stateKey, envEvents, devEvents = KEYS[at], KEYS[at + 1], KEYS[at + 2]
  local env, device, contactMs, contactIso, timeoutMs, names, metaOf, vals, tick, all =
    dev[1], dev[2], dev[4], dev[5], dev[6], dev[7], dev[8], dev[9], dev[10] == 1, dev[11] == 1

  -- Read every field this device may need in one HMGET: the device's six, then one per data point.
  local fields = { '@lc', '@lost', '@dl', '@to', '@tm', '@sw' }
  for k, name in ipairs(names) do fields[6 + k] = fieldsOf(name).p end
  -- A tick names the value of a data point whose status a deadline changes: read the values too.
  if tick then
    for k, name in ipairs(names) do fields[6 + #names + k] = fieldsOf(name).v end
  end
  local got = redis.call('HMGET', stateKey, unpack(fields))
  local lastContact, lost, deadline, timeout, timerText, staleWaits =
    got[1], got[2], got[3], got[4], got[5], got[6]

  -- Each data point's state as read; values move it forward in time order, and only its final
  -- state is written.
  local points = {}
  for k, name in ipairs(names) do
    local p = unpackPoint(fieldsOf(name), got[6 + k], metas[metaOf[k]])
    if p == nil then refuseUnknownLayout(env, device, name, got[6 + k]) end
    if tick then p.stored = got[6 + #names + k] end
    points[k] = p
  end

  -- Events are emitted after the state is written (see the top of this file); data points whose
  -- status changed while suppressed get no event, but their alarm follows the status.
  local ctx = { names = names, events = {}, silenced = nil, stateKey = stateKey, env = env, device = device,
    lastContact = tonumber(lastContact), isLost = false }
  local applied = {}
  local k = 0
  for j = 1, #vals, VALUE_STRIDE do
    k = k + 1
    local s = vals[j]
    applied[k] = applyValue(ctx, points[s], s, metas[metaOf[s]], j, vals)
  end

  local flat = {}
  local n = 0
  -- Contact: the receive time of the latest accepted payload. The availability deadline (last
  -- contact + timeout) is kept lazily: the deadlines set holds a time no later than the real one
  -- (`@dl`), and the scheduler, finding contact since, moves it to the real one (`@lc` + `@to`,
  -- mark-contact-lost.lua). So a device that keeps reporting costs one ZADD per timeout period,
  -- not one per step; a ZADD goes out only for a first deadline, after a lost contact, or for a
  -- shorter timeout.
  local newDeadline = nil
  local contacted = false
  local firstContact = false
  if contactMs > 0 then
    local lc = tonumber(lastContact)
    if lc == nil or contactMs > lc then
      contacted = true
      firstContact = lc == nil
      ctx.lastContact = contactMs
      flat[n + 1], flat[n + 2], n = '@lc', string.format('%d', contactMs), n + 2
      local to = string.format('%d', timeoutMs)
      if to ~= timeout then flat[n + 1], flat[n + 2], n = '@to', to, n + 2 end
      if timeoutMs > 0 then
        local due = contactMs + timeoutMs
        local dl = tonumber(deadline)
        if dl == nil or due < dl or lost == '1' then
          newDeadline = due
          flat[n + 1], flat[n + 2], n = '@dl', string.format('%d', due), n + 2
        end
      end
    end
    if lost == '1' then
      lost = '0'
      flat[n + 1], flat[n + 2], n = '@lost', '0', n + 2
      ctx.events[#ctx.events + 1] = { env .. '/' .. device .. '/availability/' .. string.format('%d', contactMs),
        'availability', 'availability', '0', 'SUCCESS', 'Availability',
        'availability - Contact restored - SUCCESS - ' .. contactIso }
    end
  end

  -- Timers: a tick applies what came due by now to every data point with timers (the worker sends
  -- them all) and sets the device's timer to the exact next one; a step of values only brings the
  -- timer forward, lazily like the availability deadline.
  local nextTimer = nil
  local waitsForContact = false
  if tick then
    local to = tonumber(timeout)
    ctx.isLost = lost == '1' or (to ~= nil and to > 0 and ctx.lastContact ~= nil and ctx.lastContact + to <= nowMs)
  end
  for s, p in ipairs(points) do
    local meta = metas[metaOf[s]]
    if meta.fd ~= nil or meta.sa ~= nil then
      local waits = false
      if tick then
        fireDeadlines(ctx, p, s, meta, nowMs, true)
        waits = checkStale(ctx, p, s, meta, nowMs)
        waitsForContact = waitsForContact or waits
      end
      local nd = nextDeadline(p, meta, waits)
      if nd ~= nil and (nextTimer == nil or nd < nextTimer) then nextTimer = nd end
    end
  end
  local timerMember = env .. '\n' .. device
  local tm = tonumber(timerText)
  if tick then
    if nextTimer ~= nil then
      redis.call('ZADD', timers, string.format('%d', nextTimer), timerMember)
      flat[n + 1], flat[n + 2], n = '@tm', string.format('%d', nextTimer), n + 2
    elseif tm ~= nil then
      -- The scheduler removed the entry when it queued this tick; a step of values can only have
      -- written one since for a deadline already past, which costs one more tick that finds nothing.
      redis.call('HDEL', stateKey, '@tm')
    end
    if waitsForContact ~= (staleWaits == '1') then
      flat[n + 1], flat[n + 2], n = '@sw', waitsForContact and '1' or '0', n + 2
    end
  else
    -- A stale data point waiting for contact is looked at again at once when contact comes.
    if contacted and staleWaits == '1' then
      flat[n + 1], flat[n + 2], n = '@sw', '0', n + 2
      if nextTimer == nil or contactMs < nextTimer then nextTimer = contactMs end
    end
    if nextTimer ~= nil and (tm == nil or nextTimer < tm) then
      redis.call('ZADD', timers, string.format('%d', nextTimer), timerMember)
      flat[n + 1], flat[n + 2], n = '@tm', string.format('%d', nextTimer), n + 2
    elseif all and tm ~= nil and tm <= nowMs + TIMER_SOON_MS and nextTimer ~= tm then
      -- The timer was for a deadline this step met or reset, and with a value of every data point
      -- the step knows the next one: a tick at the old time would find nothing to do (it costs the
      -- scheduler, the queue and a state step). Only when the timer is near: a stale rule's
      -- deadline moves with every value, and one tick per stale period costs less than a write per
      -- step.
      if nextTimer == nil then
        redis.call('ZREM', timers, timerMember)
        redis.call('HDEL', stateKey, '@tm')
      else
        redis.call('ZADD', timers, string.format('%d', nextTimer), timerMember)
        flat[n + 1], flat[n + 2], n = '@tm', string.format('%d', nextTimer), n + 2
      end
    end
  end

  for _, p in ipairs(points) do
    if p.v ~= nil then
      flat[n + 1], flat[n + 2], n = p.f.v, p.v, n + 2
    end
    if p.v ~= nil or p.changed then
      flat[n + 1], flat[n + 2], n = p.f.p, packPoint(p), n + 2
    end
  end

  if n > 0 then redis.call('HSET', stateKey, unpack(flat)) end
  if firstContact then redis.call('ZREM', KEYS[at + 5], device) end
  if newDeadline ~= nil then redis.call('ZADD', deadlines, newDeadline, env .. '\n' .. device) end
  for _, e in ipairs(ctx.events) do
    local json = emit(dev, envEvents, devEvents, e[1], e[2], e[3], e[4], e[5], e[6], e[7])
    local sensor = e[2]
    if e[6] == 'Availability' then sensor = '' end
    setAlarm(KEYS[at + 3], KEYS[at + 4], device, sensor, e[6], e[5], e[8], json)
  end
  if ctx.silenced then
    for _, c in ipairs(ctx.silenced) do
      setAlarm(KEYS[at + 3], KEYS[at + 4], device, c[1], 'Sensors', c[2], c[3], nil)
    end
  end
  return applied
end

local results = {}
for i, dev in ipairs(a.d) do results[i] = applyDevice(i - 1, dev) end
-- Trim only the event sets that grew.
if a.cap > 0 then
  for k, _ in pairs(capped) do
    if redis.call('ZCARD', k) > a.cap then redis.call('ZREMRANGEBYRANK', k, 0, -(a.cap + 1)) end
  end
end
return results
