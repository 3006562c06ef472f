/**
 * The scheduler's part in conditions that wait (docs/processing.md#conditions-that-wait): every
 * device with a rule that waits (`for`) or a stale rule has one entry in the timers set, scored by
 * its next deadline (kept by the state script, no later than the real one). When an entry comes due,
 * the scheduler queues a tick into the device's ingest partition and removes the entry in one
 * script: exactly once, whatever the number of schedulers. The tick changes nothing by itself — the
 * partition's owner applies it in order with the device's payloads, under its lease (fencing), so a
 * deadline keeps every guarantee a payload has.
 */
import { readFileSync } from 'node:fs';
import { tickItem } from '../domain/ingest-item.ts';
import type { Logger } from '../log/logger.ts';
import { schedulePasses } from './scheduled.ts';
import { packItems } from '../queue/item-codec.ts';
import { partitionOf } from '../queue/partition.ts';
import type { QueueKeys } from '../queue/queue-keys.ts';
import type { Redis } from '../redis/connect.ts';
import type { StateKeys } from '../state/state-keys.ts';

const QUEUE_DUE_LUA = readFileSync(new URL('./lua/queue-due-timers.lua', import.meta.url), 'utf8');
/** Due entries handled per script call. */
const PAGE = 500;

export interface DeviceTimers {
  /** Queues a tick for every device whose timer is due; returns how many were queued. */
  tick(): Promise<number>;
  close(): Promise<void>;
}

type ScriptRedis = Redis & {
  vigilQueueDueTimers(numberOfKeys: number, ...args: (string | number)[]): Promise<number>;
};

export function startDeviceTimers(deps: {
  redis: Redis;
  keys: StateKeys & QueueKeys;
  partitions: number;
  log: Logger;
  intervalMs: number;
  clock?: () => number;
  /** Start the periodic timer (tests call tick() themselves). */
  autoStart?: boolean;
}): DeviceTimers {
  const clock = deps.clock ?? Date.now;
  const redis = deps.redis as ScriptRedis;
  if (typeof (deps.redis as unknown as Partial<ScriptRedis>).vigilQueueDueTimers !== 'function') {
    redis.defineCommand('vigilQueueDueTimers', { lua: QUEUE_DUE_LUA });
  }

  async function queuePage(nowMs: number): Promise<{ seen: number; queued: number }> {
    const due = await redis.zrangebyscore(
      deps.keys.deviceTimers(),
      '-inf',
      nowMs,
      'WITHSCORES',
      'LIMIT',
      0,
      PAGE,
    );
    if (due.length === 0) return { seen: 0, queued: 0 };
    const streams: string[] = [];
    const streamIndex = new Map<number, number>();
    const args: (string | number)[] = [];
    for (let i = 0; i < due.length; i += 2) {
      const member = due[i]!;
      const score = Number(due[i + 1]);
      const [env = '', device = ''] = member.split('\n');
      const partition = partitionOf(member, deps.partitions);
      let index = streamIndex.get(partition);
      if (index === undefined) {
        streams.push(deps.keys.ingestStream(partition));
        index = streams.length + 2;
        streamIndex.set(partition, index);
      }
      args.push(member, score, index, env, packItems([tickItem(env, device, score)]));
    }
    const queued = await redis.vigilQueueDueTimers(
      2 + streams.length,
      deps.keys.deviceTimers(),
      deps.keys.queueBacklog(),
      ...streams,
      ...args,
    );
    return { seen: due.length / 2, queued };
  }

  async function tick(): Promise<number> {
    const nowMs = clock();
    let queued = 0;
    for (;;) {
      const page = await queuePage(nowMs);
      queued += page.queued;
      // A full page may have more behind it; entries another scheduler took are gone from the next.
      if (page.seen < PAGE) return queued;
    }
  }

  const passes = schedulePasses(deps, 'queueing due device timers', tick);
  return { tick, close: () => passes.close() };
}
