/**
 * The sweeper of late hours: enqueues one rollup job per hour marked in the late-hours hash
 * (late-hours.ts), each time the hour is marked anew. Jobs are deduplicated per hour (BullMQ's
 * deduplication id, rollupJobId): enqueuing an hour whose job waits changes nothing, and enqueuing
 * one whose job runs keeps one more job for after it, so a value marked while a job recomputes
 * its hour is never left to wait. The marks are the record, jobs only how they are worked off: an
 * hour still marked `REENQUEUE_MS` after it was enqueued (its job failed every attempt) is
 * enqueued again.
 */
import type { Queue } from 'bullmq';
import type { Redis } from '../redis/connect.ts';
import type { HistoryKeys } from './history-keys.ts';
import { rollupJobId, type RollupJob } from './rollup-repair.ts';

/** A late hour still marked this long after it was enqueued is enqueued again, in ms. */
export const REENQUEUE_MS = 30_000;
/** Most jobs one sweep enqueues; the rest wait for the next sweep. */
const MAX_ENQUEUED_PER_SWEEP = 20_000;
const PAGE = 1000;

interface Enqueued {
  token: string;
  atMs: number;
}

/** One pass over the late hours; returns how many are marked. */
export type Sweep = () => Promise<number>;

export function createLateHourSweeper(deps: {
  redis: Redis;
  keys: HistoryKeys;
  queue: Queue<RollupJob>;
  clock?: () => number;
}): Sweep {
  const { redis, keys, queue } = deps;
  const clock = deps.clock ?? Date.now;
  /** Late hour → the mark's token when it was enqueued, and when. */
  let enqueued = new Map<string, Enqueued>();

  /** The hours to enqueue now, and what is known of every marked hour after that. */
  async function scan(nowMs: number): Promise<{ fields: string[]; seen: Map<string, Enqueued> }> {
    const seen = new Map<string, Enqueued>();
    const fields: string[] = [];
    let cursor = '0';
    do {
      const [next, flat] = await redis.hscan(keys.lateHours(), cursor, 'COUNT', PAGE);
      cursor = next;
      for (let i = 0; i < flat.length; i += 2) {
        const field = flat[i]!;
        const token = flat[i + 1]!;
        const known = enqueued.get(field);
        if (known?.token === token && nowMs - known.atMs < REENQUEUE_MS) seen.set(field, known);
        else if (fields.length < MAX_ENQUEUED_PER_SWEEP) {
          fields.push(field);
          seen.set(field, { token, atMs: nowMs });
        }
      }
    } while (cursor !== '0');
    return { fields, seen };
  }

  return async () => {
    const { fields, seen } = await scan(clock());
    for (let i = 0; i < fields.length; i += PAGE) {
      const jobs = fields.slice(i, i + PAGE).map((field) => ({
        name: 'hour',
        data: { field },
        opts: { deduplication: { id: rollupJobId(field), keepLastIfActive: true } },
      }));
      await queue.addBulk(jobs);
    }
    enqueued = seen;
    return seen.size;
  };
}
