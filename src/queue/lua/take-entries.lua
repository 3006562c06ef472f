--[[
Records that a processing step takes these entries, under the step's leases (as fenced-step.lua
checks them), and answers how often each was taken by a step that never finished: the count is
raised here, lowered again when a live worker saw the step fail (release), and removed when the
entry is acknowledged. An entry whose worker died, or lost its lease, mid-step keeps its count, so
the count survives restarts: it is the number of crashes the entry was part of.

A suspect — an entry taken before by a step that never finished — is taken alone: when the entries
hold one, only the first suspect is taken and every other entry answers 0 (not taken, still
pending). So when a step dies on one bad entry, the entries of that step are retried one by one,
the healthy ones finish and drop their counts, and only the culprit's count keeps growing.

ARGV: f, f lease keys, f lease values, then n, then n pairs taken-counts key (one per partition),
entry id, in queue order per partition; last, the delta (+1 to take, -1 to release).
Returns the count of each entry after the change (0: not taken), or -1 (one number) when a lease
changed hands.
]]
local f = tonumber(ARGV[1])
for j = 1, f do
  if redis.call('GET', ARGV[1 + j]) ~= ARGV[1 + f + j] then return -1 end
end
local i = 2 + 2 * f
local n = tonumber(ARGV[i])
local delta = tonumber(ARGV[#ARGV])
local counts = {}
if delta < 0 then
  for j = 1, n do
    local key, id = ARGV[i + 2 * j - 1], ARGV[i + 2 * j]
    local count = redis.call('HINCRBY', key, id, -1)
    if count <= 0 then redis.call('HDEL', key, id) end
    counts[j] = count
  end
  return counts
end
local suspect = nil
for j = 1, n do
  counts[j] = 0
  if suspect == nil and tonumber(redis.call('HGET', ARGV[i + 2 * j - 1], ARGV[i + 2 * j]) or '0') >= 1 then
    suspect = j
  end
end
for j = 1, n do
  if suspect == nil or suspect == j then
    counts[j] = redis.call('HINCRBY', ARGV[i + 2 * j - 1], ARGV[i + 2 * j], 1)
  end
end
return counts
