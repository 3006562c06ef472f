/**
 * Where a process opens its Redis connections: the composition root (main.ts, the `vigil` command)
 * creates one factory and hands it to the parts that need connections of their own. Which client
 * each kind of connection is — one server's today — is decided here and nowhere else.
 */
import type { Config } from '../config/schema.ts';
import { closeRedis, connectRedis, type Redis } from './connect.ts';

export interface Connections {
  /**
   * A connection for commands: fails fast while Redis is down, each command bounded (connect.ts).
   * `autoPipeline` for a caller with many independent commands in flight at once.
   */
  command(name: string, options?: { autoPipeline?: boolean }): Redis;
  /** A connection for reads that bound their own waits: auto-pipelined, no timer per command. */
  reads(name: string): Redis;
  /** A connection that waits for Redis, reconnecting forever: blocking reads, the queue, BullMQ. */
  blocking(name: string): Redis;
  /**
   * Closes every connection opened here that is still open (a part may end its own earlier).
   * Connections asked for afterwards are refused. Safe to call twice.
   */
  close(): Promise<void>;
}

/** The connection factory of a process, on VIGIL_REDIS_URL. */
export function createConnections(config: Pick<Config, 'redisUrl'>): Connections {
  const open = new Set<Redis>();
  let closing: Promise<void> | undefined;
  const opened = (redis: Redis): Redis => {
    open.add(redis);
    redis.once('end', () => open.delete(redis));
    return redis;
  };
  const connect = (purpose: 'command' | 'reads' | 'blocking', name: string, autoPipeline = false) => {
    if (closing) throw new Error(`Redis connection ${name} asked for after the connections were closed`);
    return opened(connectRedis(config.redisUrl, purpose, name, { autoPipeline }));
  };
  return {
    command: (name, options = {}) => connect('command', name, options.autoPipeline),
    reads: (name) => connect('reads', name),
    blocking: (name) => connect('blocking', name),
    close: () => (closing ??= Promise.all([...open].map(closeRedis)).then(() => undefined)),
  };
}
