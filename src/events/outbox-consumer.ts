/**
 * A reader of the event outbox with a consumer group of its own: every created event, in order,
 * at least once. Entries are acknowledged after `handle` resolved; a reader that dies leaves its
 * entries pending, and a reader of the same group claims them after `reclaimIdleMs` (a restarted
 * reader reads its own pending entries first). Entries are never deleted here: the trimmer removes
 * what every group has finished with (outbox-trim.ts).
 */
import { replyCode } from '../redis/reply-code.ts';
import type { EventRecord } from '../domain/types.ts';
import type { Logger } from '../log/logger.ts';
import { createWakeableSleep } from '../lib/wakeable-sleep.ts';
import type { Redis } from '../redis/connect.ts';
import type { Connections } from '../redis/connections.ts';
import type { EventKeys } from './event-keys.ts';
import { createOutboxTrimmer } from './outbox-trim.ts';

type StreamEntries = [id: string, fields: string[] | null][];

export interface OutboxEntry {
  /** The stream entry id. */
  id: string;
  event: EventRecord;
}

/**
 * Creates `group` on the outbox unless it exists. A new group starts at `startId`: by default the
 * end of the stream (`$`), so it gets the events created from now on, not the history before it
 * existed; `0` for a group that must have every event still in the stream.
 */
export async function ensureOutboxGroup(
  redis: Redis,
  keys: EventKeys,
  group: string,
  startId: '$' | '0' = '$',
): Promise<void> {
  try {
    await redis.xgroup('CREATE', keys.eventOutbox(), group, startId, 'MKSTREAM');
  } catch (err) {
    if (replyCode(err) !== 'BUSYGROUP') throw err;
  }
}

export interface OutboxConsumer {
  close(): Promise<void>;
}

export interface OutboxConsumerDeps {
  /** Where the reader's own (blocking) connection comes from. */
  connections: Connections;
  keys: EventKeys;
  group: string;
  /** Unique per process. */
  consumer: string;
  log: Logger;
  /** Handles a batch of events; a rejection leaves them pending, to be handled again. */
  handle(entries: OutboxEntry[]): Promise<void>;
  /** Where a group made by this reader starts (ensureOutboxGroup); `$` by default. */
  startId?: '$' | '0';
  batchSize?: number;
  blockMs?: number;
  reclaimIdleMs?: number;
  retryDelayMs?: number;
  /** The outbox's length cap (VIGIL_EVENT_OUTBOX_MAX_ENTRIES). */
  maxEntries?: number;
  /**
   * After a read that found some new entries (not a full batch), how long the next read waits for
   * more, so that entries arriving one by one are handled several at a time. The first entry after
   * a quiet spell is handled at once (the read was waiting for it), a backlog without pause. 0 by
   * default.
   */
  gatherMs?: number;
  /**
   * Waits out what is left of a gathering pause before the next read: `ms`, 0 or less when the
   * pause is over already. By default a timer that close() ends; tests hold it to decide what
   * arrives meanwhile.
   */
  gatherWait?: (ms: number) => Promise<void>;
}

function decode(entries: StreamEntries, log: Logger): OutboxEntry[] {
  const out: OutboxEntry[] = [];
  for (const [id, fields] of entries) {
    if (!fields) continue; // trimmed meanwhile
    const json = fields[fields.indexOf('e') + 1];
    try {
      if (json) out.push({ id, event: JSON.parse(json) as EventRecord });
    } catch {
      log.error({ id }, 'skipping an unreadable event in the outbox');
    }
  }
  return out;
}

export function startOutboxConsumer(deps: OutboxConsumerDeps): OutboxConsumer {
  const redis = deps.connections.blocking(`vigil-outbox-${deps.group}`);
  const stream = deps.keys.eventOutbox();
  const { group, consumer } = deps;
  const batchSize = deps.batchSize ?? 500;
  const blockMs = deps.blockMs ?? 1000;
  const reclaimIdleMs = deps.reclaimIdleMs ?? 30_000;
  const retryDelayMs = deps.retryDelayMs ?? 1000;
  const gatherMs = deps.gatherMs ?? 0;
  const trimmer = createOutboxTrimmer({
    redis,
    stream,
    maxEntries: deps.maxEntries ?? 1_000_000,
    log: deps.log,
  });
  const sleeps = createWakeableSleep();
  const gatherWait = deps.gatherWait ?? ((ms: number) => (ms > 0 ? sleeps.sleep(ms) : Promise.resolve()));
  let stopped = false;

  async function handle(entries: StreamEntries): Promise<void> {
    if (entries.length === 0) return;
    await deps.handle(decode(entries, deps.log));
    await redis.xack(stream, group, ...entries.map(([id]) => id));
    await trimmer.maybeTrim();
  }

  async function reclaim(): Promise<void> {
    const [, claimed] = (await redis.xautoclaim(
      stream,
      group,
      consumer,
      reclaimIdleMs,
      '0-0',
      'COUNT',
      batchSize,
    )) as [string, StreamEntries];
    await handle(claimed);
  }

  /** When the last read of new entries returned, if the next one should wait for more. */
  let gatherFromMs: number | undefined;

  /** Reads own pending entries ('0') until there are none, then new ones ('>'). */
  async function read(pendingFirst: boolean): Promise<boolean> {
    if (!pendingFirst && gatherFromMs !== undefined) {
      await gatherWait(gatherFromMs + gatherMs - Date.now());
      if (stopped) return false;
    }
    const res = (await redis.xreadgroup(
      'GROUP',
      group,
      consumer,
      'COUNT',
      batchSize,
      'BLOCK',
      pendingFirst ? 1 : blockMs,
      'STREAMS',
      stream,
      pendingFirst ? '0' : '>',
    )) as [string, StreamEntries][] | null;
    const entries = res?.[0]?.[1] ?? [];
    // Entries, but not a full batch of them: the next read waits for more to gather.
    gatherFromMs =
      gatherMs > 0 && !pendingFirst && entries.length > 0 && entries.length < batchSize
        ? Date.now()
        : undefined;
    await handle(entries);
    return pendingFirst && entries.length > 0;
  }

  async function loop(): Promise<void> {
    let lastReclaimMs = 0;
    let pendingFirst = true;
    // The group is made at start and again after any failure (a Redis restarted empty has none).
    let groupReady = false;
    while (!stopped) {
      try {
        if (!groupReady) {
          await ensureOutboxGroup(redis, deps.keys, group, deps.startId);
          groupReady = true;
        }
        if (Date.now() - lastReclaimMs > reclaimIdleMs / 2) {
          lastReclaimMs = Date.now();
          await reclaim();
        }
        pendingFirst = await read(pendingFirst);
      } catch (err) {
        if (stopped) break;
        pendingFirst = true;
        groupReady = false;
        deps.log.warn({ err, group }, 'event outbox: retrying');
        await sleeps.sleep(retryDelayMs);
      }
    }
  }

  const running = loop();
  let closing: Promise<void> | undefined;
  return {
    close: () =>
      (closing ??= (async () => {
        stopped = true;
        sleeps.wakeAll();
        // A blocked XREADGROUP ends with the connection; what was read but not acknowledged stays pending.
        redis.disconnect();
        await running;
      })()),
  };
}
