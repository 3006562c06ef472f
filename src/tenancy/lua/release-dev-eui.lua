--[[
Releases the DevEUI claim of a device about to be deleted (TenancyKeys.devEuis): the DevEUI its
stored record has, if the claim is the device's. Run in the deletion's MULTI, before the record goes.

KEYS[1] the device record
KEYS[2] the environment's DevEUI claims
ARGV[1] the device's name
Returns 1 when a claim was released, else 0.
]]
local labels = redis.call('HGET', KEYS[1], 'labels')
if not labels then return 0 end
local ok, decoded = pcall(cjson.decode, labels)
if not (ok and type(decoded) == 'table' and type(decoded.devEui) == 'string') then return 0 end
local eui = string.lower(decoded.devEui)
if redis.call('HGET', KEYS[2], eui) ~= ARGV[1] then return 0 end
return redis.call('HDEL', KEYS[2], eui)
