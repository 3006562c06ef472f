/**
 * The read API's reads of Redis: what concurrent requests queue in the same turn of the event loop
 * goes out as one ioredis pipeline, in one write, and comes back in one read. Each call gets its own
 * replies in order; a failed command fails only its caller; a call waits at most `timeoutMs` for
 * Redis (one timer per pipeline: the `reads` connection has none per command).
 *
 * One pipeline per turn rather than ioredis's auto-pipelining, which batches the same way but per
 * command: a promise, a callback, a second pass through ioredis's command builder and a
 * process.nextTick for its reply, for each of the four or so commands of a sensors request.
 */
import type { ChainableCommander } from 'ioredis';
import { COMMAND_TIMEOUT_MS, type Redis } from './connect.ts';

/** The commands the read API queues. */
export interface ReadCommands {
  get(key: string): void;
  hget(key: string, field: string): void;
  hmget(key: string, ...fields: string[]): void;
  /** HMGET with Buffer replies (for binary fields). */
  hmgetBuffer(key: string, ...fields: string[]): void;
  hgetall(key: string): void;
}

/** Queues commands; resolves to their replies, in order. */
export type PipelinedReads = (queue: (commands: ReadCommands) => void) => Promise<unknown[]>;

/** A caller's share of the pipeline: its commands' positions and its promise. */
interface Waiter {
  from: number;
  to: number;
  resolve: (replies: unknown[]) => void;
  reject: (err: unknown) => void;
}

export function createPipelinedReads(redis: Redis, timeoutMs = COMMAND_TIMEOUT_MS): PipelinedReads {
  let pipe: ChainableCommander | undefined;
  let waiters: Waiter[] = [];

  async function flush(): Promise<void> {
    const sending = pipe;
    const told = waiters;
    pipe = undefined;
    waiters = [];
    if (!sending || told.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    try {
      const timedOut = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('Command timed out')), timeoutMs);
      });
      const results = (await Promise.race([sending.exec(), timedOut])) ?? [];
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
    if (to === from) return Promise.resolve([]);
    return new Promise((resolve, reject) => waiters.push({ from, to, resolve, reject }));
  };
}
