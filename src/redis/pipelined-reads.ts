/**
 * The read API's reads of Redis: a call queues plain ioredis commands and gets their replies, in
 * order; a failed command fails only its caller; a call waits at most `timeoutMs` for Redis (one
 * timer per call: the `reads` connection has none per command). The connection auto-pipelines
 * (`connectRedis(…, 'reads')`, or a Cluster client with `enableAutoPipelining`), so what concurrent
 * requests queue in the same turn of the event loop goes to Redis in one write.
 */
import type { Cluster } from 'ioredis';
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

/**
 * Reads through `redis`, which should auto-pipeline (without it each command is a write of its
 * own); a call fails with "Command timed out" when Redis has not answered within `timeoutMs`.
 */
export function createPipelinedReads(redis: Redis | Cluster, timeoutMs = COMMAND_TIMEOUT_MS): PipelinedReads {
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
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('Command timed out')), timeoutMs);
    });
    try {
      return await Promise.race([Promise.all(replies), expired]);
    } finally {
      clearTimeout(timer);
    }
  };
}
