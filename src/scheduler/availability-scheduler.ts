/**
 * The scheduler role: finds devices whose availability deadline (last contact + timeout) has
 * passed and creates one Availability event each. Deadlines live in one sorted set, so a tick
 * reads only the devices that are due — never a scan of all devices. Any number of schedulers may
 * run: the state step removes a deadline and creates the event atomically, exactly once.
 */
import { availabilityLostMessage } from '../domain/event-messages.ts';
import { isoUtc } from '../domain/time.ts';
import type { Logger } from '../log/logger.ts';
import { schedulePasses } from './scheduled.ts';
import type { Redis } from '../redis/connect.ts';
import type { StateKeys } from '../state/state-keys.ts';
import { DEVICE_FIELD } from '../state/state-keys.ts';
import type { DueDeadline, StateStore } from '../state/state-store.ts';
import type { Catalog } from '../tenancy/catalog.ts';

export interface AvailabilityScheduler {
  /** One pass over every due device; returns the number of events created. */
  tick(): Promise<number>;
  close(): Promise<void>;
}

export function startAvailabilityScheduler(deps: {
  redis: Redis;
  keys: StateKeys;
  state: StateStore;
  catalog: Catalog;
  log: Logger;
  intervalMs: number;
  clock?: () => number;
  /** Start the periodic timer (tests call tick() themselves). */
  autoStart?: boolean;
}): AvailabilityScheduler {
  const clock = deps.clock ?? Date.now;
  const page = 500;

  async function tick(): Promise<number> {
    const nowMs = clock();
    let created = 0;
    for (;;) {
      const due = await deps.redis.zrangebyscore(
        deps.keys.availabilityDeadlines(),
        '-inf',
        nowMs,
        'WITHSCORES',
        'LIMIT',
        0,
        page,
      );
      const entries: DueDeadline[] = [];
      for (let i = 0; i < due.length; i += 2) {
        const [env = '', device = ''] = due[i]!.split('\n');
        entries.push({ env, device, deadlineMs: Number(due[i + 1]) });
      }
      // Deadlines move lazily (domain/device-step.ts): most due entries of a live fleet belong to
      // devices with contact since, which move on in one round trip; the rest are looked at one
      // by one.
      const contact = await readContact(entries);
      const live = contact.map((c) => c.timeoutMs > 0 && c.lastContactMs + c.timeoutMs > nowMs);
      await deps.state.moveDeadlines(
        entries.filter((_, i) => live[i]),
        nowMs,
      );
      for (const [i, e] of entries.entries()) {
        if (!live[i] && (await markLost(e, contact[i]!.lastContactMs, nowMs))) created += 1;
      }
      if (due.length < page * 2) return created;
    }
  }

  /** Each entry's device's last contact and timeout (0 where unknown), in one round trip. */
  async function readContact(
    entries: readonly DueDeadline[],
  ): Promise<{ lastContactMs: number; timeoutMs: number }[]> {
    if (entries.length === 0) return [];
    const pipeline = deps.redis.pipeline();
    for (const e of entries) {
      pipeline.hmget(deps.keys.deviceState(e.env, e.device), DEVICE_FIELD.lastContact, DEVICE_FIELD.timeout);
    }
    const results = (await pipeline.exec()) ?? [];
    return entries.map((_, i) => {
      const [err, fields] = results[i] ?? [new Error('no reply'), null];
      if (err) throw err;
      const [lc, timeout] = fields as (string | null)[];
      return { lastContactMs: Number(lc), timeoutMs: Number(timeout) };
    });
  }

  async function markLost(
    { env, device, deadlineMs }: DueDeadline,
    lastContactMs: number,
    nowMs: number,
  ): Promise<boolean> {
    const member = `${env}\n${device}`;
    const record = (await deps.catalog.devices(env, [device])).get(device);
    if (!record) {
      // Deleted since its last contact: nothing to watch any more.
      await deps.redis.zrem(deps.keys.availabilityDeadlines(), member);
      return false;
    }
    const definition = await deps.catalog.definition(env, record.definitionName, record.definitionIsPublic);
    const status = definition?.spec.availability?.status ?? 'ERROR';
    const minutes = Math.floor((nowMs - lastContactMs) / 60_000);
    const lastContactIso = isoUtc(lastContactMs) ?? '';
    const event = {
      id: `${env}/${device}/availability-lost/${deadlineMs}`,
      env,
      deviceName: device,
      displayName: record.displayName,
      sensorName: 'availability',
      sensorType: 'availability',
      sensorValue: minutes,
      eventStatus: status,
      eventCategory: 'Availability',
      eventMessage: availabilityLostMessage(minutes, lastContactIso, status),
      receivedMs: nowMs,
    };
    const created = await deps.state.markContactLost(env, device, deadlineMs, JSON.stringify(event), nowMs);
    if (created) deps.log.info({ env, device, minutes }, 'device contact lost');
    return created;
  }

  const passes = schedulePasses(deps, 'availability check', tick);
  return { tick, close: () => passes.close() };
}
