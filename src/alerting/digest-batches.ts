/**
 * Flood control and quiet hours hold notifications in digest batches (lua/admit.lua): more than
 * `threshold` notifications for one channel within its flood window, and everything a route
 * matches during its quiet hours. A batch's digest is one notification, due when the window or the
 * quiet hours end; building it seals the batch (lua/seal.lua), so what comes later is sent on its
 * own instead of being lost.
 */
import { readFileSync } from 'node:fs';
import type { EventRecord } from '../domain/types.ts';
import type { Redis } from '../redis/connect.ts';
import type { AlertingKeys } from './alerting-keys.ts';
import type { DigestContent } from './notification.ts';

const admitLua = readFileSync(new URL('./lua/admit.lua', import.meta.url), 'utf8');
const sealLua = readFileSync(new URL('./lua/seal.lua', import.meta.url), 'utf8');

export type Admission =
  { action: 'send'; nowMs: number } | { action: 'hold'; nowMs: number; batchId: string; dueMs: number };

type Reply = [action: string, nowMs: number, batchId?: string, dueMs?: string];

interface ScriptRedis {
  vigilNotifyAdmit(key: string, ...args: (string | number)[]): Promise<Reply>;
  vigilNotifySeal(...keysAndArgs: (string | number)[]): Promise<[number, string[]]>;
}

export interface DigestBatches {
  /** Counts a notification for a channel in its flood window: send it, or hold it for the window's digest. */
  admit(env: string, channelId: string, event: EventRecord): Promise<Admission>;
  /** Holds a notification in `batchId` (quiet hours) until `dueMs`; 'send' when that batch is sealed already. */
  hold(
    env: string,
    channelId: string,
    batchId: string,
    dueMs: number,
    event: EventRecord,
  ): Promise<Admission>;
  /** Seals a batch and returns its content (the same on every call). */
  seal(env: string, batchId: string): Promise<DigestContent>;
}

export function createDigestBatches(deps: {
  redis: Redis;
  keys: AlertingKeys;
  windowMs: number;
  threshold: number;
  /** How long batch keys are kept: longer than a digest can take to be delivered. */
  keepMs: number;
}): DigestBatches {
  const { redis, keys } = deps;
  redis.defineCommand('vigilNotifyAdmit', { numberOfKeys: 1, lua: admitLua });
  redis.defineCommand('vigilNotifySeal', { numberOfKeys: 3, lua: sealLua });
  const scripts = redis as unknown as ScriptRedis;

  const toAdmission = (r: Reply): Admission =>
    r[0] === 'hold'
      ? { action: 'hold', nowMs: Number(r[1]), batchId: r[2] ?? '', dueMs: Number(r[3]) }
      : { action: 'send', nowMs: Number(r[1]) };

  const run = (
    env: string,
    channelId: string,
    mode: 'admit' | 'hold',
    batchId: string,
    dueMs: number,
    event: EventRecord,
  ) =>
    scripts
      .vigilNotifyAdmit(
        keys.floodWindow(env, channelId),
        mode,
        keys.digestBatchPrefix(env),
        deps.windowMs,
        deps.threshold,
        channelId,
        batchId,
        dueMs,
        event.id,
        JSON.stringify(event),
        deps.keepMs,
      )
      .then(toAdmission);

  return {
    admit: (env, channelId, event) => run(env, channelId, 'admit', '', 0, event),
    hold: (env, channelId, batchId, dueMs, event) => run(env, channelId, 'hold', batchId, dueMs, event),
    async seal(env, batchId) {
      const key = keys.digestBatch(env, batchId);
      const [count, events] = await scripts.vigilNotifySeal(key, `${key}:events`, `${key}:ids`, deps.keepMs);
      return { count, events: events.map((e) => JSON.parse(e) as EventRecord) };
    },
  };
}
