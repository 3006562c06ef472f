/**
 * Layout 2: every environment has an alarm index (lua/alarm-index.lua). Installs from before it get
 * theirs built from the state they hold: each data point in a status other than SUCCESS, and each
 * device whose contact is lost, becomes an open alarm, unacknowledged. Nothing else is written: no
 * event, no outbox entry, so an upgrade notifies no one.
 */
import type { EventRecord, RuleStatus } from '../domain/types.ts';
import type { EventKeys } from '../events/event-keys.ts';
import type { Redis } from '../redis/connect.ts';
import { withAlarmIndex } from './alarm-index.ts';
import type { Migration } from './migrations.ts';
import { decodePointV1 } from './point-record-v1.ts';
import { DEVICE_FIELD, type StateKeys } from './state-keys.ts';

/** Opens the alarms given as ARGV (device, sensor, category, status, since ms per alarm). */
const OPEN_ALARMS = withAlarmIndex(`for i = 1, #ARGV, 5 do
  setAlarm(KEYS[1], KEYS[2], ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], tonumber(ARGV[i + 4]), nil)
end
return 0`);

/** The Availability status a lost device is in when its lost event is no longer kept. */
const DEFAULT_LOST_STATUS: RuleStatus = 'ERROR';

interface FoundAlarm {
  sensor: string;
  category: 'Sensors' | 'Availability';
  status: string;
  sinceMs: number;
}

export const buildAlarmIndexes: Migration<StateKeys & EventKeys> = {
  version: 2,
  description: 'build the alarm index of every environment from its current state',
  async run({ redis, keys, log, signal }) {
    const statePrefix = `${keys.prefix}:state:{`;
    let cursor = '0';
    let devices = 0;
    do {
      signal.throwIfAborted();
      const [next, batch] = await redis.scan(cursor, 'MATCH', keys.stateHashes(), 'COUNT', 500);
      cursor = next;
      for (const key of batch) {
        // `<prefix>:state:{<env>/<device>}`: environment names hold no '/'.
        const tag = key.startsWith(statePrefix) && key.endsWith('}') ? key.slice(statePrefix.length, -1) : '';
        const slash = tag.indexOf('/');
        if (slash <= 0) continue;
        const env = tag.slice(0, slash);
        const device = tag.slice(slash + 1);
        const alarms = await alarmsOf(redis, keys, key, env, device);
        if (alarms.length === 0) continue;
        const args = alarms.flatMap((a) => [device, a.sensor, a.category, a.status, a.sinceMs]);
        await redis.eval(OPEN_ALARMS, 2, keys.alarmIndex(env), keys.alarmRecords(env), ...args);
        devices += 1;
      }
    } while (cursor !== '0');
    log.info({ devices }, 'alarm indexes built');
  },
};

/** The open alarms of one device, from its state hash (and its events, for a lost contact's status). */
async function alarmsOf(
  redis: Redis,
  keys: StateKeys & EventKeys,
  stateKey: string,
  env: string,
  device: string,
): Promise<FoundAlarm[]> {
  const hash = await redis.hgetallBuffer(stateKey);
  const found: FoundAlarm[] = [];
  for (const [field, raw] of Object.entries(hash)) {
    if (!field.endsWith('|p')) continue;
    const point = decodePointV1(raw);
    // A layout this version does not know is left to the readers, which refuse it.
    if (!point || point.status === 'SUCCESS') continue;
    found.push({
      sensor: field.slice(0, -2),
      category: 'Sensors',
      status: point.status,
      sinceMs: point.statusSinceMs ?? point.updatedMs,
    });
  }
  if (hash[DEVICE_FIELD.contactLost]?.toString() === '1') {
    const lost = await lostEvent(redis, keys.deviceEvents(env, device));
    const deadline = Number(hash[DEVICE_FIELD.deadline]?.toString());
    found.push({
      sensor: '',
      category: 'Availability',
      status: lost?.eventStatus ?? DEFAULT_LOST_STATUS,
      sinceMs: lost?.receivedMs ?? (Number.isFinite(deadline) ? deadline : Date.now()),
    });
  }
  return found;
}

/** The device's latest Availability event, if it is the loss (not the return) and still kept. */
async function lostEvent(redis: Redis, eventsKey: string): Promise<EventRecord | undefined> {
  for (const json of await redis.zrevrange(eventsKey, 0, -1)) {
    const e = JSON.parse(json) as EventRecord;
    if (e.eventCategory !== 'Availability') continue;
    return e.eventStatus === 'SUCCESS' ? undefined : e;
  }
  return undefined;
}
