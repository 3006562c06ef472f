/**
 * The producer side of the ingest queue: one BullMQ job per micro-batch, with the retry and
 * retention options of the configuration. Fails fast (AppError UNAVAILABLE) while its Redis
 * connection is not ready, instead of parking the write in ioredis's offline queue.
 */
import { Queue, type JobsOptions } from 'bullmq';
import type { Config } from '../config/schema.ts';
import { AppError } from '../errors/app-error.ts';
import type { Redis } from '../redis/connect.ts';
import type { Keys } from '../state/keys.ts';
import { ingestQueueNames, partitionOf, type IngestItem, type IngestJobData } from './jobs.ts';

/** Name of every ingest job (the queue holds one kind of job). */
export const INGEST_JOB_NAME = 'batch';

export interface IngestProducer {
  /** One queue per partition (see `ingestQueueName`). */
  readonly queues: Queue<IngestJobData>[];
  /** The partition of an item (by its routing key). */
  partitionOf(item: IngestItem): number;
  /** Adds one job holding `items`, all of partition `partition`; resolves once Redis has it. */
  addToPartition(partition: number, items: IngestItem[]): Promise<void>;
  /** Adds one job per partition present in `items`; resolves once Redis has them all. */
  add(items: IngestItem[]): Promise<void>;
  /** Jobs not yet finished (waiting, delayed, prioritized, active). */
  countUnfinishedJobs(): Promise<number>;
  /** Closes the queue (not the connection, which the caller owns). Safe to call twice. */
  close(): Promise<void>;
}

/** Name of the backoff strategy the workers implement (`cappedBackoff`). */
export const CAPPED_BACKOFF = 'capped-exponential';

/** Retry delay of attempt `attemptsMade` (1 = first retry): doubling from `baseMs`, at most `maxMs`. */
export function cappedBackoff(attemptsMade: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(attemptsMade - 1, 0), 30));
}

/** Job options of ingest jobs: retries with exponential backoff, bounded retention. */
export function ingestJobOptions(
  config: Pick<Config, 'jobAttempts' | 'jobBackoffMs' | 'jobsKeptCompleted' | 'jobsKeptFailed'>,
): JobsOptions {
  return {
    attempts: config.jobAttempts,
    backoff: { type: CAPPED_BACKOFF, delay: config.jobBackoffMs },
    removeOnComplete: { count: config.jobsKeptCompleted },
    removeOnFail: { count: config.jobsKeptFailed },
  };
}

export function createIngestProducer(deps: {
  connection: Redis;
  keys: Keys;
  config: Config;
}): IngestProducer {
  const queues = ingestQueueNames(deps.config).map((name) => {
    const queue = new Queue<IngestJobData>(name, {
      connection: deps.connection,
      prefix: deps.keys.queuePrefix(),
    });
    // A queue error (Redis gone) surfaces through the failed add; the listener keeps it from being
    // an unhandled 'error' event.
    queue.on('error', () => undefined);
    return queue;
  });
  const options = ingestJobOptions(deps.config);
  const ensureReady = () => {
    if (deps.connection.status !== 'ready') {
      throw new AppError('UNAVAILABLE', 'The queue (Redis) cannot be reached; try again later.');
    }
  };
  let closing: Promise<void> | undefined;
  return {
    queues,
    partitionOf: (item) => partitionOf(routingKey(item), queues.length),
    async addToPartition(partition, items) {
      ensureReady();
      await queues[partition]!.add(INGEST_JOB_NAME, { items }, options);
    },
    async add(items) {
      ensureReady();
      const byPartition = new Map<number, IngestItem[]>();
      for (const item of items) {
        const p = partitionOf(routingKey(item), queues.length);
        const list = byPartition.get(p);
        if (list) list.push(item);
        else byPartition.set(p, [item]);
      }
      // Sent back to back on one connection: Redis receives them in this order, so each
      // partition's jobs keep the acceptance order.
      await Promise.all(
        [...byPartition].map(([p, part]) => queues[p]!.add(INGEST_JOB_NAME, { items: part }, options)),
      );
    },
    async countUnfinishedJobs() {
      ensureReady();
      const counts = await Promise.all(
        queues.map((q) => q.getJobCounts('wait', 'delayed', 'prioritized', 'active')),
      );
      return counts.reduce((sum, c) => sum + Object.values(c).reduce((a, b) => a + b, 0), 0);
    },
    close() {
      closing ??= Promise.all(queues.map((q) => q.close()))
        .then(() => undefined)
        .catch(() => undefined);
      return closing;
    },
  };
}

/**
 * Which partition a payload belongs to: its device when the gateway can tell (raw paths and MQTT
 * raw topics name it; /gateway/submit bodies carry `deviceName`), else its sender (client
 * address or MQTT client id), so one device's payloads always share a partition.
 */
export function routingKey(item: IngestItem): string {
  if (item.deviceName) return `${item.env}\n${item.deviceName}`;
  if (item.gateway === 'submit' && !item.bodyIsHex) {
    try {
      const parsed = JSON.parse(item.body) as { deviceName?: unknown } | null;
      if (typeof parsed?.deviceName === 'string') return `${item.env}\n${parsed.deviceName}`;
    } catch {
      // Not JSON: it will be refused or logged later; any partition will do.
    }
  }
  return `${item.env}\nclient:${item.client}`;
}
