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
import { INGEST_QUEUE, type IngestItem, type IngestJobData } from './jobs.ts';

/** Name of every ingest job (the queue holds one kind of job). */
export const INGEST_JOB_NAME = 'batch';

export interface IngestProducer {
  readonly queue: Queue<IngestJobData>;
  /** Adds one job holding `items`; resolves once Redis has it. */
  add(items: IngestItem[]): Promise<void>;
  /** Jobs not yet finished (waiting, delayed, prioritized, active). */
  countUnfinishedJobs(): Promise<number>;
  /** Closes the queue (not the connection, which the caller owns). Safe to call twice. */
  close(): Promise<void>;
}

/** Job options of ingest jobs: retries with exponential backoff, bounded retention. */
export function ingestJobOptions(
  config: Pick<Config, 'jobAttempts' | 'jobBackoffMs' | 'jobsKeptCompleted' | 'jobsKeptFailed'>,
): JobsOptions {
  return {
    attempts: config.jobAttempts,
    backoff: { type: 'exponential', delay: config.jobBackoffMs },
    removeOnComplete: { count: config.jobsKeptCompleted },
    removeOnFail: { count: config.jobsKeptFailed },
  };
}

export function createIngestProducer(deps: {
  connection: Redis;
  keys: Keys;
  config: Config;
}): IngestProducer {
  const queue = new Queue<IngestJobData>(INGEST_QUEUE, {
    connection: deps.connection,
    prefix: deps.keys.queuePrefix(),
  });
  // A queue error (Redis gone) surfaces through the failed add; the listener keeps it from being
  // an unhandled 'error' event.
  queue.on('error', () => undefined);
  const options = ingestJobOptions(deps.config);
  const ensureReady = () => {
    if (deps.connection.status !== 'ready') {
      throw new AppError('UNAVAILABLE', 'The queue (Redis) cannot be reached; try again later.');
    }
  };
  let closing: Promise<void> | undefined;
  return {
    queue,
    async add(items) {
      ensureReady();
      await queue.add(INGEST_JOB_NAME, { items }, options);
    },
    async countUnfinishedJobs() {
      ensureReady();
      const counts = await queue.getJobCounts('wait', 'delayed', 'prioritized', 'active');
      return Object.values(counts).reduce((a, b) => a + b, 0);
    },
    close() {
      closing ??= queue.close().catch(() => undefined);
      return closing;
    },
  };
}
