/**
 * Writes created events to InfluxDB (for Grafana annotations). Events are created inside the
 * atomic state step, which also appends them to a Redis stream; this drainer reads the stream
 * with a consumer group and acknowledges entries only after InfluxDB accepted them. A drainer
 * that dies leaves its entries pending; another one claims them after `reclaimIdleMs`. Writes are
 * idempotent (same event → same point), so a rare double delivery is harmless. Entries are only
 * acknowledged, never deleted: other groups (the notifier) read the same stream, and the trimmer
 * removes what every group has finished with.
 */
import { replyCode } from '../redis/reply-code.ts';
import type { EventRecord } from '../domain/types.ts';
import type { HistoryWriter } from '../history/history-writer.ts';
import type { Logger } from '../log/logger.ts';
import { createWakeableSleep } from '../lib/wakeable-sleep.ts';
import { closeRedis, connectRedis } from '../redis/connect.ts';
import type { EventKeys } from './event-keys.ts';
import { createOutboxTrimmer } from './outbox-trim.ts';

const GROUP = 'influx';

type StreamEntries = [id: string, fields: string[]][];

export interface OutboxDrainer {
  close(): Promise<void>;
}

export function startOutboxDrainer(deps: {
  redisUrl: string;
  keys: EventKeys;
  history: HistoryWriter;
  log: Logger;
  consumer: string;
  batchSize?: number;
  blockMs?: number;
  reclaimIdleMs?: number;
  retryDelayMs?: number;
  /** The outbox's length cap (VIGIL_EVENT_OUTBOX_MAX_ENTRIES). */
  maxEntries?: number;
}): OutboxDrainer {
  const redis = connectRedis(deps.redisUrl, 'blocking', 'vigil-outbox');
  const stream = deps.keys.eventOutbox();
  const batchSize = deps.batchSize ?? 1000;
  const blockMs = deps.blockMs ?? 1000;
  const reclaimIdleMs = deps.reclaimIdleMs ?? 30_000;
  const retryDelayMs = deps.retryDelayMs ?? 1000;
  let stopped = false;
  const sleeps = createWakeableSleep();
  const sleep = sleeps.sleep;
  const trimmer = createOutboxTrimmer({
    redis,
    stream,
    maxEntries: deps.maxEntries ?? 1_000_000,
    log: deps.log,
  });

  async function ensureGroup(): Promise<void> {
    try {
      await redis.xgroup('CREATE', stream, GROUP, '0', 'MKSTREAM');
    } catch (err) {
      if (replyCode(err) !== 'BUSYGROUP') throw err;
    }
  }

  async function deliver(entries: StreamEntries): Promise<void> {
    if (entries.length === 0) return;
    const events: EventRecord[] = [];
    for (const [, fields] of entries) {
      const json = fields[fields.indexOf('e') + 1];
      try {
        if (json) events.push(JSON.parse(json) as EventRecord);
      } catch {
        deps.log.error({ stream }, 'skipping an unreadable event in the outbox');
      }
    }
    await deps.history.write({ values: [], events, contacts: [] });
    const ids = entries.map(([id]) => id);
    await redis.xack(stream, GROUP, ...ids);
    await trimmer.maybeTrim();
  }

  async function loop(): Promise<void> {
    let lastReclaim = 0;
    let pendingFirst = true;
    while (!stopped) {
      try {
        await ensureGroup();
        if (Date.now() - lastReclaim > reclaimIdleMs / 2) {
          lastReclaim = Date.now();
          const claimed = (await redis.xautoclaim(
            stream,
            GROUP,
            deps.consumer,
            reclaimIdleMs,
            '0-0',
            'COUNT',
            batchSize,
          )) as [string, StreamEntries];
          await deliver(claimed[1].filter(([, f]) => f !== null));
        }
        // After a failed write our own entries are still pending: read those ('0') before new ones ('>').
        const res = (await redis.xreadgroup(
          'GROUP',
          GROUP,
          deps.consumer,
          'COUNT',
          batchSize,
          'BLOCK',
          pendingFirst ? 1 : blockMs,
          'STREAMS',
          stream,
          pendingFirst ? '0' : '>',
        )) as [string, StreamEntries][] | null;
        const entries = res?.[0]?.[1] ?? [];
        await deliver(entries);
        pendingFirst = pendingFirst && entries.length > 0 ? true : false;
      } catch (err) {
        if (stopped) break;
        pendingFirst = true;
        deps.log.warn(
          { err: err instanceof Error ? err.message : String(err) },
          'event outbox: write failed, retrying',
        );
        await sleep(retryDelayMs);
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
        redis.disconnect();
        await running;
        await closeRedis(redis);
      })()),
  };
}
