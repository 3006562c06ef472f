import { Redis, type RedisOptions } from 'ioredis';

export type { Redis };

/** Longest a command of a `command` connection waits for Redis's answer, in ms. */
export const COMMAND_TIMEOUT_MS = 5000;

/**
 * Opens a Redis connection. `purpose` picks the failure behaviour:
 * - `command`: commands wait for the first connection, but once connected they fail fast while
 *   Redis is down (no offline queue), so the gateway can answer 503 at once instead of hanging,
 *   and a command Redis does not answer within 5 s fails ("Command timed out");
 * - `reads`: as `command`, auto-pipelined (below) and without its timer per command: for a caller
 *   that bounds its own waits, as pipelined-reads.ts does with one timer per call of several
 *   commands;
 * - `blocking`: the queue's producer and workers (`maxRetriesPerRequest: null`, reconnect forever).
 *
 * `autoPipeline`: commands issued in one event-loop turn go to Redis in one write (ioredis's
 * auto-pipelining), for a caller with many independent commands in flight at once (the notifier's
 * concurrent deliveries), where one write per command cost more than the commands.
 */
export function connectRedis(
  url: string,
  purpose: 'command' | 'reads' | 'blocking',
  name = 'vigil',
  { autoPipeline = false }: { autoPipeline?: boolean } = {},
): Redis {
  const common: RedisOptions = {
    connectionName: name,
    lazyConnect: false,
    enableAutoPipelining: autoPipeline || purpose === 'reads',
    retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 6), 2000),
  };
  const options: RedisOptions =
    purpose === 'blocking'
      ? { ...common, maxRetriesPerRequest: null, enableReadyCheck: true }
      : {
          ...common,
          maxRetriesPerRequest: 1,
          enableOfflineQueue: true,
          ...(purpose === 'command' ? { commandTimeout: COMMAND_TIMEOUT_MS } : {}),
        };
  const redis = new Redis(url, options);
  if (purpose !== 'blocking') redis.once('ready', () => (redis.options.enableOfflineQueue = false));
  // Connection errors are reported through readiness and command failures; without a listener
  // ioredis would print each reconnect attempt as an unhandled error event.
  redis.on('error', () => undefined);
  return redis;
}

/** Quits gracefully, or disconnects if Redis is unreachable. Safe to call twice. */
export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === 'end') return;
  if (redis.status !== 'ready') {
    // Never connected or reconnecting: QUIT would wait for a connection that may never come.
    redis.disconnect();
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      redis.quit(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('quit timeout')), 1000);
      }),
    ]);
  } catch {
    redis.disconnect();
  } finally {
    clearTimeout(timer);
  }
}

/** True when Redis answers PING within a second. */
export async function pingRedis(redis: Redis): Promise<boolean> {
  if (redis.status !== 'ready') {
    // Just started or reconnecting: give it up to a second to become ready.
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, 1000);
      function done() {
        clearTimeout(timer);
        redis.off('ready', done);
        resolve();
      }
      redis.once('ready', done);
    });
    if ((redis.status as string) !== 'ready') return false;
  }
  try {
    return (
      (await Promise.race([
        redis.ping(),
        new Promise<string>((r) => setTimeout(() => r('timeout'), 1000)),
      ])) === 'PONG'
    );
  } catch {
    return false;
  }
}
