--[[
Replaces a device record (a hash with a `revision` field) with new fields, if its revision is the
one the change was based on: an update never silently overwrites another made meanwhile. The
revision counts the record's changes; a record stored without one counts as revision 1. In the same
step it writes the claim of the device's DevEUI (TenancyKeys.devEuis): a DevEUI held by another
device refuses the write, and one the device no longer has is released. So two devices never hold
one DevEUI, however their writes interleave.

KEYS[1] the device record
KEYS[2] the environment's DevEUI claims (hash DevEUI → device name)
ARGV[1] what the change expects: '' nothing (create or replace), '*' that the record exists, '0'
        that it does not, 'N' that it exists at revision N
ARGV[2] the device's name
ARGV[3] its DevEUI after the write, lowercase ('' none)
ARGV[4..] field, value pairs: the whole record but its revision
Returns {1, new revision} when written; {0, current revision (0: none)} when the expectation
failed; {2, current revision, the device holding the DevEUI} when another device holds it.
]]
local exists = redis.call('EXISTS', KEYS[1]) == 1
local revision = 0
if exists then revision = tonumber(redis.call('HGET', KEYS[1], 'revision')) or 1 end
local expected = ARGV[1]
if (expected == '*' and not exists) or (expected ~= '' and expected ~= '*' and tonumber(expected) ~= revision) then
  return {0, revision}
end
local name, eui = ARGV[2], ARGV[3]
if eui ~= '' then
  local holder = redis.call('HGET', KEYS[2], eui)
  if holder and holder ~= name then return {2, revision, holder} end
end
-- The DevEUI the stored record has (a label stored before DevEUIs were checked may be uppercase).
local before = ''
local labels = exists and redis.call('HGET', KEYS[1], 'labels')
if labels then
  local ok, decoded = pcall(cjson.decode, labels)
  if ok and type(decoded) == 'table' and type(decoded.devEui) == 'string' then before = string.lower(decoded.devEui) end
end
if before ~= '' and before ~= eui and redis.call('HGET', KEYS[2], before) == name then
  redis.call('HDEL', KEYS[2], before)
end
if eui ~= '' then redis.call('HSET', KEYS[2], eui, name) end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'revision', revision + 1, unpack(ARGV, 4))
return {1, revision + 1}
