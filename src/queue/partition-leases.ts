/**
 * Which worker processes which ingest partition: a lease per partition (a Redis key holding the
 * owner's token, with a TTL of `leaseMs`), renewed every `leaseMs / 3`. Live workers heartbeat in
 * a sorted set; each aims at its fair share, ceil(partitions / live workers): it takes free
 * partitions up to its share and hands back what exceeds it, so a new worker gets work within a
 * renewal and a dead worker's partitions are taken over once its leases expire.
 *
 * Handing back happens only between processing steps (`releasePending`), never under an entry
 * being processed; a lease lost to a long stall is reported by `owns` turning false.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../log/logger.ts';
import type { Redis } from '../redis/connect.ts';
import type { QueueKeys } from './queue-keys.ts';
import { createWakeableSleep } from '../lib/wakeable-sleep.ts';

const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`;
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

export interface PartitionLeases {
  readonly token: string;
  /** Partitions held now, ascending. */
  owned(): number[];
  owns(partition: number): boolean;
  /** Hands back the partitions above this worker's share among `partitions` (none in use). */
  releasePending(partitions: readonly number[]): Promise<void>;
  /** Resolves at the next lease change or after `ms`. */
  changed(ms: number): Promise<void>;
  /** Runs one renewal round now (start-up, tests). */
  tick(): Promise<void>;
  /** Stops renewing and hands back every partition. */
  close(): Promise<void>;
}

export function createPartitionLeases(deps: {
  redis: Redis;
  keys: QueueKeys;
  partitions: number;
  leaseMs: number;
  log: Logger;
  clock?: () => number;
}): PartitionLeases {
  const { redis, keys, partitions, leaseMs, log } = deps;
  const clock = deps.clock ?? Date.now;
  const token = randomUUID();
  const owned = new Set<number>();
  const toRelease = new Set<number>();
  const waits = createWakeableSleep();
  let closed = false;
  const notify = waits.wakeAll;

  const tick = async (): Promise<void> => {
    if (closed) return;
    const now = clock();
    const heartbeat = await redis
      .multi()
      .zadd(keys.queueWorkers(), now, token)
      .zremrangebyscore(keys.queueWorkers(), '-inf', now - leaseMs)
      .zcard(keys.queueWorkers())
      .exec();
    const count = Number(heartbeat?.[2]?.[1] ?? 1);
    const share = Math.ceil(partitions / Math.max(1, count));
    // Renew what is held; a lease that expired meanwhile (a stall) is gone.
    const held = [...owned];
    if (held.length > 0) {
      const renew = redis.pipeline();
      for (const p of held) renew.eval(RENEW, 1, keys.partitionLease(p), token, leaseMs);
      const results = (await renew.exec()) ?? [];
      held.forEach((p, i) => {
        if (results[i]?.[1] !== 1) {
          owned.delete(p);
          toRelease.delete(p);
          log.warn({ partition: p }, 'partition lease lost (this worker stalled); another worker takes over');
        }
      });
    }
    if (owned.size < share) {
      // Try every partition not held, starting at a random one so workers spread out.
      const start = Math.floor(Math.random() * partitions);
      const candidates: number[] = [];
      for (let i = 0; i < partitions; i++) {
        const p = (start + i) % partitions;
        if (!owned.has(p)) candidates.push(p);
      }
      const acquire = redis.pipeline();
      for (const p of candidates) acquire.set(keys.partitionLease(p), token, 'PX', leaseMs, 'NX');
      const results = (await acquire.exec()) ?? [];
      const got = candidates.filter((_, i) => results[i]?.[1] === 'OK');
      // Keep up to the share; what came beyond it was never read, so it goes back at once.
      const keep = got.slice(0, share - owned.size);
      const extra = got.slice(keep.length);
      if (extra.length > 0) {
        const release = redis.pipeline();
        for (const p of extra) release.eval(RELEASE, 1, keys.partitionLease(p), token);
        await release.exec();
      }
      for (const p of keep) owned.add(p);
      if (keep.length > 0) {
        log.info({ partitions: keep, share, workers: count }, 'partitions acquired');
        notify();
      }
    } else if (owned.size > share) {
      for (const p of [...owned].sort((a, b) => b - a).slice(0, owned.size - share)) toRelease.add(p);
      notify();
    }
  };

  let ticking: Promise<void> | undefined;
  const runTick = () => {
    ticking ??= tick()
      .catch((err: unknown) =>
        log.warn({ err: err instanceof Error ? err.message : String(err) }, 'partition lease renewal failed'),
      )
      .finally(() => (ticking = undefined));
    return ticking;
  };
  const timer = setInterval(() => void runTick(), Math.max(100, Math.floor(leaseMs / 3)));
  timer.unref();

  const release = async (list: number[]) => {
    if (list.length === 0) return;
    const pipeline = redis.pipeline();
    for (const p of list) {
      owned.delete(p);
      toRelease.delete(p);
      pipeline.eval(RELEASE, 1, keys.partitionLease(p), token);
    }
    await pipeline.exec();
  };

  return {
    token,
    owned: () => [...owned].sort((a, b) => a - b),
    owns: (p) => owned.has(p),
    async releasePending(among) {
      const list = among.filter((p) => toRelease.has(p));
      if (list.length === 0) return;
      await release(list);
      log.info({ partitions: list }, 'partitions handed back to balance the workers');
    },
    changed: waits.sleep,
    tick: runTick,
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      await ticking;
      notify();
      try {
        await release([...owned]);
        await redis.zrem(keys.queueWorkers(), token);
      } catch {
        // Redis gone: the leases expire by themselves.
      }
    },
  };
}
