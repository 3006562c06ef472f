--[[
Marks one device's contact as lost, exactly once however many schedulers run: the deadline
entry must still hold the score the scheduler saw and is removed in the same step, so a second
scheduler finds nothing to do.

The owner's step moves deadlines lazily (domain/device-step.ts): a device with contact since its entry
was written has a real deadline (`@lc` + `@to`) later than the entry's. Then the entry moves there
and nothing is marked; a device whose timeout is now 0 (not monitored) loses its entry.
Marking a device lost opens its Availability alarm (alarm-index.lua, put in front of this file).

KEYS[1] availability deadlines  KEYS[2] device state hash  KEYS[3] env events  KEYS[4] device events
KEYS[5] event outbox stream  KEYS[6] environment alarm index  KEYS[7] environment alarm records
ARGV[1] member (env \n device)  ARGV[2] deadline score seen  ARGV[3] event JSON  ARGV[4] nowMs
ARGV[5] events cap  ARGV[6] outbox max length
Every write of the device's state removes its version (`@ver`): the partition's owner, which keeps
the state it read, then reads it again before its next write (state-store.ts).
An empty event JSON only moves the entry (the scheduler saw contact since); it never marks lost.
Returns 1 when the event was created, 2 when the entry moved, 0 otherwise.
]]
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) ~= tonumber(ARGV[2]) then return 0 end
local contact = redis.call('HMGET', KEYS[2], '@lc', '@to')
local lc, timeout = tonumber(contact[1]), tonumber(contact[2])
if lc ~= nil and timeout ~= nil then
  if timeout <= 0 then
    redis.call('ZREM', KEYS[1], ARGV[1])
    redis.call('HDEL', KEYS[2], '@dl', '@ver')
    return 0
  end
  local due = lc + timeout
  if due > tonumber(ARGV[4]) then
    local dueText = string.format('%d', due)
    redis.call('ZADD', KEYS[1], dueText, ARGV[1])
    redis.call('HSET', KEYS[2], '@dl', dueText)
    redis.call('HDEL', KEYS[2], '@ver')
    return 2
  end
end
if ARGV[3] == '' then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
if redis.call('HGET', KEYS[2], '@lost') == '1' then return 0 end
redis.call('HSET', KEYS[2], '@lost', '1')
redis.call('HDEL', KEYS[2], '@ver')
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[3])
redis.call('ZADD', KEYS[4], ARGV[4], ARGV[3])
redis.call('XADD', KEYS[5], '*', 'e', ARGV[3])
local device = string.sub(ARGV[1], string.find(ARGV[1], '\n', 1, true) + 1)
setAlarm(KEYS[6], KEYS[7], device, '', 'Availability', cjson.decode(ARGV[3]).eventStatus, tonumber(ARGV[4]), ARGV[3])
local cap = tonumber(ARGV[5])
if cap > 0 and redis.call('ZCARD', KEYS[3]) > cap then
  redis.call('ZREMRANGEBYRANK', KEYS[3], 0, -(cap + 1))
end
return 1
