/**
 * Whole hashes read from Redis and kept in this process until Redis says they changed: Redis's
 * server-assisted client-side caching (`CLIENT TRACKING`), with the reading connection's
 * invalidations redirected to a second, subscribed one. Any change by anyone (a command, a script,
 * a transaction, a deletion, FLUSHALL) reaches this process as the key's invalidation, so a read
 * after it returns the new value as a read from Redis would. What it saves is a round trip per read
 * of a value that seldom changes on a hot path: the notifier reads its channels for every delivery.
 *
 * Reads go to Redis and nothing is kept while tracking is not on: before both connections are
 * ready, and from the moment either loses its connection (invalidations sent meanwhile are lost)
 * until tracking is on again with everything kept before thrown away.
 *
 * A read's answer is kept only if no invalidation arrived while it was on its way: the
 * invalidation of a change made right after the read travels on the other connection and may be
 * handled first, and keeping the answer then would keep a stale value until the next change.
 */
import { LRUCache } from 'lru-cache';
import type { Logger } from '../log/logger.ts';
import { closeRedis, type Redis } from './connect.ts';
import type { Connections } from './connections.ts';

const INVALIDATIONS = '__redis__:invalidate';

export interface TrackedHashes {
  /**
   * HGETALL `key`, from what is kept when Redis has not said it changed since: the same object
   * while it has not changed (not to be modified).
   */
  hgetall(key: string): Promise<Record<string, string>>;
  /** Whether reads are being kept (for tests and metrics). */
  tracking(): boolean;
  close(): Promise<void>;
}

interface Kept {
  get(key: string): Record<string, string> | undefined;
  set(key: string, value: Record<string, string>): unknown;
  delete(key: string): unknown;
  clear(): void;
}

/**
 * Keeps what is read until it changes: everything (a few hashes, such as the notifier's routes and
 * channels), or the `max` read most recently (the API's device records). A hash let go is read again
 * when next asked for; Redis's later invalidation of it finds nothing. Opens two connections of its
 * own from `connections`, and closes them when closed.
 */
export function openTrackedHashes(
  connections: Connections,
  name: string,
  log: Logger,
  max?: number,
): TrackedHashes {
  const kept: Kept =
    max === undefined ? new Map() : new LRUCache<string, Record<string, string>>({ max });
  /** Counts invalidations and connection losses: an answer is kept only if it did not move meanwhile. */
  let epoch = 0;
  let on = false;
  let closed = false;
  // Auto-pipelined: a batch's misses (a sensors/batchList of devices not kept) go out together.
  const reader = connections.command(`${name}-reads`, { autoPipeline: true });
  // Subscribing by hand after each connection: the connection's id must be asked for first, which a
  // connection in subscriber mode cannot do.
  const invalidations: Redis = connections.command(`${name}-invalidations`);
  invalidations.options.autoResubscribe = false;

  const forget = () => {
    on = false;
    epoch++;
    kept.clear();
  };

  invalidations.on('messageBuffer', (channel: Buffer, keys: Buffer[] | null) => {
    if (channel.toString() !== INVALIDATIONS) return;
    epoch++;
    // No keys: FLUSHALL or FLUSHDB.
    if (keys === null) kept.clear();
    else for (const key of keys) kept.delete(key.toString());
  });

  /** The id of the invalidations connection, once it is subscribed; reads redirect to it. */
  let subscribedId: number | undefined;
  let starting: Promise<void> = Promise.resolve();

  /** Subscribes a (re)connected invalidations connection, after asking for its id. */
  async function subscribe(): Promise<void> {
    const id = await invalidations.client('ID');
    await invalidations.subscribe(INVALIDATIONS);
    subscribedId = id;
  }

  /** Turns tracking on once both connections are ready; again after either reconnected. */
  async function start(resubscribe: boolean): Promise<void> {
    if (closed || invalidations.status !== 'ready') return;
    forget();
    const startedEpoch = epoch;
    try {
      if (resubscribe || subscribedId === undefined) await subscribe();
      if (reader.status !== 'ready') return; // its own 'ready' comes later
      await reader.call('CLIENT', 'TRACKING', 'ON', 'REDIRECT', String(subscribedId));
      // A connection lost meanwhile moved the epoch: its own 'ready' starts again.
      if (epoch === startedEpoch && !closed) on = true;
    } catch (err) {
      log.warn(
        { err, connection: name },
        'redis: client-side caching not turned on; reading every time until the next reconnection',
      );
    }
  }
  const restart = (resubscribe: boolean) => {
    starting = starting.then(() => start(resubscribe));
  };
  reader.on('ready', () => restart(false));
  invalidations.on('ready', () => restart(true));
  reader.on('close', forget);
  invalidations.on('close', () => {
    subscribedId = undefined;
    forget();
  });

  return {
    async hgetall(key) {
      const hit = on ? kept.get(key) : undefined;
      if (hit) return hit;
      // Kept only if tracking was on when the read went out (else Redis may not track the key) and
      // nothing was invalidated or forgotten since (a forgetting also turns tracking off).
      const readEpoch = on ? epoch : undefined;
      const value = await reader.hgetall(key);
      if (epoch === readEpoch) kept.set(key, value);
      return value;
    },
    tracking: () => on,
    async close() {
      closed = true;
      forget();
      await starting;
      await Promise.all([reader, invalidations].map(closeRedis));
    },
  };
}
