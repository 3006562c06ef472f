--[[
Records that a processing step takes these entries, under the step's leases (as fenced-step.lua
checks them), and answers how often each was taken by a step that never finished: the count (field
`<id>` of the partition's taken-counts hash) is raised here, lowered again when a live worker saw
the step fail (release), and removed when the entry is acknowledged. An entry whose worker died, or
lost its lease, mid-step keeps its count, so the count survives restarts.

A suspect is an entry taken before by a step that never finished. Suspects are never mixed with
other entries, and the worker runs their steps with nothing else in flight (worker/crash-gate.ts),
so a crash is charged to what was in that step only. Finding the culprit among them is a binary
search: the first time after the crash (count 1) the whole group is retried together — most crashes
are no entry's fault (a deploy, the OOM killer, a lost lease) and the group finishes; a group that
crashes again is halved (the suspects of the first one's count, in queue order, half of them), and
so on down to one entry. Crashes an entry caused alone are counted apart (field `<id>:a`): the
worker dead-letters an entry past VIGIL_POISON_DELIVERIES of them.

ARGV: f, f lease keys, f lease values, then n, then n pairs taken-counts key (one per partition),
entry id, in queue order per partition; then the delta (+1 to take, -1 to release); last, the mode:
  take, 'batch': when the entries hold a suspect nothing is taken and the first suspect answers -2;
    else every entry is taken.
  take, 'suspects': only suspects are taken (the group described above).
  release, 'batch' | 'alone': gives the takes back (and, 'alone', the crash counted alone).
Returns {counts, alone}: the count of each entry after the change (0: not taken), and the crashes
counted alone for an entry taken alone (else 0); or -1 when a lease changed hands.
]]
local f = tonumber(ARGV[1])
for j = 1, f do
  if redis.call('GET', ARGV[1 + j]) ~= ARGV[1 + f + j] then return -1 end
end
local i = 2 + 2 * f
local n = tonumber(ARGV[i])
local delta = tonumber(ARGV[#ARGV - 1])
local mode = ARGV[#ARGV]
local function keyOf(j) return ARGV[i + 2 * j - 1] end
local function idOf(j) return ARGV[i + 2 * j] end
local counts = {}

local function change(key, field, by)
  local count = redis.call('HINCRBY', key, field, by)
  if count <= 0 then redis.call('HDEL', key, field) end
  return count
end

if delta < 0 then
  for j = 1, n do
    counts[j] = change(keyOf(j), idOf(j), -1)
    if mode == 'alone' then change(keyOf(j), idOf(j) .. ':a', -1) end
  end
  return { counts, 0 }
end

local stored = {}
local first = nil
for j = 1, n do
  counts[j] = 0
  stored[j] = tonumber(redis.call('HGET', keyOf(j), idOf(j)) or '0')
  if first == nil and stored[j] >= 1 then first = j end
end

if mode == 'batch' then
  if first ~= nil then
    counts[first] = -2
    return { counts, 0 }
  end
  for j = 1, n do counts[j] = change(keyOf(j), idOf(j), 1) end
  return { counts, 0 }
end

if first == nil then return { counts, 0 } end
local level = stored[first]
local group = {}
for j = first, n do
  if stored[j] == level then group[#group + 1] = j end
end
local size = #group
if level > 1 then size = math.ceil(#group / 2) end
local alone = 0
for k = 1, size do
  local j = group[k]
  counts[j] = change(keyOf(j), idOf(j), 1)
  if size == 1 then alone = change(keyOf(j), idOf(j) .. ':a', 1) end
end
return { counts, alone }
