/**
 * One pipeline for the reads of concurrent callers: what they queue in the same turn of the event
 * loop goes to Redis in one write and comes back in one read. On a loaded box the socket write and
 * Redis's wake-up cost more than the commands themselves, so the read API sends one pipeline per
 * event-loop turn instead of one per request. Each caller gets only its own replies (and the first
 * error among them).
 */
import type { ChainableCommander } from 'ioredis';
import { COMMAND_TIMEOUT_MS, type Redis } from './connect.ts';

/** Queues commands on the shared pipeline; resolves to their replies, in order. */
export type SharedPipeline = (queue: (pipe: ChainableCommander) => void) => Promise<unknown[]>;

interface Waiter {
  from: number;
  to: number;
  resolve: (replies: unknown[]) => void;
  reject: (err: unknown) => void;
}

/**
 * `timeoutMs` bounds each pipeline's wait for Redis (one timer per pipeline: the connection may
 * have no timer per command, see connectRedis's `reads`); past it, its callers get "Command timed
 * out", as a command of a `command` connection would.
 */
export function createSharedPipeline(redis: Redis, timeoutMs = COMMAND_TIMEOUT_MS): SharedPipeline {
  let pipe: ChainableCommander | undefined;
  let waiters: Waiter[] = [];

  async function flush(): Promise<void> {
    const sending = pipe;
    const told = waiters;
    pipe = undefined;
    waiters = [];
    let timer: NodeJS.Timeout | undefined;
    try {
      const timedOut = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('Command timed out')), timeoutMs);
      });
      const results = (await Promise.race([sending?.exec() ?? Promise.resolve(null), timedOut])) ?? [];
      for (const w of told) {
        const mine = results.slice(w.from, w.to);
        const failed = mine.find(([err]) => err);
        if (failed) w.reject(failed[0]);
        else w.resolve(mine.map(([, value]) => value));
      }
    } catch (err) {
      for (const w of told) w.reject(err);
    } finally {
      clearTimeout(timer);
    }
  }

  return (queue) => {
    if (!pipe) {
      pipe = redis.pipeline();
      setImmediate(() => void flush());
    }
    const from = pipe.length;
    queue(pipe);
    const to = pipe.length;
    return new Promise((resolve, reject) => waiters.push({ from, to, resolve, reject }));
  };
}
