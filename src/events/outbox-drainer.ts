/**
 * Writes created events to InfluxDB (for Grafana annotations). Events are created inside the
 * atomic state step, which also appends them to a Redis stream; this drainer reads the stream with
 * the consumer group `influx` (an outbox reader, outbox-consumer.ts) and acknowledges entries only
 * after InfluxDB accepted them. A drainer that dies leaves its entries pending; another one claims
 * them after `reclaimIdleMs`. Writes are idempotent (same event → same point), so a rare double
 * delivery is harmless. The group starts at the beginning of the stream: events created before the
 * first worker started are written too.
 */
import type { HistoryWriter } from '../history/history-writer.ts';
import type { Logger } from '../log/logger.ts';
import type { Connections } from '../redis/connections.ts';
import type { EventKeys } from './event-keys.ts';
import { startOutboxConsumer, type OutboxConsumer } from './outbox-consumer.ts';

const GROUP = 'influx';

export type OutboxDrainer = OutboxConsumer;

export function startOutboxDrainer(deps: {
  connections: Connections;
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
  const { history, batchSize, ...reader } = deps;
  return startOutboxConsumer({
    ...reader,
    group: GROUP,
    startId: '0',
    batchSize: batchSize ?? 1000,
    handle: (entries) => history.write({ values: [], events: entries.map((e) => e.event), contacts: [] }),
  });
}
