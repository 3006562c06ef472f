/**
 * The read API's reads of Redis: each request's commands go out on a connection with ioredis's
 * auto-pipelining, so what concurrent requests issue in the same turn of the event loop reaches
 * Redis in one write and comes back in one read. (It replaced a hand-written shared pipeline that
 * did the same: alternated runs gave the same CPU per `sensors/details` request, see BENCHMARKS.md.)
 * Each call gets its own replies in order; a failed command fails only its caller; a call waits at
 * most `timeoutMs` for Redis (one timer per call: the `reads` connection has none per command).
 * On a connection without auto-pipelining the answers are the same, in one write per command.
 */
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

export function createPipelinedReads(redis: Redis, timeoutMs = COMMAND_TIMEOUT_MS): PipelinedReads {
  return async (queue) => {
    const replies: Promise<unknown>[] = [];
    queue({
      get: (key) => void replies.push(redis.get(key)),
      hget: (key, field) => void replies.push(redis.hget(key, field)),
      hmget: (key, ...fields) => void replies.push(redis.hmget(key, ...fields)),
      hmgetBuffer: (key, ...fields) => void replies.push(redis.hmgetBuffer(key, ...fields)),
      hgetall: (key) => void replies.push(redis.hgetall(key)),
    });
    if (replies.length === 0) return [];
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        Promise.all(replies),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('Command timed out')), timeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  };
}
