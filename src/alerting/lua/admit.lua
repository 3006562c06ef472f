--[[
Flood control and digest batches of one channel, atomically, on Redis's clock.

Mode 'admit' (an event for the channel now): counts it in the channel's flood window (which starts
with the first notification after the previous window ended, and lasts ARGV[3] ms); the first
ARGV[4] of a window are sent, the rest are held in the window's digest batch.
Mode 'hold' (quiet hours): holds the event in batch ARGV[6], due at ARGV[7].

A held event joins its batch once (a replayed event is recognised by its id). A batch whose digest
has been built (sealed) takes nothing more: the event is then sent on its own.

KEYS[1] the channel's flood window hash (start, count); its batch id is `<channel id>-<start>`
ARGV[1] mode  ARGV[2] batch key prefix (…:notify:batch:)  ARGV[3] window ms  ARGV[4] threshold
ARGV[5] channel id  ARGV[6] batch id (hold)  ARGV[7] due ms (hold)  ARGV[8] event id  ARGV[9] event JSON
ARGV[10] how long batch keys are kept, ms
Returns {'send', nowMs} or {'hold', nowMs, batchId, dueMs}.
]]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local prefix, keepMs = ARGV[2], ARGV[10]

local function hold(batch, due)
  local key = prefix .. batch
  if redis.call('HGET', key, 'sealed') == '1' then return {'send', now} end
  if redis.call('SADD', key .. ':ids', ARGV[8]) == 1 then
    redis.call('HINCRBY', key, 'count', 1)
    redis.call('HSET', key, 'due', due)
    redis.call('RPUSH', key .. ':events', ARGV[9])
    redis.call('LTRIM', key .. ':events', -100, -1)
  end
  for _, k in ipairs({key, key .. ':ids', key .. ':events'}) do redis.call('PEXPIRE', k, keepMs) end
  return {'hold', now, batch, tostring(due)}
end

if ARGV[1] == 'hold' then return hold(ARGV[6], tonumber(ARGV[7])) end

local windowMs, threshold = tonumber(ARGV[3]), tonumber(ARGV[4])
local start = tonumber(redis.call('HGET', KEYS[1], 'start'))
if start == nil or now >= start + windowMs then
  start = now
  redis.call('HSET', KEYS[1], 'start', start, 'count', 0)
end
redis.call('PEXPIRE', KEYS[1], windowMs * 2)
if redis.call('HINCRBY', KEYS[1], 'count', 1) <= threshold then return {'send', now} end
return hold(ARGV[5] .. '-' .. start, start + windowMs)
