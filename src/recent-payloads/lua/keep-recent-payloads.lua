--[[
Writes the recent payloads a worker gathered, each device's list one LPUSH and one LTRIM.

ARGV: the count kept, then per environment its written counter, its devices set and m, then m
devices, each its name, list key, n and its n new entries oldest first (LPUSH puts the last
argument first: the newest ends up at the head). A device deleted since its step (no longer in the
set) gets nothing, and an environment's counter rises only when one of its devices got entries, so
a deletion is not undone. A key that is not a list (written by hand) is passed over, not the end of
the rest. Returns how many keys were passed over.
]]
local keep = tonumber(ARGV[1])
local refused = 0
local i = 2
while i <= #ARGV do
  local written, devices, m = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  i = i + 3
  local any = false
  for _ = 1, m do
    local device, key, n = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
    if redis.call('ZSCORE', devices, device) then
      local pushed = redis.pcall('LPUSH', key, unpack(ARGV, i + 3, i + 2 + n))
      if type(pushed) == 'table' and pushed.err then
        refused = refused + 1
      else
        redis.call('LTRIM', key, 0, keep - 1)
        any = true
      end
    end
    i = i + 3 + n
  end
  if any then redis.call('INCR', written) end
end
return refused
