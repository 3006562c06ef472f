--[[
The effects of a worker's processing step that must happen at most once, run only while the step's
worker still holds every partition lease it read under: its fencing check and its writes are one
atomic script, so a worker that stalled past its lease (GC pause, frozen VM, SIGSTOP) and woke up
after another worker took its partitions over can write nothing.

ARGV, in sections (each count first):
  f, then f lease keys, then the f lease values the step read under ("<worker token>:<fence>")
  c, then c commands, each as its argument count n and n arguments (the ingestion log, dead letters)
  r, then r entry removals, each: taken-counts key, stream key, entry id, k, then k pairs
     environment, payloads (what the entry took off the backlog counts when it is deleted)
  KEYS[1] the backlog counts hash (queue-keys.ts queueBacklog)
  ARGV[last] the consumer group
Returns 1 when done, 0 when a lease changed hands (nothing was written).
]]
local i = 1
local f = tonumber(ARGV[i])
for j = 1, f do
  if redis.call('GET', ARGV[i + j]) ~= ARGV[i + f + j] then return 0 end
end
i = i + 2 * f + 1

local c = tonumber(ARGV[i])
i = i + 1
for _ = 1, c do
  local n = tonumber(ARGV[i])
  redis.call(unpack(ARGV, i + 1, i + n))
  i = i + 1 + n
end

local group = ARGV[#ARGV]
local r = tonumber(ARGV[i])
i = i + 1
for _ = 1, r do
  local taken, stream, id, k = ARGV[i], ARGV[i + 1], ARGV[i + 2], tonumber(ARGV[i + 3])
  redis.call('XACK', stream, group, id)
  local deleted = redis.call('XDEL', stream, id) == 1
  redis.call('HDEL', taken, id, id .. ':a')
  -- An entry deleted already (by a step of an earlier lease) was taken off the counts then.
  for j = i + 4, i + 2 + 2 * k, 2 do
    if deleted and redis.call('HINCRBY', KEYS[1], ARGV[j], -tonumber(ARGV[j + 1])) <= 0 then
      redis.call('HDEL', KEYS[1], ARGV[j])
    end
  end
  i = i + 4 + 2 * k
end
return 1
