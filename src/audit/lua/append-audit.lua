--[[
appendAudit(key, nowMs, keepFromMs, json): appends one entry to an audit stream (audit-keys.ts) as
field `e`, with an id of the change's time `nowMs`, or of the newest entry's when another process's
clock put that one later (a stream's ids only grow); trims entries older than `keepFromMs`
(approximately: whole nodes at a time). Returns the entry's id.
]]
local function appendAudit(key, nowMs, keepFromMs, json)
  local ms = nowMs
  local top = redis.call('XREVRANGE', key, '+', '-', 'COUNT', 1)[1]
  if top then
    local topMs = tonumber(string.match(top[1], '^(%d+)-'))
    if topMs > ms then ms = topMs end
  end
  return redis.call('XADD', key, 'MINID', '~', keepFromMs, string.format('%d-*', ms), 'e', json)
end
