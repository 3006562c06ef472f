/**
 * The scheduler role: finds devices whose availability deadline (last contact + timeout) has
 * passed and creates one Availability event each. Deadlines live in one sorted set, so a tick
 * reads only the devices that are due — never a scan of all devices. Any number of schedulers may
 * run: the state step removes a deadline and creates the event atomically, exactly once.
 */
import { availabilityLostMessage } from '../domain/event-messages.ts';
import { isoUtc } from '../domain/time.ts';
import type { Logger } from '../log/logger.ts';
import type { Redis } from '../redis/connect.ts';
import type { Keys } from '../state/keys.ts';
import { DEVICE_FIELD } from '../state/keys.ts';
import type { StateStore } from '../state/state-store.ts';
import type { Catalog } from '../worker/catalog.ts';

export interface AvailabilityScheduler {
  /** One pass over every due device; returns the number of events created. */
  tick(): Promise<number>;
  close(): Promise<void>;
}

export function startAvailabilityScheduler(deps: {
  redis: Redis;
  keys: Keys;
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
      for (let i = 0; i < due.length; i += 2) {
        if (await markLost(due[i]!, Number(due[i + 1]), nowMs)) created += 1;
      }
      if (due.length < page * 2) return created;
    }
  }

  async function markLost(member: string, deadlineMs: number, nowMs: number): Promise<boolean> {
    const [env = '', device = ''] = member.split('\n');
    const record = (await deps.catalog.devices(env, [device])).get(device);
    if (!record) {
      // Deleted since its last contact: nothing to watch any more.
      await deps.redis.zrem(deps.keys.availabilityDeadlines(), member);
      return false;
    }
    const definition = await deps.catalog.definition(env, record.definitionName, record.definitionIsPublic);
    const status = definition?.spec.availability?.status ?? 'ERROR';
    const lastContactMs = Number(
      await deps.redis.hget(deps.keys.deviceState(env, device), DEVICE_FIELD.lastContact),
    );
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

  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let running: Promise<unknown> = Promise.resolve();
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = tick()
        .catch((err: unknown) =>
          deps.log.warn(
            { err: err instanceof Error ? err.message : String(err) },
            'availability check failed',
          ),
        )
        .finally(schedule);
    }, deps.intervalMs);
  };
  if (deps.autoStart !== false) schedule();
  return {
    tick,
    close: async () => {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
