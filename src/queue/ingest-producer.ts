/**
 * The producer side of the ingest queue (ingest-queue.ts): one stream entry per partition and
 * micro-batch, all of one call in one MULTI with the backlog counts of its environments (one
 * HINCRBY per environment in the call). Fails fast (AppError UNAVAILABLE) while its Redis
 * connection is not ready, instead of parking the write in ioredis's offline queue.
 */
import type { Config } from '../config/schema.ts';
import { AppError } from '../errors/app-error.ts';
import type { Redis } from '../redis/connect.ts';
import type { QueueKeys } from './queue-keys.ts';
import { addToBacklog, countByEnv, entryFields, sampleBacklog, type EnvCounts } from './ingest-queue.ts';
import { ROUTING_KEY, type IngestItem } from '../domain/ingest-item.ts';
import { partitionOf } from './partition.ts';

export interface IngestProducer {
  readonly partitions: number;
  /** The partition of an item (by its routing key). */
  partitionOf(item: IngestItem): number;
  /**
   * Queues `items`, one entry per partition present, in one round trip; resolves once Redis has
   * them all. Calls are written in call order on one connection, so each partition keeps the
   * acceptance order.
   */
  add(items: readonly IngestItem[]): Promise<void>;
  /** Mean payloads per queue entry this process wrote (exponential moving average; 1 at first). */
  averagePayloadsPerEntry(): number;
  /** Queue entries not yet processed (waiting or being processed) and their payloads per environment. */
  sampleBacklog(): Promise<{ entries: number; payloadsByEnv: EnvCounts }>;
}

export function createIngestProducer(deps: {
  connection: Redis;
  keys: QueueKeys;
  config: Pick<Config, 'queuePartitions'>;
}): IngestProducer {
  const { connection, keys } = deps;
  const partitions = deps.config.queuePartitions;
  const ensureReady = () => {
    if (connection.status !== 'ready') {
      throw new AppError('UNAVAILABLE', 'The queue (Redis) cannot be reached; try again later.');
    }
  };
  let average = 1;
  let written = 0;
  return {
    partitions,
    partitionOf: (item) => partitionOf(routingKey(item), partitions),
    async add(items) {
      ensureReady();
      const byPartition = new Map<number, IngestItem[]>();
      for (const item of items) {
        const p = partitionOf(routingKey(item), partitions);
        const list = byPartition.get(p);
        if (list) list.push(item);
        else byPartition.set(p, [item]);
      }
      // One MULTI: the counts can never miss an entry that was written, nor count one that was not.
      const multi = connection.multi();
      for (const [p, part] of byPartition) multi.xadd(keys.ingestStream(p), '*', ...entryFields(part));
      addToBacklog(multi, keys, countByEnv(items));
      const results = await multi.exec();
      if (!results) throw new AppError('UNAVAILABLE', 'The queue did not confirm the write.');
      for (const [err] of results) if (err) throw err;
      for (const part of byPartition.values()) {
        written += 1;
        average = written === 1 ? part.length : average * 0.95 + part.length * 0.05;
      }
    },
    averagePayloadsPerEntry: () => average,
    async sampleBacklog() {
      ensureReady();
      return sampleBacklog(connection, keys, partitions);
    },
  };
}

/**
 * Which partition a payload belongs to: its device when the gateway can tell (raw paths and MQTT
 * raw topics name it; /gateway/submit bodies carry `deviceName`), else its sender (client
 * address or MQTT client id), so one device's payloads always share a partition. `parsedBody`: the
 * body's JSON value when the caller has parsed it already (else it is parsed here); the key the
 * gateway stored on the item (ROUTING_KEY) wins.
 */
export function routingKey(item: IngestItem, parsedBody?: { value: unknown }): string {
  const known = item[ROUTING_KEY];
  if (known !== undefined) return known;
  if (item.deviceName) return `${item.env}\n${item.deviceName}`;
  if (item.gateway === 'submit' && !item.bodyIsHex) {
    const value = parsedBody ? parsedBody.value : parseOrUndefined(item.body);
    const deviceName = (value as { deviceName?: unknown } | null | undefined)?.deviceName;
    if (typeof deviceName === 'string') return `${item.env}\n${deviceName}`;
  }
  return `${item.env}\nclient:${item.client}`;
}

/** The JSON value of `text`, or undefined when it is not JSON (refused or logged later). */
function parseOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
