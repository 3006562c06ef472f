/**
 * Removing a device's events with the device: from its own sorted set and from its environment's,
 * so that no listing (the read API's, the console's) shows events of a device that is gone.
 */
import type { ChainableCommander } from 'ioredis';
import type { EventKeys } from './event-keys.ts';

/**
 * Removes the members of KEYS[1] (the device's events) from KEYS[2] (the environment's), a
 * thousand at a time (unpack takes only a few thousand values), then KEYS[1] itself. Every event is
 * added to both sets by one script and both are capped to the same count, while the device's set
 * holds only its own events: the environment's events of the device are always among the device's.
 */
const DROP_DEVICE_EVENTS = `local members = redis.call('ZRANGE', KEYS[1], 0, -1)
for i = 1, #members, 1000 do
  redis.call('ZREM', KEYS[2], unpack(members, i, math.min(i + 999, #members)))
end
redis.call('DEL', KEYS[1])
return #members`;

/** Adds to `multi` the removal of a device's events, for deleting the device. */
export function dropDeviceEvents(
  multi: ChainableCommander,
  keys: EventKeys,
  env: string,
  device: string,
): void {
  multi.eval(DROP_DEVICE_EVENTS, 2, keys.deviceEvents(env, device), keys.envEvents(env));
}
