--[[
Converts one device state hash from the text layout of Vigil before 0.2 (per data point
`<sensor>|u,t,s,r,ri,ls,ss,h`) to the packed layout (`<sensor>|p`, see apply-readings.lua), keeping
`<sensor>|v` and the device fields. Atomic per hash, and idempotent: a data point that already has
its packed field keeps it, and its text fields are only removed.

KEYS[1] device state hash
Returns the number of data points converted.
]]
local LEGACY = { 'u', 't', 's', 'r', 'ri', 'ls', 'ss', 'h' }
local NEVER = 0 / 0
local all = redis.call('HGETALL', KEYS[1])
local h = {}
for i = 1, #all, 2 do h[all[i]] = all[i + 1] end

local writes, drops, converted = {}, {}, 0
for field, updated in pairs(h) do
  local name = string.match(field, '^(.*)|u$')
  if name then
    local f = function(k) return h[name .. '|' .. k] end
    if f('p') == nil then
      local hh, hn, hs, hmin, hmax, hlate = -1, 0, 0, 0, 0, 0
      local hour = f('h')
      if hour and #hour == 48 then hh, hn, hs, hmin, hmax, hlate = struct.unpack('<dddddd', hour) end
      writes[#writes + 1] = name .. '|p'
      writes[#writes + 1] = struct.pack('<Bdddddddddddss', 1, tonumber(updated) or 0,
        tonumber(f('t')) or 0, tonumber(f('r')) or -1, tonumber(f('ls')) or NEVER,
        tonumber(f('ss')) or NEVER, hh, hn, hs, hmin, hmax, hlate, f('s') or 'SUCCESS', f('ri') or '')
      converted = converted + 1
    end
    for _, k in ipairs(LEGACY) do
      if f(k) ~= nil then drops[#drops + 1] = name .. '|' .. k end
    end
  end
end
if #writes > 0 then redis.call('HSET', KEYS[1], unpack(writes)) end
if #drops > 0 then redis.call('HDEL', KEYS[1], unpack(drops)) end
return converted
