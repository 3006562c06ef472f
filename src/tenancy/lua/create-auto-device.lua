--[[
Creates one device an API key's auto-create rule allows (auto-devices.ts), in one step with all
that makes it safe: the device does not exist yet, the key still has the rule the record was built
from (its revision), its DevEUI is no other device's, and the key has created fewer devices than
its rule's maxDevices. Then the record, its place in the device list and label index, its DevEUI's
claim, the key's count and the audit entry are written together: never more devices than the rule
allows, however many processes create at once.

KEYS[1] the environment's API key metadata (hash id → JSON CredentialMeta)
KEYS[2] the environment's counts of devices created (hash counter id → n)
KEYS[3] the device record
KEYS[4] the environment's DevEUI claims
KEYS[5] the environment's device list
KEYS[6] the environment's audit log
KEYS[7..] the label index of each of the device's labels, in the order of ARGV's members
ARGV[1] the key's id
ARGV[2] the key's revision the record was built from; '' to report an existing device only
ARGV[3] the device's name
ARGV[4] its DevEUI, lowercase
ARGV[5] now, epoch ms; ARGV[6] the oldest audit entry kept, epoch ms; ARGV[7] the audit entry (JSON)
ARGV[8] n, the number of labels; ARGV[9..8+n] their index members (`<value>\n<device>`)
ARGV[9+n..] field, value pairs: the record but its revision
Returns {'existing', field, value, …}, {'created'}, {'off'} (no rule now), {'moved'} (the key has
another revision), {'taken', the device holding the DevEUI} or {'limit'}.
]]
if redis.call('EXISTS', KEYS[3]) == 1 then
  local record = redis.call('HGETALL', KEYS[3])
  table.insert(record, 1, 'existing')
  return record
end
if ARGV[2] == '' then return {'off'} end
local json = redis.call('HGET', KEYS[1], ARGV[1])
if not json then return {'off'} end
local meta = cjson.decode(json)
if type(meta.autoCreate) ~= 'table' then return {'off'} end
if tostring(meta.revision or 1) ~= ARGV[2] then return {'moved'} end
local holder = redis.call('HGET', KEYS[4], ARGV[4])
if holder then return {'taken', holder} end
local counter = meta.counterId or meta.id
if (tonumber(redis.call('HGET', KEYS[2], counter)) or 0) >= tonumber(meta.autoCreate.maxDevices) then
  return {'limit'}
end
local name, labels = ARGV[3], tonumber(ARGV[8])
redis.call('HSET', KEYS[3], 'revision', 1, unpack(ARGV, 9 + labels))
redis.call('ZADD', KEYS[5], 0, name)
for i = 1, labels do redis.call('ZADD', KEYS[6 + i], 0, ARGV[8 + i]) end
redis.call('HSET', KEYS[4], ARGV[4], name)
redis.call('HINCRBY', KEYS[2], counter, 1)
appendAudit(KEYS[6], tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7])
return {'created'}
