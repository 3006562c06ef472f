/**
 * One pipeline for the reads of concurrent callers: what they queue in the same turn of the event
 * loop goes to Redis in one write and comes back in one read. On a loaded box the socket write and
 * Redis's wake-up cost more than the commands themselves, so the read API sends one pipeline per
 * event-loop turn instead of one per request. Each caller gets only its own replies (and the first
 * error among them).
 */
import type { ChainableCommander } from 'ioredis';
import type { Redis } from './connect.ts';

/** Queues commands on the shared pipeline; resolves to their replies, in order. */
export type SharedPipeline = (queue: (pipe: ChainableCommander) => void) => Promise<unknown[]>;

interface Waiter {
  from: number;
  to: number;
  resolve: (replies: unknown[]) => void;
  reject: (err: unknown) => void;
}

export function createSharedPipeline(redis: Redis): SharedPipeline {
  let pipe: ChainableCommander | undefined;
  let waiters: Waiter[] = [];

  async function flush(): Promise<void> {
    const sending = pipe;
    const told = waiters;
    pipe = undefined;
    waiters = [];
    try {
      const results = (await sending?.exec()) ?? [];
      for (const w of told) {
        const mine = results.slice(w.from, w.to);
        const failed = mine.find(([err]) => err);
        if (failed) w.reject(failed[0]);
        else w.resolve(mine.map(([, value]) => value));
      }
    } catch (err) {
      for (const w of told) w.reject(err);
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
