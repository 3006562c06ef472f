--[[
Applies the readings of several devices of one worker step, each device atomically: current state
per data point, status and Sensors events, device contact, availability deadline and the
"Contact restored" event.

Statuses are decided by the worker in JavaScript for every possible previous rule (the domain's
possibleOutcomes), so this script only picks the outcome that matches the stored previous rule:
no threshold logic is duplicated here, and concurrent workers can never interleave a
read-modify-write of the same data point.

KEYS[1] availability deadlines   KEYS[2] event outbox stream
then per device i (from 0): KEYS[3+3i] device state hash, KEYS[4+3i] environment events zset,
                            KEYS[5+3i] device events zset
ARGV[1] JSON: {
  n = nowMs, cap = eventsCap, omax = outboxMax,
  m = { {st = {status per rule}, ds = {description per rule}, ri = fingerprint, sup = 0|1,
         ty = sensorType} … }                      (rule metadata, shared by devices)
  d = { {env, device, displayName, contactMs, contactIso, timeoutMs, {[sensor] = index into m},
         { {sensor, ms, off, valueJson, currentValue, {outcome per previous rule: -1..n-1}[, number]} … }
        } … }                                      (values sorted by ms, off; number: the value
                                                    history aggregates, absent for text and GPS)
}
Returns per device: the status applied per value, or '' where the value was older than the stored
one (history only) or a replay of it.
]]
local a = cjson.decode(ARGV[1])
local deadlines, outbox = KEYS[1], KEYS[2]
local nowMs, metas = a.n, a.m
local nowText = string.format('%d', nowMs)
local STATE_FIELDS = { 'u', 't', 's', 'r', 'ri', 'h' }
local HOUR_MS = 3600000
-- Field h: six little-endian doubles, exact and ~8 times cheaper here than text to parse and print.
local HOUR_FORMAT = '<dddddd'
local HOUR_BYTES = 48
local capped = {}
-- Field names per data point name, made once per call: devices of one definition share them.
local FIELD_KEYS = { 'v', 'u', 't', 's', 'r', 'ri', 'ls', 'ss', 'h' }
local fieldNames = {}
local function fieldsOf(name)
  local f = fieldNames[name]
  if f == nil then
    f = {}
    for _, k in ipairs(FIELD_KEYS) do f[k] = name .. '|' .. k end
    fieldNames[name] = f
  end
  return f
end

local function applyDevice(i, dev)
  local stateKey, envEvents, devEvents = KEYS[3 + 3 * i], KEYS[4 + 3 * i], KEYS[5 + 3 * i]
  local env, device, displayName, contactMs, contactIso, timeoutMs, sensorMeta, vals =
    dev[1], dev[2], dev[3], dev[4], dev[5], dev[6], dev[7], dev[8]

  -- Read every field this device may need in one HMGET.
  local fields = { '@lc', '@lost' }
  for name, _ in pairs(sensorMeta) do
    local names = fieldsOf(name)
    for _, f in ipairs(STATE_FIELDS) do fields[#fields + 1] = names[f] end
  end
  local got = redis.call('HMGET', stateKey, unpack(fields))
  local cur = {}
  for k, f in ipairs(fields) do cur[f] = got[k] end

  local flat = {}
  local function set(f, v)
    if cur[f] == v then return end
    cur[f] = v
    flat[#flat + 1] = f
    flat[#flat + 1] = v
  end

  local function emit(id, sensorName, sensorType, valueJson, status, category, message)
    local json = '{"id":' .. cjson.encode(id) .. ',"env":' .. cjson.encode(env) .. ',"deviceName":'
      .. cjson.encode(device) .. ',"displayName":' .. cjson.encode(displayName) .. ',"sensorName":'
      .. cjson.encode(sensorName) .. ',"sensorType":' .. cjson.encode(sensorType) .. ',"sensorValue":'
      .. valueJson .. ',"eventStatus":' .. cjson.encode(status) .. ',"eventCategory":'
      .. cjson.encode(category) .. ',"eventMessage":' .. cjson.encode(message) .. ',"receivedMs":'
      .. nowText .. '}'
    redis.call('ZADD', envEvents, nowMs, json)
    redis.call('ZADD', devEvents, nowMs, json)
    redis.call('XADD', outbox, 'MAXLEN', '~', a.omax, '*', 'e', json)
    capped[envEvents] = true
    capped[devEvents] = true
  end

  -- Each data point's state as read; values move it forward in time order, and only its final
  -- state is written.
  local points = {}
  for name, _ in pairs(sensorMeta) do
    local f = fieldsOf(name)
    points[name] = {
      u = tonumber(cur[f.u]), t = tonumber(cur[f.t]), s = cur[f.s] or 'SUCCESS',
      r = tonumber(cur[f.r]) or -1, ri = cur[f.ri], f = f,
      -- The hour, read when a number first arrives (hh false until then, -1 when none is kept).
      hraw = cur[f.h], hh = false, hn = 0, hs = 0, hmin = 0, hmax = 0, hlate = 0, hset = false,
    }
  end

  -- The current value's clock hour (field h): hour (epoch ms / 3,600,000), count, total, min and max
  -- of the numeric values that became current in it, and whether a value of that hour came that did
  -- not (older than the current one, or a repeat: which of the two cannot be told, so the reader
  -- asks InfluxDB, where a repeat lands on the same point). Each value becomes current once, so a
  -- replayed step counts nothing twice.
  local function readHour(p)
    if p.hh ~= false then return end
    if p.hraw and #p.hraw == HOUR_BYTES then
      p.hh, p.hn, p.hs, p.hmin, p.hmax, p.hlate = struct.unpack(HOUR_FORMAT, p.hraw)
    else
      p.hh = -1
    end
  end

  local function addToHour(p, ms, x)
    local hour = math.floor(ms / HOUR_MS)
    readHour(p)
    if p.hh == hour then
      p.hn, p.hs = p.hn + 1, p.hs + x
      if x < p.hmin then p.hmin = x end
      if x > p.hmax then p.hmax = x end
    else
      p.hh, p.hn, p.hs, p.hmin, p.hmax, p.hlate = hour, 1, x, x, x, 0
    end
    p.hset = true
  end

  local function lateInHour(p, ms)
    readHour(p)
    if p.hh == math.floor(ms / HOUR_MS) and p.hlate == 0 then
      p.hlate = 1
      p.hset = true
    end
  end

  local applied = {}
  for k, v in ipairs(vals) do
    local sensor, ms, off, valueJson, currentValue, outcomes = v[1], v[2], v[3], v[4], v[5], v[6]
    local meta = metas[sensorMeta[sensor] + 1]
    local p = points[sensor]
    if p.u ~= nil and (ms < p.u or (ms == p.u and off <= p.t)) then
      applied[k] = ''
      if v[7] ~= nil then lateInHour(p, ms) end
    else
      local prevRule = p.r
      -- A rule index only means something for the rule list it was recorded with.
      if p.ri ~= meta.ri then prevRule = -1 end
      local rule = outcomes[prevRule + 2] or outcomes[1]
      local status = 'SUCCESS'
      if rule >= 0 then status = meta.st[rule + 1] end
      if status == 'SUCCESS' then p.ls = ms end
      if status ~= p.s or p.u == nil then p.ss = ms end
      if status ~= p.s and meta.sup == 0 then
        local message
        if status == 'SUCCESS' then
          message = sensor .. ' - Returned to success status - SUCCESS - ' .. currentValue
        else
          message = sensor .. ' - ' .. meta.ds[rule + 1] .. ' - ' .. status .. ' - ' .. currentValue
        end
        emit(env .. '/' .. device .. '/' .. sensor .. '/' .. string.format('%d', ms) .. '.' .. off,
          sensor, meta.ty, valueJson, status, 'Sensors', message)
      end
      p.u, p.t, p.r, p.ri, p.s, p.v = ms, off, rule, meta.ri, status, valueJson
      if v[7] ~= nil then addToHour(p, ms, v[7]) end
      applied[k] = status
    end
  end
  for _, p in pairs(points) do
    if p.v ~= nil then
      local f = p.f
      set(f.v, p.v)
      set(f.u, string.format('%d', p.u))
      set(f.t, tostring(p.t))
      set(f.r, tostring(p.r))
      set(f.ri, p.ri)
      set(f.s, p.s)
      if p.ls ~= nil then set(f.ls, string.format('%d', p.ls)) end
      if p.ss ~= nil then set(f.ss, string.format('%d', p.ss)) end
    end
    if p.hset then set(p.f.h, struct.pack(HOUR_FORMAT, p.hh, p.hn, p.hs, p.hmin, p.hmax, p.hlate)) end
  end

  -- Contact: the receive time of the latest accepted payload.
  if contactMs > 0 then
    local lc = tonumber(cur['@lc'])
    if lc == nil or contactMs > lc then
      set('@lc', string.format('%d', contactMs))
      if timeoutMs > 0 then
        redis.call('ZADD', deadlines, contactMs + timeoutMs, env .. '\n' .. device)
      end
    end
    if cur['@lost'] == '1' then
      set('@lost', '0')
      emit(env .. '/' .. device .. '/availability/' .. string.format('%d', contactMs), 'availability',
        'availability', '0', 'SUCCESS', 'Availability', 'availability - Contact restored - SUCCESS - ' .. contactIso)
    end
  end

  if #flat > 0 then redis.call('HSET', stateKey, unpack(flat)) end
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
