--[[
Applies one device's readings of one job atomically: current state per data point, status and
Sensors events, device contact, availability deadline and the "Contact restored" event.

Statuses are decided by the worker in JavaScript for every possible previous rule (the domain's
possibleOutcomes), so this script only picks the outcome that matches the stored previous rule:
no threshold logic is duplicated here, and concurrent workers can never interleave a
read-modify-write of the same data point.

KEYS[1] device state hash      KEYS[2] environment events zset   KEYS[3] device events zset
KEYS[4] availability deadlines KEYS[5] event outbox stream
ARGV[1] JSON: {
  env, device, displayName, nowMs, contactMs, contactIso, timeoutMs, eventsCap, outboxMax,
  sensors = { [name] = { st = {status per rule}, ds = {description per rule}, ri = fingerprint,
                         sup = 0|1, ty = sensorType } },
  vals = { {sensor, ms, off, valueJson, currentValue, {outcome per previous rule: -1..n-1}} … }
         (sorted by ms, off)
}
Returns: the status applied per value, or '' where the value was older than the stored one
(history only) or a replay of it.
]]
local a = cjson.decode(ARGV[1])
local stateKey, envEvents, devEvents, deadlines, outbox = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]

-- Read every field this script may need in one HMGET.
local fields = { '@lc', '@lost' }
local names = {}
for name, _ in pairs(a.sensors) do
  names[#names + 1] = name
  for _, f in ipairs({ 'u', 't', 's', 'r', 'ri' }) do fields[#fields + 1] = name .. '|' .. f end
end
local got = redis.call('HMGET', stateKey, unpack(fields))
local cur = {}
for i, f in ipairs(fields) do cur[f] = got[i] end

local writes = {}
local function set(f, v)
  cur[f] = v
  writes[f] = v
end

local function jsonString(s) return cjson.encode(s) end

local function emit(id, sensorName, sensorType, valueJson, status, category, message)
  local json = '{"id":' .. jsonString(id) .. ',"env":' .. jsonString(a.env) .. ',"deviceName":' .. jsonString(a.device)
    .. ',"displayName":' .. jsonString(a.displayName) .. ',"sensorName":' .. jsonString(sensorName)
    .. ',"sensorType":' .. jsonString(sensorType) .. ',"sensorValue":' .. valueJson
    .. ',"eventStatus":' .. jsonString(status) .. ',"eventCategory":' .. jsonString(category)
    .. ',"eventMessage":' .. jsonString(message) .. ',"receivedMs":' .. string.format('%d', a.nowMs) .. '}'
  redis.call('ZADD', envEvents, a.nowMs, json)
  redis.call('ZADD', devEvents, a.nowMs, json)
  redis.call('XADD', outbox, 'MAXLEN', '~', a.outboxMax, '*', 'e', json)
end

local applied = {}
for i, v in ipairs(a.vals) do
  local sensor, ms, off, valueJson, currentValue, outcomes = v[1], v[2], v[3], v[4], v[5], v[6]
  local meta = a.sensors[sensor]
  local u, t = tonumber(cur[sensor .. '|u']), tonumber(cur[sensor .. '|t'])
  if u ~= nil and (ms < u or (ms == u and off <= t)) then
    applied[i] = ''
  else
    local prevStatus = cur[sensor .. '|s'] or 'SUCCESS'
    local prevRule = tonumber(cur[sensor .. '|r']) or -1
    -- A rule index only means something for the rule list it was recorded with.
    if cur[sensor .. '|ri'] ~= meta.ri then prevRule = -1 end
    local rule = outcomes[prevRule + 2] or outcomes[1]
    local status = 'SUCCESS'
    if rule >= 0 then status = meta.st[rule + 1] end
    set(sensor .. '|v', valueJson)
    set(sensor .. '|u', ms)
    set(sensor .. '|t', off)
    set(sensor .. '|r', rule)
    set(sensor .. '|ri', meta.ri)
    set(sensor .. '|s', status)
    if status == 'SUCCESS' then set(sensor .. '|ls', ms) end
    if status ~= prevStatus or u == nil then set(sensor .. '|ss', ms) end
    if status ~= prevStatus and meta.sup == 0 then
      local message
      if status == 'SUCCESS' then
        message = sensor .. ' - Returned to success status - SUCCESS - ' .. currentValue
      else
        message = sensor .. ' - ' .. meta.ds[rule + 1] .. ' - ' .. status .. ' - ' .. currentValue
      end
      emit(a.env .. '/' .. a.device .. '/' .. sensor .. '/' .. string.format('%d', ms) .. '.' .. off,
        sensor, meta.ty, valueJson, status, 'Sensors', message)
    end
    applied[i] = status
  end
end

-- Contact: the receive time of the latest accepted payload.
if a.contactMs > 0 then
  local lc = tonumber(cur['@lc'])
  if lc == nil or a.contactMs > lc then
    set('@lc', a.contactMs)
    if a.timeoutMs > 0 then
      redis.call('ZADD', deadlines, a.contactMs + a.timeoutMs, a.env .. '\n' .. a.device)
    end
  end
  if cur['@lost'] == '1' then
    set('@lost', '0')
    emit(a.env .. '/' .. a.device .. '/availability/' .. string.format('%d', a.contactMs), 'availability', 'availability',
      '0', 'SUCCESS', 'Availability', 'availability - Contact restored - SUCCESS - ' .. a.contactIso)
  end
end

local flat = {}
for f, val in pairs(writes) do
  flat[#flat + 1] = f
  flat[#flat + 1] = val
end
if #flat > 0 then redis.call('HSET', stateKey, unpack(flat)) end
if a.eventsCap > 0 then
  for _, k in ipairs({ envEvents, devEvents }) do
    if redis.call('ZCARD', k) > a.eventsCap then redis.call('ZREMRANGEBYRANK', k, 0, -(a.eventsCap + 1)) end
  end
end
return applied
