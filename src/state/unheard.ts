/**
 * The devices of each environment never heard from (StateKeys.unheardDevices): a device joins the
 * set when it is created without a last contact, and leaves it with its first contact, which
 * the owner's fenced write stores together with the contact, or when it is deleted. So the fleet
 * counts and lists the devices without data by reading the set, not every device's state.
 *
 * Layout 6 builds the set of every environment from the state its devices hold.
 */
import type { ChainableCommander } from 'ioredis';
import type { TenancyKeys } from '../tenancy/tenancy-keys.ts';
import type { Migration } from './migrations.ts';
import { DEVICE_FIELD, type StateKeys } from './state-keys.ts';

/**
 * KEYS[1] the set, then each device's state hash; ARGV the devices' names, in the same order. Adds
 * each device whose state holds no last contact: checked in the script, so that a first contact can
 * come neither between the check and the add nor (the set's only remover) before it.
 */
const ADD_UNHEARD = `local names = {}
for i = 1, #ARGV do
  if redis.call('HEXISTS', KEYS[i + 1], '${DEVICE_FIELD.lastContact}') == 0 then
    names[#names + 1] = 0
    names[#names + 1] = ARGV[i]
  end
  if #names >= 1000 or (i == #ARGV and #names > 0) then
    redis.call('ZADD', KEYS[1], unpack(names))
    names = {}
  end
end
return 0`;

/**
 * Adds to `pipe` the marking of `devices` as never heard from where their state has no last contact:
 * for devices being created, before their records are written (no payload of theirs is accepted
 * before).
 */
export function addUnheard(
  pipe: ChainableCommander,
  keys: StateKeys,
  env: string,
  devices: readonly string[],
): void {
  if (devices.length === 0) return;
  pipe.eval(
    ADD_UNHEARD,
    1 + devices.length,
    keys.unheardDevices(env),
    ...devices.map((d) => keys.deviceState(env, d)),
    ...devices,
  );
}

/** Devices looked at per script call of the migration. */
const BATCH = 1000;

export const keepUnheardDevices: Migration<StateKeys & TenancyKeys> = {
  version: 6,
  description: 'keep the devices never heard from of every environment in a set',
  async run({ redis, keys, log, signal }) {
    let unheard = 0;
    for (const env of await redis.smembers(keys.envs())) {
      for (let start = 0; ; start += BATCH) {
        signal.throwIfAborted();
        const names = await redis.zrange(keys.devices(env), start, start + BATCH - 1);
        if (names.length === 0) break;
        const pipe = redis.pipeline();
        addUnheard(pipe, keys, env, names);
        await pipe.exec();
        if (names.length < BATCH) break;
      }
      unheard += await redis.zcard(keys.unheardDevices(env));
    }
    // A worker of an earlier version would not take a device it hears from out of the set: the
    // upgrade stops those workers before the migration runs (operations.md#upgrades).
    log.info({ unheard }, 'sets of devices never heard from built');
  },
};
