--[[
Queues the ticks of devices whose timer came due into their ingest partitions, exactly once however
many schedulers run: a device's entry in the timers set must still hold the score the scheduler
saw, and it is removed in the same step as its tick is queued. The partition's owner applies the
tick in order with the device's payloads, under its lease (worker/ticks.ts); the state script then
sets the device's next timer.

KEYS[1] device timers (sorted set)   KEYS[2] the queue's backlog counts (hash)
KEYS[3…] the partition streams the ticks go to
ARGV: per device, 5 values: member (env \n device), score seen, index into KEYS of its stream,
      environment, the tick's queue item packed (item-codec.ts)
Returns the number of ticks queued. One entry per partition, like a gateway's micro-batch
(`n` items, `p` their packed text); the backlog counts rise with it, as the producer's do.
]]
local byStream = {}
local byEnv = {}
local queued = 0
for i = 1, #ARGV, 5 do
  local score = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if score and tonumber(score) == tonumber(ARGV[i + 1]) then
    redis.call('ZREM', KEYS[1], ARGV[i])
    local stream = tonumber(ARGV[i + 2])
    local list = byStream[stream]
    if list == nil then
      list = {}
      byStream[stream] = list
    end
    list[#list + 1] = ARGV[i + 4]
    byEnv[ARGV[i + 3]] = (byEnv[ARGV[i + 3]] or 0) + 1
    queued = queued + 1
  end
end
for stream, list in pairs(byStream) do
  redis.call('XADD', KEYS[stream], '*', 'n', tostring(#list), 'p', table.concat(list))
end
for env, n in pairs(byEnv) do redis.call('HINCRBY', KEYS[2], env, n) end
return queued
