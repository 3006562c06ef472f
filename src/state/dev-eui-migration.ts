/**
 * Layout 7: a DevEUI names one device (TenancyKeys.devEuis, src/tenancy/admin-devices.ts). Before,
 * a `devEui` label was free text: every device whose label is 16 hex digits gets its claim, the
 * first in the label index (by label as written, then name) where two have one, and a label written in uppercase is stored lowercase (the
 * record's revision counts the change, and the label index follows). A label that is not a DevEUI,
 * or one a device by an earlier name holds, is left as it is and logged: that device's next write
 * is refused (INVALID_INPUT, DEV_EUI_TAKEN) until its label is mended. Per device in one script that
 * checks the record still has the label: a migration that stopped half-way resumes.
 */
import { DEV_EUI_LABEL, normalDevEui } from '../domain/identifiers.ts';
import type { TenancyKeys } from '../tenancy/tenancy-keys.ts';
import type { Migration } from './migrations.ts';

/**
 * KEYS[1] the device record, KEYS[2] the DevEUI claims, KEYS[3] the devEui label index; ARGV[1] the
 * device's name, ARGV[2] its label as stored, ARGV[3] that lowercase. Returns 1 when the device
 * holds its DevEUI, 0 when another device does, -1 when the record no longer has that label.
 */
const CLAIM = `
local labels = redis.call('HGET', KEYS[1], 'labels')
if not labels then return -1 end
local ok, decoded = pcall(cjson.decode, labels)
if not ok or type(decoded) ~= 'table' or decoded.devEui ~= ARGV[2] then return -1 end
local holder = redis.call('HGET', KEYS[2], ARGV[3])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[2], ARGV[3], ARGV[1])
if ARGV[2] ~= ARGV[3] then
  decoded.devEui = ARGV[3]
  local revision = tonumber(redis.call('HGET', KEYS[1], 'revision')) or 1
  redis.call('HSET', KEYS[1], 'labels', cjson.encode(decoded), 'revision', revision + 1)
  redis.call('ZREM', KEYS[3], ARGV[2] .. '\\n' .. ARGV[1])
  redis.call('ZADD', KEYS[3], 0, ARGV[3] .. '\\n' .. ARGV[1])
end
return 1`;

/** Label index members read per round trip. */
const BATCH = 1000;

export const claimDevEuis: Migration<TenancyKeys> = {
  version: 7,
  description: 'give each device its devEui label as a claim, the label lowercase',
  async run({ redis, keys, log, signal }) {
    let claimed = 0;
    for (const env of await redis.smembers(keys.envs())) {
      const index = keys.labelIndex(env, DEV_EUI_LABEL);
      // By name, not rank: a label made lowercase moves its member to a later place in the index
      // (where it is met again, and answered as before), and ranks after it shift.
      for (let from = '-'; ;) {
        signal.throwIfAborted();
        const members = await redis.zrangebylex(index, from, '+', 'LIMIT', 0, BATCH);
        for (const member of members) {
          const cut = member.lastIndexOf('\n');
          const [label, device] = [member.slice(0, cut), member.slice(cut + 1)];
          const eui = normalDevEui(label);
          if (eui === null) {
            log.warn({ env, device, devEui: label }, 'devEui label is not a DevEUI: left as it is');
            continue;
          }
          const args = [keys.device(env, device), keys.devEuis(env), index, device, label, eui];
          const outcome = (await redis.eval(CLAIM, 3, ...args)) as number;
          if (outcome === 1 && label === eui) claimed++;
          if (outcome === 0)
            log.warn({ env, device, devEui: eui }, 'devEui label held by another device: left as it is');
        }
        const last = members.at(-1);
        if (members.length < BATCH || last === undefined) break;
        from = `(${last}`;
      }
    }
    log.info({ claimed }, 'DevEUIs claimed');
  },
};
