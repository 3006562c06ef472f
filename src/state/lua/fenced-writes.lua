--[[
The state writes of a worker step, decided by the partition's owner (src/domain/device-step.ts):
run only while the step's worker still holds every partition lease it read under, and for each
device only while the device's state is the version the owner decided from. This script decides
nothing: it checks and writes what it is given.

KEYS: every key written (commands name theirs by index), the lease keys among them.
ARGV: f, then f pairs (lease key index, lease value the step read under);
      d, then per device: index of its state key, the version its owner read ('' = none), c, then
      c commands, each as its argument count n, then n values: the command's name, the index of its
      key, the other arguments.
Returns the positions (from 1) of the devices whose version differed (nothing of them was written);
an error VIGIL_GUARD_LOST when a lease changed hands (nothing at all was written).
]]
local i = 1
local f = tonumber(ARGV[i])
for j = 0, f - 1 do
  if redis.call('GET', KEYS[tonumber(ARGV[i + 1 + 2 * j])]) ~= ARGV[i + 2 + 2 * j] then
    return redis.error_reply('VIGIL_GUARD_LOST a partition lease changed hands')
  end
end
i = i + 1 + 2 * f
local refused = {}
local d = tonumber(ARGV[i])
i = i + 1
for device = 1, d do
  local stateKey, expected, c = KEYS[tonumber(ARGV[i])], ARGV[i + 1], tonumber(ARGV[i + 2])
  i = i + 3
  local version = redis.call('HGET', stateKey, '@ver')
  local current = version ~= false and version == expected or (version == false and expected == '')
  if not current then refused[#refused + 1] = device end
  for _ = 1, c do
    local n = tonumber(ARGV[i])
    if current then redis.call(ARGV[i + 1], KEYS[tonumber(ARGV[i + 2])], unpack(ARGV, i + 3, i + n)) end
    i = i + 1 + n
  end
end
return refused
