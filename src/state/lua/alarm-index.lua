--[[
The alarm index of an environment: a data point in any status but SUCCESS, or a device whose contact
is lost, is an open alarm until it returns. The partition's owner writes a data point's record and index entry in the fenced call that stores
its status (state-store.ts, records from domain/alarm-record.ts). This file is put in front of the
scripts that change a status outside it (mark-contact-lost.lua) and of those that acknowledge alarms
and build the index (alarm-index.ts), so the index changes in the same script as the status it follows.

Index, a sorted set: member `<device>\n<sensor>` (sensor '' for a device's Availability alarm; no
name holds a line break), score (4 - severity) * ALARM_BAND + opened ms, so that ZRANGE gives the
most severe first, then the oldest.
Records, a hash with the same members, JSON {d, s, c, st, sm, ev, a}: device, sensor, category,
current status, the ms the alarm opened (measurement time of the value that left SUCCESS; the time
contact was found lost), the event that last set its status (its JSON text; absent when the index
was built from stored state, or kept when a suppressed data point changed status without an event),
and the acknowledgement {by, ms, st (the status acknowledged), note}, absent when none.
]]
local ALARM_SEVERITY = { INFO = 1, WARNING = 2, ERROR = 3, CRITICAL = 4 }
local ALARM_BAND = 1e13

-- Opens, changes or closes (status SUCCESS) one alarm. An acknowledgement covers the status it was
-- given for and any less severe one; a status above it re-opens the alarm unacknowledged.
local function setAlarm(indexKey, recordsKey, device, sensor, category, status, sinceMs, eventJson)
  local member = device .. '\n' .. sensor
  local severity = ALARM_SEVERITY[status]
  if severity == nil then
    redis.call('ZREM', indexKey, member)
    redis.call('HDEL', recordsKey, member)
    return
  end
  local stored = redis.call('HGET', recordsKey, member)
  local r
  if stored then
    r = cjson.decode(stored)
    if r.a and severity > ALARM_SEVERITY[r.a.st] then r.a = nil end
  else
    r = { d = device, s = sensor, c = category, sm = sinceMs }
  end
  r.st = status
  if eventJson then r.ev = eventJson end
  redis.call('HSET', recordsKey, member, cjson.encode(r))
  redis.call('ZADD', indexKey, string.format('%d', (4 - severity) * ALARM_BAND + r.sm), member)
end
