/**
 * Which worker processes which ingest partition: a lease per partition (a Redis key with a TTL of
 * `leaseMs`), renewed every `leaseMs / 3`. Live workers heartbeat in a sorted set; each aims at its
 * fair share, ceil(partitions / live workers): it takes free partitions up to its share and hands
 * back what exceeds it, so a new worker gets work within a renewal and a dead worker's partitions are
 * taken over once its leases expire.
 *
 * Fencing: a lease's value is `<worker token>:<fence>`, where the fence is a per-partition number
 * raised every time the partition changes hands (also when the same worker takes it again after
 * losing it). A step records the values of the leases it read under (`fenceOf`), and every effect
 * that must happen under them — the state script, the acknowledgement, dead-lettering, the
 * ingestion log, renewals — checks them inside the same Redis script (fenced-step.lua), so a worker
 * that stalled past its lease and woke up after another took over is refused, even before it
 * notices. Handing back happens only between processing steps (`releasePending`): a partition to
 * hand back starts no new step (`releasing`) and goes once no step of it is still finishing.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../log/logger.ts';
import type { Redis } from '../redis/connect.ts';
import type { QueueKeys } from './queue-keys.ts';
import { createWakeableSleep } from '../lib/wakeable-sleep.ts';
import { startPeriodic } from '../lib/periodic.ts';

/** Takes a free lease with the next fencing token; answers the lease's value, or nil when held. */
const ACQUIRE = `if redis.call('EXISTS', KEYS[1]) == 1 then return false end
local value = ARGV[1] .. ':' .. redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], value, 'PX', ARGV[2])
return value`;
const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`;
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

/** The leases a step read under: what its fenced effects check. */
export interface Fence {
  readonly leaseKeys: readonly string[];
  /** `<worker token>:<fence>` of each lease, as when the step read its entries. */
  readonly values: readonly string[];
}

export interface PartitionLeases {
  readonly token: string;
  /** Partitions held now, ascending. */
  owned(): number[];
  /** The value of each lease held now (`<token>:<fence>`): a new value is a new tenure. */
  held(): ReadonlyMap<number, string>;
  owns(partition: number): boolean;
  /** The fence of `partitions` (all held now); undefined when one is not held. */
  fenceOf(partitions: readonly number[]): Fence | undefined;
  /** Whether every lease of `fence` is still held, as far as this process knows. */
  holds(fence: Fence): boolean;
  /** Partitions held above this worker's share, to hand back once no step of theirs is in flight. */
  releasing(): ReadonlySet<number>;
  /**
   * Hands back those of `partitions` that are above this worker's share; the caller passes only
   * partitions with no step in flight. Answers the partitions handed back.
   */
  releasePending(partitions: readonly number[]): Promise<number[]>;
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
  /** Partition → the value of its lease (`<token>:<fence>`). */
  const owned = new Map<number, string>();
  const toRelease = new Set<number>();
  const waits = createWakeableSleep();
  let closed = false;
  const notify = waits.wakeAll;

  const renew = async () => {
    const held = [...owned];
    if (held.length === 0) return;
    const pipeline = redis.pipeline();
    for (const [p, value] of held) pipeline.eval(RENEW, 1, keys.partitionLease(p), value, leaseMs);
    const results = (await pipeline.exec()) ?? [];
    held.forEach(([p, value], i) => {
      if (results[i]?.[1] === 1 || owned.get(p) !== value) return;
      owned.delete(p);
      toRelease.delete(p);
      log.warn({ partition: p }, 'partition lease lost (this worker stalled); another worker takes over');
      notify();
    });
  };

  const acquire = async (share: number, workers: number) => {
    // Try every partition not held, starting at a random one so workers spread out.
    const start = Math.floor(Math.random() * partitions);
    const candidates: number[] = [];
    for (let i = 0; i < partitions; i++) {
      const p = (start + i) % partitions;
      if (!owned.has(p)) candidates.push(p);
    }
    const pipeline = redis.pipeline();
    for (const p of candidates)
      pipeline.eval(ACQUIRE, 2, keys.partitionLease(p), keys.partitionFence(p), token, leaseMs);
    const results = (await pipeline.exec()) ?? [];
    const got: [number, string][] = [];
    candidates.forEach((p, i) => {
      const value = results[i]?.[1];
      if (typeof value === 'string') got.push([p, value]);
    });
    // Keep up to the share; what came beyond it was never read, so it goes back at once.
    const keep = got.slice(0, share - owned.size);
    const extra = got.slice(keep.length);
    if (extra.length > 0) {
      const release = redis.pipeline();
      for (const [p, value] of extra) release.eval(RELEASE, 1, keys.partitionLease(p), value);
      await release.exec();
    }
    for (const [p, value] of keep) owned.set(p, value);
    if (keep.length > 0) {
      log.info({ partitions: keep.map(([p]) => p), share, workers }, 'partitions acquired');
      notify();
    }
  };

  const tick = async (): Promise<void> => {
    if (closed) return;
    const now = clock();
    const heartbeat = await redis
      .multi()
      .zadd(keys.queueWorkers(), now, token)
      .zremrangebyscore(keys.queueWorkers(), '-inf', now - leaseMs)
      .zcard(keys.queueWorkers())
      .exec();
    const workers = Number(heartbeat?.[2]?.[1] ?? 1);
    const share = Math.ceil(partitions / Math.max(1, workers));
    // Renew what is held; a lease that expired meanwhile (a stall) is gone.
    await renew();
    if (owned.size < share) await acquire(share, workers);
    else if (owned.size > share) {
      for (const p of [...owned.keys()].sort((a, b) => b - a).slice(0, owned.size - share)) toRelease.add(p);
      notify();
    }
  };

  const renewalFailed = (err: unknown) => log.warn({ err }, 'partition lease renewal failed');
  let ticking: Promise<void> | undefined;
  /** One round at a time: one asked for while another runs (start-up, tests, the timer) is that one. */
  const runTick = () => {
    ticking ??= tick()
      .catch(renewalFailed)
      .finally(() => (ticking = undefined));
    return ticking;
  };
  // At a fixed rate: a round starts every third of the lease from the previous one's start, so a
  // slow round does not also push the next renewal later.
  const renewals = startPeriodic({
    intervalMs: Math.max(100, Math.floor(leaseMs / 3)),
    fixedRate: true,
    unref: true,
    run: runTick,
    onError: renewalFailed,
  });

  const release = async (list: number[]) => {
    if (list.length === 0) return;
    const pipeline = redis.pipeline();
    for (const p of list) {
      const value = owned.get(p);
      owned.delete(p);
      toRelease.delete(p);
      if (value !== undefined) pipeline.eval(RELEASE, 1, keys.partitionLease(p), value);
    }
    await pipeline.exec();
  };

  return {
    token,
    owned: () => [...owned.keys()].sort((a, b) => a - b),
    held: () => owned,
    owns: (p) => owned.has(p),
    fenceOf(list) {
      const values: string[] = [];
      for (const p of list) {
        const value = owned.get(p);
        if (value === undefined) return undefined;
        values.push(value);
      }
      return { leaseKeys: list.map((p) => keys.partitionLease(p)), values };
    },
    holds(fence) {
      const held = new Set(owned.values());
      return fence.values.every((v) => held.has(v));
    },
    releasing: () => toRelease,
    async releasePending(among) {
      const list = among.filter((p) => toRelease.has(p));
      if (list.length === 0) return [];
      await release(list);
      log.info({ partitions: list }, 'partitions handed back to balance the workers');
      return list;
    },
    changed: waits.sleep,
    tick: runTick,
    async close() {
      if (closed) return;
      closed = true;
      await renewals.close();
      await ticking;
      notify();
      try {
        await release([...owned.keys()]);
        await redis.zrem(keys.queueWorkers(), token);
      } catch (err) {
        // Redis gone: the leases expire by themselves within leaseMs.
        log.warn({ err }, 'could not hand back partition leases');
      }
    },
  };
}
