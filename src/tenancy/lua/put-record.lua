--[[
Replaces a record (a hash with a `revision` field) with new fields, if its revision is the one the
change was based on: an update never silently overwrites another made meanwhile. The revision
counts the record's changes; a record stored without one counts as revision 1.

KEYS[1] the record
ARGV[1] what the change expects: '' nothing (create or replace), '*' that the record exists, '0'
        that it does not, 'N' that it exists at revision N
ARGV[2..] field, value pairs: the whole record but its revision
Returns {1, new revision} when written, {0, current revision (0: none)} when the expectation failed.
]]
local exists = redis.call('EXISTS', KEYS[1]) == 1
local revision = 0
if exists then revision = tonumber(redis.call('HGET', KEYS[1], 'revision')) or 1 end
local expected = ARGV[1]
if (expected == '*' and not exists) or (expected ~= '' and expected ~= '*' and tonumber(expected) ~= revision) then
  return {0, revision}
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'revision', revision + 1, unpack(ARGV, 2))
return {1, revision + 1}
