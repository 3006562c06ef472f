--[[
Acknowledges one open alarm (alarm-index.lua describes the record) and appends the acknowledgement
to the environment's audit log, in one step: an acknowledgement is never recorded without the audit
entry, nor the entry without it. Acknowledging again replaces the acknowledgement (who, when, note).

The partition's owner rewrites an alarm's record with each status change, from the record it read
for the step: removing the device's version (`@ver`) refuses its write of a record read before this
acknowledgement, and it reads the record again (docs/processing.md, who writes a device's state).

KEYS[1] alarm records  KEYS[2] audit log (a stream, src/audit; appendAudit comes before this)
KEYS[3] the device's state hash
ARGV[1] member  ARGV[2] who  ARGV[3] now ms  ARGV[4] note ('' = none)
ARGV[5] audit entry JSON (its `details` get the status acknowledged)
ARGV[6] the oldest time the audit log keeps, epoch ms
Returns the record's JSON as acknowledged, or false when no alarm is open.
]]
local stored = redis.call('HGET', KEYS[1], ARGV[1])
if not stored then return false end
local r = cjson.decode(stored)
r.a = { by = ARGV[2], ms = tonumber(ARGV[3]), st = r.st }
if ARGV[4] ~= '' then r.a.note = ARGV[4] end
local json = cjson.encode(r)
redis.call('HSET', KEYS[1], ARGV[1], json)
redis.call('HDEL', KEYS[3], '@ver')
local entry = cjson.decode(ARGV[5])
entry.details.status = r.st
appendAudit(KEYS[2], tonumber(ARGV[3]), tonumber(ARGV[6]), cjson.encode(entry))
return json
