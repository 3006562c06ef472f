/**
 * The read API's reads of Redis: what concurrent requests queue in the same turn of the event loop
 * goes out in one write and comes back in one read. Each call gets its own replies in order; a
 * failed command fails only its caller; a call waits at most `timeoutMs` for Redis (one timer per
 * turn: the `reads` connection has none per command).
 *
 * The commands are ioredis's plain ones, written while the connection's socket is corked for the
 * rest of the turn, not an ioredis pipeline. A pipeline object batched the same way, but under a
 * steady load the commands, replies and request objects reachable from it outlived the young
 * generation's collections: about a third of what a request allocated was copied into the old
 * generation and freed only by full collections (measured with V8's sampling heap profiler, which
 * can keep what minor collections did not free). Plain commands die young.
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

/** The calls of one event-loop turn: the socket corked until the turn ends, and their deadline. */
interface Turn {
  /** Calls still waiting for their replies. */
  waiting: number;
  /** False once the turn has ended: no call joins it any more. */
  open: boolean;
  timer: NodeJS.Timeout;
  /** Rejects with "Command timed out" when the timer fires. */
  expired: Promise<never>;
}

export function createPipelinedReads(redis: Redis, timeoutMs = COMMAND_TIMEOUT_MS): PipelinedReads {
  let current: Turn | undefined;

  function startTurn(): Turn {
    // Not connected yet: nothing to cork; ioredis queues or refuses the commands itself.
    const socket = redis.status === 'ready' && redis.stream.writable ? redis.stream : undefined;
    socket?.cork();
    const { promise: expired, reject } = Promise.withResolvers<never>();
    // Handled here too: the timer may fire when no call is waiting (a turn longer than timeoutMs).
    expired.catch(() => undefined);
    const timer = setTimeout(() => reject(new Error('Command timed out')), timeoutMs);
    const turn: Turn = { waiting: 0, open: true, timer, expired };
    setImmediate(() => {
      turn.open = false;
      current = undefined;
      socket?.uncork();
      if (turn.waiting === 0) clearTimeout(turn.timer);
    });
    return turn;
  }

  return async (queue) => {
    const replies: Promise<unknown>[] = [];
    const commands: ReadCommands = {
      get: (key) => void replies.push(redis.get(key)),
      hget: (key, field) => void replies.push(redis.hget(key, field)),
      hmget: (key, ...fields) => void replies.push(redis.hmget(key, ...fields)),
      hmgetBuffer: (key, ...fields) => void replies.push(redis.hmgetBuffer(key, ...fields)),
      hgetall: (key) => void replies.push(redis.hgetall(key)),
    };
    const turn = current?.open ? current : (current = startTurn());
    queue(commands);
    if (replies.length === 0) return [];
    turn.waiting += 1;
    try {
      return await Promise.race([Promise.all(replies), turn.expired]);
    } finally {
      turn.waiting -= 1;
      if (turn.waiting === 0 && !turn.open) clearTimeout(turn.timer);
    }
  };
}
