--[[
Seals a digest batch and returns its content: the count of held events and the newest (at most
100) of them. Sealing is idempotent (a retried digest gets the same content), and a sealed batch
takes no more events (admit.lua sends those on their own), so none is lost between the read and
the seal.

KEYS[1] batch hash  KEYS[2] its events list  KEYS[3] its id set  ARGV[1] how long batch keys are kept, ms
Returns {count, {event JSON…}}.
]]
redis.call('HSET', KEYS[1], 'sealed', '1')
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[3])
return {tonumber(redis.call('HGET', KEYS[1], 'count') or '0'), redis.call('LRANGE', KEYS[2], 0, -1)}
