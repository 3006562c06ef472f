--[[
Reads new entries of the step's partitions for a consumer group — only while the reader holds every
partition's lease (the fence, as fenced-step.lua checks it). Reading new entries moves the group's
delivery mark: a worker that lost a lease must not read on, or the entries it is given would sit
pending behind the new owner's reads, and be processed out of order. Non-blocking; the caller waits
for news with a plain XREAD, which moves nothing.

KEYS: the partition streams.  ARGV: f, f lease keys, f lease values, then count, group, consumer.
Returns -1 when a lease changed hands; {entries} (XREADGROUP's reply) when there were some; else
{false, last ids}: the id of each stream's newest entry ('0-0' when empty), to wait on.
]]
local f = tonumber(ARGV[1])
for j = 1, f do
  if redis.call('GET', ARGV[1 + j]) ~= ARGV[1 + f + j] then return -1 end
end
local i = 2 + 2 * f
local args = { 'GROUP', ARGV[i + 1], ARGV[i + 2], 'COUNT', ARGV[i], 'STREAMS' }
for k = 1, #KEYS do args[#args + 1] = KEYS[k] end
for k = 1, #KEYS do args[#args + 1] = '>' end
local reply = redis.call('XREADGROUP', unpack(args))
if reply then return { reply } end
local last = {}
for k = 1, #KEYS do
  local newest = redis.call('XREVRANGE', KEYS[k], '+', '-', 'COUNT', 1)
  last[k] = newest[1] and newest[1][1] or '0-0'
end
return { false, last }
